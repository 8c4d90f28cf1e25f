// `occam loo` end to end: the built binary on a small `occam sample` run of the regression fixture.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "occam/data.h"
#include "occam/io.h"
#include "occam/loo.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/model_spec.h"
#include "occam/text.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::occam;
using testing::quote;
using testing::TempDir;

const std::string kTrain = testing::fixture_path("regression_train.csv");

// The log_lik.1..log_lik.m columns of a run's chain files, row by row, against
// pointwise_log_likelihood of the model read back from the run folder.
void expect_log_lik_columns_of_the_library(const std::string& run, const std::string& data, const std::string& target,
                                           int chains) {
  const FittedModel model = load_model(run);
  const Eigen::MatrixXd log_lik = pointwise_log_likelihood(model, read_training_data(data, target, model.spec));
  Index row = 0;
  for (int c = 1; c <= chains; ++c) {
    const mcmc::StanCsv csv = mcmc::read_stan_csv(run + "/chain_" + std::to_string(c) + ".csv");
    const Index first = csv.column("log_lik.1");
    ASSERT_EQ(csv.columns.back(), "log_lik." + std::to_string(log_lik.cols()));
    for (Index s = 0; s < csv.draws.rows(); ++s, ++row)
      for (Index n = 0; n < log_lik.cols(); ++n)
        EXPECT_NEAR(csv.draws(s, first + n), log_lik(row, n), 1e-9 * (1.0 + std::abs(log_lik(row, n))));
  }
  EXPECT_EQ(row, log_lik.rows());
}

TEST(LooCli, PrintsTheEstimatesAndWritesThePointwiseValuesOfTheLibrary) {
  TempDir dir;
  const CliRun sample =
      occam(dir, "sample --data " + quote(kTrain) +
                     " --target y --hidden 3 --chains 2 --warmup 150 --draws 100 --seed 3 --quiet --out run");
  ASSERT_EQ(sample.exit_code, 0) << sample.err;
  const CliRun run = occam(dir, "loo " + quote(dir.file("run")) + " --data " + quote(kTrain) + " --out loo.csv");
  ASSERT_EQ(run.exit_code, 0) << run.err;

  const mcmc::LooResult expected = loo(load_model(dir.file("run")), read_csv(kTrain));
  const Table table = read_csv(dir.file("loo.csv"));
  EXPECT_EQ(table.columns,
            (std::vector<std::string>{"elpd_loo", "mcse_elpd_loo", "p_loo", "looic", "pareto_k", "n_eff", "r_eff"}));
  ASSERT_EQ(table.values.rows(), read_csv(kTrain).values.rows());
  EXPECT_EQ(table.values.col(0), expected.pointwise_elpd_loo);
  EXPECT_EQ(table.values.col(4), expected.pareto_k);
  for (const std::string& part :
       {std::string("Computed from 200 by ") + std::to_string(table.values.rows()),
        format("%-10s %12.1f", "elpd_loo", expected.elpd_loo), std::string("Pareto k diagnostic values")})
    EXPECT_NE(run.out.find(part), std::string::npos) << part << " missing from\n" << run.out;
  // Leaving an observation out can only lower its predictive density on average: p_loo > 0.
  EXPECT_GT(expected.p_loo, 0.0);

  // The chain files carry the same pointwise log-likelihood as log_lik.1..log_lik.m (auto: on for
  // 40 rows), so that R's loo computes from them what occam loo computes.
  expect_log_lik_columns_of_the_library(dir.file("run"), kTrain, "y", 2);
}

// A Poisson GLM with an offset: the columns are log p(y_n | w) with the row's exposure, as the
// library computes them.
TEST(LooCli, GlmLogLikColumnsAreThoseOfTheLibrary) {
  TempDir dir;
  const std::string counts = testing::fixture_path("counts.csv");
  const CliRun sample = occam(dir, "sample --data " + quote(counts) +
                                       " --target count --model linear --likelihood poisson --offset log_exposure"
                                       " --chains 2 --warmup 100 --draws 50 --seed 2 --quiet --out run");
  ASSERT_EQ(sample.exit_code, 0) << sample.err;
  expect_log_lik_columns_of_the_library(dir.file("run"), counts, "count", 2);
}

TEST(LooCli, LogLikColumnsCanBeTurnedOff) {
  TempDir dir;
  const CliRun sample =
      occam(dir, "sample --data " + quote(kTrain) +
                     " --target y --hidden 2 --chains 1 --warmup 20 --draws 5 --quiet --log-lik off --out run");
  ASSERT_EQ(sample.exit_code, 0) << sample.err;
  const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("run/chain_1.csv"));
  for (const std::string& name : csv.columns) EXPECT_EQ(name.rfind("log_lik.", 0), std::string::npos) << name;
}

TEST(LooCli, RefusesAModelWithoutDrawsAndAnOutputNamingTheData) {
  TempDir dir;
  const CliRun fit = occam(dir, "fit --data " + quote(kTrain) + " --target y --hidden 2 --quiet --out model.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const CliRun laplace = occam(dir, "loo " + quote(dir.file("model.json")) + " --data " + quote(kTrain));
  EXPECT_EQ(laplace.exit_code, 2);
  EXPECT_NE(laplace.err.find("needs posterior draws"), std::string::npos) << laplace.err;
  EXPECT_TRUE(laplace.out.empty());
  const CliRun same =
      occam(dir, "loo " + quote(dir.file("model.json")) + " --data " + quote(kTrain) + " --out " + quote(kTrain));
  EXPECT_EQ(same.exit_code, 2);
}

}  // namespace
}  // namespace occam

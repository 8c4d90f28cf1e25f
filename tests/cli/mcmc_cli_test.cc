// `occam sample` and `occam predict --draws` end to end: the built binary on the small regression
// fixture. Chain files must parse as Stan CSV, not depend on the thread count, and survive Ctrl-C.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "occam/data.h"
#include "occam/mcmc/stan_csv.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::TempDir;
using testing::CliRun;
using testing::occam;
using testing::quote;
using testing::read_text;
namespace fs = std::filesystem;

const std::string kSmallRun = "sample --data " + quote(testing::fixture_path("regression_train.csv")) +
                              " --target y --hidden 3 --chains 2 --warmup 150 --draws 100 --seed 3";

class SampleRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    run_ = new CliRun(occam(*dir_, kSmallRun + " --out run"));
  }
  static void TearDownTestSuite() {
    delete run_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(run_->exit_code, 0) << run_->err; }
  static TempDir* dir_;
  static CliRun* run_;
};
TempDir* SampleRun::dir_ = nullptr;
CliRun* SampleRun::run_ = nullptr;

TEST_F(SampleRun, WritesStanCsvChainsAndADiagnosticsTable) {
  for (int c = 1; c <= 2; ++c) {
    const mcmc::StanCsv csv = mcmc::read_stan_csv(dir_->file("run/chain_" + std::to_string(c) + ".csv"));
    EXPECT_EQ(csv.draws.rows(), 100);
    const std::vector<std::string> first(csv.columns.begin(), csv.columns.begin() + 8);
    EXPECT_EQ(first, (std::vector<std::string>{"lp__", "accept_stat__", "stepsize__", "treedepth__", "n_leapfrog__",
                                               "divergent__", "energy__", "w.1"}));
    // 2-3-1 network: 13 weights, MacKay's four α, β, five monitored outputs, and the pointwise
    // log-likelihood of the 40 training rows (--log-lik auto: on for at most 1000 rows).
    EXPECT_EQ(csv.columns.size(), 7u + 13u + 4u + 1u + 5u + 40u);
    EXPECT_GT(csv.draws.col(csv.column("beta")).minCoeff(), 0.0);
    EXPECT_TRUE(csv.draws.allFinite());
  }
  for (const char* part : {"rhat", "ess_bulk", "lp__", "alpha.1", "beta", "f.1", "step size"}) {
    EXPECT_NE(run_->out.find(part), std::string::npos) << part << " missing from\n" << run_->out;
  }
  const std::string summary = read_text(dir_->file("run/summary.csv"));
  EXPECT_EQ(summary.rfind("variable,mean,sd,q5,q50,q95,rhat,ess_bulk,ess_tail,mcse_mean\nlp__,", 0), 0u) << summary;
}

TEST_F(SampleRun, DrawsDoNotDependOnTheThreadCount) {
  TempDir dir;
  ASSERT_EQ(occam(dir, kSmallRun + " --out one --threads 1").exit_code, 0);
  for (int c = 1; c <= 2; ++c) {
    const std::string name = "chain_" + std::to_string(c) + ".csv";
    const mcmc::StanCsv a = mcmc::read_stan_csv(dir.file("one/" + name));
    const mcmc::StanCsv b = mcmc::read_stan_csv(dir_->file("run/" + name));
    EXPECT_TRUE(a.draws == b.draws) << name;
  }
}

TEST_F(SampleRun, PredictFromDrawsGivesTheMonteCarloPredictive) {
  TempDir dir;
  const CliRun run = occam(dir, "predict --draws " + quote(dir_->file("run")) + " --data " +
                                    quote(testing::fixture_path("regression_test.csv")) +
                                    " --out pred.csv --draws-out y.csv --level 0.9");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const Table pred = read_csv(dir.file("pred.csv"));
  const Table test = read_csv(testing::fixture_path("regression_test.csv"));
  ASSERT_EQ(pred.values.rows(), test.values.rows());
  EXPECT_EQ(pred.columns, (std::vector<std::string>{"mean", "std", "lower", "upper"}));
  EXPECT_TRUE((pred.values.col(2).array() < pred.values.col(0).array()).all());
  EXPECT_TRUE((pred.values.col(0).array() < pred.values.col(3).array()).all());
  const Eigen::VectorXd y = select_columns(test, {"y"}).col(0);
  EXPECT_LT(std::sqrt((y - pred.values.col(0)).squaredNorm() / static_cast<double>(y.size())), 0.4);
  const Table draws = read_csv(dir.file("y.csv"));
  EXPECT_EQ(draws.values.rows(), 200);  // 2 chains × 100 draws
  EXPECT_EQ(draws.values.cols(), test.values.rows());
}

// The other samplers and initialisations run through the command line and write full files.
TEST(SampleCli, EverySamplerAndInitialisationWritesItsDraws) {
  const std::string base = "sample --data " + quote(testing::fixture_path("regression_train.csv")) +
                           " --target y --hidden 2 --chains 2 --warmup 100 --draws 40 --seed 4 --quiet";
  for (const std::string extra :
       {"--method metropolis --precondition laplace --hyper fixed", "--method hmc --init laplace --jitter 0.2",
        "--method nuts --init prior --metric dense", "--method nuts --parameterization noncentered --thin 2"}) {
    SCOPED_TRACE(extra);
    TempDir dir;
    const CliRun run = occam(dir, base + " " + extra + " --out run");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out, "");  // --quiet
    const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("run/chain_2.csv"));
    EXPECT_EQ(csv.draws.rows(), extra.find("--thin 2") != std::string::npos ? 20 : 40);
    EXPECT_TRUE(csv.draws.allFinite());
  }
}

// SGLD and SGHMC from the command line: full chain files with their sampler columns (every step
// taken, no energy), the summary, and a run that predict reads; a missing step size is refused.
TEST(SampleCli, StochasticGradientSamplersWriteTheirDraws) {
  const std::string base = "sample --data " + quote(testing::fixture_path("regression_train.csv")) +
                           " --target y --hidden 2 --chains 2 --warmup 100 --draws 40 --seed 4 --init prior --quiet"
                           " --batch-size 8";
  for (const std::string extra : {"--method sgld --step-size 1e-3",
                                  "--method sghmc --step-size 0.01 --friction 20 "
                                  "--precondition rmsprop --cycles 2 --hyper fixed"}) {
    SCOPED_TRACE(extra);
    TempDir dir;
    const CliRun run = occam(dir, base + " " + extra + " --out run");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("run/chain_2.csv"));
    ASSERT_EQ(csv.draws.rows(), 40);
    EXPECT_TRUE(csv.draws.col(0).allFinite());                           // lp__, the minibatch estimate
    EXPECT_TRUE((csv.draws.col(1).array() == 1.0).all());                // accept_stat__
    EXPECT_TRUE((csv.draws.col(4).array() == 1.0).all());                // n_leapfrog__
    EXPECT_TRUE(csv.draws.col(6).array().isNaN().all());                 // energy__
    EXPECT_TRUE(csv.draws.rightCols(csv.draws.cols() - 7).allFinite());  // w, α, β, f, log_lik
    EXPECT_TRUE(fs::exists(dir.file("run/summary.csv")));
    const CliRun predict = occam(
        dir, "predict --draws run --data " + quote(testing::fixture_path("regression_test.csv")) + " --out pred.csv");
    EXPECT_EQ(predict.exit_code, 0) << predict.err;
    EXPECT_EQ(occam(dir, "summary run").exit_code, 0);
  }
  TempDir dir;
  const CliRun no_step = occam(dir, base + " --method sgld --out run");
  EXPECT_EQ(no_step.exit_code, 2);
  EXPECT_NE(no_step.err.find("--method sgld needs --step-size"), std::string::npos) << no_step.err;
  const CliRun rmsprop = occam(dir, base + " --method nuts --precondition rmsprop --out run");
  EXPECT_EQ(rmsprop.exit_code, 2);
  EXPECT_NE(rmsprop.err.find("--precondition rmsprop is for --method sgld and sghmc"), std::string::npos)
      << rmsprop.err;
  const CliRun batch = occam(dir, base + " --method hmc --out run");  // base has --batch-size
  EXPECT_EQ(batch.exit_code, 2);
  EXPECT_NE(batch.err.find("--batch-size applies to --method sgld and sghmc only"), std::string::npos) << batch.err;
}

TEST(SampleCli, DemoMcmcWritesItsFiles) {
  TempDir dir;
  const CliRun run = occam(dir, "demo mcmc --out-dir out --chains 1 --warmup 50 --draws 50");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* name : {"mcmc_prior_draws_h1.csv", "mcmc_posterior_draws_h50.csv", "mcmc_band_h50.csv",
                           "mcmc_trace_h1.csv", "mcmc_summary_h50.csv", "mcmc.gp"}) {
    EXPECT_TRUE(fs::exists(dir.path() / "out" / name)) << name;
  }
  const Table band = read_csv(dir.file("out/mcmc_band_h50.csv"));
  ASSERT_GE(band.values.cols(), 4);
  EXPECT_TRUE(
      (band.values.col(band.values.cols() - 2).array() < band.values.col(band.values.cols() - 1).array()).all());
}

TEST(SampleCli, BadOptionsAreRefused) {
  TempDir dir;
  EXPECT_EQ(occam(dir, kSmallRun + " --method gibbs").exit_code, 1);
  EXPECT_EQ(occam(dir, kSmallRun + " --thin 0").exit_code, 1);
  const CliRun run = occam(
      dir, "predict --model m.json --draws-out y.csv --data " + quote(testing::fixture_path("regression_test.csv")));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--draws-out needs --draws"), std::string::npos) << run.err;
  const CliRun missing =
      occam(dir, "predict --draws nowhere --data " + quote(testing::fixture_path("regression_test.csv")));
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
}

// Ctrl-C in the middle of sampling: the process exits 130 and every chain file is valid Stan CSV
// holding the draws made so far, closed by its timing comment.
TEST(SampleCli, SigintStopsCleanlyWithValidFiles) {
  TempDir dir;
  const std::string out = dir.file("run");
  // Ctrl-C once both chains have written a few draws.
  const auto lines = [&](int c) {
    const std::string text = read_text(out + "/chain_" + std::to_string(c) + ".csv");
    return std::count(text.begin(), text.end(), '\n');
  };
  const int status = testing::interrupt_occam(
      {"sample", "--data", testing::fixture_path("regression_train.csv"), "--target", "y", "--hidden", "3", "--chains",
       "2", "--warmup", "50", "--draws", "100000000", "--init", "prior", "--out", out,
       // Never meant to finish: its draws would not fit in memory, which --max-memory would refuse.
       "--max-memory", "none"},
      [&] { return lines(1) >= 60 && lines(2) >= 60; }, testing::kReadyTimeout);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  for (int c = 1; c <= 2; ++c) {
    const std::string path = out + "/chain_" + std::to_string(c) + ".csv";
    const mcmc::StanCsv csv = mcmc::read_stan_csv(path);
    EXPECT_GT(csv.draws.rows(), 0);
    EXPECT_LT(csv.draws.rows(), 100000000);
    EXPECT_TRUE(csv.draws.allFinite());
    const std::string text = read_text(path);
    EXPECT_EQ(text.back(), '\n');
    EXPECT_NE(text.find("Interrupted after"), std::string::npos);
    EXPECT_EQ(text.find("Elapsed Time"), std::string::npos);
  }
  EXPECT_TRUE(fs::exists(out + "/model.json"));
}

}  // namespace
}  // namespace occam

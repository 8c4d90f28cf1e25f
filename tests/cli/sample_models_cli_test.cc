// `occam sample` takes the model options of `occam fit`: every likelihood and every prior runs,
// writes its hyperparameter columns, and `occam predict --draws` answers on the run folder in the
// columns a fitted model of the same kind answers in. Ctrl-C during the chains' MAP fits stops
// them at once.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/mcmc/stan_csv.h"
#include "occam/rng.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::occam;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

// 80 rows of x1, x2 ~ N(0, 1) with, per likelihood, its own target: a real y, a 0/1 flag, a
// count with its log exposure, and a class label.
void write_tables(const TempDir& dir) {
  Rng rng(7);
  std::ofstream real(dir.file("real.csv")), binary(dir.file("binary.csv")), counts(dir.file("counts.csv")),
      classes(dir.file("classes.csv"));
  real << "x1,x2,y\n";
  binary << "x1,x2,flag\n";
  counts << "x1,x2,log_exposure,count\n";
  classes << "x1,x2,animal\n";
  const char* labels[] = {"cat", "dog", "bird"};
  for (int n = 0; n < 80; ++n) {
    const double x1 = rng.normal(), x2 = rng.normal();
    real << x1 << ',' << x2 << ',' << x1 - 0.5 * x2 + 0.3 * rng.normal() << '\n';
    binary << x1 << ',' << x2 << ',' << (rng.uniform() < 1 / (1 + std::exp(-2 * x1)) ? 1 : 0) << '\n';
    const double log_exposure = std::log(0.5 + 2 * rng.uniform());
    const double rate = std::exp(0.5 * x1 + log_exposure);
    int count = 0;
    for (double p = std::exp(-rate), c = p, v = rng.uniform(); v > c; c += (p *= rate / ++count)) {
    }
    counts << x1 << ',' << x2 << ',' << log_exposure << ',' << count << '\n';
    classes << x1 << ',' << x2 << ',' << labels[x1 > 0.5 ? 0 : (x2 > 0 ? 1 : 2)] << '\n';
  }
}

const std::string kShort = " --chains 2 --warmup 150 --draws 100 --seed 3 --quiet";

// The columns of a run's first chain file.
std::vector<std::string> chain_columns(const TempDir& dir, const std::string& run) {
  return mcmc::read_stan_csv(dir.file(run + "/chain_1.csv")).columns;
}

bool has(const std::vector<std::string>& columns, const std::string& name) {
  return std::find(columns.begin(), columns.end(), name) != columns.end();
}

// The first line of a CSV text.
std::string header(const std::string& text) { return text.substr(0, text.find('\n')); }

struct Case {
  const char* name;
  std::string options;  // the data, target and model options
  std::string predict_header;
};

TEST(SampleModels, EveryLikelihoodSamplesAndPredictsFromTheRunFolder) {
  TempDir dir;
  write_tables(dir);
  const Case cases[] = {
      {"linear", "--data real.csv --target y --model linear", "mean,std,lower,upper"},
      {"bernoulli", "--data binary.csv --target flag --model linear --likelihood bernoulli", "p_0,p_1"},
      {"poisson", "--data counts.csv --target count --model linear --likelihood poisson --offset log_exposure",
       "mean,std,lower,upper"},
      {"categorical", "--data classes.csv --target animal --hidden 2 --likelihood categorical", "p_bird,p_cat,p_dog"},
      {"hetero", "--data real.csv --target y --hidden 2 --likelihood hetero", "mean,std,lower,upper"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string run = std::string("run_") + c.name;
    const CliRun sample = occam(dir, "sample " + c.options + kShort + " --out " + run);
    ASSERT_EQ(sample.exit_code, 0) << sample.err;
    const std::vector<std::string> columns = chain_columns(dir, run);
    EXPECT_TRUE(has(columns, "alpha.1"));
    EXPECT_EQ(has(columns, "beta"), std::string(c.name) == "linear");
    EXPECT_TRUE(has(columns, "log_lik.80"));
    const std::string data = c.options.substr(7, c.options.find(' ', 7) - 7);
    const CliRun predict = occam(dir, "predict --draws " + run + " --data " + data);
    ASSERT_EQ(predict.exit_code, 0) << predict.err;
    EXPECT_EQ(header(predict.out), c.predict_header);
    EXPECT_EQ(std::count(predict.out.begin(), predict.out.end(), '\n'), 81);
  }
}

TEST(SampleModels, EveryPriorSamplesItsHyperparameters) {
  TempDir dir;
  write_tables(dir);
  const std::string base = "sample --data real.csv --target y --model linear" + kShort;
  const CliRun ard = occam(dir, base + " --prior ard --out ard");
  ASSERT_EQ(ard.exit_code, 0) << ard.err;
  // One α per input, and the intercept's.
  EXPECT_TRUE(has(chain_columns(dir, "ard"), "alpha.3"));
  // x1 and x2 as the two nodes of a chain graph.
  const CliRun laplacian = occam(dir, base + " --prior laplacian --grid 2 --out lap");
  ASSERT_EQ(laplacian.exit_code, 0) << laplacian.err;
  const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("lap/chain_1.csv"));
  const Eigen::Index smoothing = csv.column("smoothing");
  EXPECT_TRUE((csv.draws.col(smoothing).array() > 0.0).all());
  // λ_s moves: the draws are not one value.
  EXPECT_GT(csv.draws.col(smoothing).maxCoeff() - csv.draws.col(smoothing).minCoeff(), 0.0);
  EXPECT_EQ(occam(dir, "predict --draws lap --data real.csv").exit_code, 0);
  const CliRun fixed = occam(dir, base + " --prior ridge --hyper fixed --alpha 2 --beta 4 --out fixed");
  ASSERT_EQ(fixed.exit_code, 0) << fixed.err;
  EXPECT_FALSE(has(chain_columns(dir, "fixed"), "alpha.1"));
}

TEST(SampleModels, OptionsThatDoNotFitTheModelAreRefusedByName) {
  TempDir dir;
  write_tables(dir);
  const CliRun beta = occam(dir, "sample --data binary.csv --target flag --likelihood bernoulli --beta 3" + kShort);
  EXPECT_EQ(beta.exit_code, 2);
  EXPECT_NE(beta.err.find("--beta applies to --likelihood gaussian only"), std::string::npos) << beta.err;
  const CliRun hidden = occam(dir, "sample --data real.csv --target y --model linear --hidden 3" + kShort);
  EXPECT_EQ(hidden.exit_code, 2);
  EXPECT_NE(hidden.err.find("--hidden applies to --model mlp only"), std::string::npos) << hidden.err;
  const CliRun offset = occam(dir, "sample --data real.csv --target y --offset log_exposure" + kShort);
  EXPECT_EQ(offset.exit_code, 2);
  EXPECT_NE(offset.err.find("--offset applies to --likelihood poisson only"), std::string::npos) << offset.err;
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

// 4000 rows of 8 inputs: a network of 100 tanh units (1001 weights) fits its MAP by
// Levenberg–Marquardt for minutes here.
void write_large_table(const std::string& path) {
  Rng rng(9);
  std::ofstream out(path);
  for (int d = 1; d <= 8; ++d) out << 'x' << d << ',';
  out << "y\n";
  for (int n = 0; n < 4000; ++n) {
    double y = 0;
    for (int d = 0; d < 8; ++d) {
      const double x = rng.normal();
      y += std::sin(x * (d + 1));
      out << x << ',';
    }
    out << y << '\n';
  }
}

// `occam sample` on that table with `options`, Ctrl-C once ready(out) holds, and then a valid
// interrupted run in which no chain made an iteration: exit 130, run.json sealed `interrupted`,
// each chain file its header and no draws.
void expect_sigint_stops_before_sampling(const std::vector<std::string>& options,
                                         const std::function<bool(const std::string& out)>& ready) {
  TempDir dir;
  write_large_table(dir.file("big.csv"));
  const std::string out = dir.file("run");
  std::vector<std::string> args = {
      "sample", "--data", dir.file("big.csv"), "--target", "y", "--hidden", "100", "--chains", "2", "--out", out};
  args.insert(args.end(), options.begin(), options.end());
  const auto start = std::chrono::steady_clock::now();
  const int status = testing::interrupt_occam(
      args, [&] { return ready(out); }, testing::kReadyTimeout);
  // A guard against the old behaviour (the MAP fits run to their end first), not a timing.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(120));
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const nlohmann::json index = nlohmann::json::parse(read_text(out + "/run.json"));
  EXPECT_EQ(index.at("status"), "interrupted");
  for (const nlohmann::json& chain : index.at("chains")) EXPECT_EQ(chain.at("iterations"), 0) << index.dump();
  for (int c = 1; c <= static_cast<int>(index.at("chains").size()); ++c) {
    const mcmc::StanCsv csv = mcmc::read_stan_csv(out + "/chain_" + std::to_string(c) + ".csv");
    EXPECT_EQ(csv.draws.rows(), 0);
  }
}

// Ctrl-C while the chains fit their MAP starting points (signalled once model.json is written,
// just before): the fits stop at their next iteration and no chain makes one. Before, the signal
// was seen only once sampling began, after the fits.
TEST(SampleModels, SigintDuringTheMapInitialisationStopsAtOnce) {
  expect_sigint_stops_before_sampling({"--init", "map"},
                                      [](const std::string& out) { return fs::exists(out + "/model.json"); });
}

// The same during the one MAP fit of --precondition laplace, made before the run folder exists:
// the signal is sent two seconds in, while it runs.
TEST(SampleModels, SigintDuringTheLaplacePreconditionerStopsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  expect_sigint_stops_before_sampling({"--init", "prior", "--precondition", "laplace"}, [start](const std::string&) {
    return std::chrono::steady_clock::now() - start > std::chrono::seconds(2);
  });
}

}  // namespace
}  // namespace occam

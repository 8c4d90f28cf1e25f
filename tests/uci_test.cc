// The UCI benchmark end to end (bench/uci_benchmark.cc, the `occam_uci` program): a quick run on
// the first three published splits of yacht and Boston housing (tests/data/uci) with MAP-CV and
// Laplace-evidence must give finite numbers, a test RMSE below the target's standard deviation
// (better than predicting the mean) and a 95% interval coverage in [0.5, 1]; a second run must
// find every row done and leave the file as it was; an interrupted last row must be redone.
// vi-meanfield and nuts get the same checks on yacht alone.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "occam/status.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"
#include "uci/uci_data.h"
#include "uci/uci_methods.h"

namespace occam {
namespace {

using testing::TempDir;
using testing::quote;
using testing::read_text;

struct UciRun {
  int exit_code = -1;
  std::string err;
};

UciRun occam_uci(const TempDir& dir, const std::string& args) {
  const std::string err = dir.file(".stderr");
  const std::string command = quote(OCCAM_UCI_PATH) + " --data-dir " + quote(std::string(OCCAM_TEST_DATA_DIR) + "/uci") +
                              " " + args + " >/dev/null 2>" + quote(err);
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(err)};
}

struct Row {
  std::string dataset, method, termination;
  int split = -1;
  double rmse = NAN, test_ll = NAN, coverage = NAN, seconds = NAN;
};

std::vector<Row> read_rows(const std::string& path) {
  std::istringstream in(read_text(path));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "dataset,split,method,rmse,test_ll,coverage95,seconds,termination");
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> c;
    std::stringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) c.push_back(cell);
    EXPECT_EQ(c.size(), 8u) << line;
    if (c.size() != 8) continue;
    rows.push_back({c[0], c[2], c[7], std::stoi(c[1]), std::stod(c[3]), std::stod(c[4]), std::stod(c[5]), std::stod(c[6])});
  }
  return rows;
}

// The population standard deviation of the target over the whole data set.
double target_std(const std::string& name) {
  const uci::UciDataset d = uci::load_dataset(std::string(OCCAM_TEST_DATA_DIR) + "/uci", name);
  const Eigen::ArrayXd y = d.data.col(d.target).array();
  return std::sqrt((y - y.mean()).square().mean());
}

TEST(UciQuickRun, ThreeSplitsOfYachtAndBostonAreSaneAndResumable) {
  TempDir dir;
  const std::string out = dir.file("results.csv");
  // A small budget: this checks the pipeline, not the numbers of docs/RESULTS.md. The last row
  // (yacht split 2, laplace) is the cheap one the resume check redoes.
  const std::string args =
      "--datasets bostonHousing,yacht --splits 0-2 --methods map-cv,laplace --cv-folds 3 --max-map-iterations 150 "
      "--max-rounds 3 --out " +
      quote(out);
  const UciRun first = occam_uci(dir, args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<Row> rows = read_rows(out);
  ASSERT_EQ(rows.size(), 12u) << first.err;
  std::set<std::tuple<std::string, int, std::string>> keys;
  const std::map<std::string, double> sd = {{"yacht", target_std("yacht")}, {"bostonHousing", target_std("bostonHousing")}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.dataset + " split " + std::to_string(r.split) + " " + r.method);
    keys.emplace(r.dataset, r.split, r.method);
    EXPECT_TRUE(std::isfinite(r.rmse) && std::isfinite(r.test_ll) && std::isfinite(r.coverage));
    EXPECT_LT(r.rmse, sd.at(r.dataset));
    EXPECT_GE(r.coverage, 0.5);
    EXPECT_LE(r.coverage, 1.0);
    EXPECT_GT(r.seconds, 0.0);
    EXPECT_NE(r.termination, "failure");
  }
  EXPECT_EQ(keys.size(), 12u);  // every (dataset, split, method) once

  // A second run finds every row done: nothing is fitted and the file is unchanged.
  const std::string before = read_text(out);
  const UciRun again = occam_uci(dir, args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_text(out), before);
  EXPECT_NE(again.err.find("12 already there"), std::string::npos) << again.err;

  // A last row cut short by an interrupted write is dropped and redone.
  const std::size_t last = before.rfind('\n', before.size() - 2) + 1;
  const std::string cut = before.substr(0, last + 12);
  std::ofstream(out, std::ios::binary | std::ios::trunc) << cut;
  const UciRun resumed = occam_uci(dir, args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("11 already there"), std::string::npos) << resumed.err;
  const std::vector<Row> redone = read_rows(out);
  ASSERT_EQ(redone.size(), 12u);
  // Same seed, same numbers: the redone row equals the one it replaces.
  EXPECT_EQ(redone.back().rmse, rows.back().rmse);
  EXPECT_EQ(redone.back().test_ll, rows.back().test_ll);
}

// The variational method joins the same pipeline: the same sanity checks on three yacht splits.
TEST(UciQuickRun, VariationalMethodIsSaneOnYacht) {
  TempDir dir;
  const std::string out = dir.file("results.csv");
  const UciRun run = occam_uci(dir, "--datasets yacht --splits 0-2 --methods vi-meanfield --max-map-iterations 150 "
                                    "--out " + quote(out));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<Row> rows = read_rows(out);
  ASSERT_EQ(rows.size(), 3u) << run.err;
  const double sd = target_std("yacht");
  for (const Row& r : rows) {
    SCOPED_TRACE("yacht split " + std::to_string(r.split));
    EXPECT_EQ(r.method, "vi-meanfield");
    EXPECT_TRUE(std::isfinite(r.rmse) && std::isfinite(r.test_ll) && std::isfinite(r.coverage));
    EXPECT_LT(r.rmse, sd);
    EXPECT_GE(r.coverage, 0.5);
    EXPECT_LE(r.coverage, 1.0);
    EXPECT_NE(r.termination, "failure");
  }
}

// NUTS with Gibbs hyperparameters joins the same pipeline: the same sanity checks on two yacht
// splits under a tiny budget (2 chains × (100 + 100), trees of depth ≤ 5, short MAP starts); a
// second run leaves the file unchanged, and one thread gives the same rows as two.
TEST(UciQuickRun, NutsIsSaneOnYachtAndIndependentOfThreads) {
  TempDir dir;
  const std::string out = dir.file("results.csv");
  const std::string budget = "--datasets yacht --splits 0-1 --methods nuts --nuts-chains 2 --nuts-warmup 100 "
                             "--nuts-draws 100 --nuts-max-depth 5 --max-map-iterations 150 ";
  const std::string args = budget + "--out " + quote(out);
  const UciRun run = occam_uci(dir, args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<Row> rows = read_rows(out);
  ASSERT_EQ(rows.size(), 2u) << run.err;
  const double sd = target_std("yacht");
  for (const Row& r : rows) {
    SCOPED_TRACE("yacht split " + std::to_string(r.split));
    EXPECT_EQ(r.method, "nuts");
    EXPECT_TRUE(std::isfinite(r.rmse) && std::isfinite(r.test_ll) && std::isfinite(r.coverage));
    EXPECT_LT(r.rmse, sd);
    EXPECT_GE(r.coverage, 0.5);
    EXPECT_LE(r.coverage, 1.0);
    EXPECT_GT(r.seconds, 0.0);
    // Chains this short do not converge; the word says so, and the report marks the row.
    EXPECT_TRUE(r.termination == "converged" || r.termination == "not_converged") << r.termination;
  }
  EXPECT_NE(run.err.find("max R-hat"), std::string::npos) << run.err;

  const std::string before = read_text(out);
  const UciRun again = occam_uci(dir, args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_text(out), before);
  EXPECT_NE(again.err.find("2 already there"), std::string::npos) << again.err;

  const std::string one_thread = dir.file("one_thread.csv");
  const UciRun serial = occam_uci(dir, budget + "--nuts-threads 1 --out " + quote(one_thread));
  ASSERT_EQ(serial.exit_code, 0) << serial.err;
  const std::vector<Row> serial_rows = read_rows(one_thread);
  ASSERT_EQ(serial_rows.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(serial_rows[i].rmse, rows[i].rmse);
    EXPECT_EQ(serial_rows[i].test_ll, rows[i].test_ll);
    EXPECT_EQ(serial_rows[i].coverage, rows[i].coverage);
  }
}

TEST(UciQuickRun, BadArgumentsFailBeforeAnyFit) {
  TempDir dir;
  const std::string out = dir.file("results.csv");
  UciRun r = occam_uci(dir, "--methods no-such-method --out " + quote(out));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown method 'no-such-method'"), std::string::npos) << r.err;
  r = occam_uci(dir, "--datasets nowhere --out " + quote(out));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no data set 'nowhere'"), std::string::npos) << r.err;
  r = occam_uci(dir, "--datasets yacht --splits 3-1 --out " + quote(out));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--splits"), std::string::npos) << r.err;
  // An empty file is started like a new one (the run then stops on splits no data set has).
  std::ofstream(dir.file("empty.csv")).flush();
  r = occam_uci(dir, "--datasets yacht --splits 7 --out " + quote(dir.file("empty.csv")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("none of the selected data sets has these splits"), std::string::npos) << r.err;
  EXPECT_EQ(read_text(dir.file("empty.csv")), "dataset,split,method,rmse,test_ll,coverage95,seconds,termination\n");
  std::ofstream(dir.file("other.csv")) << "a,b\n1,2\n";
  r = occam_uci(dir, "--datasets yacht --out " + quote(dir.file("other.csv")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a results file"), std::string::npos) << r.err;
}

TEST(UciData, SplitsAreDisjointAndCoverTheData) {
  const uci::UciDataset d = uci::load_dataset(std::string(OCCAM_TEST_DATA_DIR) + "/uci", "yacht");
  EXPECT_EQ(d.data.rows(), 308);
  EXPECT_EQ(d.features.size(), 6u);
  EXPECT_EQ(d.target, 6);
  EXPECT_EQ(d.num_splits, 3);
  EXPECT_EQ(d.hidden_units, 50);
  const uci::UciSplit s = uci::load_split(d, 1);
  EXPECT_EQ(s.train.X.rows() + s.test.X.rows(), d.data.rows());
  EXPECT_EQ(s.train.X.cols(), 6);
  EXPECT_THROW(uci::load_split(d, 3), Error);
}

TEST(UciScore, GaussianLogLikelihoodRmseAndCoverage) {
  // Residuals 0, 1.9σ, −2σ, 3σ with σ = 2: RMSE, mean log N(y; μ, σ²) and the 95% coverage by hand.
  uci::MethodOutput p;
  p.mean = Eigen::Vector4d(1.0, 2.0, 3.0, 4.0);
  p.std = Eigen::Vector4d::Constant(2.0);
  const Eigen::Vector4d z(0.0, 1.9, -2.0, 3.0);
  const Eigen::VectorXd y = p.mean + 2.0 * z;
  const uci::SplitMetrics m = uci::score(p, y);
  EXPECT_NEAR(m.rmse, 2.0 * std::sqrt(z.squaredNorm() / 4.0), 1e-12);
  EXPECT_NEAR(m.test_ll, -0.5 * std::log(2.0 * M_PI) - std::log(2.0) - 0.5 * z.squaredNorm() / 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(m.coverage95, 0.5);  // 0 and 1.9σ inside ±1.96σ; −2σ and 3σ outside
}

}  // namespace
}  // namespace occam

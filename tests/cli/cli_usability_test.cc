// The command line as a new user meets it: documented options that work, mistakes answered with
// a suggestion, a report that says what it holds, Ctrl-C that stops a fit cleanly, plots that
// read as plots.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "occam/data.h"
#include "occam/rng.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using Eigen::Index;
using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

TEST(CliUsability, VariationalHyperOptionsOfTheHelpWork) {
  TempDir dir;
  for (const auto& [hyper, kind] : {std::pair{"elbo", "gradient"}, std::pair{"elbo-closed", "closed-form"}}) {
    const CliRun run =
        occam(dir, "fit --data " + fixture("regression_train.csv") +
                       " --target y --hidden 3 --method vi --family meanfield --vi-iterations 400 --hyper " + hyper +
                       " --report r.json --quiet");
    ASSERT_EQ(run.exit_code, 0) << hyper << ": " << run.err;
    const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
    EXPECT_EQ(report["vi"]["hyper"], kind);
    EXPECT_EQ(report["options"]["hyper"], hyper);
  }
}

TEST(CliUsability, CvWritesItsPlotWhenQuietAndRefusesAMethod) {
  TempDir dir;
  const std::string base =
      "cv --data " + fixture("regression_train.csv") + " --target y --model linear --alphas 1e-2:1e2:4 --folds 3";
  const CliRun quiet = occam(dir, base + " --out-dir out --quiet");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");
  EXPECT_TRUE(fs::exists(dir.file("out/cv.csv")));
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(fs::exists(dir.file("out/cv.png")));
  }
  const CliRun vi = occam(dir, base + " --out-dir vi --method vi");
  EXPECT_EQ(vi.exit_code, 1) << vi.out;
  EXPECT_NE(vi.err.find("--method"), std::string::npos) << vi.err;
  EXPECT_FALSE(fs::exists(dir.file("vi")));
}

// A heteroscedastic network where half the data are noiseless: the MAP drives the noise variance
// there towards zero, and without a floor under it the Laplace approximation's A stopped being
// positive definite in double precision ("A is not positive definite", as on the UCI yacht data).
TEST(CliUsability, HeteroscedasticFitOfExactlyFittableDataSucceeds) {
  TempDir dir;
  {
    Rng rng(1);
    std::ofstream out(dir.file("half_noiseless.csv"));
    out << "x,y\n";
    for (int i = 0; i < 60; ++i) {
      const double x = -1.0 + 2.0 * rng.uniform();
      out << x << ',' << std::sin(3.0 * x) + (x > 0.0 ? 0.3 * rng.normal() : 0.0) << '\n';
    }
  }
  const CliRun run = occam(dir, "fit --data half_noiseless.csv --target y --likelihood hetero --hidden 5 --out m.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const CliRun predict = occam(dir, "predict --model m.json --data half_noiseless.csv --out p.csv");
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const Table p = read_csv(dir.file("p.csv"));
  EXPECT_TRUE(p.values.allFinite());
  // The learned noise is larger where the data are noisy.
  const Table data = read_csv(dir.file("half_noiseless.csv"));
  double noisy = 0.0, exact = 0.0;
  int n_noisy = 0, n_exact = 0;
  for (Index i = 0; i < data.values.rows(); ++i) {
    (data.values(i, 0) > 0.0 ? noisy : exact) += p.values(i, 1);
    ++(data.values(i, 0) > 0.0 ? n_noisy : n_exact);
  }
  EXPECT_GT(noisy / n_noisy, 3.0 * exact / n_exact);
}

TEST(CliUsability, MistypedCommandsAndOptionsGetASuggestion) {
  TempDir dir;
  const CliRun command = occam(dir, "fitt --data x.csv");
  EXPECT_EQ(command.exit_code, 1);
  EXPECT_NE(command.err.find("did you mean 'fit'?"), std::string::npos) << command.err;
  const CliRun option = occam(dir, "fit --data x.csv --target y --hiden 3");
  EXPECT_EQ(option.exit_code, 1);
  EXPECT_NE(option.err.find("did you mean '--hidden'?"), std::string::npos) << option.err;
  // A value out of range is described in words, not by the range's bounds (DBL_MAX in full).
  const CliRun alpha = occam(dir, "fit --data x.csv --target y --alpha -1");
  EXPECT_EQ(alpha.exit_code, 1);
  EXPECT_NE(alpha.err.find("--alpha: -1 is not positive"), std::string::npos) << alpha.err;
  EXPECT_LT(alpha.err.size(), 200u) << alpha.err;
}

TEST(CliUsability, TheReportNamesItsVersionCommandAndWhichValuesBelongTogether) {
  TempDir dir;
  const std::string args =
      "fit --data " + fixture("regression_train.csv") + " --target y --model linear --report r.json --quiet";
  ASSERT_EQ(occam(dir, args).exit_code, 0);
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
  EXPECT_EQ(report["occam_version"].get<std::string>().find("0."), 0u);
  EXPECT_NE(report["command_line"].get<std::string>().find("fit --data"), std::string::npos);
  EXPECT_NE(report["command_line"].get<std::string>().find("--report r.json"), std::string::npos);
  // The first round ran at the starting values, α = 1 and β = 10: each entry's log-evidence
  // belongs to the α, β beside it.
  const nlohmann::json& first = report["trace"].at(0);
  EXPECT_EQ(first["beta"], 10.0);
  for (const auto& [group, alpha] : first["alpha"].items()) EXPECT_EQ(alpha, 1.0) << group;
}

TEST(CliUsability, TheReportCarriesTheOptimalityConditionsAndTheLoop) {
  // Both loops of --hyper evidence on a small network: the report says which ran, gives the
  // gradient norms at the returned state, and says "converged" exactly when both are within
  // their tolerances.
  for (const std::string loop : {"joint", "outer"}) {
    TempDir dir;
    const std::string args = "fit --data " + fixture("regression_train.csv") +
                             " --target y --hidden 3 --evidence-loop " + loop + " --report r.json --quiet";
    const CliRun run = occam(dir, args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
    const nlohmann::json& o = report.at("optimality");
    EXPECT_EQ(o.at("loop"), loop);
    EXPECT_FALSE(o.at("stopping_test").get<std::string>().empty());
    const bool conditions = o.at("gradient_norm").get<double>() <= o.at("gradient_tolerance").get<double>() &&
                            o.at("hyper_gradient_norm").get<double>() <= o.at("hyper_gradient_tolerance").get<double>();
    EXPECT_EQ(report.at("termination") == "converged", conditions) << report.at("message");
    EXPECT_EQ(o.at("hyper_gradient").size(), report.at("alpha").size() + 1) << "every α, then β";
  }
  TempDir dir;
  const CliRun bad = occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --evidence-loop inner");
  EXPECT_EQ(bad.exit_code, 1);
}

TEST(CliUsability, CtrlCStopsAFitAndWritesNothing) {
  TempDir dir;
  // Two seconds into a fit of 10⁸ Adam epochs.
  const auto start = std::chrono::steady_clock::now();
  const int status = testing::interrupt_occam(
      {"fit", "--data", testing::fixture_path("regression_train.csv"), "--target", "y", "--hidden", "20", "--optimizer",
       "adam", "--max-iterations", "100000000", "--out", dir.file("model.json")},
      [&] { return std::chrono::steady_clock::now() - start > std::chrono::seconds(2); }, std::chrono::seconds(3));
  ASSERT_TRUE(WIFEXITED(status)) << "killed by the signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_TRUE(dir.entries().empty());
}

TEST(CliUsability, DemoPlotHasAxisLabelsAndItsLegendOutsideTheData) {
  TempDir dir;
  const CliRun run = occam(dir, "demo --out-dir out");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string gp = read_text(dir.file("out/demo.gp"));
  EXPECT_NE(gp.find("set xlabel 'x'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set ylabel 'y'"), std::string::npos) << gp;
  // The legend sits below the plots, where its sample point cannot be mistaken for a datum.
  EXPECT_NE(gp.find("set key below"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("set key top left"), std::string::npos) << gp;
}

// What the README says about the demo's picture, and the picture: the 50-unit network's ±2σ band
// widens beyond the data (|x| > 1) but not in the gap (|x| < 0.3), where the evidence has pinned
// f(0) to zero (its biases get α ≈ 10¹⁰); the 1-unit network's band widens only inside the gap,
// where its one tanh step could lie.
TEST(CliUsability, DemoBandsBehaveAsTheReadmeSays) {
  const std::string readme = read_text(std::string(OCCAM_TEST_DATA_DIR) + "/../../README.md");
  EXPECT_NE(readme.find("widens beyond the data but not in the gap"), std::string::npos);
  EXPECT_NE(readme.find("widens only inside the gap"), std::string::npos);
  EXPECT_EQ(readme.find("widening in the gap and beyond the data"), std::string::npos);
  TempDir dir;
  ASSERT_EQ(occam(dir, "demo --out-dir out").exit_code, 0);
  for (const int h : {1, 50}) {
    const Table bands = read_csv(dir.file("out/predictions_h" + std::to_string(h) + ".csv"));
    const auto std_at = [&](double x) {
      Index row = 0;
      (bands.values.col(0).array() - x).abs().minCoeff(&row);
      return bands.values(row, 2);
    };
    double widest_in_gap = 0.0;
    for (Index i = 0; i < bands.values.rows(); ++i) {
      if (std::abs(bands.values(i, 0)) < 0.3) widest_in_gap = std::max(widest_in_gap, bands.values(i, 2));
    }
    const double at_data = 0.5 * (std_at(-0.65) + std_at(0.65));
    const double beyond = 0.5 * (std_at(-1.5) + std_at(1.5));
    SCOPED_TRACE("H = " + std::to_string(h));
    if (h == 50) {
      EXPECT_GT(beyond, 2.0 * at_data);
      EXPECT_LT(widest_in_gap, 1.2 * at_data);
    } else {
      EXPECT_LT(beyond, 1.2 * at_data);
      EXPECT_GT(widest_in_gap, 1.5 * at_data);
    }
  }
}

}  // namespace
}  // namespace occam

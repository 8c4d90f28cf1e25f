// `occam plot`: per kind of picture, the picture is written at the size asked for, and the data
// behind it are the run's, the model's and the report's own numbers (recomputed here through the
// library from the same files).

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/io.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/plot_data.h"
#include "occam/run_summary.h"
#include "occam/text.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"
#include "testing/toy_csv.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::occam;
using testing::TempDir;

// The width and height in a PNG's IHDR chunk (bytes 16–23, big-endian).
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& path) {
  const std::string bytes = testing::read_text(path);
  EXPECT_GE(bytes.size(), 24u) << path;
  EXPECT_EQ(bytes.substr(1, 3), "PNG") << path;
  if (bytes.size() < 24) return {0, 0};
  const auto word = [&bytes](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(bytes[at + k]);
    return v;
  };
  return {word(16), word(20)};
}

// The numbers of a .dat file: its blocks (separated by blank lines), each a list of rows.
std::vector<std::vector<std::vector<double>>> read_blocks(const std::string& path) {
  std::vector<std::vector<std::vector<double>>> blocks(1);
  std::ifstream in(path);
  std::string line;
  int blank = 0;
  while (std::getline(in, line)) {
    if (line.empty()) {
      ++blank;
      continue;
    }
    if (line[0] == '#') continue;
    if (blank > 0 && !blocks.back().empty()) blocks.emplace_back();
    blank = 0;
    std::istringstream row(line);
    std::vector<double> values;
    std::string cell;
    while (row >> cell) values.push_back(cell == "NaN" ? std::numeric_limits<double>::quiet_NaN() : std::stod(cell));
    blocks.back().push_back(values);
  }
  return blocks;
}

void write_split(const TempDir& dir, std::uint64_t seed) {
  testing::write_csv(dir.file("train.csv"), testing::linear_data(60, 2, 0.3, seed));
  testing::write_csv(dir.file("test.csv"), testing::linear_data(40, 2, 0.3, seed + 1));
}

TEST(PlotCli, SamplingRunTracesRanksAndHyperparametersAreTheRunsDraws) {
  TempDir dir;
  write_split(dir, 7);
  const testing::CliRun sampled = occam(dir,
                                        "sample --data train.csv --target y --model linear --chains 2 "
                                        "--warmup 150 --draws 200 --seed 3 --out run --quiet");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  const testing::CliRun plotted = occam(dir, "plot run --out-dir pictures");
  ASSERT_EQ(plotted.exit_code, 0) << plotted.err;

  const mcmc::SamplerSummary run = read_run_draws(dir.file("run"));
  // lp__ and the sampled hyperparameters, in the run's column order.
  std::vector<std::string> variables = {"lp__"};
  for (const std::string& c : run.columns) {
    if (c.starts_with("alpha") || c == "beta") variables.push_back(c);
  }
  ASSERT_GE(variables.size(), 3u);
  const std::uint32_t panels = static_cast<std::uint32_t>(variables.size());
  EXPECT_EQ(png_size(dir.file("pictures/trace.png")), std::make_pair(900u, 240u * panels));
  EXPECT_EQ(png_size(dir.file("pictures/rank.png")), std::make_pair(900u, 240u * panels));
  EXPECT_EQ(png_size(dir.file("pictures/hyper.png")), std::make_pair(900u, 240u * (panels - 1)));

  // trace.dat: one block per chain, the iteration then each variable's draws, exactly.
  const auto trace = read_blocks(dir.file("pictures/trace.dat"));
  ASSERT_EQ(trace.size(), 2u);
  for (std::size_t v = 0; v < variables.size(); ++v) {
    const Eigen::MatrixXd draws = run.column(variables[v]);
    for (std::size_t c = 0; c < 2; ++c) {
      ASSERT_EQ(trace[c].size(), 200u);
      for (Index s = 0; s < 200; ++s) {
        ASSERT_EQ(trace[c][static_cast<std::size_t>(s)][0], s + 1.0);
        ASSERT_DOUBLE_EQ(trace[c][static_cast<std::size_t>(s)][v + 1], draws(s, static_cast<Index>(c))) << variables[v];
      }
    }
  }
  // Each panel's title carries that variable's R-hat and ESS.
  const std::string trace_script = testing::read_text(dir.file("pictures/trace.gp"));
  for (const std::string& v : variables) {
    const mcmc::Diagnostics d = mcmc::diagnose(run.column(v));
    EXPECT_NE(trace_script.find(format("%s:  Rhat %.3f   ESS bulk %.0f", v.c_str(), d.rhat, d.ess_bulk)),
              std::string::npos)
        << v;
  }

  // rank.dat: one block per variable, 10 bins (200 draws / 20), each chain's counts summing to its draws.
  const auto ranks = read_blocks(dir.file("pictures/rank.dat"));
  ASSERT_EQ(ranks.size(), variables.size());
  for (std::size_t v = 0; v < variables.size(); ++v) {
    const Eigen::MatrixXi expected = rank_histograms(run.column(variables[v]), 10);
    ASSERT_EQ(ranks[v].size(), 10u);
    for (int b = 0; b < 10; ++b) {
      EXPECT_DOUBLE_EQ(ranks[v][static_cast<std::size_t>(b)][0], (b + 0.5) / 10);
      for (int c = 0; c < 2; ++c)
        EXPECT_EQ(ranks[v][static_cast<std::size_t>(b)][static_cast<std::size_t>(c + 1)], expected(b, c));
    }
    EXPECT_EQ(expected.colwise().sum(), Eigen::RowVector2i(200, 200));
  }

  // hyper.dat: per hyperparameter, a histogram of log10 of all its draws.
  const auto hyper = read_blocks(dir.file("pictures/hyper.dat"));
  ASSERT_EQ(hyper.size(), variables.size() - 1);
  for (std::size_t v = 1; v < variables.size(); ++v) {
    double total = 0.0;
    for (const auto& row : hyper[v - 1]) total += row[1];
    EXPECT_EQ(total, 400.0) << variables[v];
    // 30 bins of equal width from the smallest draw's log10 to the largest's.
    const Eigen::MatrixXd draws = run.column(variables[v]);
    ASSERT_EQ(hyper[v - 1].size(), 30u);
    const double half = 0.5 * (hyper[v - 1][1][0] - hyper[v - 1][0][0]);
    EXPECT_NEAR(hyper[v - 1].front()[0] - half, std::log10(draws.minCoeff()), 1e-9);
    EXPECT_NEAR(hyper[v - 1].back()[0] + half, std::log10(draws.maxCoeff()), 1e-9);
  }
}

TEST(PlotCli, ModelOnTestDataPredictedCalibrationAndBandAreTheModelsPredictions) {
  TempDir dir;
  write_split(dir, 11);
  ASSERT_EQ(occam(dir, "fit --data train.csv --target y --model linear --out model.json --quiet").exit_code, 0);
  const testing::CliRun plotted = occam(dir, "plot model.json --data test.csv --input x2 --level 0.9 --width 600");
  ASSERT_EQ(plotted.exit_code, 0) << plotted.err;
  for (const char* name : {"predicted", "calibration", "band"}) {
    EXPECT_EQ(png_size(dir.file(std::string("plots/") + name + ".png")), std::make_pair(600u, 400u)) << name;
  }

  const FittedModel model = load_model(dir.file("model.json"));
  const Table test = read_csv(dir.file("test.csv"));
  PredictOptions options;
  options.level = 0.9;
  const Prediction p = model.predict(test, options);
  const auto predicted = read_blocks(dir.file("plots/predicted.dat"));
  ASSERT_EQ(predicted[0].size(), 40u);
  for (std::size_t i = 0; i < 40; ++i) {
    const Index r = static_cast<Index>(i);
    EXPECT_DOUBLE_EQ(predicted[0][i][0], test.values(r, 2));
    EXPECT_DOUBLE_EQ(predicted[0][i][1], p.mean[r]);
    EXPECT_DOUBLE_EQ(predicted[0][i][2], p.lower[r]);
    EXPECT_DOUBLE_EQ(predicted[0][i][3], p.upper[r]);
  }

  // Calibration: at each level 0.05 … 0.95, the fraction of test targets inside that interval.
  const auto calibration = read_blocks(dir.file("plots/calibration.dat"));
  ASSERT_EQ(calibration[0].size(), 19u);
  for (std::size_t k = 0; k < 19; ++k) {
    PredictOptions at;
    at.level = 0.05 * static_cast<double>(k + 1);
    const Prediction q = model.predict(test, at);
    int inside = 0;
    for (Index r = 0; r < 40; ++r) inside += test.values(r, 2) >= q.lower[r] && test.values(r, 2) <= q.upper[r];
    EXPECT_NEAR(calibration[0][k][0], at.level, 1e-12);
    EXPECT_DOUBLE_EQ(calibration[0][k][1], inside / 40.0) << "level " << at.level;
    EXPECT_NEAR(calibration[0][k][3] - calibration[0][k][0], 2 * std::sqrt(at.level * (1 - at.level) / 40), 1e-9);
  }

  // The band along x2, x1 at its test mean, over x2's range widened by 5% each side.
  const auto band = read_blocks(dir.file("plots/band.dat"));
  ASSERT_EQ(band[0].size(), 200u);
  const double lo = test.values.col(1).minCoeff(), hi = test.values.col(1).maxCoeff();
  EXPECT_NEAR(band[0].front()[0], lo - 0.05 * (hi - lo), 1e-9);
  EXPECT_NEAR(band[0].back()[0], hi + 0.05 * (hi - lo), 1e-9);
  Eigen::MatrixXd grid(200, 2);
  for (Index i = 0; i < 200; ++i) grid.row(i) << test.values.col(0).mean(), band[0][static_cast<std::size_t>(i)][0];
  const Prediction along = model.predict(grid, options);
  for (Index i = 0; i < 200; i += 37) {
    EXPECT_NEAR(band[0][static_cast<std::size_t>(i)][1], along.mean[i], 1e-9 * (1 + std::abs(along.mean[i])));
    EXPECT_NEAR(band[0][static_cast<std::size_t>(i)][2], along.lower[i], 1e-9 * (1 + std::abs(along.lower[i])));
  }
  const auto points = read_blocks(dir.file("plots/band_data.dat"));
  ASSERT_EQ(points[0].size(), 40u);
  EXPECT_DOUBLE_EQ(points[0][5][0], test.values(5, 1));
  EXPECT_DOUBLE_EQ(points[0][5][1], test.values(5, 2));
}

TEST(PlotCli, ReportEvidenceAscentIsTheReportsTraceInPngAndSvg) {
  TempDir dir;
  testing::write_csv(dir.file("train.csv"), testing::gap_data(40, 0.1, 5));
  ASSERT_EQ(
      occam(dir, "fit --data train.csv --target y --hidden 3 --out model.json --report report.json --quiet").exit_code,
      0);
  ASSERT_EQ(occam(dir, "plot report.json --out-dir png").exit_code, 0);
  // A model file holds the same report; SVG at the size asked for.
  const testing::CliRun svg = occam(dir, "plot model.json --format svg --out-dir svg --width 700");
  ASSERT_EQ(svg.exit_code, 0) << svg.err;

  const nlohmann::json report = nlohmann::json::parse(testing::read_text(dir.file("report.json")));
  const nlohmann::json& trace = report["trace"];
  ASSERT_GE(trace.size(), 3u);
  EXPECT_EQ(png_size(dir.file("png/evidence.png")), std::make_pair(900u, 720u));  // log Z, α, β panels
  const std::string svg_text = testing::read_text(dir.file("svg/evidence.svg"));
  EXPECT_NE(svg_text.find("width=\"700\" height=\"720\""), std::string::npos) << svg_text.substr(0, 300);

  const auto rows = read_blocks(dir.file("png/evidence.dat"));
  ASSERT_EQ(rows[0].size(), trace.size());
  // Columns: round, log Z, β, then α per group in the report's (sorted) order, then accepted.
  std::vector<std::string> groups;
  for (const auto& [name, value] : trace[0]["alpha"].items()) groups.push_back(name);
  ASSERT_EQ(groups.size(), 4u);  // input weights, hidden biases, output weights, output bias
  for (std::size_t s = 0; s < trace.size(); ++s) {
    EXPECT_EQ(rows[0][s][0], trace[s]["iteration"].get<double>());
    EXPECT_DOUBLE_EQ(rows[0][s][1], trace[s]["log_evidence"].get<double>());
    EXPECT_DOUBLE_EQ(rows[0][s][2], trace[s]["beta"].get<double>());
    for (std::size_t g = 0; g < groups.size(); ++g) {
      EXPECT_DOUBLE_EQ(rows[0][s][3 + g], trace[s]["alpha"][groups[g]].get<double>()) << groups[g];
    }
    EXPECT_EQ(rows[0][s][3 + groups.size()], trace[s]["accepted"].get<bool>() ? 1.0 : 0.0);
  }
  EXPECT_EQ(testing::read_text(dir.file("png/evidence.dat")), testing::read_text(dir.file("svg/evidence.dat")));
}

TEST(PlotCli, RefusesWhatItCannotDraw) {
  TempDir dir;
  write_split(dir, 13);
  ASSERT_EQ(occam(dir,
                  "fit --data train.csv --target y --model linear --method map --hyper fixed --alpha 1 --beta 4 "
                  "--out map.json --report map_report.json --quiet")
                .exit_code,
            0);
  // A report without an evidence trace (α, β fixed), and --data with a report: invalid input / argument.
  testing::CliRun r = occam(dir, "plot map_report.json");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no evidence trace"), std::string::npos) << r.err;
  r = occam(dir, "plot map_report.json --data test.csv");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--data goes with a model file"), std::string::npos) << r.err;
  r = occam(dir, "plot map.json --data test.csv --input nope");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("'nope' is not an input of the model"), std::string::npos) << r.err;
  r = occam(dir, "plot train.csv");
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
}  // namespace occam

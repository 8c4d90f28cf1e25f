// occam demo — the evidence framework on a toy problem, no input files needed.
//
// Noisy samples of sin(πx) with a gap in the inputs, fitted by networks of 1 and 50 tanh hidden
// units (MacKay 1992a, b): the table shows which one the evidence prefers, and the plot shows
// prior and posterior function draws and the predictive error bars (README.md says where they
// widen, and a test holds it to that).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "commands.h"
#include "compare_table.h"
#include "demo_mcmc.h"
#include "gnuplot.h"
#include "interrupt.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/io.h"
#include "occam/predict.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "model_options.h"
#include "output.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct DemoArgs {
  std::string out_dir = "demo-output";
  std::uint64_t seed = 1;
};

constexpr Index kTrainSize = 60;
constexpr Index kTestSize = 200;
constexpr double kNoiseStd = 0.1;
constexpr Index kGridSize = 301;
constexpr double kGridLimit = 1.5;  // the grid reaches beyond the data (|x| ≤ 1) on both sides
constexpr int kDraws = 5;
const std::vector<Index> kHiddenSizes = {1, 50};

constexpr const char* kDemoExample = R"(
Example:
  occam demo --out-dir demo-output

Writes data.csv, test.csv, predictions_h<H>.csv (x, mean, std, mean ± 2 std), prior_draws_h<H>.csv
and posterior_draws_h<H>.csv (x and one column per function draw), demo.gp and, with gnuplot
installed, demo.png.

occam demo glm: a simulated neuron's receptive field from Poisson spike counts (occam demo glm --help).
occam demo mcmc: prior and posterior function draws by NUTS for 1 and 50 hidden units, with trace
plots (occam demo mcmc --help).)";

}  // namespace

// x uniform on [−1, −0.3] ∪ [0.3, 1] (half the points on each side), y = sin(πx) + N(0, 0.1²).
Dataset toy_data(Index m, Rng& rng) {
  Dataset data;
  data.X.resize(m, 1);
  data.Y.resize(m, 1);
  for (Index i = 0; i < m; ++i) {
    const double u = rng.uniform();
    const double x = (i % 2 == 0) ? -1.0 + 0.7 * u : 0.3 + 0.7 * u;
    data.X(i, 0) = x;
    data.Y(i, 0) = std::sin(std::numbers::pi * x) + kNoiseStd * rng.normal();
  }
  data.feature_names = {"x"};
  data.target_name = "y";
  return data;
}

namespace {

// x beside function draws mapped back to the target's units.
std::string draws_csv(const Eigen::VectorXd& x, const Eigen::MatrixXd& f, const Standardizer& s) {
  std::vector<std::string> header = {"x"};
  for (Index d = 0; d < f.cols(); ++d) header.push_back("draw_" + std::to_string(d + 1));
  Eigen::MatrixXd values(x.size(), f.cols() + 1);
  values.col(0) = x;
  values.rightCols(f.cols()) = s.targets_to_original(f);
  return format_csv(header, values);
}

// A 2 × 2 figure: for each network, its prior function draws, then the posterior (mean, ±2σ band
// and function draws) over the data.
std::string gnuplot_script(const std::string& terminal, const std::vector<CompareRow>& rows) {
  std::string gp = "# Plots the files of `occam demo`; run with: gnuplot demo.gp\n";
  gp += "set terminal " + terminal + " size 1400,1000\n";
  gp += "set output 'demo.png'\n";
  gp += "set datafile separator ','\n";
  gp += format("set xrange [%g:%g]\nset yrange [-3:3]\n", -kGridLimit, kGridLimit);
  // The legend below the plots: inside, its sample point for the data reads as one more datum.
  gp += "set key below horizontal\nset grid\nset xlabel 'x'\nset ylabel 'y'\n";
  gp += "set multiplot layout 2,2 title 'occam demo: y = sin(pi x) + noise, gap in (-0.3, 0.3)'\n";
  const std::string data = "'data.csv' using 1:2 with points pt 7 ps 0.6 lc rgb 'black' title 'data'";
  for (const CompareRow& row : rows) {
    const long long h = static_cast<long long>(row.hidden);
    gp += format("set title 'H = %lld: %d prior function draws (alpha from the evidence)'\n", h, kDraws);
    gp += format("plot for [i=2:%d] 'prior_draws_h%lld.csv' using 1:i with lines lc rgb '#999999' notitle, %s\n",
                 kDraws + 1, h, data.c_str());
    gp += format("set title 'H = %lld: posterior, log-evidence %.1f'\n", h, row.fit->summary.log_evidence);
    gp += format(
        "plot 'predictions_h%lld.csv' using 1:4:5 with filledcurves lc rgb '#cfe0f5' title 'mean +- 2 std', "
        "for [i=2:%d] 'posterior_draws_h%lld.csv' using 1:i with lines lc rgb '#7a9cc6' notitle, "
        "'predictions_h%lld.csv' using 1:2 with lines lw 2 lc rgb '#1f4e99' title 'predictive mean', %s\n",
        h, kDraws + 1, h, h, data.c_str());
  }
  gp += "unset multiplot\n";
  return gp;
}

void run_demo(const DemoArgs& args) {
  namespace fs = std::filesystem;
  make_output_directory(args.out_dir);
  const auto path = [&](const std::string& name) { return (fs::path(args.out_dir) / name).string(); };

  Rng data_rng(args.seed, /*stream=*/0);
  const Dataset train = toy_data(kTrainSize, data_rng);
  Rng test_rng(args.seed, /*stream=*/1);
  const Dataset test = toy_data(kTestSize, test_rng);
  Eigen::MatrixXd train_table(kTrainSize, 2);
  train_table << train.X, train.Y;
  write_file_atomic(path("data.csv"), format_csv({"x", "y"}, train_table));
  Eigen::MatrixXd test_table(kTestSize, 2);
  test_table << test.X, test.Y;
  write_file_atomic(path("test.csv"), format_csv({"x", "y"}, test_table));

  const Eigen::VectorXd grid = Eigen::VectorXd::LinSpaced(kGridSize, -kGridLimit, kGridLimit);
  ModelSpec spec;        // mlp, tanh, Gaussian, MacKay's four α groups, standardised
  LaplaceMethod method;  // the evidence, Gauss–Newton
  method.evidence.map.seed = args.seed;
  method.start.seed = args.seed;

  Progress progress(ProgressMode::kAuto);
  std::vector<CompareRow> rows;
  for (const Index h : kHiddenSizes) {
    CompareRow row;
    row.hidden = h;
    spec.network.hidden = {h};
    row.fit = fit(spec, train, method, progress_callback(&progress, format("H=%lld: ", static_cast<long long>(h))));
    if (row.fit->summary.termination == Termination::kAborted) throw Interrupted{"the demo stopped"};
    row.test = test_metrics(*row.fit, test.X, test.Y.col(0));
    const FittedModel& model = *row.fit;

    const Prediction p = model.predict(grid);
    Eigen::MatrixXd bands(kGridSize, 5);
    bands << grid, p.mean, p.std, p.mean - 2.0 * p.std, p.mean + 2.0 * p.std;
    write_file_atomic(path(format("predictions_h%lld.csv", static_cast<long long>(h))),
                      format_csv({"x", "mean", "std", "lower", "upper"}, bands));

    // Draws are of the network output f in standardised units, mapped back like the mean.
    const Eigen::MatrixXd grid_inputs = model.standardizer.transform_inputs(grid);
    Rng prior_rng(args.seed, /*stream=*/100 + static_cast<std::uint64_t>(h));
    const Eigen::MatrixXd prior_draws =
        prior_function_draws(*model.network, model.prior, grid_inputs, kDraws, prior_rng);
    write_file_atomic(path(format("prior_draws_h%lld.csv", static_cast<long long>(h))),
                      draws_csv(grid, prior_draws, model.standardizer));
    // Draws of the linearised network, the functions whose spread is the ±2σ band; the same
    // weights pushed through the nonlinear network spread wider (docs/evidence.md).
    Rng posterior_rng(args.seed, /*stream=*/200 + static_cast<std::uint64_t>(h));
    const Eigen::MatrixXd posterior_draws = linearized_function_draws(
        *model.network, std::get<LaplaceApproximation>(model.posterior), grid_inputs, kDraws, posterior_rng);
    write_file_atomic(path(format("posterior_draws_h%lld.csv", static_cast<long long>(h))),
                      draws_csv(grid, posterior_draws, model.standardizer));
    rows.push_back(std::move(row));
  }
  progress.clear();

  int best = -1;
  std::cout << format(
                   "occam demo: %lld noisy samples of sin(pi x), x in [-1, -0.3] and [0.3, 1]; "
                   "test set of %lld from the same distribution\n",
                   static_cast<long long>(kTrainSize), static_cast<long long>(kTestSize))
            << compare_table(rows, /*with_test=*/true, &best);

  write_file_atomic(path("demo.gp"), gnuplot_script(gnuplot_installed() ? gnuplot_png_terminal() : "pngcairo", rows));
  std::cout << "data written to " << args.out_dir << "/ (data.csv, test.csv, predictions_h*.csv, "
            << "prior_draws_h*.csv, posterior_draws_h*.csv, demo.gp)\n";
  render_plot(args.out_dir, "demo.gp", path("demo.png"), std::cout);
}

}  // namespace

Command add_demo_command(CLI::App& parent) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* command = parent.add_subcommand(
      "demo", "Fit networks of 1 and 50 hidden units to a toy problem and plot their error bars (no input needed)");
  command->add_option("--out-dir", args->out_dir, "directory for the data files and the plot (created if needed)");
  command->add_option("--seed", args->seed, "seed of the toy data, the initial weights and the function draws")
      ->check(Seed());
  command->footer(kDemoExample);
  const Command glm = add_demo_glm_command(*command);
  const Command mcmc = add_demo_mcmc_command(*command);
  return {command, [args, glm, mcmc] {
            if (glm.app->parsed()) {
              glm.run();
            } else if (mcmc.app->parsed()) {
              mcmc.run();
            } else {
              run_demo(*args);
            }
          }};
}

}  // namespace occam::cli

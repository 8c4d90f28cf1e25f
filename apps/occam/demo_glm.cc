// occam demo glm — a simulated neuron: Poisson spike counts from a smooth receptive field,
// fitted with the ridge prior and the graph-Laplacian smoothing prior (both set by the evidence)
// and with the ridge α chosen by cross-validation. Writes the true filter beside the estimates
// (CSV and PNG) and prints their errors.

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "gnuplot.h"
#include "interrupt.h"
#include "occam/cv.h"
#include "occam/fit.h"
#include "occam/receptive_field.h"
#include "occam/status.h"
#include "model_options.h"
#include "output.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct DemoGlmArgs {
  std::string out_dir = "demo-glm-output";
  std::string grid = "40";
  Index samples = 400;
  int folds = 5;
  std::uint64_t seed = 1;
};

constexpr const char* kDemoGlmExample = R"(
Example:
  occam demo glm --out-dir demo-glm-output             # a 1-D filter of 40 taps
  occam demo glm --grid 12x12 --samples 1500           # a 2-D receptive field

Writes filters.csv (the true filter and the three estimates), cv.csv (the CV and evidence curves
over the ridge α), demo_glm.gp and, with gnuplot, demo_glm.png.)";

struct Estimate {
  std::string method;
  std::string hyper;
  double log_evidence = 0.0;
  double error = 0.0;
  Eigen::VectorXd filter;
};

// A Poisson GLM of the spike counts on the stimulus: no standardisation, so that the filter is
// in the stimulus' units.
ModelSpec glm_spec(PriorKind kind, const ReceptiveField& rf) {
  ModelSpec spec;
  spec.network.kind = NetworkKind::kLinear;
  spec.likelihood.kind = LikelihoodKind::kPoisson;
  spec.prior.kind = kind;
  if (kind == PriorKind::kLaplacian) spec.prior.graph = rf.graph;
  spec.standardize = Standardize::kNone;
  return spec;
}

Estimate estimate(const ReceptiveField& rf, const std::string& method, const FittedModel& m) {
  if (m.summary.termination == Termination::kAborted) throw Interrupted{"the demo stopped"};
  if (m.summary.termination == Termination::kFailure) {
    throw Error(ErrorKind::kNumerical, "demo glm: the " + method + " fit failed: " + m.summary.message);
  }
  Estimate e;
  e.method = method;
  const auto names = m.prior.hyperparameter_names();
  const Eigen::VectorXd theta = m.prior.hyperparameters();
  for (std::size_t j = 0; j < names.size(); ++j) {
    e.hyper += (j ? ", " : "") + names[j] + " " + format("%.3g", theta[static_cast<Index>(j)]);
  }
  e.log_evidence = m.summary.log_evidence;
  e.filter = posterior_mean(m.posterior).head(rf.X.cols());
  e.error = (e.filter - rf.filter).norm() / rf.filter.norm();
  return e;
}

std::string script_1d(const std::string& terminal) {
  return "# Plots filters.csv of `occam demo glm`; run with: gnuplot demo_glm.gp\n"
         "set terminal " +
         terminal +
         " size 1000,600\nset output 'demo_glm.png'\n"
         "set termoption noenhanced\nset datafile separator ','\nset key autotitle columnhead top right\nset grid\n"
         "set xlabel 'filter tap'\nset ylabel 'weight'\n"
         "set title 'Receptive field from Poisson spike counts: true filter and estimates'\n"
         "plot 'filters.csv' using 1:2 with lines lw 3 lc rgb 'black', "
         "'' using 1:3 with linespoints lc rgb '#999999', "
         "'' using 1:4 with linespoints lw 2 lc rgb '#1f4e99', "
         "'' using 1:5 with linespoints lc rgb '#b2182b'\n";
}

std::string script_2d(const std::string& terminal, Index rows, Index cols, const std::vector<Estimate>& est) {
  std::string gp = "# Plots the filter_*.txt matrices of `occam demo glm`; run with: gnuplot demo_glm.gp\n";
  gp += "set terminal " + terminal + " size 1400,400\nset output 'demo_glm.png'\n";
  gp += "set view map\nset size ratio -1\nunset key\nset palette defined (-1 '#2166ac', 0 'white', 1 '#b2182b')\n";
  gp += format("set xrange [-0.5:%.1f]\nset yrange [%.1f:-0.5]\n", static_cast<double>(cols) - 0.5,
               static_cast<double>(rows) - 0.5);
  gp += "set multiplot layout 1,4 title 'Receptive field from Poisson spike counts'\n";
  const char* files[] = {"filter_true.txt", "filter_ridge.txt", "filter_smoothing.txt", "filter_cv.txt"};
  gp += "set title 'true filter'\nplot 'filter_true.txt' matrix with image\n";
  for (int i = 0; i < 3; ++i) {
    gp += format("set title '%s (error %.2f)'\nplot '%s' matrix with image\n",
                 est[static_cast<std::size_t>(i)].method.c_str(), est[static_cast<std::size_t>(i)].error, files[i + 1]);
  }
  gp += "unset multiplot\n";
  return gp;
}

std::string matrix_text(const Eigen::VectorXd& v, Index rows, Index cols) {
  std::string out;
  for (Index r = 0; r < rows; ++r) {
    for (Index c = 0; c < cols; ++c) out += format(c ? " %.10g" : "%.10g", v[r * cols + c]);
    out += '\n';
  }
  return out;
}

void run_demo_glm(const DemoGlmArgs& args) {
  const Graph graph = parse_grid(args.grid);
  ReceptiveFieldOptions options;
  const auto x = args.grid.find('x');
  options.rows = x == std::string::npos ? 1 : std::stoll(args.grid.substr(0, x));
  options.cols = graph.nodes / options.rows;
  options.samples = args.samples;
  options.seed = args.seed;
  const ReceptiveField rf = simulate_receptive_field(options);
  make_output_directory(args.out_dir);
  const auto path = [&](const std::string& name) { return (std::filesystem::path(args.out_dir) / name).string(); };

  Dataset data;
  data.X = rf.X;
  data.Y = rf.Y;
  Progress progress(ProgressMode::kAuto);
  std::vector<Estimate> est;
  est.push_back(estimate(rf, "ridge, evidence",
                         fit(glm_spec(PriorKind::kRidge, rf), data, LaplaceMethod{},
                             progress_callback(&progress, "ridge prior (evidence): "))));
  est.push_back(estimate(rf, "smoothing, evidence",
                         fit(glm_spec(PriorKind::kLaplacian, rf), data, LaplaceMethod{},
                             progress_callback(&progress, "smoothing prior (evidence): "))));
  CrossValidatedMethod cv;
  cv.cv.alphas = log_grid(1e-1, 1e4, 11);
  cv.cv.folds.folds = args.folds;
  cv.cv.folds.seed = args.seed;
  const FittedModel cv_fit =
      fit(glm_spec(PriorKind::kRidge, rf), data, cv, progress_callback(&progress, "ridge alpha by cross-validation: "));
  est.push_back(estimate(rf, "ridge, CV", cv_fit));
  const CvSummary& s = *cv_fit.summary.cv;
  const double alpha_cv = s.points[static_cast<std::size_t>(s.best_cv)].alpha;
  progress.clear();

  // The CV and evidence curves, as `occam cv` writes them.
  Eigen::MatrixXd curve(static_cast<Index>(s.points.size()), 4);
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    curve.row(static_cast<Index>(i)) << s.points[i].alpha, s.points[i].test_log_likelihood,
        s.points[i].test_log_likelihood_se, s.points[i].log_evidence;
  }
  write_file_atomic(path("cv.csv"),
                    format_csv({"alpha", "test_log_likelihood", "test_log_likelihood_se", "log_evidence"}, curve));
  const Index D = rf.X.cols();
  Eigen::MatrixXd filters(D, 5);
  filters.col(0) = Eigen::VectorXd::LinSpaced(D, 0, static_cast<double>(D - 1));
  filters.col(1) = rf.filter;
  for (int i = 0; i < 3; ++i) filters.col(2 + i) = est[static_cast<std::size_t>(i)].filter;
  write_file_atomic(path("filters.csv"),
                    format_csv({"tap", "true", "ridge_evidence", "smoothing_evidence", "ridge_cv"}, filters));
  const bool two_d = options.rows > 1;
  if (two_d) {
    write_file_atomic(path("filter_true.txt"), matrix_text(rf.filter, options.rows, options.cols));
    const char* names[] = {"filter_ridge.txt", "filter_smoothing.txt", "filter_cv.txt"};
    for (int i = 0; i < 3; ++i) {
      write_file_atomic(path(names[i]),
                        matrix_text(est[static_cast<std::size_t>(i)].filter, options.rows, options.cols));
    }
  }
  const bool gnuplot = gnuplot_installed();
  const std::string terminal = gnuplot ? gnuplot_png_terminal() : "pngcairo";
  write_file_atomic(path("demo_glm.gp"),
                    two_d ? script_2d(terminal, options.rows, options.cols, est) : script_1d(terminal));

  std::cout << format(
      "occam demo glm: %lld frames of white noise, Poisson counts from a %s receptive field "
      "(mean count %.3g)\n",
      static_cast<long long>(rf.X.rows()), args.grid.c_str(), rf.Y.mean());
  std::cout << format("%-22s %14s  %-50s\n", "method", "filter error", "hyperparameters (log-evidence)");
  for (const Estimate& e : est) {
    std::cout << format("%-22s %14.4f  %s (%.2f)\n", e.method.c_str(), e.error, e.hyper.c_str(), e.log_evidence);
  }
  std::cout << format("ridge alpha: CV picks %.3g, the evidence over the same grid %.3g\n", alpha_cv,
                      s.points[static_cast<std::size_t>(s.best_evidence)].alpha);
  std::cout << "filter error = |k_hat - k| / |k|\n";
  std::cout << "written: " << path("filters.csv") << ", " << path("cv.csv") << ", " << path("demo_glm.gp");
  if (gnuplot && run_gnuplot(args.out_dir, "demo_glm.gp")) std::cout << ", " << path("demo_glm.png");
  std::cout << '\n';
}

}  // namespace

Command add_demo_glm_command(CLI::App& demo) {
  auto args = std::make_shared<DemoGlmArgs>();
  CLI::App* command = demo.add_subcommand(
      "glm", "A simulated neuron: a receptive field from Poisson spike counts by ridge, smoothing prior and CV");
  command->add_option("--out-dir", args->out_dir, "directory for the data files and the plot (created if needed)");
  command->add_option("--grid", args->grid,
                      "the filter's layout: taps of a 1-D filter (e.g. 40) or ROWSxCOLS (e.g. 12x12)");
  command->add_option("--samples", args->samples, "stimulus frames (m)")->check(CLI::Range(10, 100000000));
  command->add_option("--folds", args->folds, "cross-validation folds")->check(CLI::Range(2, 100));
  command->add_option("--seed", args->seed, "seed of the simulation and of the folds")->check(Seed());
  command->footer(kDemoGlmExample);
  return {command, [args] { run_demo_glm(*args); }};
}

}  // namespace occam::cli

// occam cv — k-fold cross-validation over a grid of prior precisions, beside the evidence.
//
// Per grid value: the mean ± standard error over folds of the test log-likelihood and of the MSE
// (regression) or accuracy and Brier score (classification), and the Laplace log-evidence of the
// whole data set; the CV choice and the evidence choice are marked. One CSV, one table on
// standard output, one PNG with both curves (gnuplot).

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "gnuplot.h"
#include "interrupt.h"
#include "model_options.h"
#include "occam/cv.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/status.h"
#include "output.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct CvArgs {
  std::string data;
  std::string target;
  std::string alphas = "1e-3:1e3:25";
  int folds = 10;
  std::string out_dir = "cv-output";
  bool no_stratify = false;
  std::string progress;  // --progress, empty when not given
  bool quiet = false;
  ModelArgs model;
};

constexpr const char* kCvExample = R"(
Example:
  occam cv --data train.csv --target y --model linear --alphas 1e-3:1e3:25 --folds 10

For each value of the grid (α of every weight group; λ_s, the smoothing precision, with
--prior laplacian) the model is fitted on each training fold at that value (β, for a gaussian
likelihood, re-estimated by the evidence with the prior held) and scored on the held-out fold.
Folds are shuffled with --seed and stratified by class for bernoulli and categorical targets.
Writes <out-dir>/cv.csv, cv.gp and, with gnuplot, cv.png: the CV curve beside the Laplace
log-evidence of the whole data over the same grid (both per data point).)";

std::string cv_csv(const CvSummary& s) {
  std::vector<std::string> header = {"alpha", "test_log_likelihood", "test_log_likelihood_se"};
  if (s.classification) {
    header.insert(header.end(), {"accuracy", "accuracy_se", "brier", "brier_se"});
  } else {
    header.insert(header.end(), {"mse", "mse_se"});
  }
  header.insert(header.end(), {"log_evidence", "best_cv", "best_evidence"});
  Eigen::MatrixXd values(static_cast<Index>(s.points.size()), static_cast<Index>(header.size()));
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const CvPoint& p = s.points[i];
    std::vector<double> v = {p.alpha, p.test_log_likelihood, p.test_log_likelihood_se};
    if (s.classification) {
      v.insert(v.end(), {p.accuracy, p.accuracy_se, p.brier, p.brier_se});
    } else {
      v.insert(v.end(), {p.mse, p.mse_se});
    }
    v.insert(v.end(), {p.log_evidence, static_cast<int>(i) == s.best_cv ? 1.0 : 0.0,
                       static_cast<int>(i) == s.best_evidence ? 1.0 : 0.0});
    values.row(static_cast<Index>(i)) = Eigen::Map<const Eigen::RowVectorXd>(v.data(), static_cast<Index>(v.size()));
  }
  return format_csv(header, values);
}

std::string cv_table(const CvSummary& s, const char* name) {
  std::string out = format("%12s  %22s  %22s", name, "test log-lik / row", s.classification ? "accuracy" : "MSE");
  if (s.classification) out += format("  %20s", "Brier");
  out += format("  %14s\n", "log-evidence");
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const CvPoint& p = s.points[i];
    out += format("%12.4g  %12.5f ± %7.5f", p.alpha, p.test_log_likelihood, p.test_log_likelihood_se);
    if (s.classification) {
      out += format("  %12.4f ± %7.4f  %10.4f ± %7.4f", p.accuracy, p.accuracy_se, p.brier, p.brier_se);
    } else {
      out += format("  %12.5g ± %7.3g", p.mse, p.mse_se);
    }
    out += format("  %14.6g", p.log_evidence);
    if (static_cast<int>(i) == s.best_cv) out += "  <- CV";
    if (static_cast<int>(i) == s.best_evidence) out += "  <- evidence";
    if (p.failed_fits > 0) out += format("  (%d fits did not converge)", p.failed_fits);
    out += '\n';
  }
  return out;
}

std::string cv_script(const std::string& terminal, const CvSummary& s, Index m, const char* name) {
  std::string gp = "# Plots cv.csv of `occam cv`; run with: gnuplot cv.gp\n";
  gp += "set terminal " + terminal + " size 900,600\nset output 'cv.png'\n";
  gp +=
      "set termoption noenhanced\nset datafile separator ','\nset key autotitle columnhead\nset logscale x\nset grid\n";
  gp += format("set xlabel '%s'\nset ylabel 'per data point'\n", name);
  gp += "set key bottom center\n";
  gp += format("set title 'Cross-validation vs evidence: CV picks %.3g, the evidence %.3g'\n",
               s.points[static_cast<std::size_t>(s.best_cv)].alpha,
               s.best_evidence >= 0 ? s.points[static_cast<std::size_t>(s.best_evidence)].alpha : NAN);
  const int ev_col = s.classification ? 8 : 6;
  gp += format(
      "plot 'cv.csv' using 1:2:3 with yerrorlines lw 2 lc rgb '#1f4e99' title 'CV test log-likelihood (mean ± se)', "
      "'cv.csv' using 1:($%d/%lld) with linespoints lw 2 lc rgb '#b2182b' title 'log-evidence / m'\n",
      ev_col, static_cast<long long>(m));
  return gp;
}

struct CvPlan {
  ModelSpec spec;
  CvOptions options;
};

// The spec and cross-validation options the flags ask for, validated as far as they can be
// without the data; no file is read.
CvPlan plan_cv(const CLI::App& command, const CvArgs& args) {
  CvPlan plan{model_spec(command, args.model), {}};
  validate_spec(plan.spec, args.model);
  CvOptions& options = plan.options;
  options.alphas = parse_log_grid(args.alphas);
  options.folds.folds = args.folds;
  options.stratify = !args.no_stratify;
  options.fit = evidence_options(args.model);
  options.folds.seed = options.fit.map.seed;  // --seed shuffles the folds too
  options.memory.max_bytes = args.model.max_memory;
  options.target = plan.spec.prior.kind == PriorKind::kLaplacian ? CvTarget::kSmoothing : CvTarget::kAlpha;
  return plan;
}

void run_cv(const CLI::App& command, const CvArgs& args) {
  CvPlan plan = plan_cv(command, args);
  ModelSpec& spec = plan.spec;
  CvOptions& options = plan.options;
  const bool smoothing = options.target == CvTarget::kSmoothing;

  const Dataset data = read_data(args.data, args.target, args.model, &spec);
  options.validate(data.X.rows());
  check_fit_memory(spec, data, CrossValidatedMethod{options, {}, {}});
  make_output_directory(args.out_dir);  // before the work: a bad --out-dir fails at once
  for (const char* file : {"cv.csv", "cv.gp", "cv.png"}) {
    const std::string written = (std::filesystem::path(args.out_dir) / file).string();
    check_output_path({"--out-dir", written}, {{"--data", args.data}, {"--edges", args.model.edges}});
  }

  Progress progress(progress_mode(args.progress, args.quiet));
  const CvSummary s = cross_validate(spec, data, options, progress_callback(&progress));
  progress.clear();
  if (s.interrupted) throw Interrupted{"cross-validation stopped; nothing was written"};

  const std::string dir = args.out_dir;
  const auto path = [&dir](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  const char* name = smoothing ? "lambda_s (smoothing precision)" : "alpha (prior precision)";
  write_file_atomic(path("cv.csv"), cv_csv(s));
  const bool gnuplot = gnuplot_installed();
  write_file_atomic(path("cv.gp"), cv_script(gnuplot ? gnuplot_png_terminal() : "pngcairo", s, data.X.rows(), name));
  // The plot is one of the command's outputs, with or without --quiet.
  const bool plotted = gnuplot && run_gnuplot(dir, "cv.gp");
  if (args.quiet) return;
  std::cout << format("occam cv: %d-fold%s, %lld rows, %s\n", args.folds,
                      s.classification && options.stratify ? " stratified" : "", static_cast<long long>(data.X.rows()),
                      make_network(spec.network, data.X.cols(),
                                   make_likelihood(spec.likelihood, data.class_labels)->num_outputs())
                          ->describe()
                          .c_str())
            << cv_table(s, smoothing ? "lambda_s" : "alpha");
  std::cout << format("CV chooses %.4g; the evidence chooses %.4g (%.3g s)\n",
                      s.points[static_cast<std::size_t>(s.best_cv)].alpha,
                      s.points[static_cast<std::size_t>(s.best_evidence)].alpha, s.seconds);
  std::cout << "written: " << path("cv.csv") << ", " << path("cv.gp");
  if (plotted) std::cout << ", " << path("cv.png");
  std::cout << '\n';
}

}  // namespace

Command add_cv_command(CLI::App& parent) {
  auto args = std::make_shared<CvArgs>();
  CLI::App* command = parent.add_subcommand(
      "cv", "Cross-validate the prior precision over a grid and compare with the evidence (CSV, table, PNG)");
  command->add_option("--data", args->data, "data: CSV with a header row of column names")->required();
  command->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  command->add_option("--alphas", args->alphas, "grid LO:HI:COUNT, log-spaced (standardised units)");
  command->add_option("--folds", args->folds, "number of folds (k)")->check(CLI::Range(2, 1000000));
  command->add_flag("--no-stratify", args->no_stratify, "do not stratify the folds by class");
  command->add_option("--out-dir", args->out_dir, "directory for cv.csv, cv.gp and cv.png (created if needed)");
  add_progress_option(command, &args->progress);
  command->add_flag("--quiet", args->quiet, "print nothing on success (and no progress unless --progress)");
  add_model_options(command, &args->model, {.method = false});
  command->footer(kCvExample);
  return {command, [command, args] { run_cv(*command, *args); }, [command, args] { plan_cv(*command, *args); }};
}

}  // namespace occam::cli

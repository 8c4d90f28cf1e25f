// occam plot — pictures of a user's own runs (gnuplot, PNG or SVG): a sampling run's traces, rank
// plots and hyperparameter draws; a fitted model's predictions on data with targets (predicted
// against observed, calibration, the predictive band along one input); a fit's evidence ascent.

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "gnuplot.h"
#include "occam/data.h"
#include "occam/fitted_model.h"
#include "occam/io.h"
#include "occam/plot_data.h"
#include "occam/run_summary.h"
#include "occam/status.h"
#include "output.h"
#include "plot_pictures.h"

namespace occam::cli {
namespace {

struct PlotArgs {
  std::string input;  // a run folder, a model file or a report
  std::string data;
  std::string along;  // --input
  std::string out_dir = "plots";
  std::string format = "png";
  std::vector<std::string> variables;
  double level = 0.95;
  int width = 900;
};

constexpr const char* kPlotExample = R"(
Examples:
  occam plot run/ --out-dir plots           # a sampling run: trace, rank and hyper pictures
  occam plot model.json --data test.csv     # predicted, calibration and band pictures
  occam plot report.json --format svg       # the evidence ascent (a model file works too)

What is drawn depends on what is given:
  a run folder of 'occam sample' (or its model.json)
      trace   each variable's draws against the iteration, one line per chain; R-hat and the bulk
              and tail ESS in each panel's title (lp__ and the sampled hyperparameters unless
              --variables names others, e.g. f.1,f.2)
      rank    each chain's histogram of its draws' ranks among all chains' draws: flat bars when
              the chains agree (Vehtari et al. 2021)
      hyper   the histogram of each sampled hyperparameter's draws (log10 scale)
  a model file with --data (a CSV with the model's inputs and target)
      predicted    predicted mean and central --level interval against the observed target
      calibration  the fraction of targets inside the central interval at levels 5%, 10%, ..., 95%,
                   with the ±2 s.e. band of a calibrated model
      band         the predictive along --input (default: the model's first input), the other
                   inputs at their means over --data, with the data
  a report (occam fit --report) or a model file without --data
      evidence     log-evidence, each alpha and beta against the re-estimation round

Each picture comes with its data file (.dat) and gnuplot script (.gp) in --out-dir: change the
script and run 'gnuplot NAME.gp' there to restyle it. Needs gnuplot (Debian: gnuplot-nox).)";

enum class InputKind { kRun, kModel, kReport };

InputKind input_kind(const std::string& input, nlohmann::json* document) {
  namespace fs = std::filesystem;
  if (fs::is_directory(input)) return InputKind::kRun;
  try {
    *document = nlohmann::json::parse(read_file(input));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput,
                input + " is not a run folder, model file or report (not JSON: " + e.what() + ")");
  }
  if (!document->is_object())
    throw Error(ErrorKind::kInvalidInput, input + " is not a run folder, model file or report");
  if (document->contains("summary") && document->contains("network")) {
    // A model file, or a sampling run's model.json.
    return std::string(posterior_kind(load_model(input).posterior)) == "mcmc" ? InputKind::kRun : InputKind::kModel;
  }
  return InputKind::kReport;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void run_plot(const PlotArgs& args) {
  namespace fs = std::filesystem;
  if (args.format != "png" && args.format != "svg") {
    throw Error(ErrorKind::kInvalidArgument, "--format: '" + args.format + "' is not png or svg");
  }
  nlohmann::json document;
  const InputKind kind = input_kind(args.input, &document);
  if (kind != InputKind::kModel && !args.data.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--data goes with a model file; " + args.input + " is a " +
                                                 (kind == InputKind::kRun ? "sampling run" : "report"));
  }
  make_output_directory(args.out_dir);
  PictureOptions options;
  options.dir = args.out_dir;
  options.format = args.format;
  options.width = args.width;

  std::vector<Picture> pictures;
  if (kind == InputKind::kRun) {
    const mcmc::SamplerSummary run = read_run_draws(args.input);
    const std::vector<std::string> variables = args.variables.empty() ? default_run_variables(run) : args.variables;
    const Index draws = run.draws.empty() ? 0 : run.draws.front().rows();
    const std::string title =
        format("%s: %zu chains of %lld draws", fs::path(args.input).lexically_normal().string().c_str(),
               run.draws.size(), static_cast<long long>(draws));
    pictures = run_pictures(run, variables, title, options);
  } else if (kind == InputKind::kModel && !args.data.empty()) {
    const FittedModel model = load_model(args.input);
    const std::string along = args.along.empty() ? model.feature_names.front() : args.along;
    PredictOptions predict;
    predict.level = args.level;
    predict.validate();
    pictures = model_pictures(model, read_csv(args.data), along, predict, options);
  } else {
    const EvidenceAscent ascent = evidence_ascent(document);
    pictures = evidence_pictures(ascent, "evidence ascent of " + args.input, options);
  }

  std::vector<std::string> written;
  for (const Picture& p : pictures) {
    for (const std::string& d : p.data) written.push_back(d);
    written.push_back(p.script);
  }
  if (!gnuplot_installed()) {
    throw Error(ErrorKind::kIo,
                "gnuplot is not installed, so no picture was drawn (the data and scripts are in " + args.out_dir +
                    ": " + join(written) +
                    "); install it (sudo apt-get install gnuplot-nox) and run gnuplot on each .gp file there");
  }
  std::vector<std::string> images;
  for (const Picture& p : pictures) {
    if (!run_gnuplot(args.out_dir, p.script)) {
      throw Error(ErrorKind::kIo, "gnuplot failed on " + (fs::path(args.out_dir) / p.script).string() +
                                      "; run it there by hand to see why");
    }
    images.push_back(format("%s (%dx%d)", p.image.c_str(), p.width, p.height));
  }
  std::cout << "written in " << args.out_dir << ": " << join(images) << "; data and scripts: " << join(written) << '\n';
}

}  // namespace

Command add_plot_command(CLI::App& parent) {
  auto args = std::make_shared<PlotArgs>();
  CLI::App* command = parent.add_subcommand(
      "plot",
      "Pictures of a sampling run, a fitted model on test data, or a fit's evidence ascent (gnuplot: PNG, SVG)");
  command
      ->add_option("input", args->input,
                   "a run folder of 'occam sample', a model file, or a report (occam fit --report)")
      ->required();
  command->add_option("--data", args->data, "with a model file: a CSV with the model's inputs and its target");
  command->add_option("--input", args->along, "the input the predictive band runs along (default: the model's first)");
  command->add_option("--variables", args->variables, "a run's columns to show (default: lp__ and the hyperparameters)")
      ->delimiter(',');
  command->add_option("--level", args->level, "the central interval's probability for predicted and band")
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--format", args->format, "png or svg")->check(CLI::IsMember({"png", "svg"}));
  command
      ->add_option("--width", args->width, "picture width in pixels (multi-panel pictures: 240 pixels per panel high)")
      ->check(CLI::Range(200, 10000));
  command->add_option("--out-dir", args->out_dir, "directory for the pictures, data and scripts (created if needed)");
  command->footer(kPlotExample);
  return {command, [args] { run_plot(*args); }};
}

}  // namespace occam::cli

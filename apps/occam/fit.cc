// occam fit — train a network on a CSV table and learn its hyperparameters by the evidence.

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "interrupt.h"
#include "model_options.h"
#include "occam/fit.h"
#include "occam/io.h"
#include "occam/status.h"
#include "output.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct FitArgs {
  std::string data;
  std::string target;
  std::string out;
  std::string report;
  bool quiet = false;
  ModelArgs model;
};

constexpr const char* kFitExample = R"(
Example:
  occam fit --data train.csv --target y --hidden 20 --out model.json --report report.json
  occam predict --model model.json --data test.csv --out pred.csv
  occam fit --data train.csv --target y --method vi --family meanfield --out model.json

α and β are found by the evidence framework (MacKay 1992) unless --hyper fixed; they refer to
the standardised data (--standardize). Files are written only after a successful fit; Ctrl-C
stops the fit and writes nothing (exit code 130).

GLMs: --likelihood bernoulli|poisson|categorical|hetero, --prior ridge|groups|ard|laplacian, e.g.
  occam fit --data spikes.csv --target count --model linear --likelihood poisson \
            --prior laplacian --grid 20x20 --hyper empirical-bayes --out rf.json
Counts, 0/1 targets and class labels are never standardised. With --method vi, q(w) and α, β are
fitted by the ELBO (docs/vi.md).)";

void run_fit(const CLI::App& command, const FitArgs& args) {
  ModelSpec spec = model_spec(command, args.model);
  const MethodOptions method = fit_method(command, args.model);
  if (!args.out.empty() && args.out == args.report) {
    throw Error(ErrorKind::kInvalidArgument, "--out and --report name the same file '" + args.out + "'");
  }
  // Fail before a long fit, not after it.
  check_output_path({"--out", args.out}, {{"--data", args.data}});
  check_output_path({"--report", args.report}, {{"--data", args.data}});

  const Dataset train = read_data(args.data, args.target, args.model, &spec);
  Progress progress(!args.quiet);
  FittedModel model = fit(spec, train, method, progress_callback(&progress));
  progress.clear();
  if (model.summary.termination == Termination::kAborted) throw Interrupted{"the fit stopped; nothing was written"};
  model.report["command_line"] = command_line();
  if (model.summary.termination == Termination::kFailure) {
    std::cerr << "occam: warning: " << (model.summary.variational ? "the variational fit failed (" : "the fit did not converge (")
              << model.summary.message << "); the model is "
              << (model.summary.variational ? "the last good q" : "the best point found") << "\n";
  }
  if (!args.out.empty()) save_model(args.out, model);
  if (!args.report.empty()) {
    try {
      write_file_atomic(args.report, model.report.dump(2) + "\n");
    } catch (const Error&) {
      // Both files or neither: a model without its report would look like a complete run.
      if (!args.out.empty()) std::filesystem::remove(args.out);
      throw;
    }
  }

  if (!args.quiet) {
    std::cout << brief_report(model);
    if (!args.out.empty()) std::cout << "model written to " << args.out << '\n';
    if (!args.report.empty()) std::cout << "report written to " << args.report << '\n';
  }
}

}  // namespace

Command add_fit_command(CLI::App& parent) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* command = parent.add_subcommand(
      "fit", "Fit a Bayesian network to a CSV table: MAP weights, Laplace posterior, α and β by the evidence "
      "(or, with --method vi, a variational posterior and α, β by the ELBO)");
  command->add_option("--data", args->data, "training data: CSV with a header row of column names")->required();
  command->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  add_model_options(command, &args->model);
  command->add_option("--out", args->out, "write the fitted model (JSON) to this file");
  command->add_option("--report", args->report, "write the fit's report (JSON) to this file");
  command->add_flag("--quiet", args->quiet, "print nothing on success");
  command->footer(kFitExample);
  return {command, [command, args] { run_fit(*command, *args); }};
}

}  // namespace occam::cli

// occam fit — train a network on a CSV table and learn its hyperparameters by the evidence.

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "fitting.h"
#include "occam/data.h"
#include "occam/io.h"
#include "occam/status.h"

namespace occam::cli {
namespace {

struct FitArgs {
  std::string data;
  std::string target;
  std::string out;
  std::string report;
  bool quiet = false;
  ModelOptions model;
};

constexpr const char* kFitExample = R"(
Example:
  occam fit --data train.csv --target y --hidden 20 --out model.json --report report.json
  occam predict --model model.json --data test.csv --out pred.csv
  occam fit --data train.csv --target y --method vi --family meanfield --out model.json

α and β are found by the evidence framework (MacKay 1992) unless --hyper fixed; they refer to
the standardised data (--standardize). Files are written only after a successful fit.

GLMs: --likelihood bernoulli|poisson|categorical|hetero, --prior ridge|groups|ard|laplacian, e.g.
  occam fit --data spikes.csv --target count --model linear --likelihood poisson \
            --prior laplacian --grid 20x20 --hyper empirical-bayes --out rf.json
Counts, 0/1 targets and class labels are never standardised. With --method vi, q(w) and α, β are
fitted by the ELBO (docs/vi.md).)";

void run_fit(const CLI::App& command, const FitArgs& args) {
  check_model_options(command, args.model);
  if (!args.out.empty() && args.out == args.report) {
    throw Error(ErrorKind::kInvalidArgument, "--out and --report name the same file '" + args.out + "'");
  }
  // Fail before a long fit, not after it.
  if (!args.out.empty()) check_output_path(args.out);
  if (!args.report.empty()) check_output_path(args.report);

  ModelOptions model_options = args.model;
  const Dataset train = load_training_data(args.data, args.target, &model_options);

  Progress progress(!args.quiet);
  FitResult result = fit_model(train, model_options, model_options.hidden, &progress);
  result.model.summary["data"] = args.data;
  result.model.summary["target"] = args.target;

  if (result.vi && result.vi->termination == Termination::kFailure) {
    std::cerr << "occam: warning: the variational fit failed (" << result.vi->message
              << "); the model is the last good q\n";
  } else if (result.summary.termination == Termination::kFailure) {
    std::cerr << "occam: warning: the fit did not converge (" << result.summary.message
              << "); the model is the best point found\n";
  }
  if (!args.out.empty()) save_model(args.out, result.model);
  if (!args.report.empty()) {
    try {
      write_file_atomic(args.report, result.model.summary.dump(2) + "\n");
    } catch (const Error&) {
      // Both files or neither: a model without its report would look like a complete run.
      if (!args.out.empty()) std::filesystem::remove(args.out);
      throw;
    }
  }

  if (!args.quiet) {
    std::cout << brief_report(result);
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
  add_model_options(command, &args->model, /*with_hidden=*/true);
  command->add_option("--out", args->out, "write the fitted model (JSON) to this file");
  command->add_option("--report", args->report, "write the fit's report (JSON) to this file");
  command->add_flag("--quiet", args->quiet, "print nothing on success");
  command->footer(kFitExample);
  return {command, [command, args] { run_fit(*command, *args); }};
}

}  // namespace occam::cli

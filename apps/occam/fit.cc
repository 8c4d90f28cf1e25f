// occam fit — train a network on a CSV table and learn its hyperparameters by the evidence.

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "interrupt.h"
#include "map_trace.h"
#include "message_text.h"
#include "model_options.h"
#include "occam/committee.h"
#include "occam/fit.h"
#include "occam/heteroscedastic.h"
#include "occam/io.h"
#include "occam/status.h"
#include "output.h"
#include "process_group.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct FitArgs {
  std::string data;
  std::string target;
  std::string out;
  std::string report;
  std::string map_trace;
  std::string on_interrupt = "discard";  // discard | save
  std::string progress;                  // --progress, empty when not given
  bool quiet = false;
  int threads = 1;
  ModelArgs model;
};

constexpr const char* kFitExample = R"(
Example:
  occam fit --data train.csv --target y --hidden 20 --out model.json --report report.json
  occam predict --model model.json --data test.csv --out pred.csv
  occam fit --data train.csv --target y --method vi --family meanfield --out model.json

α and β are found by the evidence framework (MacKay 1992) unless --hyper fixed; they refer to
the standardised data (--standardize). Files are written only after a successful fit; Ctrl-C
(SIGINT) or SIGTERM stops the fit at its next iteration and writes nothing (exit code 130, or
143 for SIGTERM), unless --on-interrupt save asks for the best consistent state so far: then
--out and --report are written from it, their termination "aborted", and the exit code is the
same.

GLMs: --likelihood bernoulli|poisson|categorical|hetero, --prior ridge|groups|ard|laplacian, e.g.
  occam fit --data spikes.csv --target count --model linear --likelihood poisson \
            --prior laplacian --grid 20x20 --hyper empirical-bayes --out rf.json
Counts, 0/1 targets and class labels are never standardised. With --method vi, q(w) and α, β are
fitted by the ELBO (docs/vi.md). Under mpirun (a build with Open MPI), --method map and --method
laplace with a --hessian-structure other than full, or with the default --evidence-loop auto
(the online loop with kron there), spread the rows over the processes and write the model one
process would (docs/scale.md).

A committee of Laplace fits from independent random starts, weighted by their evidence (MacKay
1992b; docs/evidence.md), written as one committee file that 'occam predict --model' reads:
  occam fit --data train.csv --target y --committee 5 --threads 2 --out committee.json)";

struct FitPlan {
  ModelSpec spec;
  MethodOptions method;
};

// The spec and method the options ask for, checked as fit() would check them; no file is read.
FitPlan plan_fit(const CLI::App& command, const FitArgs& args) {
  FitPlan plan{model_spec(command, args.model), fit_method(command, args.model)};
  // The rows' sums run on --threads threads and, under mpirun, over the processes (docs/scale.md):
  // a MAP by L-BFGS, or a Laplace approximation whose curvature is a structured sum over the rows.
  DataParallel* parallel = nullptr;
  if (auto* map = std::get_if<MapMethod>(&plan.method)) parallel = &map->parallel;
  auto* laplace = std::get_if<LaplaceMethod>(&plan.method);
  if (laplace != nullptr) parallel = &laplace->parallel;
  const bool committee = laplace != nullptr && laplace->committee.has_value();
  if (processes() != nullptr) {
    // The automatic loop takes the online loop with kron there (choose_evidence_loop).
    if (parallel == nullptr ||
        (laplace != nullptr && laplace->evidence.structure.full() && laplace->evidence.loop != EvidenceLoop::kAuto)) {
      throw Error(
          ErrorKind::kInvalidArgument,
          "under mpirun with more than one process only --method map and --method laplace with "
          "--hessian-structure diag, kron, last-layer or lowrank:K, or with the default --evidence-loop auto, run "
          "(their rows spread over the processes; the full W x W curvature needs every row in one process); run "
          "other methods as one process");
    }
    if (committee) {
      throw Error(ErrorKind::kInvalidArgument, "--committee runs as one process (--threads fits members at once)");
    }
    parallel->communicator = processes();
  }
  // --noise-model network and --committee K (fields of the Laplace method, read by the method
  // table): the spec's checks before the data are read.
  if (laplace != nullptr && laplace->noise_model) check_heteroscedastic_spec(plan.spec);
  if (committee) {
    // Members are fitted at once, each on one thread: more parallel than one member's row sums.
    laplace->committee->threads = args.threads;
    laplace->committee->validate();
    check_committee_spec(plan.spec);
  } else if (parallel != nullptr) {
    parallel->threads = args.threads;
  } else if (args.threads != 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "--threads applies to --method map and laplace (other methods run on one thread)");
  }
  validate_spec(plan.spec, args.model);
  if (!args.out.empty() && args.out == args.report) {
    throw Error(ErrorKind::kInvalidArgument, "--out and --report name the same file '" + args.out + "'");
  }
  return plan;
}

void run_fit(const CLI::App& command, const FitArgs& args) {
  FitPlan plan = plan_fit(command, args);
  ModelSpec& spec = plan.spec;
  const MethodOptions& method = plan.method;
  // Fail before a long fit, not after it.
  check_output_path({"--out", args.out}, {{"--data", args.data}, {"--edges", args.model.edges}});
  check_output_path({"--report", args.report}, {{"--data", args.data}, {"--edges", args.model.edges}});
  check_output_path(
      {"--map-trace", args.map_trace},
      {{"--data", args.data}, {"--edges", args.model.edges}, {"--out", args.out}, {"--report", args.report}});

  const DataParallel* parallel = nullptr;
  if (const auto* map = std::get_if<MapMethod>(&method)) parallel = &map->parallel;
  if (const auto* laplace = std::get_if<LaplaceMethod>(&method)) parallel = &laplace->parallel;
  const Dataset train = read_data(args.data, args.target, args.model, &spec, parallel);
  check_fit_memory(spec, train, method);
  // Process 0 alone reports progress, whatever --progress asks.
  Progress progress(is_writer() ? progress_mode(args.progress, args.quiet) : ProgressMode::kNone);
  MapTrace trace(is_writer() ? args.map_trace : std::string());
  const FitCallback show = progress_callback(&progress);
  FittedModel model = fit(spec, train, method, [&](const FitProgress& p) {
    trace.record(p);
    return show(p);
  });
  progress.clear();
  if (trace.failed()) {
    print_message("occam: warning: --map-trace: writing '" + args.map_trace + "' failed after " +
                  std::to_string(trace.rows()) + " rows; the trace is incomplete\n");
  }
  const bool aborted = model.summary.termination == Termination::kAborted;
  if (aborted && args.on_interrupt != "save") {
    throw Interrupted{"the fit stopped (" + model.summary.message +
                      "); nothing was written (--on-interrupt save keeps the best state so far)"};
  }
  // Stopped inside the first optimisation (of any committee member) there is no consistent state to keep.
  if (aborted && posterior_mean(model.posterior).size() != model.network->num_params()) {
    throw Interrupted{"the fit stopped before it reached a state to keep; nothing was written"};
  }
  if (aborted && args.out.empty() && args.report.empty()) {
    throw Interrupted{"the fit stopped; nothing was written (no --out or --report)"};
  }
  model.report["command_line"] = command_line();
  if (const Committee* committee = model.committee()) {
    for (const CommitteeMember& m : committee->members) {
      if (!m.failure.empty()) {
        print_message("occam: warning: committee member " + std::to_string(m.index + 1) + " failed (" + m.failure +
                      "); the committee is the other members\n");
      }
    }
  } else if (model.summary.termination == Termination::kFailure) {
    print_message(std::string("occam: warning: ") +
                  (model.summary.variational ? "the variational fit failed (" : "the fit did not converge (") +
                  model.summary.message + "); the model is " +
                  (model.summary.variational ? "the last good q" : "the best point found") + "\n");
  }
  if (!is_writer()) return;  // process 0 writes and prints for all: they hold the same model
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

  if (aborted) {
    // The files say so themselves: the model's and the report's termination is "aborted".
    throw Interrupted{"the fit stopped (" + model.summary.message + "); the best state so far was written to " +
                      (args.out.empty() ? args.report : args.out + (args.report.empty() ? "" : " and " + args.report)) +
                      ", its termination \"aborted\""};
  }
  if (!args.quiet) {
    std::cout << brief_report(model);
    if (!args.out.empty())
      std::cout << (model.committee() ? "committee" : "model") << " written to " << args.out << '\n';
    if (!args.report.empty()) std::cout << "report written to " << args.report << '\n';
  }
}

}  // namespace

Command add_fit_command(CLI::App& parent) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* command = parent.add_subcommand(
      "fit",
      "Fit a Bayesian network to a CSV table: MAP weights, Laplace posterior, α and β by the evidence "
      "(or, with --method vi, a variational posterior and α, β by the ELBO)");
  command->add_option("--data", args->data, "training data: CSV with a header row of column names")->required();
  command->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  add_model_options(command, &args->model);
  command->add_option("--out", args->out, "write the fitted model (JSON) to this file");
  command->add_option("--report", args->report, "write the fit's report (JSON) to this file");
  command->add_option("--map-trace", args->map_trace,
                      "write every MAP iteration (CSV, as the fit runs) to this file: for the evidence loops' "
                      "trust-region MAP, each step's radius, length, curvature and decrease (docs/cli.md)");
  command
      ->add_option("--on-interrupt", args->on_interrupt,
                   "on Ctrl-C or SIGTERM: discard (write nothing) or save (write the best state so far, "
                   "termination \"aborted\")")
      ->check(CLI::IsMember({"discard", "save"}));
  command
      ->add_option("--threads", args->threads,
                   "--method map and laplace: threads per process for the sums over the rows (the model does not "
                   "depend on it; data of more than 4096 rows gain); with --committee, members fitted at once")
      ->check(CLI::PositiveNumber)
      ->default_str("1");
  add_progress_option(command, &args->progress);
  command->add_flag("--quiet", args->quiet, "print nothing on success (and no progress unless --progress)");
  command->footer(kFitExample);
  return {command, [command, args] { run_fit(*command, *args); }, [command, args] { plan_fit(*command, *args); }};
}

}  // namespace occam::cli

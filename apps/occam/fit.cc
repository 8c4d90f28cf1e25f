// occam fit — train a network on a CSV table and learn its hyperparameters by the evidence.

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "enum_choices.h"
#include "interrupt.h"
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
  std::string on_interrupt = "discard";  // discard | save
  std::string progress;                  // --progress, empty when not given
  bool quiet = false;
  int threads = 1;
  int committee = 0;  // members of a committee; 0: one model
  std::string committee_weighting = "evidence";
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
laplace with a --hessian-structure other than full spread the rows over the processes and
write the model one process would (docs/scale.md).

A committee of Laplace fits from independent random starts, weighted by their evidence (MacKay
1992b; docs/evidence.md), written as one committee file that 'occam predict --model' reads:
  occam fit --data train.csv --target y --committee 5 --threads 2 --out committee.json)";

struct FitPlan {
  ModelSpec spec;
  MethodOptions method;
  std::optional<CommitteeOptions> committee;
};

// The spec and method the options ask for, checked as fit() would check them; no file is read.
FitPlan plan_fit(const CLI::App& command, const FitArgs& args) {
  FitPlan plan{model_spec(command, args.model), fit_method(command, args.model), std::nullopt};
  // The rows' sums run on --threads threads and, under mpirun, over the processes (docs/scale.md):
  // a MAP by L-BFGS, or a Laplace approximation whose curvature is a structured sum over the rows.
  DataParallel* parallel = nullptr;
  if (auto* map = std::get_if<MapMethod>(&plan.method)) parallel = &map->parallel;
  if (auto* laplace = std::get_if<LaplaceMethod>(&plan.method)) parallel = &laplace->parallel;
  if (processes() != nullptr) {
    const auto* laplace = std::get_if<LaplaceMethod>(&plan.method);
    if (parallel == nullptr || (laplace != nullptr && laplace->evidence.structure.full())) {
      throw Error(
          ErrorKind::kInvalidArgument,
          "under mpirun with more than one process only --method map and --method laplace with "
          "--hessian-structure diag, kron, last-layer or lowrank:K run (their rows spread over the processes; the full "
          "W x W curvature needs every row in one process); run other methods as one process");
    }
    parallel->communicator = processes();
  }
  // --noise-model network (a field of the Laplace method, read by the method table): the spec's
  // checks before the data are read.
  const auto* laplace = std::get_if<LaplaceMethod>(&plan.method);
  const bool noise_model = laplace != nullptr && laplace->noise_model.has_value();
  if (noise_model) check_heteroscedastic_spec(plan.spec);
  if (args.committee > 0) {
    if (!std::holds_alternative<LaplaceMethod>(plan.method)) {
      throw Error(ErrorKind::kInvalidArgument, "--committee goes with --method laplace (a committee of Laplace fits)");
    }
    if (noise_model) {
      throw Error(ErrorKind::kInvalidArgument, "--committee and --noise-model network do not go together");
    }
    if (processes() != nullptr) {
      throw Error(ErrorKind::kInvalidArgument, "--committee runs as one process (--threads fits members at once)");
    }
    CommitteeOptions committee;
    committee.members = args.committee;
    committee.weighting = parse_committee_weighting(args.committee_weighting);
    // Members are fitted at once, each on one thread: more parallel than one member's row sums.
    committee.threads = args.threads;
    committee.validate();
    check_committee_spec(plan.spec);
    plan.committee = committee;
  } else if (command.count("--committee-weighting") > 0) {
    throw Error(ErrorKind::kInvalidArgument, "--committee-weighting needs --committee K");
  }
  // With --committee the threads run members, and each member's row sums stay on one thread.
  if (!plan.committee) {
    if (parallel != nullptr) {
      parallel->threads = args.threads;
    } else if (args.threads != 1) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--threads applies to --method map and laplace (other methods run on one thread)");
    }
  }
  validate_spec(plan.spec, args.model);
  if (!args.out.empty() && args.out == args.report) {
    throw Error(ErrorKind::kInvalidArgument, "--out and --report name the same file '" + args.out + "'");
  }
  return plan;
}

// --committee K: the committee's file and report, written as a single model's are.
void run_committee_fit(const FitArgs& args, const ModelSpec& spec, const Dataset& train, const LaplaceMethod& method,
                       const CommitteeOptions& options) {
  Progress progress(progress_mode(args.progress, args.quiet));
  Committee committee = fit_committee(spec, train, method, options, progress_callback(&progress));
  progress.clear();
  if (committee.interrupted && args.on_interrupt != "save") {
    throw Interrupted{
        "the committee's fit stopped; nothing was written (--on-interrupt save keeps the members "
        "fitted so far)"};
  }
  // A member stopped inside its first optimisation has no consistent state to keep.
  if (committee.interrupted) {
    for (const FittedModel& model : committee.models) {
      if (posterior_mean(model.posterior).size() != model.network->num_params()) {
        throw Interrupted{
            "the committee's fit stopped before every member it started reached a state to keep; "
            "nothing was written"};
      }
    }
  }
  if (committee.interrupted && args.out.empty() && args.report.empty()) {
    throw Interrupted{"the committee's fit stopped; nothing was written (no --out or --report)"};
  }
  nlohmann::json report = committee.report();
  report["command_line"] = command_line();
  for (const CommitteeMember& m : committee.members) {
    if (!m.failure.empty()) {
      print_message("occam: warning: committee member " + std::to_string(m.index + 1) + " failed (" + m.failure +
                    "); the committee is the other members\n");
    }
  }
  if (!args.out.empty()) save_committee(args.out, committee);
  if (!args.report.empty()) {
    try {
      write_file_atomic(args.report, report.dump(2) + "\n");
    } catch (const Error&) {
      if (!args.out.empty()) std::filesystem::remove(args.out);
      throw;
    }
  }
  if (committee.interrupted) {
    throw Interrupted{"the committee's fit stopped; the members fitted so far were written to " +
                      (args.out.empty() ? args.report : args.out + (args.report.empty() ? "" : " and " + args.report)) +
                      ", its termination \"aborted\""};
  }
  if (!args.quiet) {
    std::cout << committee.brief_report();
    if (!args.out.empty()) std::cout << "committee written to " << args.out << '\n';
    if (!args.report.empty()) std::cout << "report written to " << args.report << '\n';
  }
}

void run_fit(const CLI::App& command, const FitArgs& args) {
  FitPlan plan = plan_fit(command, args);
  ModelSpec& spec = plan.spec;
  const MethodOptions& method = plan.method;
  // Fail before a long fit, not after it.
  check_output_path({"--out", args.out}, {{"--data", args.data}, {"--edges", args.model.edges}});
  check_output_path({"--report", args.report}, {{"--data", args.data}, {"--edges", args.model.edges}});

  const DataParallel* parallel = nullptr;
  if (const auto* map = std::get_if<MapMethod>(&method)) parallel = &map->parallel;
  if (const auto* laplace = std::get_if<LaplaceMethod>(&method)) parallel = &laplace->parallel;
  const Dataset train = read_data(args.data, args.target, args.model, &spec, parallel);
  if (plan.committee) {
    check_fit_memory(committee_memory_request(spec, train, std::get<LaplaceMethod>(method), *plan.committee), method);
    run_committee_fit(args, spec, train, std::get<LaplaceMethod>(method), *plan.committee);
    return;
  }
  check_fit_memory(spec, train, method);
  // Process 0 alone reports progress, whatever --progress asks.
  Progress progress(is_writer() ? progress_mode(args.progress, args.quiet) : ProgressMode::kNone);
  FittedModel model = fit(spec, train, method, progress_callback(&progress));
  progress.clear();
  const bool aborted = model.summary.termination == Termination::kAborted;
  if (aborted && args.on_interrupt != "save") {
    throw Interrupted{"the fit stopped (" + model.summary.message +
                      "); nothing was written (--on-interrupt save keeps the best state so far)"};
  }
  // Stopped inside the first optimisation there is no consistent state to keep.
  if (aborted && posterior_mean(model.posterior).size() != model.network->num_params()) {
    throw Interrupted{"the fit stopped before it reached a state to keep; nothing was written"};
  }
  if (aborted && args.out.empty() && args.report.empty()) {
    throw Interrupted{"the fit stopped; nothing was written (no --out or --report)"};
  }
  model.report["command_line"] = command_line();
  if (model.summary.termination == Termination::kFailure) {
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
    if (!args.out.empty()) std::cout << "model written to " << args.out << '\n';
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
  command
      ->add_option("--committee", args->committee,
                   "with --method laplace: fit K members from independent random starts (member 1 from --seed) and "
                   "write a committee that predicts with their mixture, weighted by --committee-weighting "
                   "(docs/cli.md, 'Committees')")
      ->check(CLI::Range(1, 10000))
      ->default_str("none");
  command
      ->add_option("--committee-weighting", args->committee_weighting,
                   "evidence (each member's Laplace evidence times its symmetry count) or equal")
      ->check(one_of<CommitteeWeighting>())
      ->default_str("evidence");
  add_progress_option(command, &args->progress);
  command->add_flag("--quiet", args->quiet, "print nothing on success (and no progress unless --progress)");
  command->footer(kFitExample);
  return {command, [command, args] { run_fit(*command, *args); }, [command, args] { plan_fit(*command, *args); }};
}

}  // namespace occam::cli

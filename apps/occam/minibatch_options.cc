// minibatch_options.cc — the flags of the minibatch MAP and the online evidence loop.
#include "minibatch_options.h"

#include "enum_choices.h"
#include "model_options.h"
#include "occam/status.h"

namespace occam::cli {
namespace {

bool given(const CLI::App& command, const char* option) {
  return command.get_option_no_throw(option) != nullptr && command.count(option) > 0;
}
bool minibatch_optimizer(const ModelArgs& args) { return args.optimizer == "adam" || args.optimizer == "sgd"; }
bool online(const ModelArgs& args) { return args.evidence_loop == "online"; }

}  // namespace

void add_minibatch_options(CLI::App* command, MinibatchArgs* args) {
  command->add_option("--epochs", args->epochs, "--optimizer adam|sgd, --evidence-loop online: passes over the rows")
      ->check(Positive());
  command->add_option("--lr-schedule", args->schedule, "adam, sgd: the step size over the epochs: constant or cosine")
      ->check(one_of<LearningRateSchedule>());
  command->add_option("--burn-in", args->burn_in, "--evidence-loop online: epochs before the first update of α, β")
      ->check(NonNegative());
  command->add_option("--evidence-every", args->evidence_every,
                      "--evidence-loop online: epochs between updates of α, β (each: the structure's curvature over "
                      "all rows, then --hyper-steps steps)")
      ->check(Positive());
  command->add_option("--hyper-steps", args->hyper_steps,
                      "--evidence-loop online: Adam steps on log α, log β per update, up the structure's log-evidence")
      ->check(NonNegative());
  command->add_flag("--polish", args->polish,
                    "--evidence-loop online: after the epochs, the full-batch outer loop (MAP to convergence, "
                    "MacKay's updates), so that the fit can converge");
}

void check_minibatch_options(const CLI::App& command, const ModelArgs& args) {
  for (const char* option : {"--burn-in", "--evidence-every", "--hyper-steps", "--polish"}) {
    if (given(command, option) && !online(args)) {
      throw Error(ErrorKind::kInvalidArgument, std::string(option) + " applies to --evidence-loop online only");
    }
  }
  for (const char* option : {"--epochs", "--lr-schedule"}) {
    if (given(command, option) && !online(args) && !minibatch_optimizer(args)) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string(option) + " applies to --optimizer adam or sgd and to --evidence-loop online only");
    }
  }
  if (online(args) && (args.method != "laplace" || (!args.hyper.empty() && args.hyper != "evidence"))) {
    throw Error(ErrorKind::kInvalidArgument, "--evidence-loop online needs --method laplace with --hyper evidence");
  }
}

}  // namespace occam::cli

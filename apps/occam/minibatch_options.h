// minibatch_options.h — the command-line options of the minibatch MAP (--optimizer adam|sgd) and
// of the online evidence loop (--evidence-loop online); they become the library's MinibatchOptions
// and OnlineEvidenceOptions through its table of method options (docs/scale.md, "Online evidence").
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "occam/evidence.h"

namespace occam::cli {

struct ModelArgs;

struct MinibatchArgs {
  int epochs = MinibatchOptions{}.epochs;
  std::string schedule = "constant";
  int burn_in = OnlineEvidenceOptions{}.burn_in;
  int evidence_every = OnlineEvidenceOptions{}.evidence_every;
  int hyper_steps = OnlineEvidenceOptions{}.hyper_steps;
  bool polish = false;
};

// --epochs, --lr-schedule, --burn-in, --evidence-every, --hyper-steps, --polish (--batch-size and
// --learning-rate are shared with --method vi and registered with it).
void add_minibatch_options(CLI::App* command, MinibatchArgs* args);
// Throws Error(kInvalidArgument) for a flag given where it does nothing.
void check_minibatch_options(const CLI::App& command, const ModelArgs& args);

}  // namespace occam::cli

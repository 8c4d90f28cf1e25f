// callback.h — progress callbacks that can ask a long computation to stop.
//
// Every iterative engine (MAP, the evidence loop, variational inference, the fit service) calls
// its callback after each iteration with what that iteration did, and the callback's answer says
// whether to go on. Ceres' IterationCallback is the model: kAbort ends the run at the next point
// where its state is consistent; the engine returns the best state so far with the termination
// Termination::kAborted, never a half-updated one. A Ctrl-C handler, a time budget or a GUI's
// cancel button are all such callbacks.
//
//   occam::MapOptions options;
//   options.callback = [&](const occam::MapIteration& it) {
//     return it.iteration < 100 ? occam::CallbackReturn::kContinue : occam::CallbackReturn::kAbort;
//   };
#pragma once

#include <functional>

namespace occam {

enum class CallbackReturn {
  kContinue,  // go on
  kAbort,     // stop now, keeping the best consistent state (termination kAborted)
};

// Called after each iteration of an engine with that engine's iteration record.
template <typename Iteration>
using IterationCallback = std::function<CallbackReturn(const Iteration&)>;

}  // namespace occam

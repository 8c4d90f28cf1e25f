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

#include <atomic>
#include <concepts>
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace occam {

enum class CallbackReturn {
  kContinue,  // go on
  kAbort,     // stop now, keeping the best consistent state (termination kAborted)
};

// Called after each iteration of an engine with that engine's iteration record. Any callable
// taking the record converts to it; one that returns nothing (a progress printer) always
// continues.
template <typename Iteration>
class IterationCallback {
 public:
  IterationCallback() = default;
  IterationCallback(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): `callback = nullptr`
  template <typename F>
  requires(std::invocable<F&, const Iteration&> && !std::same_as<std::remove_cvref_t<F>, IterationCallback>)
      IterationCallback(F f) {  // NOLINT(google-explicit-constructor): assigned from lambdas
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Iteration&>>) {
      call_ = [f = std::move(f)](const Iteration& it) mutable {
        f(it);
        return CallbackReturn::kContinue;
      };
    } else {
      call_ = std::move(f);
    }
  }

  explicit operator bool() const { return static_cast<bool>(call_); }
  CallbackReturn operator()(const Iteration& iteration) const { return call_(iteration); }

 private:
  std::function<CallbackReturn(const Iteration&)> call_;
};

// A stop asked for from outside a computation that has no iterations of its own to report to a
// callback (the exact gradient of the log-evidence over blocks of rows and pairs of outputs:
// minutes for a softmax over hundreds of classes). A front end that runs a fit on a thread of its
// own points that thread at its stop flag with a ScopedStopFlag for the fit's duration; such
// computations poll stop_requested() between blocks and throw StoppedOnRequest. Without a
// ScopedStopFlag on the thread nothing ever stops them.
class StoppedOnRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ScopedStopFlag {
 public:
  explicit ScopedStopFlag(const std::atomic<bool>* flag);
  ~ScopedStopFlag();
  ScopedStopFlag(const ScopedStopFlag&) = delete;
  ScopedStopFlag& operator=(const ScopedStopFlag&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// Whether this thread's stop flag (ScopedStopFlag) is set; false without one.
bool stop_requested();

}  // namespace occam

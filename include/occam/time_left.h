// time_left.h — how long countable work (sampling iterations, grid points, folds, benchmark rows)
// has left, from its rate so far, and durations written for a person. For progress lines: the
// library computes, the front ends print.
//
//   occam::TimeLeft left;                            // the clock starts at the first count
//   std::string eta = left.describe(done, total);    // "ETA 3m12s", or "" while too early to tell
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace occam {

class TimeLeft {
 public:
  using Clock = std::chrono::steady_clock;
  // A rate needs this long, and 1% of the work done since the clock started, before it is trusted.
  static constexpr double kMinSeconds = 3.0;

  // Counts from `done` at `now` (work that starts when the estimate does); otherwise the first call
  // to seconds() or describe() starts the clock.
  void begin(double done, Clock::time_point now = Clock::now());
  bool started() const { return started_; }
  // elapsed × (total − done) / (done − first): empty until kMinSeconds have passed and 1% of the
  // work is done since the start (an early rate misleads), and when the work is done.
  std::optional<double> seconds(double done, double total, Clock::time_point now = Clock::now());
  // "ETA 3m12s", or "" when seconds() is empty.
  std::string describe(double done, double total, Clock::time_point now = Clock::now());

 private:
  bool started_ = false;
  double first_ = 0.0;
  Clock::time_point start_;
};

// "45s", "3m12s", "1h04m" (negative or non-finite durations read as 0s).
std::string format_duration(double seconds);

}  // namespace occam

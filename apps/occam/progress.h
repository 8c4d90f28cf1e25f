// progress.h — a one-line progress display on stderr for long fits.
//
// Only when stderr is a terminal: redirected output (logs, CI, tests) must stay clean. Updates
// are throttled so that a fast optimiser does not spend its time printing, and each overwrites
// the last with '\r'.
#pragma once

#include <chrono>
#include <string>

#include "occam/fit.h"

namespace occam::cli {

class Progress {
 public:
  // Shows progress only when `wanted` and stderr is a terminal.
  explicit Progress(bool wanted);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // Whether an update now would be shown: lets callers skip formatting a line that the throttle
  // would drop (optimiser callbacks run every iteration).
  bool due() const;
  // Replaces the line, at most a few times a second; `force` shows it whatever the throttle.
  void update(const std::string& line, bool force = false);
  // Erases the line (before other output, and at the end).
  void clear();

 private:
  bool enabled_ = false;
  bool showing_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

// A fit callback that shows the fit's progress on the progress line, after `prefix` (a re-estimation
// round's line stays in front of the MAP iterations that follow it), and that stops the fit when
// Ctrl-C was pressed (interrupt.h). `progress` may be disabled: the Ctrl-C check remains.
FitCallback progress_callback(Progress* progress, const std::string& prefix = "");

}  // namespace occam::cli

// progress.h — progress of long fits on stderr: a bar on a terminal, lines in a log.
//
// --progress auto|bar|lines|none. A bar is one line that each update overwrites with '\r', a few
// times a second at most; on a terminal it is the default. Lines, the default when stderr is not
// a terminal (batch logs, CI), are one full line every few seconds (OCCAM_PROGRESS_INTERVAL
// seconds, default 10), each with the time elapsed and what the bar would show, so that a long
// fit's log is not silent and a short one stays empty. --quiet means none unless --progress is
// given. Updates are throttled so that a fast optimiser does not spend its time printing.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <string>

#include "occam/fit.h"

namespace occam::cli {

enum class ProgressMode { kAuto, kBar, kLines, kNone };

// Registers --progress on a command; `mode` stays empty unless it is given.
void add_progress_option(CLI::App* command, std::string* mode);
// The mode --progress (`text`, empty when not given) and --quiet ask for.
ProgressMode progress_mode(const std::string& text, bool quiet);

class Progress {
 public:
  // kAuto: a bar when stderr is a terminal, lines otherwise.
  explicit Progress(ProgressMode mode);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return mode_ != ProgressMode::kNone; }
  bool lines() const { return mode_ == ProgressMode::kLines; }
  // Whether an update now would be shown: lets callers skip formatting a line that the throttle
  // would drop (optimiser callbacks run every iteration).
  bool due() const;
  // Shows `line` (the bar replaced, or a new line with the time elapsed), at most as often as the
  // mode allows; `force` shows it whatever the throttle.
  void update(const std::string& line, bool force = false);
  // Erases the bar (before other output, and at the end); lines stay.
  void clear();

 private:
  ProgressMode mode_ = ProgressMode::kNone;
  bool showing_ = false;
  std::chrono::steady_clock::duration interval_{};
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

// A fit callback that shows the fit's progress after `prefix` (a re-estimation round's line stays
// in front of the MAP iterations that follow it), and that stops the fit on Ctrl-C or SIGTERM
// (interrupt.h). `progress` may be disabled: the interrupt check remains.
FitCallback progress_callback(Progress* progress, const std::string& prefix = "");

}  // namespace occam::cli

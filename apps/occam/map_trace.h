// map_trace.h — `occam fit --map-trace FILE`: every MAP iteration of the fit as a CSV row,
// written as the fit runs.
//
// The trust-region MAP inside the evidence loops reports each iteration with its step's anatomy
// (MapIteration, include/occam/map.h): the radius, ‖s‖_A, whether CG met negative curvature, the
// Newton decrement, the predicted and actual decrease, and whether the trial was taken. A row is
// flushed as soon as it is written, so a fit stopped by a signal or a time cap leaves its trace
// up to its last iteration: this is the file that says why a MAP crawls.
#pragma once

#include <chrono>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "occam/fit.h"

namespace occam::cli {

class MapTrace {
 public:
  // Opens `path` (empty: no trace) and writes the header; throws Error(kIo) if it cannot.
  explicit MapTrace(const std::string& path);
  bool enabled() const { return out_.is_open(); }
  // Records what `p` reports: an evidence step (remembered for the MAP rows that follow it) or a
  // MAP iteration (written). A write that fails stops the trace, not the fit (failed()).
  void record(const FitProgress& p);
  // Whether a write failed; rows() were written before it.
  bool failed() const { return failed_; }
  long rows() const { return rows_; }

 private:
  std::ofstream out_;
  bool failed_ = false;
  long rows_ = 0;
  // The evidence loop's last reported step, per committee member and model (mean or noise network).
  std::map<std::pair<int, bool>, int> evidence_step_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace occam::cli

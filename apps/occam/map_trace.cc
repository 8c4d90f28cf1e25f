// map_trace.cc — the CSV rows of `occam fit --map-trace` (map_trace.h).
#include "map_trace.h"

#include <cmath>
#include <sstream>

#include "occam/status.h"

namespace occam::cli {
namespace {

constexpr const char* kHeader =
    "member,noise_model,evidence_step,iteration,objective,gradient_norm,step_taken,trust_radius,step_norm,on_boundary,"
    "negative_curvature,cg_iterations,newton_decrement,predicted_decrease,actual_decrease,unresolved,seconds";

// Doubles to the digits that round-trip; NaN (a field the optimiser does not fill) as an empty field.
void put(std::ostream& os, double x) {
  if (!std::isnan(x)) os << x;
}

}  // namespace

MapTrace::MapTrace(const std::string& path) : start_(std::chrono::steady_clock::now()) {
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) throw Error(ErrorKind::kIo, "--map-trace: cannot write '" + path + "'");
  out_.precision(17);
  out_ << kHeader << '\n' << std::flush;
}

void MapTrace::record(const FitProgress& p) {
  if (!enabled() || failed_ || p.chain >= 0) return;
  if (p.evidence != nullptr) {
    evidence_step_[{p.member, p.noise_model}] = p.evidence->iteration;
    return;
  }
  if (p.map == nullptr) return;
  const MapIteration& it = *p.map;
  // The evidence loops say which step of their trace a MAP serves; otherwise (the online loop's
  // epochs) the MAP after the loop's k-th reported step serves step k + 1.
  const auto step = evidence_step_.find({p.member, p.noise_model});
  const int evidence_step = it.evidence_step >= 0          ? it.evidence_step
                            : step == evidence_step_.end() ? 0
                                                           : step->second + 1;
  std::ostringstream row;
  row.precision(17);
  row << p.member + 1 << ',' << p.noise_model << ',' << evidence_step << ',' << it.iteration << ',';
  // An optimiser that is not a trust-region method leaves the step's fields empty, flags too.
  const bool trust_region = !std::isnan(it.trust_radius);
  const auto flag = [&](bool b) { return trust_region ? (b ? "1" : "0") : ""; };
  put(row, it.objective);
  row << ',';
  put(row, it.gradient_norm);
  row << ',' << flag(it.step_taken) << ',';
  put(row, it.trust_radius);
  row << ',';
  put(row, it.step_norm);
  row << ',' << flag(it.on_boundary) << ',' << flag(it.negative_curvature) << ',';
  if (it.cg_iterations >= 0) row << it.cg_iterations;
  row << ',';
  put(row, it.newton_decrement);
  row << ',';
  put(row, it.predicted_decrease);
  row << ',';
  put(row, it.actual_decrease);
  row << ',' << flag(it.unresolved) << ','
      << std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() << '\n';
  out_ << row.str() << std::flush;
  if (out_) {
    ++rows_;
  } else {
    failed_ = true;
  }
}

}  // namespace occam::cli

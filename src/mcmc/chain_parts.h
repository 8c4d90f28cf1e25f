// chain_parts.h — what every chain loop of sample() shares: its clock across resumed sessions,
// the parameter columns of a row, and the kept rows.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <chrono>

#include "occam/mcmc/sampler.h"
#include "occam/status.h"

namespace occam::mcmc::internal {

// A chain's warm-up and sampling seconds, those of the sessions before a resume included.
class ChainClock {
 public:
  using Clock = std::chrono::steady_clock;
  // Continues the times of `resumed` (null: a fresh chain).
  explicit ChainClock(const ChainState* resumed)
      : earlier_warmup_(resumed ? resumed->warmup_seconds : 0.0), earlier_sampling_(resumed ? resumed->sampling_seconds : 0.0) {}
  double earlier_warmup() const { return earlier_warmup_; }
  // Seconds in this session.
  double session() const { return seconds_since(start_); }
  // Warm-up ends now: its seconds, earlier sessions included; sampling is timed from here.
  double end_warmup() {
    sampling_start_ = Clock::now();
    return earlier_warmup_ + seconds_since(start_);
  }
  // The seconds spent so far after `iterations` (warmup_seconds: those end_warmup() returned,
  // once warm-up is over).
  void elapsed(int iterations, int num_warmup, double warmup_seconds, double* warmup, double* sampling) const {
    if (iterations < num_warmup) {
      *warmup = earlier_warmup_ + seconds_since(start_);
      *sampling = 0.0;
    } else {
      *warmup = warmup_seconds;
      *sampling = earlier_sampling_ + seconds_since(sampling_start_);
    }
  }

 private:
  static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
  Clock::time_point start_ = Clock::now(), sampling_start_ = start_;
  double earlier_warmup_, earlier_sampling_;
};

// The part of a chain's state that every kernel has: where it is (θ, the model's state, the
// stream) and the counters of `s` after s.iterations iterations; the kernel adds its own.
inline ChainState common_chain_state(const ChainSummary& s, const Eigen::VectorXd& theta, const ChainModel& model,
                                     const Rng& rng, int sampling_iterations) {
  ChainState state;
  state.chain = s.chain;
  state.iteration = s.iterations;
  state.position = theta;
  state.model_state = model.state();
  state.rng = rng.save();
  state.draws = s.draws;
  state.divergences = s.divergences;
  state.warmup_divergences = s.warmup_divergences;
  state.max_depth_hits = s.max_depth_hits;
  state.sampling_iterations = sampling_iterations;
  return state;
}

// The columns after the sampler's seven: the model's parameters at θ, then its extra values.
inline void write_model_columns(const ChainModel& model, const Eigen::VectorXd& theta, Eigen::VectorXd* row) {
  const Eigen::Index d = theta.size();
  row->segment(kNumSamplerColumns, d) = model.parameter_values(theta);
  const Eigen::Index extras = row->size() - kNumSamplerColumns - d;
  if (extras > 0) {
    const Eigen::VectorXd e = model.extra_values(theta);
    if (e.size() != extras) throw Error(ErrorKind::kInvalidArgument, "ChainModel::extra_values has the wrong size");
    row->tail(extras) = e;
  }
}

// Stores `row` as kept draw `index`, growing *kept by doubling up to `planned` rows: an indefinite
// run (stopped by a signal) holds only what it has drawn, a completed one ends at its exact size.
inline void keep_row(const Eigen::VectorXd& row, Eigen::Index index, Eigen::Index planned, Eigen::MatrixXd* kept) {
  if (index == kept->rows()) kept->conservativeResize(std::min(planned, std::max<Eigen::Index>(64, 2 * kept->rows())), kept->cols());
  kept->row(index) = row.transpose();
}

}  // namespace occam::mcmc::internal

// chain_parts.h — what every chain loop of sample() shares: its clock across resumed sessions,
// the counters a resumed chain takes back, the columns of a row, and the rows passed on and kept.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "occam/mcmc/kernel.h"
#include "occam/mcmc/sampler.h"
#include "occam/status.h"
#include "inference/mcmc/collective.h"

namespace occam::mcmc::internal {

// A chain's warm-up and sampling seconds, those of the sessions before a resume included.
class ChainClock {
 public:
  using Clock = std::chrono::steady_clock;
  // Continues the times of `resumed` (null: a fresh chain).
  explicit ChainClock(const ChainState* resumed)
      : earlier_warmup_(resumed ? resumed->warmup_seconds : 0.0),
        earlier_sampling_(resumed ? resumed->sampling_seconds : 0.0) {}
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

// The state chain `chain` resumes from (SamplerOptions::resume), or null for a fresh chain.
inline const ChainState* resume_state(const SamplerOptions& o, int chain) {
  const auto c = static_cast<std::size_t>(chain);
  return c < o.resume.size() && o.resume[c] ? &*o.resume[c] : nullptr;
}

// Whether a stop was asked (SamplerOptions::stop); of a spread model, on any of its processes,
// every process asking at the same points so that all stop together.
inline bool stop_requested(const ChainModel& model, const SamplerOptions& o) {
  return any_process(model.communicator(), o.stop != nullptr && o.stop->load(std::memory_order_relaxed));
}

// The frame every chain loop shares (KernelChain, StochasticGradientChain, MicrocanonicalChain):
// the chain from its checkpoint (restore returns the iteration to go on from) or fresh
// (start_fresh is false when a stop came before the first evaluation: stopped_at_start gives the
// summary), a checkpoint of a fresh start, then iterate(it) until the last iteration or a stop
// request, a checkpoint where it stopped, and finish.
template <class Chain>
ChainSummary run_chain_loop(Chain& chain, const ChainState* resume, const ChainModel& model, const SamplerOptions& o,
                            ChainSummary* summary) {
  int first = 0;
  if (resume != nullptr) {
    first = chain.restore(*resume);
  } else if (!chain.start_fresh()) {
    return chain.stopped_at_start();
  }
  if (resume == nullptr) chain.checkpoint();
  for (int it = first, total = o.num_warmup + o.num_draws; it < total; ++it) {
    if (stop_requested(model, o)) {
      summary->interrupted = true;
      break;
    }
    chain.iterate(it);
  }
  if (summary->interrupted) chain.checkpoint();
  return chain.finish();
}

// A chain's state, its own fields filled in, to the sink with the times so far.
inline void hand_checkpoint(ChainState& state, const ChainSummary& s, const ChainClock& clock, const SamplerOptions& o,
                            DrawSink& sink) {
  clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &state.warmup_seconds, &state.sampling_seconds);
  sink.checkpoint(state);
}

// The end every chain loop shares, after its own fields of the summary: the kept rows cut to the
// draws made, the warm-up and sampling times, the sink's end.
inline ChainSummary end_chain(ChainSummary& s, const ChainClock& clock, const SamplerOptions& o, DrawSink* sink,
                              Eigen::MatrixXd* kept) {
  if (kept && o.keep_draws) kept->conservativeResize(s.draws, kept->cols());
  clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &s.warmup_seconds, &s.sampling_seconds);
  if (sink) sink->end(s);
  return s;
}

// The metric SamplerOptions asks to start from.
inline Metric initial_metric(const SamplerOptions& o, Eigen::Index dim) {
  const Eigen::MatrixXd& m = o.initial_inverse_metric;
  if (m.size() == 0) {
    return o.metric == MetricKind::kDense
               ? Metric::dense(Eigen::MatrixXd::Identity(dim, dim))
               : (o.metric == MetricKind::kDiagonal ? Metric::diagonal(Eigen::VectorXd::Ones(dim)) : Metric::unit(dim));
  }
  if (m.cols() == 1) {
    if (m.rows() != dim)
      throw Error(ErrorKind::kInvalidArgument, "SamplerOptions.initial_inverse_metric has the wrong size");
    if (o.metric == MetricKind::kDense) return Metric::dense(m.col(0).asDiagonal().toDenseMatrix());
    return Metric::diagonal(m.col(0));
  }
  if (m.rows() != dim || m.cols() != dim) {
    throw Error(ErrorKind::kInvalidArgument, "SamplerOptions.initial_inverse_metric has the wrong size");
  }
  if (o.metric == MetricKind::kDense) return Metric::dense(m);
  return Metric::diagonal(m.diagonal());
}

// The metric a checkpoint recorded.
inline Metric saved_metric(MetricKind kind, const Eigen::MatrixXd& inverse, Eigen::Index dim) {
  switch (kind) {
    case MetricKind::kUnit:
      return Metric::unit(dim);
    case MetricKind::kDiagonal:
      if (inverse.rows() == dim && inverse.cols() == 1) return Metric::diagonal(inverse.col(0));
      break;
    case MetricKind::kDense:
      if (inverse.rows() == dim && inverse.cols() == dim) return Metric::dense(inverse);
      break;
  }
  throw Error(ErrorKind::kInvalidArgument, "ChainState.inverse_metric has the wrong size for a " +
                                               std::string(to_string(kind)) + " metric of dimension " +
                                               std::to_string(dim));
}

// Stan's base_hmc::init_stepsize, for any criterion: double or halve the step size until
// score(ε) — a fresh random trial at ε each call — crosses `threshold` (above it: the step can
// grow). Bounded, so that an improper target cannot loop forever.
template <class Score>
double search_step_size(double step, double threshold, Score score) {
  if (!(step > 0.0) || step > 1e7) return step;
  const int direction = score(step) > threshold ? 1 : -1;
  for (int i = 0; i < 100; ++i) {
    const double value = score(step);
    if (direction == 1 && !(value > threshold)) break;
    if (direction == -1 && !(value < threshold)) break;
    const double next = direction == 1 ? 2.0 * step : 0.5 * step;
    if (next > 1e7 || next < 1e-12) break;
    step = next;
  }
  return step;
}

// A chain stopped while it found its starting point (a MAP fit can take a while): no
// iterations, and a sink with its columns and no rows.
inline ChainSummary stopped_at_start(ChainSummary s, const ChainClock& clock, DrawSink* sink,
                                     const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  s.interrupted = true;
  s.warmup_seconds = clock.session();
  if (kept) kept->resize(0, static_cast<Eigen::Index>(columns.size()));
  if (sink) {
    sink->begin(columns);
    sink->end(s);
  }
  return s;
}

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

// Checks that `r` is a state of chain `chain` of this run (its iteration within the `total`, its
// position of dimension d), and takes back its counters into *s (iterations, draws, divergences,
// depth hits; the warm-up seconds once warm-up was over) and *sampling_iterations.
inline void restore_counters(const ChainState& r, int chain, int total, int num_warmup, Eigen::Index d, ChainSummary* s,
                             int* sampling_iterations) {
  if (r.chain != chain || r.iteration < 0 || r.iteration > total || r.position.size() != d || r.draws < 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "chain " + std::to_string(chain + 1) +
                    ": the saved state is not one of this chain's (chain, iteration or dimension)");
  }
  s->draws = r.draws;
  s->divergences = r.divergences;
  s->warmup_divergences = r.warmup_divergences;
  s->max_depth_hits = r.max_depth_hits;
  s->iterations = r.iteration;
  *sampling_iterations = r.sampling_iterations;
  if (r.iteration >= num_warmup) s->warmup_seconds = r.warmup_seconds;
}

// The rows a resumed chain had kept, back into *kept (room for at least 64 more, up to `planned`).
inline void restore_kept_draws(const ChainState& r, bool keep_draws, Eigen::Index ncols, Eigen::Index planned,
                               Eigen::MatrixXd* kept) {
  if (keep_draws && (r.kept_draws.rows() != r.draws || r.kept_draws.cols() != ncols)) {
    throw Error(ErrorKind::kInvalidArgument, "chain " + std::to_string(r.chain + 1) + ": ChainState.kept_draws holds " +
                                                 std::to_string(r.kept_draws.rows()) + " rows of " +
                                                 std::to_string(r.kept_draws.cols()) + " columns, not the " +
                                                 std::to_string(r.draws) + " draws of " + std::to_string(ncols) +
                                                 " columns made before the checkpoint");
  }
  *kept = keep_draws ? r.kept_draws : Eigen::MatrixXd(0, ncols);
  if (kept->rows() < std::min<Eigen::Index>(planned, 64))
    kept->conservativeResize(std::min<Eigen::Index>(planned, 64), ncols);
}

// Stores `row` as kept draw `index`, growing *kept by doubling up to `planned` rows: an indefinite
// run (stopped by a signal) holds only what it has drawn, a completed one ends at its exact size.
inline void keep_row(const Eigen::VectorXd& row, Eigen::Index index, Eigen::Index planned, Eigen::MatrixXd* kept) {
  if (index == kept->rows())
    kept->conservativeResize(std::min(planned, std::max<Eigen::Index>(64, 2 * kept->rows())), kept->cols());
  kept->row(index) = row.transpose();
}

// Where a chain's rows go: the sink (warm-up rows too with save_warmup) and, after warm-up, the
// kept draws, every thin-th iteration.
class RowOutput {
 public:
  RowOutput(const SamplerOptions& o, const ChainModel& model, DrawSink* sink, Eigen::MatrixXd* kept, Eigen::Index ncols)
      : o_(o),
        model_(model),
        sink_(sink),
        kept_(kept),
        planned_(o.keep_draws ? (static_cast<Eigen::Index>(o.num_draws) + o.thin - 1) / o.thin : 0),
        row_(ncols) {}
  Eigen::Index planned() const { return planned_; }
  // The row of iteration `it` (0-based, warm-up included) — lp__ = log_p, the transition's sampler
  // columns, then the model's at θ — when that iteration is written or kept; counts s->draws.
  void operator()(int it, double log_p, const TransitionInfo& info, const Eigen::VectorXd& theta, ChainSummary* s) {
    const bool warmup = it < o_.num_warmup;
    const int index = warmup ? it : it - o_.num_warmup;
    if (index % o_.thin != 0 || (warmup && !o_.save_warmup)) return;
    row_[0] = log_p;
    row_[1] = info.accept_stat;
    row_[2] = info.step_size;
    row_[3] = info.tree_depth;
    row_[4] = info.n_leapfrog;
    row_[5] = info.divergent ? 1.0 : 0.0;
    row_[6] = info.energy;
    write_model_columns(model_, theta, &row_);
    if (sink_) sink_->draw(row_, warmup);
    if (warmup) return;
    if (kept_ && o_.keep_draws) keep_row(row_, s->draws, planned_, kept_);
    ++s->draws;
  }

 private:
  const SamplerOptions& o_;
  const ChainModel& model_;
  DrawSink* sink_;
  Eigen::MatrixXd* kept_;
  Eigen::Index planned_;
  Eigen::VectorXd row_;
};

}  // namespace occam::mcmc::internal

// One chain of MCLMC or MAMS: the kernels of microcanonical.h with their warm-up in stages.
//
// Warm-up (BlackJAX's mclmc_find_L_and_step_size and adjusted_mclmc_find_L_and_step_size, in
// iterations instead of integrator steps):
//   1. step size: MCLMC by the energy-error rule (EnergyErrorAdaptation, every step), MAMS by dual
//      averaging to the target acceptance; L = √d (MCLMC) or tied to ε, L = warmup_steps·ε (MAMS,
//      whose trajectories then stay short while ε is far off);
//   2. the same, and the running moments of the positions;
//   then the diagonal metric from those moments (σ² = their variances) and L = √d in its
//   coordinates (√(Σ variances) when the metric is not adapted);
//   3. the step size again, in the new coordinates;
//   4. the decoherence stage: ε and L fixed, the positions of each iteration kept; then
//      L = decoherence_factor · ε · (steps per effective draw), at most twice the L of the stage;
//   5. (MAMS) dual averaging once more at the final L.
// MCLMC spends 30%, 30%, 10%, 30% of warm-up on these stages (BlackJAX: 10%, 10%, 3.3%, 10% of the
// sampling steps), MAMS 25%, 25%, 15%, 20%, 15%. A warm-up under 20 iterations adapts the step
// size only.
#include "inference/mcmc/microcanonical_chain.h"

#include <cmath>
#include <limits>

#include "occam/mcmc/adaptation.h"
#include "occam/mcmc/microcanonical.h"
#include "occam/status.h"
#include "inference/mcmc/chain_parts.h"
#include "inference/mcmc/collective.h"

namespace occam::mcmc::internal {
namespace {

enum Stage { kStepSize, kMoments, kRetune, kDecoherence, kFinalStepSize, kSampling };

class Schedule {
 public:
  Schedule(SamplerKind method, int num_warmup) {
    static constexpr double kMclmc[kSampling] = {0.3, 0.3, 0.1, 0.3, 0.0};
    static constexpr double kMams[kSampling] = {0.25, 0.25, 0.15, 0.2, 0.15};
    const double* fraction = method == SamplerKind::kMams ? kMams : kMclmc;
    double cumulative = 0.0;
    for (int k = 0; k < kSampling; ++k) {
      cumulative += fraction[k];
      ends_[k] = num_warmup < 20
                     ? num_warmup
                     : (k + 1 == kSampling ? num_warmup : static_cast<int>(std::lround(cumulative * num_warmup)));
    }
  }
  Stage at(int iteration) const {
    for (int k = 0; k < kSampling; ++k) {
      if (iteration < ends_[k]) return static_cast<Stage>(k);
    }
    return kSampling;
  }
  int begin(Stage stage) const { return stage == kStepSize ? 0 : ends_[stage - 1]; }
  int length(Stage stage) const { return ends_[stage] - begin(stage); }
  // Whether `iteration` is the last of `stage` (a stage without iterations has none).
  bool last_of(Stage stage, int iteration) const { return length(stage) > 0 && iteration + 1 == ends_[stage]; }

 private:
  int ends_[kSampling] = {};
};

// A first step size: doubled or halved from `step` until one integrator step from z0, with a
// fresh velocity, has an energy error ΔE²/d on either side of MCLMC's target variance.
double find_initial_step_size(const IsokineticDynamics& dynamics, const MicrocanonicalPoint& z0, double step,
                              double target, Rng& rng) {
  MicrocanonicalPoint z;
  const auto score = [&](double eps) {
    z = z0;
    dynamics.refresh(&z, rng);
    double energy_error = 0.0;
    if (!dynamics.step(&z, eps, &energy_error)) return -std::numeric_limits<double>::infinity();
    return -energy_error * energy_error / (static_cast<double>(dynamics.dim()) * target);
  };
  return search_step_size(step, -1.0, score);
}

// One chain of MCLMC or MAMS as named steps: start fresh or from a checkpoint; per iteration a
// Gibbs update, the kernel's transition at the stage's step size and length, then warm-up's
// bookkeeping (the stage's adaptation, and the ends of the moments and decoherence stages) or
// sampling's sums, the row and the checkpoint; finish.
class MicrocanonicalChain {
 public:
  MicrocanonicalChain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                      const std::vector<std::string>& columns, Eigen::MatrixXd* kept)
      : chain_(chain),
        name_("chain " + std::to_string(chain + 1)),
        model_(model),
        o_(o),
        mo_(o.microcanonical),
        sink_(sink),
        columns_(columns),
        kept_(kept),
        resume_(resume_state(o, chain)),
        clock_(resume_),
        rng_(o.seed, static_cast<std::uint64_t>(chain)),
        density_(model.density()),
        d_(density_.dim()),
        mams_(o.method == SamplerKind::kMams),
        dynamics_(density_, mo_.integrator),
        mclmc_kernel_(dynamics_),
        mams_kernel_(dynamics_),
        metric_(initial_metric(o, d_)),
        total_(o.num_warmup + o.num_draws),
        schedule_(o.method, o.num_warmup),
        adapt_step_(o.adapt_step_size && o.num_warmup > 0),
        tune_length_(mo_.trajectory_length == 0.0 && o.num_warmup > 0),
        adapt_metric_(o.adapt_metric && o.metric == MetricKind::kDiagonal && o.num_warmup > 0),
        // Dual averaging with γ = 0.2 instead of Stan's 0.05: one MAMS trajectory's acceptance is
        // near 0 or 1, and with Stan's γ the iterates spread over a factor of 10 in ε and their
        // average settles far below the step size of the target (on a 10-unit network of Boston
        // housing: sampling at an acceptance of 0.997 instead of 0.9, twice the gradients per draw).
        dual_({.target = o.target_accept > 0.0 ? o.target_accept : 0.9, .gamma = 0.2}),
        energy_(mo_.energy_variance, d_),
        moments_(d_),
        eps_(o.initial_step_size),
        length_(mo_.trajectory_length > 0.0 ? mo_.trajectory_length : std::sqrt(static_cast<double>(d_))),
        ncols_(static_cast<Eigen::Index>(columns.size())),
        rows_(o, model, sink, kept, ncols_) {
    dynamics_.set_scale(metric_.inverse_mass_diagonal().cwiseSqrt());
    summary_.chain = chain;
  }

  ChainSummary run() { return run_chain_loop(*this, resume_, model_, o_, &summary_); }

  // --- The steps of run_chain_loop (chain_parts.h). ---
  // The chain from its checkpoint; returns the iteration to go on from.
  int restore(const ChainState& r) {
    restore_counters(r, chain_, total_, o_.num_warmup, d_, &summary_, &sampling_iterations_);
    if (r.momentum.size() != d_) {
      throw Error(ErrorKind::kInvalidArgument,
                  name_ + ": the saved state has no velocity of size " + std::to_string(d_));
    }
    rng_.restore(r.rng);
    model_.restore_state(r.model_state);
    metric_ = saved_metric(r.metric, r.inverse_metric, d_);
    dynamics_.set_scale(metric_.inverse_mass_diagonal().cwiseSqrt());
    z_.x = r.position;
    z_.u = r.momentum;
    if (!dynamics_.evaluate(&z_))
      throw Error(ErrorKind::kNumerical, name_ + ": the log density is not finite at the saved point");
    eps_ = r.step_size;
    length_ = r.trajectory_length;
    dual_.restore(r.dual_averaging);
    energy_.restore(r.energy_adaptation);
    moments_.restore(r.moments);
    sum_accept_ = r.sum_accept_stat;
    // The evaluation at the saved point above is not one the uninterrupted chain made.
    gradient_base_ = r.gradient_evaluations - dynamics_.gradient_evaluations();
    if (kept_) restore_kept_draws(r, o_.keep_draws, ncols_, rows_.planned(), kept_);
    return r.iteration;
  }

  // The model's initial point, a fresh velocity and the first step size; false when a stop was
  // asked for before the first evaluation.
  bool start_fresh() {
    z_.x = model_.initial_point(rng_);
    if (z_.x.size() != d_) throw Error(ErrorKind::kInvalidArgument, "ChainModel::initial_point has the wrong size");
    if (internal::stop_requested(model_, o_)) return false;
    if (!dynamics_.evaluate(&z_))
      throw Error(ErrorKind::kNumerical, name_ + ": the log density is not finite at the initial point");
    dynamics_.refresh(&z_, rng_);
    if (adapt_step_) eps_ = find_initial_step_size(dynamics_, z_, eps_, mo_.energy_variance, rng_);
    dual_.restart(eps_);
    if (sink_) sink_->begin(columns_);
    if (kept_) kept_->resize(std::min<Eigen::Index>(rows_.planned(), 64), ncols_);
    if (o_.num_warmup == 0) {
      summary_.warmup_seconds = clock_.end_warmup();
      if (sink_) sink_->adaptation_done(eps_, metric_);
      if (sink_) sink_->trajectory_length_done(length_);
    }
    return true;
  }

  ChainSummary stopped_at_start() { return internal::stopped_at_start(summary_, clock_, sink_, columns_, kept_); }

  // Iteration `it` (0-based, warm-up included).
  void iterate(int it) {
    if (model_.gibbs_step(&z_.x, rng_) && !dynamics_.evaluate(&z_)) {
      throw Error(ErrorKind::kNumerical, name_ + ": the log density is not finite after the Gibbs update");
    }
    const bool warmup = it < o_.num_warmup;
    const Stage stage = warmup ? schedule_.at(it) : kSampling;
    const TransitionInfo info = transition(stage);
    if (warmup) {
      adapt(it, stage, info);
    } else {
      ++sampling_iterations_;
      if (info.divergent) ++summary_.divergences;
      sum_accept_ += info.accept_stat;
    }
    summary_.iterations = it + 1;
    rows_(it, z_.log_p, info, z_.x, &summary_);
    if (sink_) sink_->iteration(it, total_);
    if (o_.checkpoint_every > 0 && (summary_.iterations % o_.checkpoint_every == 0 || summary_.iterations == total_)) {
      checkpoint();
    }
  }

 private:
  // The kernel's transition in `stage`: MAMS with L tied to ε in the first stages and ε by dual
  // averaging where the stage tunes it; MCLMC with warm-up's fixed number of steps early on and ε
  // by the energy-error rule where the stage tunes it.
  TransitionInfo transition(Stage stage) {
    const bool early = stage == kStepSize || stage == kMoments;
    const bool tuning_step = adapt_step_ && (early || stage == kRetune || stage == kFinalStepSize);
    if (mams_) {
      if (tune_length_ && early) length_ = mo_.warmup_steps * eps_;
      const TransitionInfo info =
          mams_kernel_.transition(&z_, eps_, mams_steps(length_, eps_, mo_.max_steps, rng_), rng_);
      if (tuning_step) eps_ = dual_.update(info.accept_stat);
      return info;
    }
    const int steps = early || stage == kRetune ? mo_.warmup_steps : mclmc_steps(length_, eps_, mo_.max_steps);
    return mclmc_kernel_.transition(&z_, &eps_, length_, steps, rng_, tuning_step ? &energy_ : nullptr);
  }

  // Warm-up's bookkeeping after the transition of iteration `it` in `stage`.
  void adapt(int it, Stage stage, const TransitionInfo& info) {
    if (info.divergent) ++summary_.warmup_divergences;
    if (stage == kMoments && (adapt_metric_ || tune_length_)) moments_.add(z_.x, info.divergent ? 0.0 : info.step_size);
    if (stage == kDecoherence && tune_length_) {
      if (position_rows_ == 0) positions_.resize(schedule_.length(kDecoherence), d_);
      positions_.row(position_rows_++) = z_.x.transpose();
      decoherence_steps_ += static_cast<double>(info.n_leapfrog / dynamics_.gradients_per_step());
    }
    if (schedule_.last_of(kMoments, it)) end_moments();
    if (schedule_.last_of(kRetune, it) && mams_ && adapt_step_) eps_ = dual_.final_step_size();
    if (schedule_.last_of(kDecoherence, it)) end_decoherence();
    if (it == o_.num_warmup - 1) {
      if (mams_ && adapt_step_) eps_ = dual_.final_step_size();
      summary_.warmup_seconds = clock_.end_warmup();
      if (sink_) sink_->adaptation_done(eps_, metric_);
      if (sink_) sink_->trajectory_length_done(length_);
    }
  }

  // The end of stage 2: the metric from the positions' moments, L in its coordinates, and a step
  // size found afresh where the coordinates changed.
  void end_moments() {
    if (moments_.count() >= 2) {
      const Eigen::VectorXd variances = moments_.variances();
      if (tune_length_) {
        length_ = adapt_metric_ ? std::sqrt(static_cast<double>(d_))
                                : std::sqrt(variances.cwiseQuotient(dynamics_.scale().cwiseAbs2()).sum());
      }
      if (adapt_metric_) {
        metric_ = Metric::diagonal(variances);
        dynamics_.set_scale(variances.cwiseSqrt());
      }
    }
    moments_.reset(d_);
    if (!adapt_step_) return;
    if (mams_) eps_ = dual_.final_step_size();
    if (adapt_metric_) eps_ = find_initial_step_size(dynamics_, z_, eps_, mo_.energy_variance, rng_);
    energy_.restart();
    dual_.restart(eps_);
  }

  // The end of stage 4: L from the effective sample size of its positions, at most twice the L it
  // was measured with (BlackJAX's adjusted_mclmc_make_adaptation_L bounds it so): a network's
  // weights are not identifiable, their slowest coordinates mix over many times the posterior's
  // width, and the unbounded estimate would make every iteration as long as max_steps allows.
  void end_decoherence() {
    if (tune_length_ && position_rows_ >= 4) {
      const double measured =
          decoherence_length(positions_.topRows(position_rows_), decoherence_steps_, eps_, mo_.decoherence_factor);
      if (measured > 0.0) length_ = std::min(measured, 2.0 * length_);
    }
    positions_.resize(0, 0);
    position_rows_ = 0;
    decoherence_steps_ = 0.0;
    if (adapt_step_) dual_.restart(eps_);
  }

 public:
  // The chain's state after summary_.iterations iterations, for the sink to keep. None inside the
  // decoherence stage, whose positions a state does not hold: a chain stopped there resumes from
  // the checkpoint before the stage and makes its iterations again, the same ones.
  void checkpoint() {
    if (!sink_ || o_.checkpoint_every <= 0 || position_rows_ > 0) return;
    ChainState state = common_chain_state(summary_, z_.x, model_, rng_, sampling_iterations_);
    state.step_size = eps_;
    state.dual_averaging = dual_.state();
    state.metric = metric_.kind();
    if (metric_.kind() == MetricKind::kDiagonal) state.inverse_metric = metric_.inverse_mass_diagonal();
    state.sum_accept_stat = sum_accept_;
    state.gradient_evaluations = gradient_base_ + dynamics_.gradient_evaluations();
    state.momentum = z_.u;
    state.trajectory_length = length_;
    state.energy_adaptation = energy_.state();
    state.moments = moments_.state();
    internal::hand_checkpoint(state, summary_, clock_, o_, *sink_);
  }

  ChainSummary finish() {
    ChainSummary& s = summary_;
    s.mean_accept_stat = sampling_iterations_ > 0 ? sum_accept_ / sampling_iterations_ : 0.0;
    s.step_size = eps_;
    s.trajectory_length = length_;
    s.inverse_metric_diagonal = metric_.inverse_mass_diagonal();
    s.gradient_evaluations = gradient_base_ + dynamics_.gradient_evaluations();
    return internal::end_chain(s, clock_, o_, sink_, kept_);
  }

 private:
  const int chain_;
  const std::string name_;
  ChainModel& model_;
  const SamplerOptions& o_;
  const MicrocanonicalOptions& mo_;
  DrawSink* sink_;
  const std::vector<std::string>& columns_;
  Eigen::MatrixXd* kept_;
  const ChainState* resume_;
  ChainClock clock_;
  Rng rng_;
  const LogDensity& density_;
  const Eigen::Index d_;
  const bool mams_;
  IsokineticDynamics dynamics_;
  const MclmcKernel mclmc_kernel_;
  const MamsKernel mams_kernel_;
  Metric metric_;
  const int total_;
  const Schedule schedule_;
  const bool adapt_step_, tune_length_, adapt_metric_;
  DualAveraging dual_;
  EnergyErrorAdaptation energy_;
  StreamingMoments moments_;
  double eps_, length_;
  const Eigen::Index ncols_;
  RowOutput rows_;
  ChainSummary summary_;
  MicrocanonicalPoint z_;
  // The decoherence stage's positions, one row per iteration, and the integrator steps they took.
  Eigen::MatrixXd positions_;
  Eigen::Index position_rows_ = 0;
  double decoherence_steps_ = 0.0;
  double sum_accept_ = 0.0;
  int sampling_iterations_ = 0;
  long long gradient_base_ = 0;
};

}  // namespace

ChainSummary run_microcanonical_chain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                                      const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  MicrocanonicalChain run(chain, model, o, sink, columns, kept);
  return run.run();
}

}  // namespace occam::mcmc::internal

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
#include "microcanonical_chain.h"

#include <cmath>
#include <limits>

#include "occam/mcmc/adaptation.h"
#include "occam/mcmc/microcanonical.h"
#include "occam/status.h"
#include "chain_parts.h"
#include "collective.h"

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
      ends_[k] = num_warmup < 20 ? num_warmup
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

}  // namespace

ChainSummary run_microcanonical_chain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                                      const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  const std::string name = "chain " + std::to_string(chain + 1);
  const ChainState* resume = resume_state(o, chain);
  ChainClock clock(resume);
  const auto stop_requested = [&] { return internal::stop_requested(model, o); };
  Rng rng(o.seed, static_cast<std::uint64_t>(chain));
  const LogDensity& density = model.density();
  const Eigen::Index d = density.dim();
  const MicrocanonicalOptions& mo = o.microcanonical;
  const bool mams = o.method == SamplerKind::kMams;
  IsokineticDynamics dynamics(density, mo.integrator);
  const MclmcKernel mclmc(dynamics);
  const MamsKernel mams_kernel(dynamics);
  Metric metric = initial_metric(o, d);
  dynamics.set_scale(metric.inverse_mass_diagonal().cwiseSqrt());

  const int total = o.num_warmup + o.num_draws;
  const Schedule schedule(o.method, o.num_warmup);
  const bool adapt_step = o.adapt_step_size && o.num_warmup > 0;
  const bool tune_length = mo.trajectory_length == 0.0 && o.num_warmup > 0;
  const bool adapt_metric = o.adapt_metric && o.metric == MetricKind::kDiagonal && o.num_warmup > 0;
  // Dual averaging with γ = 0.2 instead of Stan's 0.05: one MAMS trajectory's acceptance is near 0
  // or 1, and with Stan's γ the iterates spread over a factor of 10 in ε and their average settles
  // far below the step size of the target (on a 10-unit network of Boston housing: sampling at an
  // acceptance of 0.997 instead of 0.9, twice the gradients per draw).
  DualAveraging dual({.target = o.target_accept > 0.0 ? o.target_accept : 0.9, .gamma = 0.2});
  EnergyErrorAdaptation energy(mo.energy_variance, d);
  StreamingMoments moments(d);
  double eps = o.initial_step_size;
  double length = mo.trajectory_length > 0.0 ? mo.trajectory_length : std::sqrt(static_cast<double>(d));
  // The decoherence stage's positions, one row per iteration, and the integrator steps they took.
  Eigen::MatrixXd positions;
  Eigen::Index position_rows = 0;
  double decoherence_steps = 0.0;

  ChainSummary s;
  s.chain = chain;
  const auto ncols = static_cast<Eigen::Index>(columns.size());
  RowOutput rows(o, model, sink, kept, ncols);
  double sum_accept = 0.0;
  int sampling_iterations = 0;
  long long gradient_base = 0;
  int first = 0;
  MicrocanonicalPoint z;

  if (resume != nullptr) {
    const ChainState& r = *resume;
    restore_counters(r, chain, total, o.num_warmup, d, &s, &sampling_iterations);
    if (r.momentum.size() != d) throw Error(ErrorKind::kInvalidArgument, name + ": the saved state has no velocity of size " + std::to_string(d));
    rng.restore(r.rng);
    model.restore_state(r.model_state);
    metric = saved_metric(r.metric, r.inverse_metric, d);
    dynamics.set_scale(metric.inverse_mass_diagonal().cwiseSqrt());
    z.x = r.position;
    z.u = r.momentum;
    if (!dynamics.evaluate(&z)) throw Error(ErrorKind::kNumerical, name + ": the log density is not finite at the saved point");
    eps = r.step_size;
    length = r.trajectory_length;
    dual.restore(r.dual_averaging);
    energy.restore(r.energy_adaptation);
    moments.restore(r.moments);
    sum_accept = r.sum_accept_stat;
    // The evaluation at the saved point above is not one the uninterrupted chain made.
    gradient_base = r.gradient_evaluations - dynamics.gradient_evaluations();
    first = r.iteration;
    if (kept) restore_kept_draws(r, o.keep_draws, ncols, rows.planned(), kept);
  } else {
    z.x = model.initial_point(rng);
    if (z.x.size() != d) throw Error(ErrorKind::kInvalidArgument, "ChainModel::initial_point has the wrong size");
    if (stop_requested()) return stopped_at_start(s, clock, sink, columns, kept);
    if (!dynamics.evaluate(&z)) throw Error(ErrorKind::kNumerical, name + ": the log density is not finite at the initial point");
    dynamics.refresh(&z, rng);
    if (adapt_step) eps = find_initial_step_size(dynamics, z, eps, mo.energy_variance, rng);
    dual.restart(eps);
    if (sink) sink->begin(columns);
    if (kept) kept->resize(std::min<Eigen::Index>(rows.planned(), 64), ncols);
    if (o.num_warmup == 0) {
      s.warmup_seconds = clock.end_warmup();
      if (sink) sink->adaptation_done(eps, metric);
      if (sink) sink->trajectory_length_done(length);
    }
  }

  // The chain's state after s.iterations iterations, for the sink to keep. None inside the
  // decoherence stage, whose positions a state does not hold: a chain stopped there resumes from
  // the checkpoint before the stage and makes its iterations again, the same ones.
  const auto checkpoint = [&] {
    if (!sink || o.checkpoint_every <= 0 || position_rows > 0) return;
    ChainState state = common_chain_state(s, z.x, model, rng, sampling_iterations);
    state.step_size = eps;
    state.dual_averaging = dual.state();
    state.metric = metric.kind();
    if (metric.kind() == MetricKind::kDiagonal) state.inverse_metric = metric.inverse_mass_diagonal();
    state.sum_accept_stat = sum_accept;
    state.gradient_evaluations = gradient_base + dynamics.gradient_evaluations();
    state.momentum = z.u;
    state.trajectory_length = length;
    state.energy_adaptation = energy.state();
    state.moments = moments.state();
    clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &state.warmup_seconds, &state.sampling_seconds);
    sink->checkpoint(state);
  };
  if (resume == nullptr) checkpoint();

  // The end of stage 2: the metric from the positions' moments, L in its coordinates, and a step
  // size found afresh where the coordinates changed.
  const auto end_moments = [&] {
    if (moments.count() >= 2) {
      const Eigen::VectorXd variances = moments.variances();
      if (tune_length) {
        length = adapt_metric ? std::sqrt(static_cast<double>(d))
                              : std::sqrt(variances.cwiseQuotient(dynamics.scale().cwiseAbs2()).sum());
      }
      if (adapt_metric) {
        metric = Metric::diagonal(variances);
        dynamics.set_scale(variances.cwiseSqrt());
      }
    }
    moments.reset(d);
    if (!adapt_step) return;
    if (mams) eps = dual.final_step_size();
    if (adapt_metric) eps = find_initial_step_size(dynamics, z, eps, mo.energy_variance, rng);
    energy.restart();
    dual.restart(eps);
  };
  // The end of stage 4: L from the effective sample size of its positions, at most twice the L it
  // was measured with (BlackJAX's adjusted_mclmc_make_adaptation_L bounds it so): a network's
  // weights are not identifiable, their slowest coordinates mix over many times the posterior's
  // width, and the unbounded estimate would make every iteration as long as max_steps allows.
  const auto end_decoherence = [&] {
    if (tune_length && position_rows >= 4) {
      const double measured = decoherence_length(positions.topRows(position_rows), decoherence_steps, eps, mo.decoherence_factor);
      if (measured > 0.0) length = std::min(measured, 2.0 * length);
    }
    positions.resize(0, 0);
    position_rows = 0;
    decoherence_steps = 0.0;
    if (adapt_step) dual.restart(eps);
  };

  for (int it = first; it < total; ++it) {
    if (stop_requested()) {
      s.interrupted = true;
      break;
    }
    if (model.gibbs_step(&z.x, rng) && !dynamics.evaluate(&z)) {
      throw Error(ErrorKind::kNumerical, name + ": the log density is not finite after the Gibbs update");
    }
    const bool warmup = it < o.num_warmup;
    const Stage stage = warmup ? schedule.at(it) : kSampling;
    const bool early = stage == kStepSize || stage == kMoments;
    const bool tuning_step = adapt_step && (early || stage == kRetune || stage == kFinalStepSize);
    TransitionInfo info;
    if (mams) {
      if (tune_length && early) length = mo.warmup_steps * eps;
      info = mams_kernel.transition(&z, eps, mams_steps(length, eps, mo.max_steps, rng), rng);
      if (tuning_step) eps = dual.update(info.accept_stat);
    } else {
      const int steps = early || stage == kRetune ? mo.warmup_steps : mclmc_steps(length, eps, mo.max_steps);
      info = mclmc.transition(&z, &eps, length, steps, rng, tuning_step ? &energy : nullptr);
    }
    if (warmup) {
      if (info.divergent) ++s.warmup_divergences;
      if (stage == kMoments && (adapt_metric || tune_length)) moments.add(z.x, info.divergent ? 0.0 : info.step_size);
      if (stage == kDecoherence && tune_length) {
        if (position_rows == 0) positions.resize(schedule.length(kDecoherence), d);
        positions.row(position_rows++) = z.x.transpose();
        decoherence_steps += static_cast<double>(info.n_leapfrog / dynamics.gradients_per_step());
      }
      if (schedule.last_of(kMoments, it)) end_moments();
      if (schedule.last_of(kRetune, it) && mams && adapt_step) eps = dual.final_step_size();
      if (schedule.last_of(kDecoherence, it)) end_decoherence();
      if (it == o.num_warmup - 1) {
        if (mams && adapt_step) eps = dual.final_step_size();
        s.warmup_seconds = clock.end_warmup();
        if (sink) sink->adaptation_done(eps, metric);
        if (sink) sink->trajectory_length_done(length);
      }
    } else {
      ++sampling_iterations;
      if (info.divergent) ++s.divergences;
      sum_accept += info.accept_stat;
    }
    s.iterations = it + 1;
    rows(it, z.log_p, info, z.x, &s);
    if (sink) sink->iteration(it, total);
    if (o.checkpoint_every > 0 && (s.iterations % o.checkpoint_every == 0 || s.iterations == total)) checkpoint();
  }
  if (s.interrupted) checkpoint();
  if (kept && o.keep_draws) kept->conservativeResize(s.draws, ncols);
  s.mean_accept_stat = sampling_iterations > 0 ? sum_accept / sampling_iterations : 0.0;
  s.step_size = eps;
  s.trajectory_length = length;
  s.inverse_metric_diagonal = metric.inverse_mass_diagonal();
  s.gradient_evaluations = gradient_base + dynamics.gradient_evaluations();
  clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &s.warmup_seconds, &s.sampling_seconds);
  if (sink) sink->end(s);
  return s;
}

}  // namespace occam::mcmc::internal

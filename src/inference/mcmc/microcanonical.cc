#include "occam/mcmc/microcanonical.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "occam/mcmc/diagnostics.h"
#include "occam/status.h"

namespace occam::mcmc {

void MicrocanonicalOptions::validate() const {
  const char* o = "MicrocanonicalOptions";
  if (!(trajectory_length >= 0.0) || !std::isfinite(trajectory_length)) {
    invalid_option(o, "trajectory_length", trajectory_length, "must be finite and non-negative (0: tuned)");
  }
  if (!(energy_variance > 0.0) || !std::isfinite(energy_variance)) {
    invalid_option(o, "energy_variance", energy_variance, "must be positive and finite");
  }
  if (!(decoherence_factor > 0.0) || !std::isfinite(decoherence_factor)) {
    invalid_option(o, "decoherence_factor", decoherence_factor, "must be positive and finite");
  }
  if (warmup_steps < 1) invalid_option(o, "warmup_steps", warmup_steps, "must be at least 1");
  if (max_steps < 1) invalid_option(o, "max_steps", max_steps, "must be at least 1");
}

// ---- MCLMC's step-size rule ----------------------------------------------------------------

EnergyErrorAdaptation::EnergyErrorAdaptation(double target, Eigen::Index dim)
    : target_(target), dim_(static_cast<double>(dim)) {}

void EnergyErrorAdaptation::restart() { state_ = State{}; }

double EnergyErrorAdaptation::update(double step_size, double energy_error, bool ok) {
  // The memory of the average: about 150 effective steps (BlackJAX's num_effective_samples).
  constexpr double kDecay = (150.0 - 1.0) / (150.0 + 1.0);
  constexpr double kTrust = 1.5;
  if (!ok) {
    state_.max_step_size = 0.8 * step_size;
    energy_error = 0.0;  // a failed step says nothing of the variance: it enters with a small weight
  }
  const double xi = energy_error * energy_error / (dim_ * target_) + 1e-8;
  const double log_xi = std::log(xi) / (6.0 * kTrust);
  const double w = std::exp(-0.5 * log_xi * log_xi);
  state_.weighted_xi = kDecay * state_.weighted_xi + w * xi / std::pow(step_size, 6.0);
  state_.weight = kDecay * state_.weight + w;
  double next = std::pow(state_.weighted_xi / state_.weight, -1.0 / 6.0);
  if (state_.max_step_size > 0.0) next = std::min(next, state_.max_step_size);
  // A rule fed only failures or exact steps would say 0 or ∞: keep the step it has.
  return std::isfinite(next) && next > 0.0 ? next : step_size;
}

// ---- the preconditioner's moments --------------------------------------------------------

void StreamingMoments::reset(Eigen::Index dim) {
  state_.weight = 0.0;
  state_.count = 0;
  state_.mean = Eigen::VectorXd::Zero(dim);
  state_.mean_square = Eigen::VectorXd::Zero(dim);
}

// West (1979)'s weighted update; mean_square holds the weighted sum of squared deviations.
void StreamingMoments::add(const Eigen::VectorXd& x, double weight) {
  if (!(weight > 0.0)) return;
  state_.weight += weight;
  ++state_.count;
  const Eigen::VectorXd delta = x - state_.mean;
  state_.mean += (weight / state_.weight) * delta;
  state_.mean_square += weight * delta.cwiseProduct(x - state_.mean);
}

Eigen::VectorXd StreamingMoments::variances() const {
  const double n = static_cast<double>(state_.count);
  const Eigen::VectorXd variance = state_.mean_square / state_.weight;
  return ((n / (n + 5.0)) * variance.array() + 1e-3 * 5.0 / (n + 5.0)).matrix();
}

void StreamingMoments::restore(const State& state) {
  if (state.mean.size() != state.mean_square.size() || state.count < 0 || !(state.weight >= 0.0)) {
    throw Error(ErrorKind::kInvalidArgument, "streaming moments: the saved state is inconsistent");
  }
  state_ = state;
}

double decoherence_length(const Eigen::MatrixXd& positions, double steps, double step_size, double factor) {
  double sum = 0.0;
  int used = 0;
  for (Eigen::Index i = 0; i < positions.cols(); ++i) {
    const double ess = ess_geyer(positions.col(i));
    if (!(ess > 0.0) || !std::isfinite(ess)) continue;
    sum += steps / ess;
    ++used;
  }
  return used > 0 ? factor * step_size * sum / used : 0.0;
}

int mclmc_steps(double trajectory_length, double step_size, int max_steps) {
  const double n = std::round(trajectory_length / step_size);
  return static_cast<int>(std::clamp(std::isfinite(n) ? n : 1.0, 1.0, static_cast<double>(max_steps)));
}

int mams_steps(double trajectory_length, double step_size, int max_steps, Rng& rng) {
  const int mean = mclmc_steps(trajectory_length, step_size, (max_steps + 1) / 2);
  return 1 + static_cast<int>(rng.uniform_int(static_cast<std::uint64_t>(2 * mean - 1)));
}

// ---- the kernels -------------------------------------------------------------------------

TransitionInfo MclmcKernel::transition(MicrocanonicalPoint* z, double* step_size, double trajectory_length, int steps,
                                       Rng& rng, EnergyErrorAdaptation* tuner) const {
  TransitionInfo info;
  double total = 0.0;
  for (int i = 0; i < steps; ++i) {
    before_ = *z;
    double energy_error = 0.0;
    const double eps = *step_size;
    const bool ok = dynamics_.step(z, eps, &energy_error) && std::abs(energy_error) <= kMaxMicrocanonicalEnergyError;
    info.n_leapfrog += dynamics_.gradients_per_step();
    if (tuner != nullptr) *step_size = tuner->update(eps, energy_error, ok);
    if (!ok) {
      *z = before_;
      dynamics_.refresh(z, rng);
      info.divergent = true;
      break;
    }
    total += energy_error;
    dynamics_.partial_refresh(z, eps, trajectory_length, rng);
  }
  info.step_size = *step_size;
  info.energy = total;
  info.accept_stat = info.divergent ? 0.0 : std::min(1.0, std::exp(-total));
  return info;
}

TransitionInfo MamsKernel::transition(MicrocanonicalPoint* z, double step_size, int steps, Rng& rng) const {
  TransitionInfo info;
  info.step_size = step_size;
  dynamics_.refresh(z, rng);
  proposal_ = *z;
  double total = 0.0;
  for (int i = 0; i < steps; ++i) {
    double energy_error = 0.0;
    const bool ok = dynamics_.step(&proposal_, step_size, &energy_error);
    info.n_leapfrog += dynamics_.gradients_per_step();
    total += ok ? energy_error : std::numeric_limits<double>::infinity();
    if (!ok || total > kMaxMicrocanonicalEnergyError) {
      info.divergent = true;
      break;
    }
  }
  info.energy = total;
  info.accept_stat = info.divergent ? 0.0 : std::min(1.0, std::exp(-total));
  if (!info.divergent && rng.uniform() < info.accept_stat) std::swap(*z, proposal_);
  return info;
}

}  // namespace occam::mcmc

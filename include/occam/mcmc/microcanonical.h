// microcanonical.h — microcanonical Langevin Monte Carlo (MCLMC) and its Metropolis-adjusted form
// (MAMS): the kernels over the isokinetic dynamics (isokinetic.h) and the pieces of their tuning.
//
// MCLMC (Robnik & Seljak 2024, "Fluctuation without dissipation: Microcanonical Langevin Monte
// Carlo"): integrator steps of the isokinetic dynamics, each followed by a partial refresh of the
// velocity with decoherence length L; no Metropolis test, so the draws carry a bias that grows with
// the step size ε (docs/mcmc.md states it). ε is tuned so that the energy error per step and
// dimension has Var[ΔE]/d ≈ 5·10⁻⁴ (Robnik et al. 2023), L from the effective sample size of
// a tuning run (below).
// MAMS (Robnik, Cohn-Gordon & Seljak 2025, "Metropolis Adjusted Microcanonical Hamiltonian Monte
// Carlo"): a fresh uniform velocity, n integrator steps (n uniform on 1..2N−1, N = L/ε, so that no
// trajectory length resonates with the target), and a Metropolis test on the total energy error,
// min(1, e^{−ΣΔE}): exact. ε is tuned by dual averaging to an acceptance of 0.9.
//
// One iteration of either is one stretch of the dynamics of about L/ε steps (MCLMC: exactly
// round(L/ε) after warm-up), followed by the model's Gibbs step: a draw every decoherence length.
//
//   occam::mcmc::SamplerOptions o; o.method = occam::mcmc::SamplerKind::kMclmc;  // or kMams
//   occam::mcmc::SamplerSummary s = occam::mcmc::sample(make_model, o);
//   // the kernels alone: IsokineticDynamics dyn(density, ...); MamsKernel mams(dyn); mams.transition(&z, eps, n, rng);
#pragma once

#include <Eigen/Core>

#include "occam/mcmc/isokinetic.h"
#include "occam/mcmc/kernel.h"
#include "occam/rng.h"

namespace occam::mcmc {

struct MicrocanonicalOptions {
  IsokineticIntegrator integrator = IsokineticIntegrator::kMinimalNorm;
  // L, in the preconditioned coordinates; 0: tuned in warm-up (√d until then).
  double trajectory_length = 0.0;
  // mclmc: the energy error variance per dimension Var[ΔE]/d its step size is tuned to.
  double energy_variance = 5e-4;
  // L = factor · ε · (steps per effective draw), averaged over the coordinates, from the last
  // warm-up stage (BlackJAX's mclmc_find_L_and_step_size: 0.4).
  double decoherence_factor = 0.4;
  // Integrator steps per warm-up iteration before L is known (mclmc), and the mean trajectory of
  // those iterations (mams).
  int warmup_steps = 10;
  // At most this many integrator steps in one iteration (the minimal-norm integrator takes two
  // gradients per step).
  int max_steps = 512;
  void validate() const;  // throws Error(kInvalidArgument) naming the bad field
};

// The step-size rule of MCLMC's tuning (Robnik et al. 2023; BlackJAX's
// make_L_step_size_adaptation): each step's ξ = ΔE²/(d·target) enters a decaying weighted average
// of ξ/ε⁶ (Var[ΔE] ∝ ε⁶ for these integrators), the weight w = exp(−½(log ξ / (6·1.5))²) discounting
// steps far from the target, and ε = (average)^{−1/6}; a step whose density failed caps ε at 0.8 of
// the step that failed.
class EnergyErrorAdaptation {
 public:
  EnergyErrorAdaptation(double target, Eigen::Index dim);
  // Feeds one step of size `step_size` (ok = false: the step failed) and returns the next ε.
  double update(double step_size, double energy_error, bool ok);
  void restart();

  struct State {
    double weight = 0.0, weighted_xi = 0.0;
    double max_step_size = 0.0;  // 0: none seen (∞)
  };
  State state() const { return state_; }
  void restore(const State& state) { state_ = state; }

 private:
  double target_;
  double dim_;
  State state_;
};

// Running weighted mean and mean square of the positions, for the diagonal preconditioner (each
// draw weighted by the step size it was made with, as BlackJAX does).
class StreamingMoments {
 public:
  explicit StreamingMoments(Eigen::Index dim = 0) { reset(dim); }
  void reset(Eigen::Index dim);
  void add(const Eigen::VectorXd& x, double weight);
  double weight() const { return state_.weight; }
  long long count() const { return state_.count; }
  // The weighted variances, regularised toward 10⁻³ as Stan's windowed adaptation does.
  Eigen::VectorXd variances() const;

  struct State {
    double weight = 0.0;
    long long count = 0;
    Eigen::VectorXd mean, mean_square;
  };
  const State& state() const { return state_; }
  void restore(const State& state);

 private:
  State state_;
};

// L = factor · ε · mean_i(steps / ESS_i) over the coordinates i of `positions` (iterations × d, the
// draws of one chain that took `steps` integrator steps in all); ESS by Geyer's initial monotone
// sequence (BlackJAX's make_adaptation_L). Coordinates whose ESS is undefined are left out;
// returns 0 when none is left.
double decoherence_length(const Eigen::MatrixXd& positions, double steps, double step_size, double factor);

// An integrator step whose energy error exceeds this in magnitude is treated as a divergence.
inline constexpr double kMaxMicrocanonicalEnergyError = kMaxEnergyError;

class MclmcKernel {
 public:
  // The dynamics are referenced and must outlive the kernel.
  explicit MclmcKernel(const IsokineticDynamics& dynamics) : dynamics_(dynamics) {}
  // `steps` steps from z (u, log p and gradient current), each followed by a partial refresh with
  // decoherence length L. A step whose density fails, or whose |ΔE| exceeds the divergence limit,
  // is undone and ends the iteration (divergent), with u refreshed fully so that the next
  // iteration does not take it again. With `tuner`, every step's energy error adapts *step_size
  // in between steps. accept_stat is min(1, e^{−ΣΔE}), what MAMS's test would say of the stretch
  // (a diagnostic: nothing is rejected); energy is ΣΔE.
  TransitionInfo transition(MicrocanonicalPoint* z, double* step_size, double trajectory_length, int steps, Rng& rng,
                            EnergyErrorAdaptation* tuner) const;

 private:
  const IsokineticDynamics& dynamics_;
  mutable MicrocanonicalPoint before_;
};

class MamsKernel {
 public:
  explicit MamsKernel(const IsokineticDynamics& dynamics) : dynamics_(dynamics) {}
  // A uniform u, `steps` steps of size ε, and the Metropolis test on ΣΔE: z moves to the end point
  // with probability min(1, e^{−ΣΔE}) (accept_stat), else stays. A failed density or ΣΔE above the
  // divergence limit ends the trajectory, rejected and divergent. energy is ΣΔE.
  TransitionInfo transition(MicrocanonicalPoint* z, double step_size, int steps, Rng& rng) const;

 private:
  const IsokineticDynamics& dynamics_;
  mutable MicrocanonicalPoint proposal_;
};

// MAMS's number of steps for a mean trajectory of L/ε steps: uniform on 1..2N−1 with
// N = max(1, round(L/ε)) and 2N − 1 ≤ max_steps.
int mams_steps(double trajectory_length, double step_size, int max_steps, Rng& rng);
// MCLMC's steps per iteration: round(L/ε), in [1, max_steps].
int mclmc_steps(double trajectory_length, double step_size, int max_steps);

}  // namespace occam::mcmc

// kernel.h — one Markov transition of the weights, the interface shared by NUTS, HMC and Metropolis.
//
// A kernel moves a PhasePoint (position q with its cached potential) and reports the sampler
// columns of Stan's CSV format. The step size (HMC, NUTS) or proposal scale (Metropolis) is set by
// warm-up through set_step_size(); the metric is owned by the caller.
//
//   occam::mcmc::NutsKernel nuts(hamiltonian, occam::mcmc::NutsOptions{});
//   nuts.set_step_size(0.1);
//   occam::mcmc::TransitionInfo info = nuts.transition(&z, rng);
#pragma once

#include "occam/mcmc/hamiltonian.h"
#include "occam/rng.h"

namespace occam::mcmc {

// The sampler columns of a Stan CSV row (lp__ is −V of the new point).
struct TransitionInfo {
  double accept_stat = 0.0;  // NUTS: mean Metropolis probability over the trajectory; else min(1, e^{−ΔH})
  double step_size = 0.0;
  int tree_depth = 0;      // NUTS only
  int n_leapfrog = 0;      // gradient evaluations in this transition (Metropolis: 0)
  bool divergent = false;  // a non-finite energy, or an energy error above the limit
  double energy = 0.0;     // H at the new point (Metropolis: V)
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // z->q, z->V and z->grad_V must be current (Hamiltonian::init); the momentum is resampled.
  virtual TransitionInfo transition(PhasePoint* z, Rng& rng) = 0;
  // The acceptance the step-size adaptation aims at (Stan: 0.8; Metropolis: 0.234).
  virtual double default_target_accept() const = 0;
  // Whether the kernel integrates Hamiltonian dynamics (the step-size heuristic applies).
  virtual bool uses_gradient() const = 0;

  double step_size() const { return step_size_; }
  void set_step_size(double step) { step_size_ = step; }

 protected:
  double step_size_ = 1.0;
};

// An energy error H − H₀ above this marks a divergence (Stan's max_deltaH).
inline constexpr double kMaxEnergyError = 1000.0;

}  // namespace occam::mcmc

// hmc.h — Hamiltonian Monte Carlo with a fixed number of leapfrog steps (Neal 2011), the step size
// optionally jittered uniformly in [ε(1 − j), ε(1 + j)] each transition to avoid resonances.
//
//   occam::mcmc::HmcKernel hmc(hamiltonian, {.num_steps = 20, .jitter = 0.1});
//   hmc.set_step_size(0.05);
//   occam::mcmc::TransitionInfo info = hmc.transition(&z, rng);
#pragma once

#include "occam/mcmc/kernel.h"

namespace occam::mcmc {

struct HmcOptions {
  int num_steps = 20;   // leapfrog steps per transition
  double jitter = 0.0;  // in [0, 1)
  void validate() const;
};

class HmcKernel final : public Kernel {
 public:
  HmcKernel(const Hamiltonian& hamiltonian, HmcOptions options);
  TransitionInfo transition(PhasePoint* z, Rng& rng) override;
  double default_target_accept() const override { return 0.8; }
  bool uses_gradient() const override { return true; }

 private:
  const Hamiltonian& hamiltonian_;
  HmcOptions options_;
};

}  // namespace occam::mcmc

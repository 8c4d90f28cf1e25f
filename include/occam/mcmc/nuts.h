// nuts.h — the No-U-Turn Sampler as Stan runs it: multinomial sampling of the trajectory and the
// generalised no-U-turn criterion (Hoffman & Gelman 2014; Betancourt 2017, §A.4), with a maximum
// tree depth. Divergences (non-finite energy, or H − H₀ > 1000) end the tree and are reported.
//
//   occam::mcmc::NutsKernel nuts(hamiltonian, {.max_depth = 10});
//   nuts.set_step_size(0.2);
//   occam::mcmc::TransitionInfo info = nuts.transition(&z, rng);   // info.tree_depth, info.divergent
#pragma once

#include <memory>

#include "occam/mcmc/kernel.h"

namespace occam::mcmc {

struct NutsOptions {
  int max_depth = 10;  // at most 2^max_depth − 1 leapfrog steps per transition
  void validate() const;
};

class NutsKernel final : public Kernel {
 public:
  NutsKernel(const Hamiltonian& hamiltonian, NutsOptions options);
  ~NutsKernel() override;
  TransitionInfo transition(PhasePoint* z, Rng& rng) override;
  double default_target_accept() const override { return 0.8; }
  bool uses_gradient() const override { return true; }

 private:
  struct Workspace;  // the tree's storage, reused by every transition
  const Hamiltonian& hamiltonian_;
  NutsOptions options_;
  std::unique_ptr<Workspace> workspace_;
};

}  // namespace occam::mcmc

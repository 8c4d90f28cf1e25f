// nuts.h — the No-U-Turn Sampler as Stan runs it: multinomial sampling of the trajectory and the
// generalised no-U-turn criterion (Hoffman & Gelman 2014; Betancourt 2017, §A.4), with a maximum
// tree depth. Divergences (non-finite energy, or H − H₀ > 1000) end the tree and are reported.
//
//   occam::mcmc::NutsKernel nuts(hamiltonian, {.max_depth = 10});
//   nuts.set_step_size(0.2);
//   occam::mcmc::TransitionInfo info = nuts.transition(&z, rng);   // info.tree_depth, info.divergent
#pragma once

#include "occam/mcmc/kernel.h"

namespace occam::mcmc {

struct NutsOptions {
  int max_depth = 10;  // at most 2^max_depth − 1 leapfrog steps per transition
  void validate() const;
};

class NutsKernel final : public Kernel {
 public:
  NutsKernel(const Hamiltonian& hamiltonian, NutsOptions options);
  TransitionInfo transition(PhasePoint* z, Rng& rng) override;
  double default_target_accept() const override { return 0.8; }
  bool uses_gradient() const override { return true; }

 private:
  // Builds a subtree of 2^depth leapfrog steps in direction `sign` from *z (Stan's base_nuts
  // build_tree): the multinomial proposal goes to *propose, ρ (the summed momenta) to *rho.
  bool build_tree(int depth, PhasePoint* z, PhasePoint* propose, Eigen::VectorXd* p_sharp_begin,
                  Eigen::VectorXd* p_sharp_end, Eigen::VectorXd* rho, Eigen::VectorXd* p_begin,
                  Eigen::VectorXd* p_end, double H0, double sign, int* n_leapfrog, double* log_sum_weight,
                  double* sum_metro_prob, Rng& rng);

  const Hamiltonian& hamiltonian_;
  NutsOptions options_;
  bool divergent_ = false;
};

}  // namespace occam::mcmc

#include "occam/mcmc/metropolis.h"

#include <cmath>

namespace occam::mcmc {

TransitionInfo MetropolisKernel::transition(PhasePoint* z, Rng& rng) {
  const Eigen::VectorXd q_new = z->q + step_size_ * metric_.scale_by_inverse_mass_root(rng.normal_vector(z->q.size()));
  double lp = 0.0;
  const bool ok = density_.evaluate(q_new, &lp, nullptr) && std::isfinite(lp);
  TransitionInfo info;
  info.step_size = step_size_;
  info.n_leapfrog = 0;
  // log p(q') − log p(q); a proposal where the density fails is rejected (not a divergence:
  // there is no trajectory).
  const double log_ratio = ok ? lp - (-z->V) : -std::numeric_limits<double>::infinity();
  info.accept_stat = ok ? std::min(1.0, std::exp(log_ratio)) : 0.0;
  if (ok && std::log(rng.uniform()) < log_ratio) {
    z->q = q_new;
    z->V = -lp;
  }
  info.energy = z->V;
  return info;
}

}  // namespace occam::mcmc

#include "occam/mcmc/hmc.h"

#include <cmath>

#include "occam/status.h"

namespace occam::mcmc {

void HmcOptions::validate() const {
  if (num_steps < 1) invalid_option("HmcOptions", "num_steps", num_steps, "must be at least 1");
  if (!(jitter >= 0.0 && jitter < 1.0)) invalid_option("HmcOptions", "jitter", jitter, "must be in [0, 1)");
}

HmcKernel::HmcKernel(const Hamiltonian& hamiltonian, HmcOptions options)
    : hamiltonian_(hamiltonian), options_(options) {
  options_.validate();
}

// Neal (2011), §5.2: L leapfrog steps from a fresh momentum, then a Metropolis accept of the end
// point with probability min(1, exp(H0 − H)). The integration stops at the first divergence.
TransitionInfo HmcKernel::transition(PhasePoint* z0, Rng& rng) {
  PhasePoint z = *z0;
  hamiltonian_.sample_momentum(&z, rng);
  const double H0 = hamiltonian_.energy(z);
  double step = step_size_;
  if (options_.jitter > 0.0) step *= 1.0 + options_.jitter * (2.0 * rng.uniform() - 1.0);

  TransitionInfo info;
  info.step_size = step;
  for (int i = 0; i < options_.num_steps; ++i) {
    hamiltonian_.leapfrog(&z, step);
    ++info.n_leapfrog;
    const double h = hamiltonian_.energy(z);
    if (!std::isfinite(h) || h - H0 > kMaxEnergyError) {
      info.divergent = true;
      break;
    }
  }
  const double h = info.divergent ? std::numeric_limits<double>::infinity() : hamiltonian_.energy(z);
  info.accept_stat = info.divergent ? 0.0 : std::min(1.0, std::exp(H0 - h));
  if (!info.divergent && rng.uniform() < info.accept_stat) {
    *z0 = z;
    info.energy = h;
  } else {
    z0->p = z.p;  // the momentum is refreshed next time; keep the old position
    info.energy = H0;
  }
  return info;
}

}  // namespace occam::mcmc

#include "occam/mcmc/hamiltonian.h"

#include <cmath>

namespace occam::mcmc {

bool EuclideanHamiltonian::init(PhasePoint* z) const {
  double lp = 0.0;
  ++evaluations_;
  if (z->grad_V.size() != z->q.size()) z->grad_V.resize(z->q.size());
  const bool ok = density_.evaluate(z->q, &lp, &z->grad_V) && std::isfinite(lp) && z->grad_V.allFinite();
  if (!ok) {
    z->V = std::numeric_limits<double>::infinity();
    z->grad_V.setZero();
    return false;
  }
  z->V = -lp;
  z->grad_V = -z->grad_V;
  return true;
}

// Stan's expl_leapfrog: half step in p, full step in q, half step in p.
void EuclideanHamiltonian::leapfrog(PhasePoint* z, double step) const {
  z->p.noalias() -= 0.5 * step * z->grad_V;
  z->q.noalias() += step * metric_.velocity(z->p);
  init(z);
  z->p.noalias() -= 0.5 * step * z->grad_V;
}

}  // namespace occam::mcmc

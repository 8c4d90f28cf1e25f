// hamiltonian.h — the Euclidean Hamiltonian H(q, p) = V(q) + ½ pᵀM⁻¹p and its leapfrog integrator.
//
// V(q) = −log p(q) comes from a LogDensity; the metric (mass matrix M) from metric.h. The NUTS tree
// and static HMC see only this interface, so a test can drive them with a mock Hamiltonian.
//
//   occam::mcmc::EuclideanHamiltonian h(density, occam::mcmc::Metric::diagonal(Eigen::VectorXd::Ones(d)));
//   occam::mcmc::PhasePoint z; z.q = q0; h.init(&z); h.sample_momentum(&z, rng);
//   h.leapfrog(&z, /*step_size=*/0.1);  double energy = h.energy(z);
#pragma once

#include <Eigen/Core>
#include <limits>

#include "occam/log_density.h"
#include "occam/mcmc/metric.h"
#include "occam/rng.h"

namespace occam::mcmc {

// A point of phase space with its cached potential V(q) = −log p(q) and ∇V(q). V = +∞ marks a
// point where the density could not be evaluated (it is then never accepted).
struct PhasePoint {
  Eigen::VectorXd q;
  Eigen::VectorXd p;
  double V = std::numeric_limits<double>::infinity();
  Eigen::VectorXd grad_V;
};

class Hamiltonian {
 public:
  virtual ~Hamiltonian() = default;
  // Computes z->V and z->grad_V at z->q. Returns false when the density failed there.
  virtual bool init(PhasePoint* z) const = 0;
  virtual double kinetic(const Eigen::VectorXd& p) const = 0;
  // dτ/dp = M⁻¹p, the velocity; the "sharp" momentum of Betancourt's generalised criterion.
  virtual Eigen::VectorXd velocity(const Eigen::VectorXd& p) const = 0;
  virtual void sample_momentum(PhasePoint* z, Rng& rng) const = 0;
  // One leapfrog step of size `step` (negative: backwards in time). Never throws: a failed
  // evaluation leaves z->V = +∞, which the caller sees as a divergence.
  virtual void leapfrog(PhasePoint* z, double step) const = 0;
  // How many gradient evaluations this Hamiltonian has made (for time-per-gradient reports).
  virtual long long gradient_evaluations() const { return 0; }

  double energy(const PhasePoint& z) const { return z.V + kinetic(z.p); }
};

class EuclideanHamiltonian final : public Hamiltonian {
 public:
  // Both are referenced, not copied: they must outlive the Hamiltonian. The metric may be
  // changed between transitions (warm-up adapts it).
  EuclideanHamiltonian(const LogDensity& density, const Metric& metric) : density_(density), metric_(metric) {}

  bool init(PhasePoint* z) const override;
  double kinetic(const Eigen::VectorXd& p) const override { return metric_.kinetic(p); }
  Eigen::VectorXd velocity(const Eigen::VectorXd& p) const override { return metric_.velocity(p); }
  void sample_momentum(PhasePoint* z, Rng& rng) const override { z->p = metric_.sample_momentum(rng); }
  void leapfrog(PhasePoint* z, double step) const override;
  long long gradient_evaluations() const override { return evaluations_; }

 private:
  const LogDensity& density_;
  const Metric& metric_;
  mutable long long evaluations_ = 0;
};

}  // namespace occam::mcmc

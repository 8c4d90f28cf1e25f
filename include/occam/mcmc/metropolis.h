// metropolis.h — random-walk Metropolis: q' = q + s·L·z, z ~ N(0, I), accepted with probability
// min(1, p(q')/p(q)). LLᵀ is the metric's M⁻¹ (the identity, an adapted diagonal, or the Laplace
// covariance A⁻¹); the scale s is the kernel's step size, which warm-up adapts toward an acceptance
// of 0.234 (Roberts, Gelman & Gilks 1997). Uses values only, no gradients.
//
//   occam::mcmc::MetropolisKernel rwm(density, metric);
//   rwm.set_step_size(2.38 / std::sqrt(d));
//   occam::mcmc::TransitionInfo info = rwm.transition(&z, rng);
#pragma once

#include "occam/log_density.h"
#include "occam/mcmc/kernel.h"
#include "occam/mcmc/metric.h"

namespace occam::mcmc {

class MetropolisKernel final : public Kernel {
 public:
  // Both are referenced and must outlive the kernel.
  MetropolisKernel(const LogDensity& density, const Metric& metric) : density_(density), metric_(metric) {}
  TransitionInfo transition(PhasePoint* z, Rng& rng) override;
  double default_target_accept() const override { return 0.234; }
  bool uses_gradient() const override { return false; }

 private:
  const LogDensity& density_;
  const Metric& metric_;
};

}  // namespace occam::mcmc

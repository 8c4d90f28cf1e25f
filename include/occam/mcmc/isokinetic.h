// isokinetic.h — the isokinetic (energy-sampling, microcanonical) dynamics of MCLMC and MAMS and
// their integrators, with the energy bookkeeping that makes an integration error measurable.
//
// The dynamics move a position x and a unit velocity u (|u| = 1) in the preconditioned
// coordinates y = x / σ (σ the square root of a diagonal M⁻¹):
//     dy/dt = u,    du/dt = (I − u uᵀ) g / (d − 1),    g = σ ∘ ∇log p(x)
// (Ver Steeg & Galstyan 2021, "Hamiltonian dynamics with non-Newtonian momentum for rapid
// sampling"; Robnik, De Luca, Silverstein & Seljak 2023, "Microcanonical Hamiltonian Monte Carlo",
// JMLR 24). Its flow leaves p(x) × Uniform(u on the sphere) invariant. With g held fixed
// over a time t the velocity update has the closed form (Robnik et al. 2023):
//     e = g/|g|,  δ = t|g|/(d − 1),  ζ = e^{−δ},
//     u ← [e (1 − ζ)(1 + ζ + (u·e)(1 − ζ)) + 2ζ u] / ‖·‖,
// and the kinetic energy of the underlying Hamiltonian changes by
//     ΔK = (d − 1) [δ − log 2 + log(1 + u·e + (1 − u·e) ζ²)],
// so that along the exact flow ΔK + ΔV = 0 with V = −log p. A discretised step's energy error
// ΔE = ΔK + ΔV is what MCLMC tunes its step size by (Var[ΔE]/d) and what MAMS's Metropolis test
// reads (Robnik, Cohn-Gordon & Seljak 2025, "Metropolis Adjusted Microcanonical Hamiltonian Monte
// Carlo": accept with min(1, e^{−ΣΔE})).
//
// Integrators (B: velocity update with the current gradient, A: position update y ← y + t u):
//   leapfrog      B(ε/2) A(ε) B(ε/2)                          one gradient per step
//   minimal norm  B(λε) A(ε/2) B((1−2λ)ε) A(ε/2) B(λε)        two gradients per step
// with λ = 0.1931833275037836 (Omelyan, Mryglod & Folk 2003, "Symplectic analytically integrable
// decomposition algorithms": the second-order scheme of smallest error norm, which Robnik et
// al. 2023 recommend for these dynamics).
//
//   occam::mcmc::IsokineticDynamics dynamics(density, occam::mcmc::IsokineticIntegrator::kMinimalNorm);
//   occam::mcmc::MicrocanonicalPoint z; z.x = x0; dynamics.evaluate(&z); dynamics.refresh(&z, rng);
//   double energy_error; bool ok = dynamics.step(&z, /*step_size=*/0.5, &energy_error);
#pragma once

#include <Eigen/Core>
#include <string_view>

#include "occam/log_density.h"
#include "occam/rng.h"

namespace occam::mcmc {

enum class IsokineticIntegrator { kLeapfrog, kMinimalNorm };
IsokineticIntegrator parse_isokinetic_integrator(std::string_view name);  // "leapfrog" | "minimal_norm"
const char* to_string(IsokineticIntegrator integrator);

// A point of the dynamics: the position x (the sampler's own coordinates), the unit velocity u
// (in the preconditioned coordinates), and log p(x) with its gradient.
struct MicrocanonicalPoint {
  Eigen::VectorXd x;
  Eigen::VectorXd u;
  double log_p = 0.0;
  Eigen::VectorXd grad;  // ∇log p(x)
};

class IsokineticDynamics {
 public:
  // The density is referenced and must outlive the dynamics. Throws Error(kInvalidArgument) for
  // a density of dimension below 2 (u lives on the sphere S^{d−1}).
  IsokineticDynamics(const LogDensity& density, IsokineticIntegrator integrator);

  Eigen::Index dim() const { return dim_; }
  IsokineticIntegrator integrator() const { return integrator_; }
  int gradients_per_step() const { return integrator_ == IsokineticIntegrator::kLeapfrog ? 1 : 2; }
  // σ: the preconditioner, the square root of the diagonal inverse metric (all ones by default).
  void set_scale(const Eigen::VectorXd& sigma);
  const Eigen::VectorXd& scale() const { return sigma_; }

  // log p and ∇log p at z->x. Returns false where the density fails (or is not finite).
  bool evaluate(MicrocanonicalPoint* z) const;
  // One integrator step of size ε from z (u, log p and gradient current). Returns false where the
  // density failed inside the step, leaving z part-way (the caller keeps a copy to go back to);
  // otherwise *energy_error is the step's ΔE = ΔK + ΔV.
  bool step(MicrocanonicalPoint* z, double step_size, double* energy_error) const;
  // u uniform on the sphere (a full refresh).
  void refresh(MicrocanonicalPoint* z, Rng& rng) const;
  // The partial refresh of MCLMC after a step of size ε with decoherence length L:
  // u ← (c₁u + c₂ξ/√d) / ‖·‖, c₁ = e^{−ε/L}, c₂ = √(1 − c₁²), ξ ~ N(0, I) (Robnik & Seljak 2024,
  // "Fluctuation without dissipation: Microcanonical Langevin Monte Carlo"; u stays uniform
  // on the sphere, and a mean free path L of the velocity results).
  void partial_refresh(MicrocanonicalPoint* z, double step_size, double trajectory_length, Rng& rng) const;
  // Gradient evaluations made so far.
  long long gradient_evaluations() const { return evaluations_; }

 private:
  double update_velocity(MicrocanonicalPoint* z, double time) const;  // returns ΔK
  bool update_position(MicrocanonicalPoint* z, double time) const;    // and evaluates there

  const LogDensity& density_;
  IsokineticIntegrator integrator_;
  Eigen::Index dim_;
  Eigen::VectorXd sigma_;
  mutable Eigen::VectorXd scaled_gradient_;
  mutable long long evaluations_ = 0;
};

}  // namespace occam::mcmc

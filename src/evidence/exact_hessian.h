// exact_hessian.h — products with the exact Hessian of S(w) = −log p(w, D), and solves with it
// by preconditioned conjugate gradients: where the Gauss–Newton A is not the Hessian (a network,
// hetero's Fisher weights) and the exact one is needed without forming it.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <memory>
#include <optional>

#include "occam/posterior.h"

namespace occam::evidence {

// v ↦ ∇∇S(w)·v = JᵀΛ_exact(Jv) + Σ_n Σ_k g_nk ∇²f_k(x_n)·v + Pv (Pearlmutter's R-operator;
// Λ_exact is Likelihood::neg_log_hessian). The network's forward pass at w is done once, here
// (Network::linearise): each product is then one R-forward and one R-backward pass.
class ExactHessian {
 public:
  ExactHessian(const Posterior& posterior, const Eigen::VectorXd& w);
  Eigen::VectorXd operator()(const Eigen::VectorXd& v) const;
  // JᵀΛ·f_vv at w, where f_vv = d²f(x_n; w + tv)/dt² at t = 0 is the outputs' second directional
  // derivative along v, by central differences of two forward passes at w ± h·v: the right-hand
  // side of a step's geodesic acceleration (trust_region_map.cc).
  Eigen::VectorXd pull_output_acceleration(const Eigen::VectorXd& v, double h) const;

 private:
  const Posterior& posterior_;
  Eigen::VectorXd w_;
  std::unique_ptr<Linearisation> linearisation_;
  Eigen::MatrixXd output_gradient_, output_hessian_;
};

// r ↦ M⁻¹r for a symmetric positive definite M close to the Hessian (the factored A).
using Preconditioner = std::function<Eigen::VectorXd(const Eigen::VectorXd&)>;

// (∇∇S)⁻¹b by conjugate gradients preconditioned with M (Nocedal & Wright 2006, Alg. 5.3), to a
// residual of 1e-10‖b‖, from `start` when given (the solution of a nearby system) and M⁻¹b
// otherwise. Where ∇∇S shows a direction of non-positive curvature (w is not at a minimum) it
// returns M⁻¹b instead and sets *indefinite (when given).
Eigen::VectorXd solve_exact_hessian(const ExactHessian& hessian, const Preconditioner& precondition,
                                    const Eigen::VectorXd& b, bool* indefinite = nullptr,
                                    const std::optional<Eigen::VectorXd>& start = std::nullopt);

}  // namespace occam::evidence

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

// (∇∇S)⁻¹B for the columns of B where the exact Hessian splits as ∇∇S = D + ZᵀZ with D = P + R
// block diagonal (P the prior's precision, R = Σ_n g_n∇²f_n the outputs' second-order term,
// Posterior::data_hessian) and Z = Λ^½J the weighted Jacobian (n × W): the Woodbury identity
// with D's blocks in place of a diagonal,
//
//     (D + ZᵀZ)⁻¹ = D⁻¹ − D⁻¹Zᵀ K⁻¹ Z D⁻¹,   K = I + Z D⁻¹ Zᵀ (n × n),
//
// at m·W·b + n²W + n³/3 flops (b the largest block) against m·W² + W³/3 for ∇∇S formed and
// factored. R is block diagonal for a network of one hidden layer: the second derivatives of f
// vanish between different hidden units, so each unit's input weights, bias and output weights
// form one block (given by Network::curvature_blocks where the prior is diagonal, else found from
// D's zeros, whatever the network). Neither D nor K
// need be definite; ∇∇S is positive definite exactly when D and K have equally many negative
// pivots (Haynsworth's inertia additivity on [D Zᵀ; Z −I]: ∇∇S has neg(D) − neg(K) negative
// eigenvalues); where it is not, the same formula is still (∇∇S)⁻¹B, returned when
// indefinite_allowed (a saddle's motion along its stationary points, as LU would give it). Returns
// nothing — the caller then forms ∇∇S — where f is linear in w (the caller's other solves
// apply), D's blocks are not small (their factors would cost more than 1/64 of a W × W one), there
// are more than half as many rows as weights (too little gain), the rows are spread over processes, some
// Λ_n has no square root, D or K is singular, ∇∇S is indefinite and that is not allowed, or two
// steps of iterative refinement with exact Hessian-vector products leave a residual above 1e-10
// of a column of B. *indefinite (when given) is set when the pivots show ∇∇S indefinite.
std::optional<Eigen::MatrixXd> solve_exact_hessian_by_blocks(const Posterior& posterior, const Eigen::VectorXd& w,
                                                             const Eigen::MatrixXd& B, bool indefinite_allowed,
                                                             bool* indefinite = nullptr);

}  // namespace occam::evidence

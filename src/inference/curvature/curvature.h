// curvature.h (internal) — the curvature of a Posterior at one w, formed once, then factored for
// any prior hyperparameters θ, noise precision β and damping μ.
//
// The posterior precision of the Laplace approximation and the damped Gauss–Newton system of
// Levenberg–Marquardt are the same matrix,
//
//     A(θ, β, μ) = (β/β₀)·H + P(θ) + μI,
//
// with H = JᵀΛJ the Gauss–Newton matrix (or the exact data Hessian) at w formed at the likelihood's
// precision β₀ of the moment of formation, and P(θ) = Σ_j θ_j P_j the prior precision. Only the
// Gaussian likelihood has a precision, and its data Hessian is β times one that does not depend on
// β; for every other family the scale is 1. Forming H (the Jacobians) costs far more than factoring
// A, and the evidence loop and the damping loop of Levenberg–Marquardt factor A many times at one
// w: so forming and factoring are separate steps, and factor() never re-forms the Jacobians.
//
// Two forms, chosen by size (CurvatureForm::kAuto):
//   dense     one preallocated W × W matrix: H is accumulated in its upper triangle by blocked
//             symmetric rank-k updates over the rows of the data, and each factor() copies it,
//             scaled and damped, into the lower triangle and factors it there in place (Cholesky).
//             Formation m·W², each factor W³/3 flops, memory W².
//   woodbury  for n = m·K rows of Jacobian with n < W and a group-diagonal prior (D = P + μI is
//             diagonal): with the weighted Jacobian Z = Λ^½J (n × W) and c = β/β₀,
//             A = D + c·ZᵀZ and only the n × n capacitance K = I + c·Z D⁻¹ Zᵀ is factored
//             (Woodbury 1950; Rasmussen & Williams 2006, §A.3):
//               A⁻¹ = D⁻¹ − c·D⁻¹Zᵀ K⁻¹ Z D⁻¹,   log|A| = log|D| + log|K|.
//             Z is held by its layers' factors where the network and the prior allow it
//             (weighted_jacobian.h): then Z D⁻¹ Zᵀ = Σ_l (Ã_l diag(v_l) Ã_lᵀ) ⊙ (S_l S_lᵀ) + …, the
//             structured empirical NTK, costs n²·Σ_l(fan-in + fan-out) once per w and n² per
//             further factor (one α per layer part) instead of n²W per factor, and products with
//             Z are passes through the layers; otherwise Z is held in full (n²W per factor). Each
//             factor then n³/3 flops for the Cholesky factor of K.
//
// Every quantity below comes from the one factor of the last successful factor() call.
//
//   occam::internal::Curvature c(posterior, w);           // Jacobians once
//   for (double mu : {1e-3, 1e-2}) if (c.factor(mu)) step = c.solve(-gradient);
//   c.factor(0.0); double log_det = c.log_det(); Eigen::VectorXd gamma = c.well_determined();
#pragma once

#include <Eigen/Core>
#include <memory>
#include <optional>
#include <vector>

#include "occam/laplace.h"
#include "occam/posterior.h"
#include "inference/curvature/weighted_jacobian.h"

namespace occam::internal {

struct CurvatureOptions {
  // kExact: H is the exact data Hessian, with its negative eigenvalues set to zero
  // (positive_data_hessian) when clip_negative_eigenvalues; always the dense form.
  HessianKind hessian = HessianKind::kGgn;
  // kExact: false keeps H as it is (a damped Newton method wants the true Hessian, and raises μ
  // until A is positive definite); the Laplace approximation needs a valid precision and clips.
  bool clip_negative_eigenvalues = true;
  // kAuto picks kWoodbury only where every Λ_n is also positive semi-definite (it needs Λ^½);
  // kWoodbury throws Error(kInvalidArgument) where it cannot apply.
  CurvatureForm form = CurvatureForm::kAuto;
  // Rows of the data whose Jacobian is held at once while the dense form accumulates H, so that
  // memory stays (block_rows·K) × W whatever m is.
  Index block_rows = 2048;
  // The Woodbury form holds Z by its layers' factors where the network and prior allow it
  // (weighted_jacobian.h); false holds it in full (the reference the tests compare with).
  bool layered_jacobian = true;
};

class Curvature {
 public:
  // Forms H at w (the Jacobians, once). The posterior must outlive this object: factor(mu) reads
  // its prior's θ and its likelihood's β at each call. Throws Error(kNumerical) when H is not
  // finite.
  Curvature(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
            const CurvatureOptions& options = {});

  // Forms H again at a new w, reusing this object's storage (an optimiser's next iterate). The
  // form stays the one chosen at construction (kAuto: unless some Λ_n is no longer positive
  // semi-definite, which moves it to kDense). Leaves no factor.
  void form(const Eigen::Ref<const Eigen::VectorXd>& w);

  CurvatureForm form() const { return form_; }  // kDense or kWoodbury, never kAuto
  // The Woodbury form holds Z by its layers' factors (weighted_jacobian.h).
  bool layered() const { return form_ == CurvatureForm::kWoodbury && Z_ && Z_->layered(); }
  Index dim() const { return W_; }                      // W
  Index num_rows() const { return n_; }                 // n = m·K, the rows of the weighted Jacobian
  int clipped_eigenvalues() const { return clipped_; }  // kExact: negative eigenvalues of H set to 0
  // diag(H) as formed, at the precision β₀ the likelihood had then.
  Eigen::VectorXd hessian_diagonal() const;

  // Factors A = (β/β₀)·H + P(θ) + μI with the posterior's current prior hyperparameters θ and
  // likelihood precision β, μ ≥ 0. Returns false, and leaves no factor, when A is not numerically
  // positive definite (Levenberg–Marquardt then raises μ).
  bool factor(double mu);
  // The same for given θ (as Prior::hyperparameters()) and β (ignored when the likelihood has no
  // precision), without reading or changing the posterior.
  bool factor(const Eigen::VectorXd& theta, double beta, double mu);

  bool factored() const { return factored_; }
  double mu() const { return mu_; }                        // of the last factor()
  const Eigen::VectorXd& theta() const { return theta_; }  // of the last factor()
  double beta() const { return beta_; }                    // of the last factor() (β₀ when none)

  // --- From the factor; each throws Error(kInvalidArgument) when there is none. ---

  double log_det() const;  // log|A|
  // A⁻¹r (the Levenberg–Marquardt step for r = −∇S), and A⁻¹R column by column (in the Woodbury
  // form with one step of iterative refinement).
  Eigen::VectorXd solve(const Eigen::Ref<const Eigen::VectorXd>& r) const;
  // A⁻¹r without the refinement step of the Woodbury form (the same as solve() in the dense
  // form): a fixed symmetric operator within ε·cond(K) of A⁻¹, for a preconditioner.
  Eigen::VectorXd precondition(const Eigen::Ref<const Eigen::VectorXd>& r) const;
  Eigen::MatrixXd solve_matrix(const Eigen::Ref<const Eigen::MatrixXd>& R) const;
  // vᵀAv: the squared length of v in posterior standard deviations.
  double squared_norm(const Eigen::Ref<const Eigen::VectorXd>& v) const;
  // gᵀA⁻¹g for each column g of G (W × k): the linearised predictive variance of f = gᵀw.
  Eigen::VectorXd quadratic_forms(const Eigen::Ref<const Eigen::MatrixXd>& G) const;
  // diag(A⁻¹); in the Woodbury form it forms Z in full (n²W): group_traces() does not need it.
  Eigen::VectorXd inverse_diagonal() const;
  // tr_g(A⁻¹) = Σ_{i∈g} (A⁻¹)_ii for each group g of the prior (Woodbury form: from K⁻¹ and the
  // per-set quadratic forms of weighted_jacobian.h, n³ + n²·Σ(fan-in + fan-out)).
  Eigen::VectorXd group_traces() const;
  // γ_j = θ_j tr(P⁻¹P_j) − θ_j tr(A⁻¹P_j) for each hyperparameter j of the prior at the θ of the
  // last factor(), MacKay's well-determined parameters (MacKay 1992a, eq. 4.9) when μ = 0.
  Eigen::VectorXd well_determined() const;
  // The per-example blocks of J A⁻¹ Jᵀ and of J A⁻¹ dJ[u]ᵀ for each column u of U, J the Jacobian at
  // w, the point this curvature was formed at (WeightedJacobian::inverse_jacobian_blocks), without
  // A⁻¹Jᵀ (n²W): in the layered Woodbury form, and in the dense Gauss–Newton form of a layered
  // network with several outputs (dense_inverse_jacobian_blocks, curvature_kernels.h); false,
  // computing nothing, otherwise.
  bool inverse_jacobian_blocks(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::MatrixXd& U, double h_base,
                               Eigen::MatrixXd* C, std::vector<Eigen::MatrixXd>* E) const;
  // A⁻¹ in full (W × W): for small W and non-diagonal priors only.
  Eigen::MatrixXd covariance() const;
  // The Laplace approximation N(mean, A⁻¹) with this factor (meaningful at μ = 0).
  LaplaceApproximation laplace(const Eigen::VectorXd& mean) const;

 private:
  void require_factor() const;
  Eigen::MatrixXd woodbury_solve(const Eigen::Ref<const Eigen::MatrixXd>& R) const;
  Eigen::VectorXd woodbury_group_traces() const;
  Eigen::MatrixXd apply(const Eigen::Ref<const Eigen::MatrixXd>& X) const;  // AX, Woodbury form
  void form_woodbury(const Eigen::Ref<const Eigen::VectorXd>& w);
  void form_dense(const Eigen::Ref<const Eigen::VectorXd>& w);
  bool factor_dense();
  bool factor_woodbury();

  const Posterior& posterior_;
  Prior prior_;  // a copy, whose θ factor(theta, beta, mu) sets
  CurvatureForm form_ = CurvatureForm::kDense;
  Index W_ = 0, n_ = 0;
  CurvatureOptions options_;
  int clipped_ = 0;
  double beta0_ = 1.0;  // the likelihood's precision when H was formed (1 without one)
  bool has_precision_ = false;

  // Dense form: H in the upper triangle of M_ (its diagonal in h_diagonal_), the Cholesky factor of
  // A in its lower triangle.
  Eigen::MatrixXd M_;
  Eigen::VectorXd h_diagonal_;
  // Woodbury form: Z = Λ^½J (n × W), D = diag(P + μI), and the lower Cholesky factor of
  // K = I + (β/β₀)·Z D⁻¹ Zᵀ.
  std::unique_ptr<WeightedJacobian> Z_;
  Eigen::MatrixXd K_;
  Eigen::VectorXd d_;

  bool factored_ = false;
  double mu_ = 0.0, beta_ = 1.0, log_det_ = 0.0;
  Eigen::VectorXd theta_;
};

}  // namespace occam::internal

// curvature.h — the Gauss–Newton curvature at one w, factored for any hyperparameters and
// damping: the one place the evidence loops touch W × W algebra.
//
// The data part H = −∇∇ log p(D|w) is formed once per w; A = H + P(θ) + μI is then factored for
// the hyperparameters in force and a Levenberg–Marquardt damping μ, and the step solve, log|A|
// and the traces of A⁻¹ that γ needs all come from that one factor. For a likelihood with a noise
// precision, H is kept per unit β, so that a β update needs no new H.
//
//   evidence::Curvature c;
//   c.form(posterior, w, HessianKind::kGgn);
//   if (c.factor(posterior, 0.0)) gamma = c.well_determined(posterior.prior());
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <optional>

#include "occam/laplace.h"
#include "occam/posterior.h"

namespace occam::evidence {

class Curvature {
 public:
  // H at w (Gauss–Newton, or the exact Hessian with its negative eigenvalues clipped).
  void form(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind);
  // Factors A = H + P(θ) + μI at the posterior's current θ and β. False when A is not
  // numerically positive definite.
  bool factor(const Posterior& posterior, double mu);

  double damping() const { return mu_; }
  int clipped_eigenvalues() const { return clipped_; }
  // The largest diagonal entry of H + P (Levenberg–Marquardt's scale for μ).
  double max_diagonal(const Posterior& posterior) const;

  // A⁻¹b from the factor.
  Eigen::VectorXd solve(const Eigen::VectorXd& b) const;
  // log|A| = 2 Σ log L_ii.
  double log_det() const;
  // diag(A⁻¹) and, for priors that are not group-diagonal, the whole A⁻¹.
  Eigen::VectorXd covariance_diagonal() const;
  Eigen::MatrixXd covariance() const;
  // γ_j for every prior hyperparameter at the factored A (meaningful for μ = 0): MacKay's
  // W_g − α_g tr_g(A⁻¹), or θ_j tr((P⁻¹ − A⁻¹)P_j) for a prior that is not group-diagonal.
  Eigen::VectorXd well_determined(const Prior& prior) const;
  // N(w, A⁻¹) for the factored A (μ must be 0).
  LaplaceApproximation laplace(const Eigen::VectorXd& w) const;

 private:
  Eigen::MatrixXd H_;       // data curvature, per unit β when scaled_by_beta_
  bool scaled_by_beta_ = false;
  int clipped_ = 0;
  double mu_ = 0.0;
  // A and its Cholesky factor, in place in one W × W buffer kept from one factorisation to the next.
  Eigen::MatrixXd A_;
  std::optional<Eigen::LLT<Eigen::Ref<Eigen::MatrixXd>>> llt_;
};

}  // namespace occam::evidence

#include "evidence/curvature.h"

#include <cmath>

namespace occam::evidence {

void Curvature::form(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind) {
  H_ = positive_data_hessian(posterior, w, kind, &clipped_);
  scaled_by_beta_ = posterior.likelihood().has_precision();
  if (scaled_by_beta_) H_ /= posterior.likelihood().precision();
}

bool Curvature::factor(const Posterior& posterior, double mu) {
  if (A_.rows() != H_.rows()) {
    A_.resize(H_.rows(), H_.cols());
    llt_.reset();
  }
  if (scaled_by_beta_) {
    A_.noalias() = posterior.likelihood().precision() * H_;
  } else {
    A_ = H_;
  }
  posterior.prior().add_precision_to(&A_);
  if (mu > 0.0) A_.diagonal().array() += mu;
  mu_ = mu;
  if (llt_) {
    llt_->compute(A_);
  } else {
    llt_.emplace(A_);
  }
  return llt_->info() == Eigen::Success && llt_->matrixLLT().diagonal().allFinite();
}

double Curvature::max_diagonal(const Posterior& posterior) const {
  const double scale = scaled_by_beta_ ? posterior.likelihood().precision() : 1.0;
  return (scale * H_.diagonal() + posterior.prior().precision_diagonal()).maxCoeff();
}

Eigen::VectorXd Curvature::solve(const Eigen::VectorXd& b) const { return llt_->solve(b); }

double Curvature::log_det() const { return 2.0 * llt_->matrixLLT().diagonal().array().log().sum(); }

Eigen::VectorXd Curvature::covariance_diagonal() const {
  // diag(A⁻¹) = column norms² of L⁻¹, since A⁻¹ = L⁻ᵀL⁻¹.
  const Eigen::Index W = H_.rows();
  Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W, W);
  llt_->matrixL().solveInPlace(L_inv);
  return L_inv.colwise().squaredNorm().transpose();
}

Eigen::MatrixXd Curvature::covariance() const {
  const Eigen::Index W = H_.rows();
  Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W, W);
  llt_->matrixL().solveInPlace(L_inv);
  return L_inv.transpose() * L_inv;
}

Eigen::VectorXd Curvature::well_determined(const Prior& prior) const {
  if (!prior.is_group_diagonal()) return prior.well_determined(covariance());
  return prior.group_sizes() - prior.alpha().cwiseProduct(prior.group_traces(covariance_diagonal()));
}

LaplaceApproximation Curvature::laplace(const Eigen::VectorXd& w) const {
  LaplaceApproximation q;
  q.mean = w;
  q.precision_cholesky = llt_->matrixL();
  q.log_det_precision = log_det();
  q.clipped_eigenvalues = clipped_;
  return q;
}

}  // namespace occam::evidence

// curvature.cc — the curvature of a Posterior at w in dense or Woodbury form (see curvature.h).

#include "curvature.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "curvature_kernels.h"
#include "linalg.h"
#include "occam/status.h"

namespace occam::internal {
namespace {

// Σ log of the diagonal of a triangular factor: half the log-determinant of the factored matrix.
double log_diagonal_sum(const Eigen::MatrixXd& L) { return L.diagonal().array().log().sum(); }

}  // namespace

Curvature::Curvature(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                     const CurvatureOptions& options)
    : posterior_(posterior), prior_(posterior.prior()), W_(posterior.dim()), options_(options) {
  posterior.require_one_process("the curvature (Levenberg–Marquardt, Newton, the Laplace approximation)");
  if (options.block_rows < 1) {
    invalid_option("CurvatureOptions", "block_rows", static_cast<double>(options.block_rows), "must be at least 1");
  }
  const Likelihood& likelihood = posterior.likelihood();
  has_precision_ = likelihood.has_precision();
  n_ = posterior.num_data() * posterior.network().num_outputs();
  const bool woodbury_possible = options.hessian == HessianKind::kGgn && posterior.prior().is_group_diagonal();
  if (options.form == CurvatureForm::kWoodbury && !woodbury_possible) {
    throw Error(ErrorKind::kInvalidArgument,
                "curvature: the Woodbury form needs the Gauss–Newton Hessian and a group-diagonal prior");
  }
  form_ = options.form == CurvatureForm::kWoodbury || (options.form == CurvatureForm::kAuto && woodbury_possible && n_ < W_)
              ? CurvatureForm::kWoodbury
              : CurvatureForm::kDense;
  form(w);
}

void Curvature::form(const Eigen::Ref<const Eigen::VectorXd>& w) {
  if (w.size() != W_) {
    throw Error(ErrorKind::kInvalidArgument, "curvature: w has " + std::to_string(w.size()) +
                                                 " entries but the network has " + std::to_string(W_));
  }
  factored_ = false;
  beta0_ = has_precision_ ? posterior_.likelihood().precision() : 1.0;
  beta_ = beta0_;
  if (form_ == CurvatureForm::kWoodbury) {
    form_woodbury(w);
    if (form_ == CurvatureForm::kWoodbury) return;
  }
  form_dense(w);
}

void Curvature::form_woodbury(const Eigen::Ref<const Eigen::VectorXd>& w) {
  // The weighted Jacobian of all rows at once: n < W rows, so no more memory than the dense form.
  if (!weighted_jacobian(posterior_, w, 0, posterior_.num_data(), &Z_)) {
    // Some Λ_n is not positive semi-definite: it has no square root, and only the dense form applies.
    if (options_.form == CurvatureForm::kWoodbury) {
      throw Error(ErrorKind::kNumerical, "curvature: the Woodbury form needs positive semi-definite output Hessians Λ_n");
    }
    Z_.resize(0, 0);
    U_.resize(0, 0);
    K_.resize(0, 0);
    form_ = CurvatureForm::kDense;
    return;
  }
  if (!Z_.allFinite()) throw Error(ErrorKind::kNumerical, "curvature: the Jacobian is not finite at w");
}

void Curvature::form_dense(const Eigen::Ref<const Eigen::VectorXd>& w) {
  if (options_.hessian == HessianKind::kExact) {
    const Eigen::MatrixXd H = options_.clip_negative_eigenvalues
                                  ? positive_data_hessian(posterior_, Eigen::VectorXd(w), HessianKind::kExact, &clipped_)
                                  : posterior_.data_hessian(w, HessianKind::kExact);
    M_.resize(W_, W_);
    M_.triangularView<Eigen::Upper>() = H;
  } else {
    accumulate_gauss_newton_upper(posterior_, w, options_.block_rows, &M_);
  }
  h_diagonal_ = M_.diagonal();
  for (Index j = 0; j < W_; ++j) {
    if (!M_.col(j).head(j + 1).allFinite()) throw Error(ErrorKind::kNumerical, "curvature: the data Hessian is not finite at w");
  }
}

Eigen::VectorXd Curvature::hessian_diagonal() const {
  if (form_ == CurvatureForm::kDense) return h_diagonal_;
  return Z_.colwise().squaredNorm().transpose();
}

bool Curvature::factor(double mu) {
  const double beta = has_precision_ ? posterior_.likelihood().precision() : beta0_;
  return factor(posterior_.prior().hyperparameters(), beta, mu);
}

bool Curvature::factor(const Eigen::VectorXd& theta, double beta, double mu) {
  if (!(mu >= 0.0) || !std::isfinite(mu)) invalid_option("Curvature::factor", "mu", mu, "must be finite and non-negative");
  if (has_precision_ && !(beta > 0.0 && std::isfinite(beta))) {
    invalid_option("Curvature::factor", "beta", beta, "must be positive and finite");
  }
  prior_.set_hyperparameters(theta);
  theta_ = theta;
  beta_ = has_precision_ ? beta : beta0_;
  mu_ = mu;
  factored_ = form_ == CurvatureForm::kDense ? factor_dense() : factor_woodbury();
  return factored_;
}

bool Curvature::factor_dense() {
  // A's lower triangle from H's upper one, scaled, plus P and μI; then Cholesky in place, which
  // reads and writes the lower triangle only and leaves H where it was for the next factor().
  const double scale = beta_ / beta0_;
  M_.triangularView<Eigen::StrictlyLower>() = scale * M_.transpose();
  M_.diagonal() = scale * h_diagonal_ + prior_.precision_diagonal();
  M_.diagonal().array() += mu_;
  if (!prior_.is_group_diagonal()) {
    const double lambda = prior_.smoothing()->lambda;
    const Index offset = prior_.smoothing_offset();
    const auto& L = prior_.smoothing_laplacian();
    for (Index k = 0; k < L.outerSize(); ++k) {
      for (Eigen::SparseMatrix<double>::InnerIterator it(L, k); it; ++it) {
        if (it.row() > it.col()) M_(offset + it.row(), offset + it.col()) += lambda * it.value();
      }
    }
  }
  if (!cholesky_lower_in_place(&M_)) return false;
  log_det_ = 2.0 * log_diagonal_sum(M_);
  return std::isfinite(log_det_);
}

bool Curvature::factor_woodbury() {
  d_ = prior_.precision_diagonal();
  d_.array() += mu_;
  if (!(d_.array() > 0.0).all()) return false;
  // U = √(β/β₀)·Z·D^-½, then K = I + UUᵀ (lower triangle) and its Cholesky factor in place.
  const Eigen::ArrayXd column_scale = std::sqrt(beta_ / beta0_) * d_.array().rsqrt();
  U_ = Z_ * column_scale.matrix().asDiagonal();
  capacitance_lower(U_, &K_);
  if (!cholesky_lower_in_place(&K_)) return false;
  log_det_ = d_.array().log().sum() + 2.0 * log_diagonal_sum(K_);
  return std::isfinite(log_det_);
}

void Curvature::require_factor() const {
  if (!factored_) throw Error(ErrorKind::kInvalidArgument, "curvature: no factor (factor() failed or was not called)");
}

double Curvature::log_det() const {
  require_factor();
  return log_det_;
}

Eigen::MatrixXd Curvature::solve_matrix(const Eigen::Ref<const Eigen::MatrixXd>& R) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) {
    Eigen::MatrixXd X = R;
    triangular_solve_lower(M_, false, X);
    triangular_solve_lower(M_, true, X);
    return X;
  }
  // The Woodbury solve subtracts a data term from a prior term, and loses digits to cancellation
  // where the data dominate (about ε·cond(K)); one step of iterative refinement (Wilkinson 1963),
  // with the residual R − AX from two products with Z, restores them at O(nW) cost.
  Eigen::MatrixXd X = woodbury_solve(R);
  const Eigen::MatrixXd residual = R - apply(X);
  X += woodbury_solve(residual);
  return X;
}

Eigen::MatrixXd Curvature::woodbury_solve(const Eigen::Ref<const Eigen::MatrixXd>& R) const {
  // A⁻¹R = D^-½ (Y − Uᵀ K⁻¹ U Y), Y = D^-½ R: two triangular solves with the n × n factor.
  const Eigen::ArrayXd inv_sqrt_d = d_.array().rsqrt();
  Eigen::MatrixXd Y = inv_sqrt_d.matrix().asDiagonal() * R;
  Eigen::MatrixXd T(n_, R.cols());
  if (R.cols() == 1) {
    T.noalias() = U_ * Y;
  } else {
    multiply(U_, false, Y, 0.0, T);
  }
  triangular_solve_lower(K_, false, T);
  triangular_solve_lower(K_, true, T);
  if (R.cols() == 1) {
    Y.noalias() -= U_.transpose() * T;
  } else {
    Eigen::MatrixXd UtT(W_, R.cols());
    multiply(U_, true, T, 0.0, UtT);
    Y -= UtT;
  }
  return inv_sqrt_d.matrix().asDiagonal() * Y;
}

Eigen::MatrixXd Curvature::apply(const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  // AX = DX + (β/β₀) Zᵀ(ZX) in the Woodbury form.
  Eigen::MatrixXd out = d_.asDiagonal() * X;
  if (X.cols() == 1) {
    out.noalias() += (beta_ / beta0_) * (Z_.transpose() * (Z_ * X));
    return out;
  }
  Eigen::MatrixXd ZX(Z_.rows(), X.cols());
  multiply(Z_, false, X, 0.0, ZX);
  ZX *= beta_ / beta0_;
  multiply(Z_, true, ZX, 1.0, out);
  return out;
}

Eigen::VectorXd Curvature::solve(const Eigen::Ref<const Eigen::VectorXd>& r) const { return solve_matrix(r); }

Eigen::VectorXd Curvature::precondition(const Eigen::Ref<const Eigen::VectorXd>& r) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) return solve_matrix(r);
  return woodbury_solve(r);
}

double Curvature::squared_norm(const Eigen::Ref<const Eigen::VectorXd>& v) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) return (M_.triangularView<Eigen::Lower>().transpose() * v).squaredNorm();  // ‖Lᵀv‖²
  // vᵀDv + (β/β₀)‖Zv‖².
  return v.dot(d_.cwiseProduct(v)) + (beta_ / beta0_) * (Z_ * v).squaredNorm();
}

Eigen::VectorXd Curvature::quadratic_forms(const Eigen::Ref<const Eigen::MatrixXd>& G) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) {
    // gᵀA⁻¹g = ‖L⁻¹g‖².
    Eigen::MatrixXd X = G;
    triangular_solve_lower(M_, false, X);
    return X.colwise().squaredNorm().transpose();
  }
  // gᵀA⁻¹g = ‖D^-½g‖² − ‖L_K⁻¹ U D^-½ g‖².
  const Eigen::MatrixXd Y = d_.array().rsqrt().matrix().asDiagonal() * G;
  Eigen::MatrixXd T = U_ * Y;
  triangular_solve_lower(K_, false, T);
  return Y.colwise().squaredNorm().transpose() - T.colwise().squaredNorm().transpose();
}

Eigen::VectorXd Curvature::inverse_diagonal() const {
  require_factor();
  if (form_ == CurvatureForm::kDense) {
    // diag(A⁻¹) = column norms² of L⁻¹ (A⁻¹ = L⁻ᵀL⁻¹).
    Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W_, W_);
    triangular_solve_lower(M_, false, L_inv);
    return L_inv.colwise().squaredNorm().transpose();
  }
  // (A⁻¹)_ii = (1 − ‖L_K⁻¹ u_i‖²)/d_i for the columns u_i of U.
  Eigen::MatrixXd V = U_;
  triangular_solve_lower(K_, false, V);
  return (1.0 - V.colwise().squaredNorm().transpose().array()) / d_.array();
}

Eigen::VectorXd Curvature::group_traces() const { return prior_.group_traces(inverse_diagonal()); }

Eigen::VectorXd Curvature::well_determined() const {
  require_factor();
  if (!prior_.is_group_diagonal()) return prior_.well_determined(covariance());
  return prior_.group_sizes() - prior_.alpha().cwiseProduct(group_traces());
}

Eigen::MatrixXd Curvature::covariance() const {
  require_factor();
  return solve_matrix(Eigen::MatrixXd::Identity(W_, W_));
}

LaplaceApproximation Curvature::laplace(const Eigen::VectorXd& mean) const {
  require_factor();
  if (mean.size() != W_) {
    throw Error(ErrorKind::kInvalidArgument, "curvature: the mean has " + std::to_string(mean.size()) +
                                                 " entries but the network has " + std::to_string(W_));
  }
  LaplaceApproximation q;
  q.mean = mean;
  q.clipped_eigenvalues = clipped_;
  if (form_ == CurvatureForm::kDense) {
    q.precision_cholesky = M_.triangularView<Eigen::Lower>();
    q.log_det_precision = log_det_;
    return q;
  }
  // The Woodbury factor (D, U and the eigendecomposition of UUᵀ) where it is the smaller to hold;
  // otherwise A = D + (β/β₀)ZᵀZ in full and its Cholesky factor.
  const double n = static_cast<double>(n_), W = static_cast<double>(W_);
  if (n * W + n * n + n + W < 0.5 * W * (W + 1.0)) {
    LaplaceApproximation woodbury = LaplaceApproximation::from_woodbury(mean, d_, U_);
    woodbury.clipped_eigenvalues = clipped_;
    return woodbury;
  }
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(W_, W_);
  const Eigen::MatrixXd scaled = std::sqrt(beta_ / beta0_) * Z_;
  rank_update_upper(scaled, &A);
  A.triangularView<Eigen::StrictlyLower>() = A.transpose();
  A.diagonal() += d_;
  if (!cholesky_lower_in_place(&A)) {
    throw Error(ErrorKind::kNumerical, "curvature: the posterior precision is not numerically positive definite");
  }
  q.precision_cholesky = A.triangularView<Eigen::Lower>();
  q.log_det_precision = 2.0 * log_diagonal_sum(q.precision_cholesky);
  return q;
}

}  // namespace occam::internal

// curvature.cc — the curvature of a Posterior at w in dense or Woodbury form (see curvature.h).

#include "inference/curvature/curvature.h"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "inference/curvature/curvature_kernels.h"
#include "core/linalg.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"

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
  form_ =
      options.form == CurvatureForm::kWoodbury || (options.form == CurvatureForm::kAuto && woodbury_possible && n_ < W_)
          ? CurvatureForm::kWoodbury
          : CurvatureForm::kDense;
  form(w);
}

void Curvature::form(const Eigen::Ref<const Eigen::VectorXd>& w) {
  if (w.size() != W_) {
    throw Error(ErrorKind::kInvalidArgument,
                "curvature: w has " + std::to_string(w.size()) + " entries but the network has " + std::to_string(W_));
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
  // Z of all rows at once (n < W rows: no more memory than the dense form), by its layers'
  // factors where they apply.
  if (!Z_) Z_ = make_weighted_jacobian(posterior_, options_.layered_jacobian);
  if (!Z_->form(posterior_, w)) {
    // Some Λ_n is not positive semi-definite: it has no square root, and only the dense form applies.
    if (options_.form == CurvatureForm::kWoodbury) {
      throw Error(ErrorKind::kNumerical,
                  "curvature: the Woodbury form needs positive semi-definite output Hessians Λ_n");
    }
    K_.resize(0, 0);
    Z_.reset();
    form_ = CurvatureForm::kDense;
    return;
  }
}

void Curvature::form_dense(const Eigen::Ref<const Eigen::VectorXd>& w) {
  if (options_.hessian == HessianKind::kExact) {
    const Eigen::MatrixXd H = options_.clip_negative_eigenvalues ? positive_data_hessian(posterior_, Eigen::VectorXd(w),
                                                                                         HessianKind::kExact, &clipped_)
                                                                 : posterior_.data_hessian(w, HessianKind::kExact);
    M_.resize(W_, W_);
    M_.triangularView<Eigen::Upper>() = H;
  } else {
    accumulate_gauss_newton_upper(posterior_, w, options_.block_rows, &M_);
  }
  h_diagonal_ = M_.diagonal();
  for (Index j = 0; j < W_; ++j) {
    if (!M_.col(j).head(j + 1).allFinite())
      throw Error(ErrorKind::kNumerical, "curvature: the data Hessian is not finite at w");
  }
}

Eigen::VectorXd Curvature::hessian_diagonal() const {
  if (form_ == CurvatureForm::kDense) return h_diagonal_;
  return Z_->column_squared_norms();
}

bool Curvature::factor(double mu) {
  const double beta = has_precision_ ? posterior_.likelihood().precision() : beta0_;
  return factor(posterior_.prior().hyperparameters(), beta, mu);
}

bool Curvature::factor(const Eigen::VectorXd& theta, double beta, double mu) {
  if (!(mu >= 0.0) || !std::isfinite(mu))
    invalid_option("Curvature::factor", "mu", mu, "must be finite and non-negative");
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
  // K = I + (β/β₀)·Z D⁻¹ Zᵀ (lower triangle) and its Cholesky factor in place.
  Z_->gram_lower(d_.cwiseInverse(), beta_ / beta0_, &K_);
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
  // A⁻¹R = Y − c·D⁻¹Zᵀ K⁻¹ Z Y with Y = D⁻¹R: two triangular solves with the n × n factor.
  const Eigen::VectorXd d_inverse = d_.cwiseInverse();
  const Eigen::MatrixXd Y = d_inverse.asDiagonal() * R;
  Eigen::MatrixXd T, ZtT;
  Z_->multiply(Y, &T);
  triangular_solve_lower(K_, false, T);
  triangular_solve_lower(K_, true, T);
  Z_->multiply_transpose(T, &ZtT);
  return Y - (beta_ / beta0_) * (d_inverse.asDiagonal() * ZtT);
}

Eigen::MatrixXd Curvature::apply(const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  // AX = DX + (β/β₀) Zᵀ(ZX) in the Woodbury form.
  Eigen::MatrixXd ZX, ZtZX;
  Z_->multiply(X, &ZX);
  Z_->multiply_transpose(ZX, &ZtZX);
  return d_.asDiagonal() * X + (beta_ / beta0_) * ZtZX;
}

Eigen::VectorXd Curvature::solve(const Eigen::Ref<const Eigen::VectorXd>& r) const { return solve_matrix(r); }

Eigen::VectorXd Curvature::precondition(const Eigen::Ref<const Eigen::VectorXd>& r) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) return solve_matrix(r);
  return woodbury_solve(r);
}

double Curvature::squared_norm(const Eigen::Ref<const Eigen::VectorXd>& v) const {
  require_factor();
  if (form_ == CurvatureForm::kDense)
    return (M_.triangularView<Eigen::Lower>().transpose() * v).squaredNorm();  // ‖Lᵀv‖²
  // vᵀDv + (β/β₀)‖Zv‖².
  Eigen::MatrixXd Zv;
  Z_->multiply(v, &Zv);
  return v.dot(d_.cwiseProduct(v)) + (beta_ / beta0_) * Zv.squaredNorm();
}

Eigen::VectorXd Curvature::quadratic_forms(const Eigen::Ref<const Eigen::MatrixXd>& G) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) {
    // gᵀA⁻¹g = ‖L⁻¹g‖².
    Eigen::MatrixXd X = G;
    triangular_solve_lower(M_, false, X);
    return X.colwise().squaredNorm().transpose();
  }
  // gᵀA⁻¹g = gᵀD⁻¹g − c‖L_K⁻¹ Z D⁻¹ g‖².
  Eigen::MatrixXd T;
  Z_->multiply(d_.cwiseInverse().asDiagonal() * G, &T);
  triangular_solve_lower(K_, false, T);
  return (G.array().square().colwise() / d_.array()).colwise().sum().transpose() -
         (beta_ / beta0_) * T.colwise().squaredNorm().transpose().array();
}

Eigen::VectorXd Curvature::inverse_diagonal() const {
  require_factor();
  if (form_ == CurvatureForm::kDense) {
    // diag(A⁻¹) = column norms² of L⁻¹ (A⁻¹ = L⁻ᵀL⁻¹).
    Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W_, W_);
    triangular_solve_lower(M_, false, L_inv);
    return L_inv.colwise().squaredNorm().transpose();
  }
  // (A⁻¹)_ii = 1/d_i − (c/d_i²)‖L_K⁻¹ z_i‖² for the columns z_i of Z.
  Eigen::MatrixXd V = Z_->dense();
  triangular_solve_lower(K_, false, V);
  return d_.cwiseInverse().array() -
         (beta_ / beta0_) * V.colwise().squaredNorm().transpose().array() / d_.array().square();
}

Eigen::VectorXd Curvature::group_traces() const {
  require_factor();
  if (form_ == CurvatureForm::kDense) return prior_.group_traces(inverse_diagonal());
  return woodbury_group_traces();
}

Eigen::VectorXd Curvature::woodbury_group_traces() const {
  // Σ_{i∈g} (A⁻¹)_ii = Σ over the sets s of Z inside g of |s|/d_s − (c/d_s²) Σ_{i∈s} z_iᵀK⁻¹z_i, d
  // constant on each set; K⁻¹ from its Cholesky factor (2n³/3 flops).
  Eigen::MatrixXd K_inverse = K_;
  cholesky_inverse_lower_in_place(&K_inverse);
  K_inverse.triangularView<Eigen::StrictlyUpper>() = K_inverse.transpose();
  const Eigen::VectorXd q = Z_->set_quadratic_sums(K_inverse);
  const Eigen::VectorXi& set_of = Z_->set_of();
  Eigen::VectorXd set_size = Eigen::VectorXd::Zero(Z_->num_sets());
  Eigen::VectorXd set_d = Eigen::VectorXd::Zero(Z_->num_sets());
  for (Index i = 0; i < W_; ++i) {
    set_size[set_of[i]] += 1.0;
    set_d[set_of[i]] = d_[i];
  }
  Eigen::VectorXd per_weight(W_);  // each set's trace spread evenly over its weights, all in one group
  const double c = beta_ / beta0_;
  for (Index i = 0; i < W_; ++i) {
    const Index s = set_of[i];
    per_weight[i] = (set_size[s] / set_d[s] - c * q[s] / (set_d[s] * set_d[s])) / set_size[s];
  }
  return prior_.group_traces(per_weight);
}

Eigen::VectorXd Curvature::well_determined() const {
  require_factor();
  if (!prior_.is_group_diagonal()) return prior_.well_determined(covariance());
  return prior_.group_sizes() - prior_.alpha().cwiseProduct(group_traces());
}

bool Curvature::inverse_jacobian_blocks(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::MatrixXd& U,
                                        double h_base, Eigen::MatrixXd* C, std::vector<Eigen::MatrixXd>* E) const {
  require_factor();
  if (form_ == CurvatureForm::kDense) {
    if (options_.hessian != HessianKind::kGgn) return false;
    return dense_inverse_jacobian_blocks(posterior_, w, M_, U, h_base, options_.block_rows, C, E);
  }
  if (!layered()) return false;
  return Z_->inverse_jacobian_blocks(posterior_, w, d_.cwiseInverse(), beta_ / beta0_, K_, U, h_base, C, E);
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
  LaplaceApproximation q{.mean = mean, .precision = nullptr, .clipped_eigenvalues = clipped_};
  if (form_ == CurvatureForm::kDense) {
    q.precision = std::make_shared<DensePrecision>(M_.triangularView<Eigen::Lower>(), log_det_);
    return q;
  }
  // The Woodbury factor (D, U = √c·Z D^-½ and the eigendecomposition of UUᵀ) where it is the
  // smaller to hold; otherwise A = D + c·ZᵀZ in full and its Cholesky factor.
  const double n = static_cast<double>(n_), W = static_cast<double>(W_);
  const Eigen::MatrixXd Z = Z_->dense();
  if (n * W + n * n + n + W < 0.5 * W * (W + 1.0)) {
    const Eigen::MatrixXd U = Z * (std::sqrt(beta_ / beta0_) * d_.array().rsqrt()).matrix().asDiagonal();
    q.precision = WoodburyPrecision::from_root(d_, U);
    return q;
  }
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(W_, W_);
  const Eigen::MatrixXd scaled = std::sqrt(beta_ / beta0_) * Z;
  rank_update_upper(scaled, &A);
  A.triangularView<Eigen::StrictlyLower>() = A.transpose();
  A.diagonal() += d_;
  if (!cholesky_lower_in_place(&A)) {
    throw Error(ErrorKind::kNumerical, "curvature: the posterior precision is not numerically positive definite");
  }
  Eigen::MatrixXd L = A.triangularView<Eigen::Lower>();
  const double log_det = 2.0 * log_diagonal_sum(L);
  q.precision = std::make_shared<DensePrecision>(std::move(L), log_det);
  return q;
}

}  // namespace occam::internal

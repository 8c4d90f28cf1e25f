// woodbury.cc — A = D^½(I + UᵀU)D^½ with D diagonal and U (n × W), for n well below W: the full
// Gauss–Newton H of few rows (U = Λ^½ J D^-½) and lowrank:K (U = diag(s)^½ Vᵀ D^-½, lowrank.cc).
// With UUᵀ = Q diag(s) Qᵀ (n × n) every quantity costs O(nW) per vector:
//   |A| = |D| |I + UUᵀ|                      (Sylvester's determinant identity)
//   A⁻¹ = D^-½ (I + UᵀU)⁻¹ D^-½,  (I + UᵀU)⁻¹ = I − Uᵀ(I + UUᵀ)⁻¹U  (Woodbury)
//   S = D^-½ (I + UᵀU)^-½ = D^-½ (I + UᵀQ diag(f(s)) QᵀU),  f(s) = ((1 + s)^-½ − 1)/s,
// so that SSᵀ = A⁻¹; S is not symmetric (Sᵀ = (I + UᵀU)^-½ D^-½) unless D is a multiple of I.
#include <nlohmann/json.hpp>

#include "core/linalg.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"

namespace occam::internal {
namespace {

// f(s) = ((1 + s)^-½ − 1)/s = −1/(√(1+s)(1 + √(1+s))), written without the cancellation at s → 0.
Eigen::ArrayXd root_coefficients(const Eigen::VectorXd& s) {
  const Eigen::ArrayXd r = (1.0 + s.array()).sqrt();
  return -1.0 / (r * (1.0 + r));
}

}  // namespace

WoodburyPrecision::WoodburyPrecision(Eigen::VectorXd diagonal, Eigen::MatrixXd root, Eigen::MatrixXd vectors,
                                     Eigen::VectorXd values, double log_det, std::optional<LanczosSummary> lanczos)
    : PrecisionFactor(log_det),
      d_(std::move(diagonal)),
      U_(std::move(root)),
      Q_(std::move(vectors)),
      s_(std::move(values)),
      lanczos_(lanczos) {}

std::shared_ptr<const WoodburyPrecision> WoodburyPrecision::from_root(Eigen::VectorXd diagonal, Eigen::MatrixXd root,
                                                                      std::optional<LanczosSummary> lanczos) {
  if (root.cols() != diagonal.size()) {
    throw Error(ErrorKind::kInvalidArgument, "laplace: the Woodbury factor's U and D do not match in size");
  }
  if (!(diagonal.array() > 0.0).all() || !diagonal.allFinite() || !root.allFinite()) {
    throw Error(ErrorKind::kNumerical, "laplace: the Woodbury factor has a non-positive or non-finite entry");
  }
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(root.rows(), root.rows());
  rank_update_lower(root, &gram);
  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
  if (!symmetric_eigen(gram, &values, &vectors)) {
    throw Error(ErrorKind::kNumerical, "laplace: eigendecomposition of UUᵀ failed");
  }
  values = values.cwiseMax(0.0);  // UUᵀ ⪰ 0: rounding only
  // |A| = |D| · |I + UᵀU| = |D| · |I + UUᵀ| (Sylvester's determinant identity).
  const double log_det = diagonal.array().log().sum() + values.array().log1p().sum();
  return std::shared_ptr<const WoodburyPrecision>(new WoodburyPrecision(
      std::move(diagonal), std::move(root), std::move(vectors), std::move(values), log_det, lanczos));
}

HessianStructure WoodburyPrecision::structure() const {
  if (lanczos_) return {HessianStructureKind::kLowRank, U_.rows()};
  return {HessianStructureKind::kFull};
}

Eigen::VectorXd WoodburyPrecision::covariance_diagonal() const {
  // (A⁻¹)_ii = (1 − u_iᵀ(I + UUᵀ)⁻¹u_i)/d_i, with (I + UUᵀ)⁻¹ = Q diag(1/(1+s)) Qᵀ.
  const Eigen::MatrixXd V = (1.0 + s_.array()).rsqrt().matrix().asDiagonal() * (Q_.transpose() * U_);
  return (1.0 - V.colwise().squaredNorm().transpose().array()) / d_.array();
}

Eigen::VectorXd WoodburyPrecision::precision_diagonal() const {
  return d_.cwiseProduct((1.0 + U_.colwise().squaredNorm().array()).matrix().transpose());
}

Eigen::MatrixXd WoodburyPrecision::inverse_root_times(Eigen::MatrixXd X) const {
  // (I + UᵀU)^-½ X = X + UᵀQ diag(f(s)) QᵀU X.
  const Eigen::MatrixXd T = root_coefficients(s_).matrix().asDiagonal() * (Q_.transpose() * (U_ * X));
  X.noalias() += U_.transpose() * (Q_ * T);
  return X;
}

Eigen::MatrixXd WoodburyPrecision::covariance_factor_transpose(const Eigen::MatrixXd& G) const {
  // Sᵀ = (I + UᵀU)^-½ D^-½: not S itself, unless D is a multiple of I.
  return inverse_root_times(d_.array().rsqrt().matrix().asDiagonal() * G);
}

Eigen::MatrixXd WoodburyPrecision::covariance_times(const Eigen::MatrixXd& R) const {
  // A⁻¹R = S(SᵀR) with S = D^-½ (I + UᵀU)^-½.
  return d_.array().rsqrt().matrix().asDiagonal() * inverse_root_times(covariance_factor_transpose(R));
}

Eigen::VectorXd WoodburyPrecision::draw(Rng& rng) const {
  // Sz = D^-½ (I + UᵀU)^-½ z ~ N(0, A⁻¹).
  return d_.array().rsqrt().matrix().asDiagonal() * inverse_root_times(rng.normal_vector(dim()));
}

void WoodburyPrecision::write(nlohmann::json* j) const {
  (*j)["form"] = "woodbury";
  (*j)["woodbury_diagonal"] = as_vector(d_);
  (*j)["woodbury_root_rows"] = U_.rows();
  (*j)["woodbury_root"] = as_vector(U_);  // column-major, n × W
  (*j)["capacitance_eigenvectors"] = as_vector(Q_);
  (*j)["capacitance_eigenvalues"] = as_vector(s_);
  if (lanczos_) {
    (*j)["lanczos"] = {{"steps", lanczos_->steps},
                       {"max_relative_residual", lanczos_->max_relative_residual},
                       {"converged", lanczos_->converged}};
  }
}

std::shared_ptr<const WoodburyPrecision> WoodburyPrecision::read(const nlohmann::json& j, Index W, double log_det,
                                                                 const HessianStructure& structure) {
  const auto n = j.at("woodbury_root_rows").get<Index>();
  if (n < 0) throw Error(ErrorKind::kInvalidInput, "posterior 'woodbury_root_rows' is negative");
  Eigen::VectorXd d = read_matrix(j, "woodbury_diagonal", W, 1);
  Eigen::MatrixXd U = read_matrix(j, "woodbury_root", n, W);
  Eigen::MatrixXd Q = read_matrix(j, "capacitance_eigenvectors", n, n);
  Eigen::VectorXd s = read_matrix(j, "capacitance_eigenvalues", n, 1);
  if (!(d.array() > 0.0).all() || (s.array() < 0.0).any()) {
    throw Error(ErrorKind::kInvalidInput,
                "posterior Woodbury factor has a non-positive diagonal or a negative eigenvalue");
  }
  std::optional<LanczosSummary> lanczos;
  if (structure.kind == HessianStructureKind::kLowRank) {
    // U's rows are the K kept eigenpairs.
    if (n != structure.rank) {
      throw Error(ErrorKind::kInvalidInput, "posterior 'woodbury_root_rows' is " + std::to_string(n) +
                                                " but hessian_structure " + to_string(structure) + " keeps " +
                                                std::to_string(structure.rank) + " eigenpairs");
    }
    const nlohmann::json& l = j.at("lanczos");
    lanczos = LanczosSummary{l.at("steps").get<int>(), l.at("max_relative_residual").get<double>(),
                             l.at("converged").get<bool>()};
  }
  return std::shared_ptr<const WoodburyPrecision>(
      new WoodburyPrecision(std::move(d), std::move(U), std::move(Q), std::move(s), log_det, lanczos));
}

}  // namespace occam::internal

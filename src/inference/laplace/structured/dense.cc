// dense.cc — the full Laplace approximation held densely: A = H + P = LLᵀ with L lower triangular
// (W × W), never inverted: log|A| = 2 Σ log L_ii, A⁻¹ = L⁻ᵀL⁻¹ applied by triangular solves, and a
// draw L⁻ᵀz ~ N(0, A⁻¹).
#include <nlohmann/json.hpp>

#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"

namespace occam::internal {

DensePrecision::DensePrecision(Eigen::MatrixXd cholesky_lower, double log_det)
    : PrecisionFactor(log_det), L_(std::move(cholesky_lower)) {}

Eigen::VectorXd DensePrecision::covariance_diagonal() const {
  // diag(A⁻¹) = column norms² of L⁻¹, since A⁻¹ = L⁻ᵀL⁻¹.
  Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(dim(), dim());
  L_.triangularView<Eigen::Lower>().solveInPlace(L_inv);
  return L_inv.colwise().squaredNorm().transpose();
}

Eigen::VectorXd DensePrecision::precision_diagonal() const {
  // A_ii = ‖row i of L‖².
  return L_.triangularView<Eigen::Lower>().toDenseMatrix().rowwise().squaredNorm();
}

Eigen::MatrixXd DensePrecision::covariance_factor_transpose(const Eigen::MatrixXd& G) const {
  // A = LLᵀ, so A⁻¹ = L⁻ᵀL⁻¹ and S = L⁻ᵀ: a triangular solve, never an inverse.
  return L_.triangularView<Eigen::Lower>().solve(G);
}

Eigen::MatrixXd DensePrecision::covariance_times(const Eigen::MatrixXd& R) const {
  return L_.triangularView<Eigen::Lower>().transpose().solve(covariance_factor_transpose(R));
}

Eigen::VectorXd DensePrecision::draw(Rng& rng) const {
  Eigen::VectorXd z = rng.normal_vector(dim());
  L_.triangularView<Eigen::Lower>().transpose().solveInPlace(z);  // L⁻ᵀz ~ N(0, A⁻¹)
  return z;
}

// The lower triangle of an order-p factor, packed column by column.
void write_packed_lower(const Eigen::MatrixXd& L, nlohmann::json* j) {
  const Index p = L.rows();
  std::vector<double> packed;
  packed.reserve(static_cast<std::size_t>(p * (p + 1) / 2));
  for (Index c = 0; c < p; ++c) {
    for (Index r = c; r < p; ++r) packed.push_back(L(r, c));
  }
  (*j)["precision_cholesky_lower_packed"] = packed;
}

Eigen::MatrixXd read_packed_lower(const nlohmann::json& j, Index p) {
  const auto packed = j.at("precision_cholesky_lower_packed").get<std::vector<double>>();
  if (static_cast<Index>(packed.size()) != p * (p + 1) / 2) {
    throw Error(ErrorKind::kInvalidInput, "posterior factor has " + std::to_string(packed.size()) +
                                              " entries; a lower triangle of order " + std::to_string(p) + " has " +
                                              std::to_string(p * (p + 1) / 2));
  }
  Eigen::MatrixXd L = Eigen::MatrixXd::Zero(p, p);
  std::size_t k = 0;
  for (Index c = 0; c < p; ++c) {
    for (Index r = c; r < p; ++r) L(r, c) = packed[k++];
  }
  // A Cholesky factor of a positive definite matrix has a positive, finite diagonal; anything
  // else would give NaN variances downstream.
  if (!(L.diagonal().array() > 0.0).all()) {
    throw Error(ErrorKind::kInvalidInput, "posterior factor has a non-positive diagonal entry");
  }
  return L;
}

void DensePrecision::write(nlohmann::json* j) const {
  write_packed_lower(L_, j);  // "form" absent: "dense" is the default
}

std::shared_ptr<const DensePrecision> DensePrecision::read(const nlohmann::json& j, Index W, double log_det) {
  return std::make_shared<DensePrecision>(read_packed_lower(j, W), log_det);
}

}  // namespace occam::internal

// diagonal.cc — the diagonal Laplace approximation A = diag(H) + P: every weight's curvature kept,
// every correlation between weights dropped. log|A| = Σ_i log a_i, (A⁻¹)_ii = 1/a_i, S = diag(a)^-½.
#include <cmath>
#include <nlohmann/json.hpp>

#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"
#include "inference/laplace/structured/structured.h"

namespace occam::internal {

DiagonalPrecision::DiagonalPrecision(Eigen::VectorXd diagonal, double log_det)
    : PrecisionFactor(log_det), a_(std::move(diagonal)) {}

namespace {

// a, once every entry is positive and finite.
const Eigen::VectorXd& checked(const Eigen::VectorXd& a) {
  if (!(a.array() > 0.0).all() || !a.allFinite()) {
    throw Error(ErrorKind::kNumerical,
                "diagonal Laplace: a diagonal entry of A = diag(H) + prior precision is not "
                "positive and finite");
  }
  return a;
}

}  // namespace

DiagonalPrecision::DiagonalPrecision(Eigen::VectorXd diagonal)
    : PrecisionFactor(checked(diagonal).array().log().sum()), a_(std::move(diagonal)) {}

Eigen::VectorXd DiagonalPrecision::covariance_diagonal() const { return a_.cwiseInverse(); }

Eigen::MatrixXd DiagonalPrecision::covariance_factor_transpose(const Eigen::MatrixXd& G) const {
  return a_.array().rsqrt().matrix().asDiagonal() * G;
}

Eigen::MatrixXd DiagonalPrecision::covariance_times(const Eigen::MatrixXd& R) const {
  return a_.cwiseInverse().asDiagonal() * R;
}

Eigen::VectorXd DiagonalPrecision::draw(Rng& rng) const {
  return covariance_factor_transpose(rng.normal_vector(dim()));
}

void DiagonalPrecision::write(nlohmann::json* j) const {
  (*j)["form"] = "diagonal";
  (*j)["diagonal_precision"] = as_vector(a_);
}

std::shared_ptr<const DiagonalPrecision> DiagonalPrecision::read(const nlohmann::json& j, Index W, double log_det) {
  Eigen::VectorXd a = read_matrix(j, "diagonal_precision", W, 1);
  if (!(a.array() > 0.0).all()) {
    throw Error(ErrorKind::kInvalidInput, "posterior 'diagonal_precision' has a non-positive entry");
  }
  return std::shared_ptr<const DiagonalPrecision>(new DiagonalPrecision(std::move(a), log_det));
}

LaplaceApproximation diagonal_laplace(const Posterior& posterior, const Eigen::VectorXd& w) {
  return {.mean = w,
          .precision = std::make_shared<DiagonalPrecision>(gauss_newton_diagonal(posterior, w) +
                                                           posterior.prior().precision_diagonal())};
}

}  // namespace occam::internal

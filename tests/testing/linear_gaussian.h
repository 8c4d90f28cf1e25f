// Closed forms for Bayesian linear regression y = Φw + ε, w ~ N(0, Λ⁻¹), ε ~ N(0, β⁻¹I):
// the exact references the Laplace engine must reproduce (Bishop 2006, §3.3 and §3.5).
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <numbers>

namespace occam::testing {

// log N(y; 0, β⁻¹I + ΦΛ⁻¹Φᵀ), computed in data space (m × m), independently of the engine's
// weight-space route.
inline double exact_log_evidence(const Eigen::MatrixXd& Phi, const Eigen::VectorXd& y,
                                 const Eigen::VectorXd& prior_precision, double beta) {
  const Eigen::Index m = Phi.rows();
  Eigen::MatrixXd C = Phi * prior_precision.cwiseInverse().asDiagonal() * Phi.transpose();
  C.diagonal().array() += 1.0 / beta;
  const Eigen::LLT<Eigen::MatrixXd> llt(C);
  const Eigen::VectorXd z = llt.matrixL().solve(y);
  const double log_det = 2.0 * llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
  return -0.5 * z.squaredNorm() - 0.5 * log_det - 0.5 * static_cast<double>(m) * std::log(2.0 * std::numbers::pi);
}

struct ExactPosterior {
  Eigen::VectorXd mean;
  Eigen::MatrixXd covariance;
};

inline ExactPosterior exact_posterior(const Eigen::MatrixXd& Phi, const Eigen::VectorXd& y,
                                      const Eigen::VectorXd& prior_precision, double beta) {
  Eigen::MatrixXd A = beta * Phi.transpose() * Phi;
  A.diagonal() += prior_precision;
  ExactPosterior p;
  p.covariance = A.llt().solve(Eigen::MatrixXd::Identity(A.rows(), A.cols()));
  p.mean = beta * p.covariance * Phi.transpose() * y;
  return p;
}

}  // namespace occam::testing

// Closed forms for Bayesian linear regression y = Φw + ε, w ~ N(0, Λ⁻¹), ε ~ N(0, β⁻¹I):
// the exact references the Laplace engine must reproduce (Bishop 2006, §3.3 and §3.5).
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <memory>
#include <numbers>

#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "testing/toy_data.h"

namespace occam::testing {

// Φ = [X, 1]: the design matrix of Linear(D, 1, intercept = true), whose θ = [B, b].
inline Eigen::MatrixXd design(const Eigen::MatrixXd& X) {
  Eigen::MatrixXd Phi(X.rows(), X.cols() + 1);
  Phi << X, Eigen::VectorXd::Ones(X.rows());
  return Phi;
}

// The engine's view of the same model: Linear with intercept, α_w on the weights and α_b on the
// intercept (the default groups), Gaussian noise of precision β.
inline Posterior linear_posterior(const ToyData& d, double alpha_w, double alpha_b, double beta) {
  auto net = std::make_unique<Linear>(d.X.cols(), 1, true);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
  prior.set_alpha(Eigen::Vector2d(alpha_w, alpha_b));
  return Posterior(std::move(net), std::make_unique<GaussianLikelihood>(beta), std::move(prior), d.X, d.Y);
}

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

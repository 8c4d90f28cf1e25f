#include "occam/bayesian_ridge.h"

#include <Eigen/Eigenvalues>
#include <chrono>
#include <cmath>
#include <numbers>

namespace occam {

void BayesianRidgeOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("BayesianRidgeOptions", field, value, rule);
  };
  if (max_iterations < 1) fail("max_iterations", max_iterations, "must be at least 1");
  if (!(tolerance >= 0.0)) fail("tolerance", tolerance, "must be non-negative");
  if (!(alpha > 0.0)) fail("alpha", alpha, "must be positive");
  if (!(beta > 0.0)) fail("beta", beta, "must be positive");
}

BayesianRidgeResult fit_bayesian_ridge(const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
                                       const BayesianRidgeOptions& options) {
  options.validate();
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index m = X.rows(), D = X.cols();
  if (y.size() != m || m < 2)
    throw Error(ErrorKind::kInvalidArgument, "fit_bayesian_ridge: X and y disagree or are empty");
  // Centring is the flat prior on the intercept; XᵀX and Xᵀy of the centred data from the raw
  // sums, one pass of O(mD²) (a symmetric rank-m update).
  Eigen::RowVectorXd x_mean = Eigen::RowVectorXd::Zero(D);
  double y_mean = 0.0;
  if (options.fit_intercept) {
    x_mean = X.colwise().mean();
    y_mean = y.mean();
  }
  Eigen::MatrixXd XtX = Eigen::MatrixXd::Zero(D, D);
  XtX.selfadjointView<Eigen::Lower>().rankUpdate(X.transpose());
  XtX.triangularView<Eigen::StrictlyUpper>() = XtX.transpose();
  const double md = static_cast<double>(m);
  XtX.noalias() -= md * x_mean.transpose() * x_mean;
  const Eigen::VectorXd Xty = X.transpose() * y - md * y_mean * x_mean.transpose();
  const double yty = y.squaredNorm() - md * y_mean * y_mean;

  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(XtX);
  if (eig.info() != Eigen::Success) throw Error(ErrorKind::kNumerical, "fit_bayesian_ridge: eigendecomposition failed");
  const Eigen::ArrayXd lambda = eig.eigenvalues().cwiseMax(0.0).array();
  const Eigen::ArrayXd b = (eig.eigenvectors().transpose() * Xty).array();  // Qᵀ Xᵀy

  BayesianRidgeResult r;
  double alpha = options.alpha, beta = options.beta;
  // The data points left after centring: the intercept takes one degree of freedom.
  const double n = options.fit_intercept ? md - 1.0 : md;
  auto state = [&](double a, double be, double* E_W, double* E_D, double* gamma) {
    const Eigen::ArrayXd denom = be * lambda + a;
    const Eigen::ArrayXd c = be * b / denom;  // coordinates of w_MAP in the eigenbasis
    *E_W = 0.5 * c.square().sum();
    // E_D = ½‖y − Xw‖² = ½(yᵀy − 2cᵀb + Σλ_i c_i²).
    *E_D = 0.5 * std::max(yty - 2.0 * (c * b).sum() + (lambda * c.square()).sum(), 0.0);
    *gamma = (be * lambda / denom).sum();
  };
  r.termination = Termination::kMaxIterations;
  r.message = "reached the maximum of " + std::to_string(options.max_iterations) + " re-estimations";
  double E_W = 0.0, E_D = 0.0, gamma = 0.0;
  for (int it = 1; it <= options.max_iterations; ++it) {
    state(alpha, beta, &E_W, &E_D, &gamma);
    // MacKay 1992a, eqs. 4.9–4.11.
    const double new_alpha = gamma / (2.0 * E_W);
    const double new_beta = (n - gamma) / (2.0 * E_D);
    r.iterations = it;
    if (!std::isfinite(new_alpha) || !std::isfinite(new_beta) || new_alpha <= 0.0 || new_beta <= 0.0) {
      r.termination = Termination::kFailure;
      r.message = "a re-estimate left the positive finite range (the data are fitted exactly, or carry no signal)";
      break;
    }
    const bool settled = std::abs(new_alpha - alpha) <= options.tolerance * alpha &&
                         std::abs(new_beta - beta) <= options.tolerance * beta;
    alpha = new_alpha;
    beta = new_beta;
    if (settled) {
      r.termination = Termination::kConverged;
      r.message = "alpha and beta changed by less than the tolerance";
      break;
    }
  }
  state(alpha, beta, &E_W, &E_D, &gamma);
  r.alpha = alpha;
  r.beta = beta;
  r.gamma = gamma;
  r.weights = eig.eigenvectors() * (beta * b / (beta * lambda + alpha)).matrix();
  r.intercept = y_mean - x_mean.dot(r.weights);
  // log p(y|α, β) = (D/2) log α + (n/2) log β − αE_W − βE_D − ½ log|A| − (n/2) log 2π, |A| = Π(βλ_i + α).
  r.log_evidence = 0.5 * static_cast<double>(D) * std::log(alpha) + 0.5 * n * std::log(beta) - alpha * E_W -
                   beta * E_D - 0.5 * (beta * lambda + alpha).log().sum() - 0.5 * n * std::log(2.0 * std::numbers::pi);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace occam

// bayesian_ridge.h — the evidence framework for a linear model with a Gaussian likelihood and a
// ridge prior, on the eigendecomposition of XᵀX: the fast path for large m.
//
// For y = Xw + b + ε, w ~ N(0, α⁻¹I), ε ~ N(0, β⁻¹I), the data Hessian βXᵀX is constant, so XᵀX
// and Xᵀy are formed once (O(mD²)), XᵀX = QΛQᵀ once (O(D³)), and every re-estimation of α and β
// (MacKay 1992a, eqs. 4.9–4.11) costs O(D): w = Q diag(β/(βλ_i + α)) Qᵀ Xᵀy, γ = Σ βλ_i/(βλ_i + α).
// The intercept has a flat prior, which is the same as centring X and y (as scikit-learn's
// BayesianRidge does). The result equals fit_evidence on Linear + GaussianLikelihood + ridge.
//
//   occam::BayesianRidgeOptions options;
//   occam::BayesianRidgeResult r = occam::fit_bayesian_ridge(X, y, options);
//   std::cout << r.alpha << " " << r.beta << " " << r.log_evidence;
#pragma once

#include <Eigen/Core>
#include <string>

#include "occam/status.h"

namespace occam {

struct BayesianRidgeOptions {
  bool fit_intercept = true;
  int max_iterations = 1000;
  double tolerance = 1e-12;  // stop when α and β change by less than this, relatively
  double alpha = 1.0;        // starting values
  double beta = 1.0;
  void validate() const;
};

struct BayesianRidgeResult {
  Termination termination = Termination::kFailure;
  std::string message;
  double alpha = 0.0, beta = 0.0, gamma = 0.0;
  Eigen::VectorXd weights;  // D
  double intercept = 0.0;
  double log_evidence = 0.0;  // log p(y | α, β), exact (the intercept integrated under a flat prior excluded)
  int iterations = 0;
  double seconds = 0.0;
};

BayesianRidgeResult fit_bayesian_ridge(const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
                                       const BayesianRidgeOptions& options);

}  // namespace occam

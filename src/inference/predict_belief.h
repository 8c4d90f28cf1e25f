// predict_belief.h (internal) — the predictive distribution from any Gaussian belief about the
// weights. The Laplace posterior N(w_MAP, A⁻¹) and a variational q = N(m, V) differ only in how
// they factor their covariance and draw from it, so both public predict() overloads build a
// WeightBelief and share one implementation: every likelihood (offsets, classes, counts) then
// gets the same predictive from either.
#pragma once

#include <Eigen/Core>
#include <functional>

#include "occam/likelihood.h"
#include "occam/network.h"
#include "occam/predict.h"
#include "occam/rng.h"

namespace occam::internal {

struct WeightBelief {
  const Eigen::VectorXd* mean = nullptr;
  // Sᵀ G for a factor V = S Sᵀ of the covariance (G is W × n): Var(gᵀw) = ‖Sᵀg‖², and for the
  // centred outputs of a softmax, differences of these columns give the variances exactly.
  std::function<Eigen::MatrixXd(const Eigen::MatrixXd& G)> factor_transpose;
  std::function<Eigen::VectorXd(Rng&)> sample;
  Index dim() const { return mean->size(); }
};

// Checks the shapes (throws Error(kInvalidArgument)) and returns the linearised or Monte Carlo
// predictive, as options.method says.
Prediction predict_from_belief(const Network& network, const Likelihood& likelihood, const WeightBelief& belief,
                               const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset);

// The linearised means and variances of the K outputs at the rows of X (see predict.h).
void linearized_outputs(const Network& network, const WeightBelief& belief, const Eigen::MatrixXd& X,
                        bool centre_outputs, Eigen::MatrixXd* mean, Eigen::MatrixXd* var, Index batch_rows);

}  // namespace occam::internal

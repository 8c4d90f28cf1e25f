// draws_predict.h — the Monte Carlo predictive from posterior draws of the weights:
// p(y* | x*, D) ≈ (1/S) Σ_s p(y* | f(x*; w_s), β_s).
//
// Mean and variance by the laws of total expectation and variance; the central interval from the
// empirical quantiles of one predictive draw y ~ p(y | f(x*; w_s), β_s) per weight draw.
//
//   occam::mcmc::DrawsPrediction p = occam::mcmc::predict_from_draws(net, lik, W, betas, X, {});
//   p.prediction.mean; p.prediction.lower;   // one entry per row of X
//   p.y_draws;                               // S × rows, when options.keep_draws
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "occam/likelihood.h"
#include "occam/network.h"
#include "occam/predict.h"

namespace occam::mcmc {

struct DrawsPredictOptions {
  double level = 0.95;
  std::uint64_t seed = 1;
  bool keep_draws = false;
  void validate() const;
};

struct DrawsPrediction {
  Prediction prediction;    // network output units (the caller maps back from standardisation)
  Eigen::MatrixXd y_draws;  // S × rows of X (keep_draws only)
};

// `weights` is S × W (one draw per row). `betas` has S entries (Gibbs-sampled noise precisions)
// or is empty (the likelihood's own β for every draw). Throws Error(kInvalidArgument) on sizes,
// a non-finite weight or a β that is not positive and finite.
DrawsPrediction predict_from_draws(const Network& network, const Likelihood& likelihood, const Eigen::MatrixXd& weights,
                                   const Eigen::VectorXd& betas, const Eigen::MatrixXd& X,
                                   const DrawsPredictOptions& options);

}  // namespace occam::mcmc

#include "occam/mcmc/draws_predict.h"

#include <cmath>

#include "occam/mcmc/diagnostics.h"
#include "occam/status.h"

namespace occam::mcmc {

void DrawsPredictOptions::validate() const {
  if (!(level > 0.0 && level < 1.0)) invalid_option("DrawsPredictOptions", "level", level, "must be in (0, 1)");
}

DrawsPrediction predict_from_draws(const Network& network, const Likelihood& likelihood, const Eigen::MatrixXd& weights,
                                   const Eigen::VectorXd& betas, const Eigen::MatrixXd& X,
                                   const DrawsPredictOptions& options) {
  options.validate();
  const Index S = weights.rows(), n = X.rows();
  if (S == 0) throw Error(ErrorKind::kInvalidArgument, "no posterior draws to predict from");
  if (weights.cols() != network.num_params()) {
    throw Error(ErrorKind::kInvalidArgument, "draws have " + std::to_string(weights.cols()) + " weights, the network " +
                                                 std::to_string(network.num_params()));
  }
  if (betas.size() != 0 && betas.size() != S) throw Error(ErrorKind::kInvalidArgument, "one β per draw is needed");
  // A non-finite draw would give non-finite predictions for every row, silently.
  for (Index s = 0; s < S; ++s) {
    if (!weights.row(s).allFinite() || (betas.size() != 0 && !(betas[s] > 0.0 && std::isfinite(betas[s])))) {
      throw Error(ErrorKind::kInvalidArgument, "posterior draw " + std::to_string(s + 1) +
                                                   " has a non-finite weight or a β that is not positive and finite");
    }
  }
  if (X.cols() != network.num_inputs())
    throw Error(ErrorKind::kInvalidArgument, "inputs have the wrong number of columns");

  std::unique_ptr<Likelihood> lik = likelihood.clone();
  Rng rng(options.seed, /*stream=*/7);
  Eigen::MatrixXd y(S, n);
  Eigen::VectorXd f_sum = Eigen::VectorXd::Zero(n), f_sq = Eigen::VectorXd::Zero(n);
  double noise_var_sum = 0.0;
  Eigen::MatrixXd F;
  for (Index s = 0; s < S; ++s) {
    network.forward(weights.row(s).transpose(), X, &F);
    if (betas.size() != 0) lik->set_precision(betas[s]);
    if (lik->has_precision()) noise_var_sum += 1.0 / lik->precision();
    f_sum += F.col(0);
    f_sq += F.col(0).cwiseAbs2();
    for (Index i = 0; i < n; ++i) y(s, i) = lik->sample(F(i, 0), rng);
  }
  DrawsPrediction out;
  Prediction& p = out.prediction;
  const double Sd = static_cast<double>(S);
  p.mean.resize(n);
  p.std.resize(n);
  p.lower.resize(n);
  p.upper.resize(n);
  for (Index i = 0; i < n; ++i) {
    const double mean_f = f_sum[i] / Sd;
    if (lik->has_precision()) {
      // Total variance: Var f over draws plus the mean noise variance E[1/β].
      p.mean[i] = mean_f;
      const double var_f = std::max(0.0, f_sq[i] / Sd - mean_f * mean_f);
      p.std[i] = std::sqrt(var_f + noise_var_sum / Sd);
    } else {
      p.mean[i] = y.col(i).mean();
      // Scaled by the largest deviation first, so that huge counts do not overflow their squares.
      const Eigen::ArrayXd deviation = y.col(i).array() - p.mean[i];
      const double largest = deviation.abs().maxCoeff();
      p.std[i] =
          largest > 0.0 ? largest * std::sqrt((deviation / largest).square().sum() / std::max(1.0, Sd - 1.0)) : 0.0;
    }
    if (!std::isfinite(p.mean[i]) || !std::isfinite(p.std[i])) {
      throw Error(ErrorKind::kNumerical, "predictive from draws: example " + std::to_string(i + 1) +
                                             " has a predictive mean or spread beyond the range of a double (mean " +
                                             std::to_string(p.mean[i]) + ")");
    }
    p.lower[i] = quantile(y.col(i), 0.5 - 0.5 * options.level);
    p.upper[i] = quantile(y.col(i), 0.5 + 0.5 * options.level);
  }
  if (options.keep_draws) out.y_draws = std::move(y);
  return out;
}

}  // namespace occam::mcmc

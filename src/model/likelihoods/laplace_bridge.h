// laplace_bridge.h — the Laplace bridge from a Gaussian belief about K logits to a Dirichlet over
// the class probabilities (Hobbhahn, Kristiadi & Hennig 2022, eq. 8; MacKay 1998 for the basis).
//
// The Dirichlet Dir(π; a) written in the softmax basis π = softmax(z) has a Laplace approximation
// whose mean and diagonal covariance are known in closed form; inverting that map gives, from
// logits z ~ N(μ, diag v) with Σ_k μ_k = 0,
//   a_k = (1 − 2/K + e^{μ_k} Σ_l e^{−μ_l} / K²) / v_k,
// and the predictive probabilities are the Dirichlet's mean a_k / Σ_l a_l. Computed in logs: the
// exponentials overflow for logit gaps beyond about 700, the ratios do not.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

namespace occam::internal {

// One row: means (centred here) and marginal variances of the K logits; returns the K probabilities.
inline Eigen::RowVectorXd laplace_bridge(const Eigen::Ref<const Eigen::RowVectorXd>& mean,
                                         const Eigen::Ref<const Eigen::RowVectorXd>& var) {
  const Eigen::Index K = mean.size();
  const Eigen::RowVectorXd mu = mean.array() - mean.mean();
  const double top = (-mu).maxCoeff();
  const double log_sum_exp_neg = top + std::log((-mu.array() - top).exp().sum());  // log Σ_l e^{−μ_l}
  const double constant = 1.0 - 2.0 / static_cast<double>(K);                      // 0 for two classes
  Eigen::RowVectorXd log_a(K);
  for (Eigen::Index k = 0; k < K; ++k) {
    const double t = mu[k] + log_sum_exp_neg - 2.0 * std::log(static_cast<double>(K));
    // log(constant + e^t) without overflow; constant > 0 for K > 2.
    const double log_c =
        constant > 0.0 ? std::max(t, std::log(constant)) + std::log1p(std::exp(-std::abs(t - std::log(constant)))) : t;
    // A logit known exactly (v = 0) makes its a infinite: floored so that the ratios stay defined.
    log_a[k] = log_c - std::log(std::max(var[k], std::numeric_limits<double>::min()));
  }
  const double largest = log_a.maxCoeff();
  Eigen::RowVectorXd p = (log_a.array() - largest).exp();
  return p / p.sum();
}

}  // namespace occam::internal

// poisson.cc — the log-link count likelihood (with an optional offset) and its predictive.

#include <boost/math/special_functions/gamma.hpp>
#include <boost/random/poisson_distribution.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "likelihoods/gauss_hermite.h"
#include "likelihoods/target_checks.h"
#include "occam/likelihood.h"

namespace occam {
namespace {

// The offset added to example n's output: the second target column when there is one.
inline double offset_of(const Eigen::MatrixXd& Y, Index n) { return Y.cols() > 1 ? Y(n, 1) : 0.0; }

// P(Y ≤ k) for the mixture Σ_j w_j Poisson(λ_j).
double mixture_cdf(double k, const Eigen::VectorXd& rates, const Eigen::VectorXd& weights) {
  double c = 0.0;
  for (Index j = 0; j < rates.size(); ++j) c += weights[j] * boost::math::gamma_q(k + 1.0, rates[j]);
  return c;
}

// The smallest k ≥ 0 with P(Y ≤ k) ≥ q, by bisection on the monotone mixture CDF.
double mixture_quantile(double q, const Eigen::VectorXd& rates, const Eigen::VectorXd& weights) {
  const double top = rates.maxCoeff();
  double lo = -1.0, hi = std::ceil(top + 12.0 * std::sqrt(top) + 20.0);
  while (mixture_cdf(hi, rates, weights) < q) hi *= 2.0;
  while (hi - lo > 1.0) {
    const double mid = std::floor(0.5 * (lo + hi));
    if (mixture_cdf(mid, rates, weights) >= q) hi = mid; else lo = mid;
  }
  return hi;
}

}  // namespace

std::unique_ptr<Likelihood> PoissonLikelihood::clone() const { return std::make_unique<PoissonLikelihood>(*this); }

void PoissonLikelihood::validate_targets(const Eigen::MatrixXd& Y) const {
  internal::require_target_columns("poisson", Y, num_target_columns(),
                                   with_offset_ ? "the count and the offset" : "the count");
  for (Index n = 0; n < Y.rows(); ++n) {
    const double y = Y(n, 0);
    if (!(y >= 0.0) || y != std::floor(y) || !std::isfinite(y)) {
      internal::bad_target("poisson", n, y, "a non-negative integer count");
    }
    if (with_offset_ && !std::isfinite(Y(n, 1))) {
      throw Error(ErrorKind::kInvalidInput, "poisson likelihood: the offset in row " + std::to_string(n + 1) +
                                                " is not finite");
    }
  }
}

double PoissonLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const {
  // log p(y|f) = y η − e^η − log y!, η = f + offset.
  double total = 0.0;
  if (dF != nullptr) dF->resize(F.rows(), 1);
  for (Index n = 0; n < F.rows(); ++n) {
    const double eta = F(n, 0) + offset_of(Y, n);
    const double rate = std::exp(eta);
    const double y = Y(n, 0);
    total += y * eta - rate - std::lgamma(y + 1.0);
    if (dF != nullptr) (*dF)(n, 0) = y - rate;
  }
  return total;
}

void PoissonLikelihood::neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                            OutputDerivatives* d) const {
  d->gradient.resize(F.rows(), 1);
  d->hessian.resize(F.rows(), 1);
  for (Index n = 0; n < F.rows(); ++n) {
    const double rate = std::exp(F(n, 0) + offset_of(Y, n));
    d->gradient(n, 0) = rate - Y(n, 0);
    d->hessian(n, 0) = rate;
  }
}

Eigen::MatrixXd PoissonLikelihood::gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                                  const Eigen::MatrixXd& V) const {
  // Λ = e^{f + o} is its own derivative.
  Eigen::MatrixXd dLambda(F.rows(), 1);
  for (Index n = 0; n < F.rows(); ++n) dLambda(n, 0) = std::exp(F(n, 0) + offset_of(Y, n)) * V(n, 0);
  return dLambda;
}

void PoissonLikelihood::predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level,
                                   Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                   Eigen::VectorXd* upper) const {
  static const internal::GaussHermite rule(24);
  const Index m = f_mean.size();
  mean->resize(m);
  var->resize(m);
  lower->resize(m);
  upper->resize(m);
  Eigen::VectorXd rates(rule.nodes.size());
  for (Index n = 0; n < m; ++n) {
    const double mu = f_mean[n], s2 = std::max(f_var[n], 0.0);
    // Moments of the log-normal rate λ = e^f, f ~ N(μ, s²).
    const double rate_mean = std::exp(mu + 0.5 * s2);
    (*mean)[n] = rate_mean;
    (*var)[n] = rate_mean + std::expm1(s2) * rate_mean * rate_mean;
    rates = (mu + std::sqrt(s2) * rule.nodes.array()).exp();
    (*lower)[n] = mixture_quantile(0.5 - 0.5 * level, rates, rule.weights);
    (*upper)[n] = mixture_quantile(0.5 + 0.5 * level, rates, rule.weights);
  }
}

double PoissonLikelihood::sample(double f, Rng& rng) const {
  const double rate = std::exp(f);
  if (!(rate > 0.0) || !std::isfinite(rate)) return rate > 0.0 ? rate : 0.0;
  return static_cast<double>(boost::random::poisson_distribution<long long, double>(rate)(rng.engine()));
}

nlohmann::json PoissonLikelihood::to_json() const { return {{"type", "poisson"}, {"offset", with_offset_}}; }

}  // namespace occam

// poisson.cc — the log-link count likelihood (with an optional offset) and its predictive.

#include <boost/random/poisson_distribution.hpp>
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/likelihoods/poisson_mixture.h"
#include "model/likelihoods/target_checks.h"
#include "occam/likelihood.h"

namespace occam {
namespace {

// The offset added to example n's output: the second target column when there is one.
inline double offset_of(const Eigen::MatrixXd& Y, Index n) { return Y.cols() > 1 ? Y(n, 1) : 0.0; }

// Beyond this rate a Poisson draw is taken from its normal approximation N(λ, λ), rounded: the
// skewness 1/√λ is below 1e-6 there, and boost's sampler, which returns a long long, would
// overflow not far above (at 9.2e18).
constexpr double kNormalSamplingRate = 1e12;

[[noreturn]] void rate_overflow(const char* what, Index n, double mu, double sd) {
  std::ostringstream msg;
  msg << "poisson predictive: the " << what << " of the count for example " << n + 1
      << " exceeds the largest double (its log rate is " << mu << " with standard deviation " << sd
      << "); the model predicts counts too large to represent";
  throw Error(ErrorKind::kNumerical, msg.str());
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
      throw Error(ErrorKind::kInvalidInput,
                  "poisson likelihood: the offset in row " + std::to_string(n + 1) + " is not finite");
    }
  }
}

double PoissonLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                         Eigen::MatrixXd* dF) const {
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
  const Index m = f_mean.size();
  mean->resize(m);
  var->resize(m);
  lower->resize(m);
  upper->resize(m);
  for (Index n = 0; n < m; ++n) {
    const double mu = f_mean[n], s2 = std::max(f_var[n], 0.0), sd = std::sqrt(s2);
    if (!std::isfinite(mu) || !std::isfinite(s2)) {
      std::ostringstream msg;
      msg << "poisson predictive: example " << n + 1 << " has a non-finite latent mean or variance (" << mu << ", "
          << f_var[n] << ")";
      throw Error(ErrorKind::kNumerical, msg.str());
    }
    // Moments of the log-normal rate λ = e^f, f ~ N(μ, s²); the spread term (e^{s²} − 1)e^{2μ+s²} in
    // logs, so that it is finite whenever it fits a double (e^{2μ} alone may not).
    const double rate_mean = std::exp(mu + 0.5 * s2);
    const double spread = s2 > 0.0 ? std::exp(std::log(std::expm1(s2)) + 2.0 * mu + s2) : 0.0;
    (*mean)[n] = rate_mean;
    (*var)[n] = rate_mean + spread;
    if (!std::isfinite((*mean)[n])) rate_overflow("mean", n, mu, sd);
    if (!std::isfinite((*var)[n])) rate_overflow("variance", n, mu, sd);
    (*lower)[n] = internal::poisson_lognormal_quantile(0.5 - 0.5 * level, mu, sd);
    (*upper)[n] = internal::poisson_lognormal_quantile(0.5 + 0.5 * level, mu, sd);
  }
}

double PoissonLikelihood::sample(double f, Rng& rng) const {
  const double rate = std::exp(f);
  if (!std::isfinite(rate)) {
    std::ostringstream msg;
    msg << "poisson: cannot draw a count at log rate " << f
        << (std::isnan(f) ? "" : ": the rate exceeds the largest double");
    throw Error(ErrorKind::kNumerical, msg.str());
  }
  if (rate > kNormalSamplingRate) return std::max(0.0, std::round(rate + std::sqrt(rate) * rng.normal()));
  if (!(rate > 0.0)) return 0.0;
  return static_cast<double>(boost::random::poisson_distribution<long long, double>(rate)(rng.engine()));
}

nlohmann::json PoissonLikelihood::to_json() const { return {{"type", "poisson"}, {"offset", with_offset_}}; }

}  // namespace occam

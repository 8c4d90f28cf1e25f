// bernoulli.cc — the logistic-regression likelihood and MacKay's moderated output.

#include <boost/random/bernoulli_distribution.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "model/likelihoods/laplace_bridge.h"
#include "model/likelihoods/target_checks.h"
#include "occam/likelihood.h"

namespace occam {

std::unique_ptr<Likelihood> BernoulliLikelihood::clone() const { return std::make_unique<BernoulliLikelihood>(*this); }

void BernoulliLikelihood::validate_targets(const Eigen::MatrixXd& Y) const {
  internal::require_target_columns("bernoulli", Y, 1, "0 or 1");
  for (Index n = 0; n < Y.rows(); ++n) {
    if (Y(n, 0) != 0.0 && Y(n, 0) != 1.0) internal::bad_target("bernoulli", n, Y(n, 0), "0 or 1");
  }
}

double BernoulliLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                           Eigen::MatrixXd* dF) const {
  // log p(y|f) = y f − log(1 + e^f), evaluated without overflow for any f.
  double total = 0.0;
  if (dF != nullptr) dF->resize(F.rows(), 1);
  for (Index n = 0; n < F.rows(); ++n) {
    const double f = F(n, 0);
    total += Y(n, 0) * f - log1p_exp(f);
    if (dF != nullptr) (*dF)(n, 0) = Y(n, 0) - logistic(f);
  }
  return total;
}

void BernoulliLikelihood::neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                              OutputDerivatives* d) const {
  d->gradient.resize(F.rows(), 1);
  d->hessian.resize(F.rows(), 1);
  for (Index n = 0; n < F.rows(); ++n) {
    const double p = logistic(F(n, 0));
    d->gradient(n, 0) = p - Y(n, 0);
    d->hessian(n, 0) = p * (1.0 - p);
  }
}

Eigen::MatrixXd BernoulliLikelihood::gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd&,
                                                                    const Eigen::MatrixXd& V) const {
  // Λ = p(1 − p) with p = σ(f): dΛ/df = p(1 − p)(1 − 2p).
  Eigen::MatrixXd dLambda(F.rows(), 1);
  for (Index n = 0; n < F.rows(); ++n) {
    const double p = logistic(F(n, 0));
    dLambda(n, 0) = p * (1.0 - p) * (1.0 - 2.0 * p) * V(n, 0);
  }
  return dLambda;
}

Eigen::MatrixXd BernoulliLikelihood::class_probabilities(const Eigen::MatrixXd& F) const {
  Eigen::MatrixXd P(F.rows(), 2);
  for (Index n = 0; n < F.rows(); ++n) {
    P(n, 1) = logistic(F(n, 0));
    P(n, 0) = logistic(-F(n, 0));
  }
  return P;
}

Eigen::MatrixXd BernoulliLikelihood::predictive_probabilities(const Eigen::MatrixXd& f_mean,
                                                              const Eigen::MatrixXd& f_var) const {
  // MacKay's moderated output (MacKay 1992c, eq. 24): ∫ σ(f) N(f; μ, s²) df ≈ σ(κ(s²) μ),
  // κ(s²) = (1 + π s²/8)^{−½}, from σ(a) ≈ Φ(√(π/8) a).
  Eigen::MatrixXd P(f_mean.rows(), 2);
  for (Index n = 0; n < f_mean.rows(); ++n) {
    const double kappa = 1.0 / std::sqrt(1.0 + std::numbers::pi * f_var(n, 0) / 8.0);
    P(n, 1) = logistic(kappa * f_mean(n, 0));
    P(n, 0) = logistic(-kappa * f_mean(n, 0));
  }
  return P;
}

Eigen::MatrixXd BernoulliLikelihood::laplace_bridge_probabilities(const Eigen::MatrixXd& f_mean,
                                                                  const Eigen::MatrixXd& f_var) const {
  // P(y = 1 | f) = softmax(−f/2, f/2)_2: two centred logits, each of variance s²/4.
  Eigen::MatrixXd P(f_mean.rows(), 2);
  for (Index n = 0; n < f_mean.rows(); ++n) {
    const double half = 0.5 * f_mean(n, 0), quarter = 0.25 * f_var(n, 0);
    P.row(n) = internal::laplace_bridge(Eigen::RowVector2d(-half, half), Eigen::RowVector2d(quarter, quarter));
  }
  return P;
}

void BernoulliLikelihood::predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level,
                                     Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                     Eigen::VectorXd* upper) const {
  predictive_from_probabilities(predictive_probabilities(f_mean, f_var), level, mean, var, lower, upper);
}

void BernoulliLikelihood::predictive_from_probabilities(const Eigen::MatrixXd& P, double level, Eigen::VectorXd* mean,
                                                        Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                                        Eigen::VectorXd* upper) const {
  const Index m = P.rows();
  *mean = P.col(1);
  *var = P.col(1).cwiseProduct(P.col(0));
  lower->resize(m);
  upper->resize(m);
  // The q-quantile of a Bernoulli(p) is 0 when q ≤ 1 − p and 1 otherwise.
  const double q_low = 0.5 - 0.5 * level, q_high = 0.5 + 0.5 * level;
  for (Index n = 0; n < m; ++n) {
    (*lower)[n] = q_low <= P(n, 0) ? 0.0 : 1.0;
    (*upper)[n] = q_high <= P(n, 0) ? 0.0 : 1.0;
  }
}

double BernoulliLikelihood::sample(double f, Rng& rng) const {
  return boost::random::bernoulli_distribution<double>(logistic(f))(rng.engine()) ? 1.0 : 0.0;
}

nlohmann::json BernoulliLikelihood::to_json() const { return {{"type", "bernoulli"}}; }

}  // namespace occam

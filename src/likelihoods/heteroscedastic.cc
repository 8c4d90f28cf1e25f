// heteroscedastic.cc — a Gaussian whose mean and log-variance are both network outputs.

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "likelihoods/target_checks.h"
#include "occam/likelihood.h"

namespace occam {

std::unique_ptr<Likelihood> HeteroscedasticLikelihood::clone() const {
  return std::make_unique<HeteroscedasticLikelihood>(*this);
}

void HeteroscedasticLikelihood::validate_targets(const Eigen::MatrixXd& Y) const {
  internal::require_target_columns("hetero", Y, 1, "the target");
  for (Index n = 0; n < Y.rows(); ++n) {
    if (!std::isfinite(Y(n, 0))) {
      throw Error(ErrorKind::kInvalidInput, "hetero likelihood: target in row " + std::to_string(n + 1) + " is not finite");
    }
  }
}

double HeteroscedasticLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 Eigen::MatrixXd* dF) const {
  // log p = −½ log 2π − ½ s − ½ r² e^{−s}, r = y − μ, (μ, s) = (f1, f2).
  const double half_log_2pi = 0.5 * std::log(2.0 * std::numbers::pi);
  double total = 0.0;
  if (dF != nullptr) dF->resize(F.rows(), 2);
  for (Index n = 0; n < F.rows(); ++n) {
    const double r = Y(n, 0) - F(n, 0), s = F(n, 1);
    const double precision = std::exp(-s);
    total += -half_log_2pi - 0.5 * s - 0.5 * r * r * precision;
    if (dF != nullptr) {
      (*dF)(n, 0) = r * precision;
      (*dF)(n, 1) = -0.5 + 0.5 * r * r * precision;
    }
  }
  return total;
}

void HeteroscedasticLikelihood::neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                    OutputDerivatives* d) const {
  d->gradient.resize(F.rows(), 2);
  d->hessian.resize(F.rows(), 4);
  for (Index n = 0; n < F.rows(); ++n) {
    const double r = Y(n, 0) - F(n, 0);
    const double precision = std::exp(-F(n, 1));
    d->gradient(n, 0) = -r * precision;
    d->gradient(n, 1) = 0.5 - 0.5 * r * r * precision;
    // The Fisher information of N(μ, e^s) in (μ, s): diag(e^{−s}, ½).
    d->hessian(n, 0) = precision;
    d->hessian(n, 1) = 0.0;
    d->hessian(n, 2) = 0.0;
    d->hessian(n, 3) = 0.5;
  }
}

Eigen::MatrixXd HeteroscedasticLikelihood::gauss_newton_weight_derivative(const Eigen::MatrixXd& F,
                                                                          const Eigen::MatrixXd&,
                                                                          const Eigen::MatrixXd& V) const {
  // Only the Fisher weight e^{−s} of the mean moves, with s = f_2.
  Eigen::MatrixXd dLambda = Eigen::MatrixXd::Zero(F.rows(), 4);
  for (Index n = 0; n < F.rows(); ++n) dLambda(n, 0) = -std::exp(-F(n, 1)) * V(n, 1);
  return dLambda;
}

Eigen::MatrixXd HeteroscedasticLikelihood::neg_log_hessian(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const {
  // −log p = ½s + ½(y − μ)² e^{−s} + ½ log 2π, differentiated twice in (μ, s).
  Eigen::MatrixXd H(F.rows(), 4);
  for (Index n = 0; n < F.rows(); ++n) {
    const double r = Y(n, 0) - F(n, 0);
    const double precision = std::exp(-F(n, 1));
    H(n, 0) = precision;
    H(n, 1) = H(n, 2) = r * precision;
    H(n, 3) = 0.5 * r * r * precision;
  }
  return H;
}

void HeteroscedasticLikelihood::predictive(const Eigen::VectorXd&, const Eigen::VectorXd&, double, Eigen::VectorXd*,
                                           Eigen::VectorXd*, Eigen::VectorXd*, Eigen::VectorXd*) const {
  throw Error(ErrorKind::kInvalidArgument,
              "hetero likelihood: the predictive needs both outputs (mean and log-variance); use predictive_outputs");
}

void HeteroscedasticLikelihood::predictive_outputs(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var,
                                                   double level, Eigen::VectorXd* mean, Eigen::VectorXd* var,
                                                   Eigen::VectorXd* lower, Eigen::VectorXd* upper) const {
  // y = μ + ε, ε ~ N(0, e^s): var y = var μ + E e^s, with E e^s = e^{m_s + v_s/2} for s ~ N(m_s, v_s).
  const double z = normal_quantile(0.5 + 0.5 * level);
  *mean = f_mean.col(0);
  *var = f_var.col(0).array() + (f_mean.col(1).array() + 0.5 * f_var.col(1).array()).exp();
  const Eigen::VectorXd sd = var->cwiseSqrt();
  *lower = *mean - z * sd;
  *upper = *mean + z * sd;
}

double HeteroscedasticLikelihood::sample(double, Rng&) const {
  throw Error(ErrorKind::kInvalidArgument, "hetero likelihood: a draw needs both outputs (use sample_outputs)");
}

double HeteroscedasticLikelihood::sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const {
  return f[0] + std::exp(0.5 * f[1]) * rng.normal();
}

nlohmann::json HeteroscedasticLikelihood::to_json() const { return {{"type", "hetero"}}; }

}  // namespace occam

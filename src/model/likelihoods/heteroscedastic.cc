// heteroscedastic.cc — a Gaussian whose mean and log-variance are both network outputs.

#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>

#include "model/likelihoods/target_checks.h"
#include "occam/likelihood.h"

namespace occam {

namespace {

// σ² = e^s + v as log σ², 1/σ² and the share e^s/σ² ∈ (0, 1], without overflow for large s.
struct Variance {
  double log_variance, precision, share;
};

Variance variance(double s, double floor) {
  if (floor == 0.0) return {s, std::exp(-s), 1.0};
  if (s > 0.0) {
    const double t = floor * std::exp(-s);
    return {s + std::log1p(t), std::exp(-s) / (1.0 + t), 1.0 / (1.0 + t)};
  }
  const double e = std::exp(s);
  return {std::log(e + floor), 1.0 / (e + floor), e / (e + floor)};
}

}  // namespace

HeteroscedasticLikelihood::HeteroscedasticLikelihood(double variance_floor) : variance_floor_(variance_floor) {
  if (!(variance_floor >= 0.0) || !std::isfinite(variance_floor)) {
    throw Error(ErrorKind::kInvalidArgument, "hetero likelihood: the variance floor must be non-negative and finite");
  }
}

std::unique_ptr<Likelihood> HeteroscedasticLikelihood::clone() const {
  return std::make_unique<HeteroscedasticLikelihood>(*this);
}

void HeteroscedasticLikelihood::validate_targets(const Eigen::MatrixXd& Y) const {
  internal::require_target_columns("hetero", Y, 1, "the target");
  for (Index n = 0; n < Y.rows(); ++n) {
    if (!std::isfinite(Y(n, 0))) {
      throw Error(ErrorKind::kInvalidInput,
                  "hetero likelihood: target in row " + std::to_string(n + 1) + " is not finite");
    }
  }
}

double HeteroscedasticLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 Eigen::MatrixXd* dF) const {
  // log p = −½ log 2π − ½ log σ² − ½ r²/σ², r = y − μ, σ² = e^s + v, (μ, s) = (f1, f2);
  // ∂/∂μ = r/σ², ∂/∂s = ½ (e^s/σ²)(r²/σ² − 1).
  const double half_log_2pi = 0.5 * std::log(2.0 * std::numbers::pi);
  double total = 0.0;
  if (dF != nullptr) dF->resize(F.rows(), 2);
  for (Index n = 0; n < F.rows(); ++n) {
    const double r = Y(n, 0) - F(n, 0);
    const Variance v = variance(F(n, 1), variance_floor_);
    total += -half_log_2pi - 0.5 * v.log_variance - 0.5 * r * r * v.precision;
    if (dF != nullptr) {
      (*dF)(n, 0) = r * v.precision;
      (*dF)(n, 1) = 0.5 * v.share * (r * r * v.precision - 1.0);
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
    const Variance v = variance(F(n, 1), variance_floor_);
    d->gradient(n, 0) = -r * v.precision;
    d->gradient(n, 1) = -0.5 * v.share * (r * r * v.precision - 1.0);
    // The Fisher information of N(μ, e^s + v) in (μ, s): diag(1/σ², ½ (e^s/σ²)²).
    d->hessian(n, 0) = v.precision;
    d->hessian(n, 1) = 0.0;
    d->hessian(n, 2) = 0.0;
    d->hessian(n, 3) = 0.5 * v.share * v.share;
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
  // y = μ + ε, ε ~ N(0, e^s + v): var y = var μ + e^{m_s} + v, the noise variance at the belief's
  // mean, as the Gaussian family uses β at its estimate. Averaging it over the belief about s
  // instead (the log-normal mean e^{m_s + v_s/2}) is ruled by that belief's upper tail, where a
  // Gaussian belief is least trustworthy: where the mean fits the data exactly, the likelihood is
  // flat in s below log v, the Laplace belief there is as wide as the prior (v_s ≈ 60), and the
  // average came out as a noise std of 10³ where the data have none.
  const double z = normal_quantile(0.5 + 0.5 * level);
  *mean = f_mean.col(0);
  *var = f_var.col(0).array() + f_mean.col(1).array().exp() + variance_floor_;
  const Eigen::VectorXd sd = var->cwiseSqrt();
  *lower = *mean - z * sd;
  *upper = *mean + z * sd;
}

std::optional<Eigen::VectorXd> HeteroscedasticLikelihood::output_noise_variance(const Eigen::MatrixXd& F) const {
  return (F.col(1).array().exp() + variance_floor_).matrix();
}

double HeteroscedasticLikelihood::sample(double, Rng&) const {
  throw Error(ErrorKind::kInvalidArgument, "hetero likelihood: a draw needs both outputs (use sample_outputs)");
}

double HeteroscedasticLikelihood::sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const {
  return f[0] + std::sqrt(std::exp(f[1]) + variance_floor_) * rng.normal();
}

nlohmann::json HeteroscedasticLikelihood::to_json() const {
  nlohmann::json j = {{"type", "hetero"}};
  if (variance_floor_ > 0.0) j["variance_floor"] = variance_floor_;
  return j;
}

}  // namespace occam

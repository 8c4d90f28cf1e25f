#include "occam/likelihood.h"

#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "occam/status.h"

namespace occam {

double Likelihood::precision() const {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() + " likelihood has no noise precision");
}

void Likelihood::set_precision(double) {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() + " likelihood has no noise precision");
}

Eigen::MatrixXd Likelihood::neg_log_hessian(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const {
  OutputDerivatives d;
  neg_log_derivatives(F, Y, &d);
  return d.hessian;
}

double Likelihood::log_precision_derivative(const Eigen::MatrixXd&, const Eigen::MatrixXd&) const {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() + " likelihood has no noise precision");
}

void Likelihood::predictive_outputs(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var, double level,
                                    Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                    Eigen::VectorXd* upper) const {
  predictive(f_mean.col(0), f_var.col(0), level, mean, var, lower, upper);
}

double Likelihood::sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const {
  return sample(f[0], rng);
}

Eigen::MatrixXd Likelihood::class_probabilities(const Eigen::MatrixXd&) const {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() + " likelihood is not a classifier");
}

Eigen::MatrixXd Likelihood::predictive_probabilities(const Eigen::MatrixXd&, const Eigen::MatrixXd&) const {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() + " likelihood is not a classifier");
}

void Likelihood::predictive_from_probabilities(const Eigen::MatrixXd&, double, Eigen::VectorXd*, Eigen::VectorXd*,
                                               Eigen::VectorXd*, Eigen::VectorXd*) const {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() + " likelihood is not a classifier");
}

Eigen::MatrixXd Likelihood::laplace_bridge_probabilities(const Eigen::MatrixXd&, const Eigen::MatrixXd&) const {
  throw Error(ErrorKind::kInvalidArgument, "the " + name() +
                                               " likelihood is not a classifier: the Laplace bridge "
                                               "gives class probabilities");
}

double log1p_exp(double x) { return x > 0.0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

double logistic(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + std::exp(-x));
  const double e = std::exp(x);
  return e / (1.0 + e);
}

double normal_quantile(double p) {
  if (!(p > 0.0 && p < 1.0)) {
    throw Error(ErrorKind::kInvalidArgument, "normal_quantile: p must lie in (0, 1), got " + std::to_string(p));
  }
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

GaussianLikelihood::GaussianLikelihood(double beta, bool row_weights) : row_weights_(row_weights) {
  set_precision(beta);
}

std::unique_ptr<Likelihood> GaussianLikelihood::clone() const { return std::make_unique<GaussianLikelihood>(*this); }

void GaussianLikelihood::set_precision(double beta) {
  if (!(beta > 0.0) || !std::isfinite(beta)) {
    std::ostringstream msg;
    msg << "gaussian likelihood: beta (noise precision) must be positive and finite, got " << beta;
    throw Error(ErrorKind::kInvalidArgument, msg.str());
  }
  beta_ = beta;
}

void GaussianLikelihood::validate_targets(const Eigen::MatrixXd& Y) const {
  if (Y.cols() != num_target_columns()) {
    throw Error(ErrorKind::kInvalidInput,
                row_weights_ ? "gaussian likelihood with row weights: expected two target "
                               "columns (y and its weight), got " +
                                   std::to_string(Y.cols())
                             : "gaussian likelihood: expected one target column, got " + std::to_string(Y.cols()));
  }
  for (Index n = 0; n < Y.rows(); ++n) {
    if (!std::isfinite(Y(n, 0))) {
      throw Error(ErrorKind::kInvalidInput,
                  "gaussian likelihood: target in row " + std::to_string(n + 1) + " is not finite");
    }
    if (row_weights_ && !(Y(n, 1) > 0.0 && std::isfinite(Y(n, 1)))) {
      throw Error(ErrorKind::kInvalidInput,
                  "gaussian likelihood: the weight of row " + std::to_string(n + 1) + " must be positive and finite");
    }
  }
}

double GaussianLikelihood::data_error(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) {
  if (Y.cols() == 2) return 0.5 * (Y.col(1).array() * (Y.col(0) - F.col(0)).array().square()).sum();
  return 0.5 * (Y - F).squaredNorm();
}

double GaussianLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                          Eigen::MatrixXd* dF) const {
  const double m = static_cast<double>(F.size());
  if (row_weights_) {
    if (dF != nullptr) dF->noalias() = (beta_ * Y.col(1).array() * (Y.col(0) - F.col(0)).array()).matrix();
    return 0.5 * m * std::log(beta_ / (2.0 * std::numbers::pi)) + 0.5 * Y.col(1).array().log().sum() -
           beta_ * data_error(F, Y);
  }
  if (dF != nullptr) {
    dF->noalias() = beta_ * (Y - F);
    // E_D from the residual already formed: ½‖r‖² = ½‖dF‖²/β².
    return 0.5 * m * std::log(beta_ / (2.0 * std::numbers::pi)) - 0.5 * dF->squaredNorm() / beta_;
  }
  return 0.5 * m * std::log(beta_ / (2.0 * std::numbers::pi)) - beta_ * data_error(F, Y);
}

void GaussianLikelihood::neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                             OutputDerivatives* d) const {
  if (row_weights_) {
    d->gradient.noalias() = (beta_ * Y.col(1).array() * (F.col(0) - Y.col(0)).array()).matrix();
    d->hessian.noalias() = beta_ * Y.col(1);
    return;
  }
  d->gradient.noalias() = beta_ * (F - Y);
  d->hessian.setConstant(F.rows(), 1, beta_);
}

Eigen::MatrixXd GaussianLikelihood::gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd&,
                                                                   const Eigen::MatrixXd&) const {
  return Eigen::MatrixXd::Zero(F.rows(), 1);  // Λ = β does not depend on f
}

void GaussianLikelihood::predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level,
                                    Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                    Eigen::VectorXd* upper) const {
  // y = f + ε with f ~ N(μ, s²) and ε ~ N(0, 1/β) independent: y ~ N(μ, s² + 1/β) (MacKay 1992a, eq. 3.14).
  const double z = normal_quantile(0.5 + 0.5 * level);
  *mean = f_mean;
  *var = f_var.array() + 1.0 / beta_;
  const Eigen::VectorXd sd = var->array().sqrt();
  *lower = f_mean - z * sd;
  *upper = f_mean + z * sd;
}

double GaussianLikelihood::log_precision_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const {
  // log p = (m/2) log(β/2π) − β E_D, so ∂/∂log β = m/2 − β E_D.
  return 0.5 * static_cast<double>(F.size()) - beta_ * data_error(F, Y);
}

double GaussianLikelihood::sample(double f, Rng& rng) const { return f + rng.normal() / std::sqrt(beta_); }

nlohmann::json GaussianLikelihood::to_json() const {
  nlohmann::json j = {{"type", "gaussian"}, {"beta", beta_}};
  if (row_weights_) j["row_weights"] = true;
  return j;
}

std::unique_ptr<Likelihood> likelihood_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    throw Error(ErrorKind::kInvalidInput, "likelihood description has no \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "gaussian") {
    if (!j.contains("beta") || !j["beta"].is_number()) {
      throw Error(ErrorKind::kInvalidInput, "gaussian likelihood description has no numeric \"beta\"");
    }
    const bool weighted = j.contains("row_weights") && j["row_weights"].is_boolean() && j["row_weights"].get<bool>();
    return std::make_unique<GaussianLikelihood>(j["beta"].get<double>(), weighted);
  }
  if (type == "bernoulli") return std::make_unique<BernoulliLikelihood>();
  if (type == "poisson") {
    const auto it = j.find("offset");
    if (it != j.end() && !it->is_boolean()) {
      throw Error(ErrorKind::kInvalidInput, "poisson likelihood description: \"offset\" must be true or false");
    }
    return std::make_unique<PoissonLikelihood>(it != j.end() && it->get<bool>());
  }
  if (type == "categorical") {
    if (!j.contains("labels") || !j["labels"].is_array()) {
      throw Error(ErrorKind::kInvalidInput, "categorical likelihood description has no \"labels\" array");
    }
    std::vector<std::string> labels;
    for (const auto& label : j["labels"]) {
      if (!label.is_string()) throw Error(ErrorKind::kInvalidInput, "categorical likelihood: a label is not a string");
      labels.push_back(label.get<std::string>());
    }
    return std::make_unique<CategoricalLikelihood>(std::move(labels));
  }
  if (type == "hetero") {
    // Files written before the floor existed describe the model without one.
    const auto it = j.find("variance_floor");
    if (it != j.end() && !it->is_number()) {
      throw Error(ErrorKind::kInvalidInput, "hetero likelihood description: \"variance_floor\" must be a number");
    }
    return std::make_unique<HeteroscedasticLikelihood>(it != j.end() ? it->get<double>() : 0.0);
  }
  throw Error(ErrorKind::kInvalidInput, "unknown likelihood type \"" + type + "\"");
}

}  // namespace occam

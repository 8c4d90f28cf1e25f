// categorical.cc — the softmax likelihood over K classes and its predictive probabilities.

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <set>

#include "model/likelihoods/laplace_bridge.h"
#include "model/likelihoods/target_checks.h"
#include "occam/likelihood.h"

namespace occam {
namespace {

// softmax of one row, through log-sum-exp so that no exponential overflows.
void softmax_row(const Eigen::Ref<const Eigen::RowVectorXd>& f, Eigen::RowVectorXd& p, double* log_norm) {
  const double top = f.maxCoeff();
  p = (f.array() - top).exp();
  const double sum = p.sum();
  p /= sum;
  if (log_norm != nullptr) *log_norm = top + std::log(sum);
}

}  // namespace

CategoricalLikelihood::CategoricalLikelihood(std::vector<std::string> labels) : labels_(std::move(labels)) {
  if (labels_.size() < 2) {
    throw Error(ErrorKind::kInvalidArgument,
                "categorical likelihood: needs at least 2 classes, got " + std::to_string(labels_.size()));
  }
  std::set<std::string> seen;
  for (const auto& label : labels_) {
    if (label.empty()) throw Error(ErrorKind::kInvalidArgument, "categorical likelihood: a class label is empty");
    if (!seen.insert(label).second) {
      throw Error(ErrorKind::kInvalidArgument, "categorical likelihood: class label '" + label + "' appears twice");
    }
  }
}

std::unique_ptr<Likelihood> CategoricalLikelihood::clone() const {
  return std::make_unique<CategoricalLikelihood>(*this);
}

void CategoricalLikelihood::validate_targets(const Eigen::MatrixXd& Y) const {
  internal::require_target_columns("categorical", Y, 1, "the class index");
  const double K = static_cast<double>(labels_.size());
  for (Index n = 0; n < Y.rows(); ++n) {
    const double y = Y(n, 0);
    if (!(y >= 0.0 && y < K) || y != std::floor(y)) {
      internal::bad_target("categorical", n, y, "a class index in 0.." + std::to_string(labels_.size() - 1));
    }
  }
}

double CategoricalLikelihood::log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                             Eigen::MatrixXd* dF) const {
  // log p(y = k | f) = f_k − log Σ_j e^{f_j}; ∂/∂f = e_k − softmax(f).
  double total = 0.0;
  Eigen::RowVectorXd p(F.cols());
  if (dF != nullptr) dF->resize(F.rows(), F.cols());
  for (Index n = 0; n < F.rows(); ++n) {
    double log_norm;
    softmax_row(F.row(n), p, &log_norm);
    const auto k = static_cast<Index>(Y(n, 0));
    total += F(n, k) - log_norm;
    if (dF != nullptr) {
      dF->row(n) = -p;
      (*dF)(n, k) += 1.0;
    }
  }
  return total;
}

void CategoricalLikelihood::neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                OutputDerivatives* d) const {
  const Index K = F.cols();
  d->gradient.resize(F.rows(), K);
  d->hessian.resize(F.rows(), K * K);
  Eigen::RowVectorXd p(K);
  for (Index n = 0; n < F.rows(); ++n) {
    softmax_row(F.row(n), p, nullptr);
    d->gradient.row(n) = p;
    d->gradient(n, static_cast<Index>(Y(n, 0))) -= 1.0;
    // Λ = diag(p) − ppᵀ, stored column-major in the row.
    for (Index l = 0; l < K; ++l) {
      for (Index k = 0; k < K; ++k) d->hessian(n, k + l * K) = (k == l ? p[k] : 0.0) - p[k] * p[l];
    }
  }
}

Eigen::MatrixXd CategoricalLikelihood::gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd&,
                                                                      const Eigen::MatrixXd& V) const {
  // Λ = diag(p) − ppᵀ with dp_k = p_k (v_k − pᵀv): dΛ_kl = δ_kl dp_k − dp_k p_l − p_k dp_l.
  const Index K = F.cols();
  Eigen::MatrixXd dLambda(F.rows(), K * K);
  Eigen::RowVectorXd p(K), dp(K);
  for (Index n = 0; n < F.rows(); ++n) {
    softmax_row(F.row(n), p, nullptr);
    dp = p.cwiseProduct(V.row(n).array().matrix() - Eigen::RowVectorXd::Constant(K, p.dot(V.row(n))));
    for (Index l = 0; l < K; ++l) {
      for (Index k = 0; k < K; ++k) dLambda(n, k + l * K) = (k == l ? dp[k] : 0.0) - dp[k] * p[l] - p[k] * dp[l];
    }
  }
  return dLambda;
}

Eigen::MatrixXd CategoricalLikelihood::class_probabilities(const Eigen::MatrixXd& F) const {
  Eigen::MatrixXd P(F.rows(), F.cols());
  Eigen::RowVectorXd p(F.cols());
  for (Index n = 0; n < F.rows(); ++n) {
    softmax_row(F.row(n), p, nullptr);
    P.row(n) = p;
  }
  return P;
}

Eigen::MatrixXd CategoricalLikelihood::predictive_probabilities(const Eigen::MatrixXd& f_mean,
                                                                const Eigen::MatrixXd& f_var) const {
  // The extended probit approximation: each logit is moderated by κ(s_k²) = (1 + π s_k²/8)^{−½}
  // as in the binary case, then the softmax is renormalised (Gibbs 1997; Daunizeau 2017).
  const Eigen::MatrixXd moderated = f_mean.array() / (1.0 + std::numbers::pi / 8.0 * f_var.array()).sqrt();
  return class_probabilities(moderated);
}

Eigen::MatrixXd CategoricalLikelihood::laplace_bridge_probabilities(const Eigen::MatrixXd& f_mean,
                                                                    const Eigen::MatrixXd& f_var) const {
  Eigen::MatrixXd P(f_mean.rows(), f_mean.cols());
  for (Index n = 0; n < f_mean.rows(); ++n) P.row(n) = internal::laplace_bridge(f_mean.row(n), f_var.row(n));
  return P;
}

void CategoricalLikelihood::predictive(const Eigen::VectorXd&, const Eigen::VectorXd&, double, Eigen::VectorXd*,
                                       Eigen::VectorXd*, Eigen::VectorXd*, Eigen::VectorXd*) const {
  throw Error(ErrorKind::kInvalidArgument,
              "categorical likelihood: the predictive needs all K outputs (use predictive_outputs or "
              "predictive_probabilities)");
}

void CategoricalLikelihood::predictive_outputs(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var,
                                               double level, Eigen::VectorXd* mean, Eigen::VectorXd* var,
                                               Eigen::VectorXd* lower, Eigen::VectorXd* upper) const {
  predictive_from_probabilities(predictive_probabilities(f_mean, f_var), level, mean, var, lower, upper);
}

void CategoricalLikelihood::predictive_from_probabilities(const Eigen::MatrixXd& P, double, Eigen::VectorXd* mean,
                                                          Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                                          Eigen::VectorXd* upper) const {
  mean->resize(P.rows());
  var->resize(P.rows());
  for (Index n = 0; n < P.rows(); ++n) {
    Index best;
    const double top = P.row(n).maxCoeff(&best);
    (*mean)[n] = static_cast<double>(best);
    (*var)[n] = 1.0 - top;
  }
  *lower = *mean;
  *upper = *mean;
}

double CategoricalLikelihood::sample(double, Rng&) const {
  throw Error(ErrorKind::kInvalidArgument, "categorical likelihood: a draw needs all K outputs (use sample_outputs)");
}

double CategoricalLikelihood::sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const {
  Eigen::RowVectorXd p(f.size());
  softmax_row(f, p, nullptr);
  double u = rng.uniform();
  for (Index k = 0; k + 1 < p.size(); ++k) {
    if (u < p[k]) return static_cast<double>(k);
    u -= p[k];
  }
  return static_cast<double>(p.size() - 1);
}

nlohmann::json CategoricalLikelihood::to_json() const { return {{"type", "categorical"}, {"labels", labels_}}; }

}  // namespace occam

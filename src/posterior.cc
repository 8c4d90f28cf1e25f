#include "occam/posterior.h"

#include <algorithm>
#include <cmath>

#include "curvature_kernels.h"
#include "occam/status.h"

namespace occam {
namespace {

// Rows of X handled at once when the data Hessian is accumulated, so that the Jacobian block
// (rows·K × W doubles) stays small whatever m is.
constexpr Index kHessianBlockRows = 2048;

// The log-likelihood as a Network::OutputLoss: value log p(Y|F), gradient ∂ log p / ∂F.
class LogLikelihoodLoss final : public OutputLoss {
 public:
  LogLikelihoodLoss(const Likelihood& likelihood, const Eigen::MatrixXd& Y) : likelihood_(likelihood), Y_(Y) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    return likelihood_.log_likelihood(F, Y_, dF);
  }

 private:
  const Likelihood& likelihood_;
  const Eigen::MatrixXd& Y_;
};

// (ΛV)_n = Λ_n v_n for V (rows × K) and Λ (rows × K²).
Eigen::MatrixXd apply_output_hessian(const Eigen::MatrixXd& lambda, const Eigen::MatrixXd& V) {
  const Index K = V.cols();
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(V.rows(), K);
  for (Index k = 0; k < K; ++k) {
    for (Index l = 0; l < K; ++l) out.col(k).array() += lambda.col(k + l * K).array() * V.col(l).array();
  }
  return out;
}

}  // namespace

HessianKind parse_hessian_kind(std::string_view name) {
  if (name == "ggn") return HessianKind::kGgn;
  if (name == "exact") return HessianKind::kExact;
  throw Error(ErrorKind::kInvalidArgument, "hessian must be 'ggn' or 'exact', got '" + std::string(name) + "'");
}

CurvatureForm parse_curvature_form(std::string_view name) {
  if (name == "auto") return CurvatureForm::kAuto;
  if (name == "dense") return CurvatureForm::kDense;
  if (name == "woodbury") return CurvatureForm::kWoodbury;
  throw Error(ErrorKind::kInvalidArgument,
              "curvature form must be 'auto', 'dense' or 'woodbury', got '" + std::string(name) + "'");
}

const char* to_string(CurvatureForm form) {
  switch (form) {
    case CurvatureForm::kAuto: return "auto";
    case CurvatureForm::kDense: return "dense";
    case CurvatureForm::kWoodbury: return "woodbury";
  }
  return "unknown";
}

Posterior::Posterior(std::unique_ptr<Network> network, std::unique_ptr<Likelihood> likelihood, Prior prior,
                     Eigen::MatrixXd X, Eigen::MatrixXd Y)
    : network_(std::move(network)),
      likelihood_(std::move(likelihood)),
      prior_(std::move(prior)),
      X_(std::move(X)),
      Y_(std::move(Y)) {
  if (!network_ || !likelihood_) throw Error(ErrorKind::kInvalidArgument, "posterior: network and likelihood are required");
  if (X_.rows() != Y_.rows()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: " + std::to_string(X_.rows()) + " input rows but " +
                                                 std::to_string(Y_.rows()) + " target rows");
  }
  if (X_.rows() == 0) throw Error(ErrorKind::kInvalidInput, "posterior: the data set has no rows");
  if (X_.cols() != network_->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: the network takes " + std::to_string(network_->num_inputs()) +
                                                 " inputs but the data have " + std::to_string(X_.cols()));
  }
  if (network_->num_outputs() != likelihood_->num_outputs()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: the network has " + std::to_string(network_->num_outputs()) +
                                                 " outputs but the " + likelihood_->name() + " likelihood needs " +
                                                 std::to_string(likelihood_->num_outputs()));
  }
  if (prior_.dim() != network_->num_params()) {
    throw Error(ErrorKind::kInvalidArgument, "posterior: the prior covers " + std::to_string(prior_.dim()) +
                                                 " parameters but the network has " +
                                                 std::to_string(network_->num_params()));
  }
  likelihood_->validate_targets(Y_);
}

bool Posterior::evaluate(const Eigen::Ref<const Eigen::VectorXd>& w, double* log_p, Eigen::VectorXd* grad) const {
  const LogLikelihoodLoss loss(*likelihood_, Y_);
  double value;
  if (grad != nullptr) {
    value = network_->value_gradient(w, X_, loss, grad);
    Eigen::VectorXd prior_grad;
    value += prior_.log_density(w, &prior_grad);
    *grad += prior_grad;
  } else {
    Eigen::MatrixXd F;
    network_->forward(w, X_, &F);
    value = likelihood_->log_likelihood(F, Y_, nullptr) + prior_.log_density(w, nullptr);
  }
  *log_p = value;
  return std::isfinite(value) && (grad == nullptr || grad->allFinite());
}

bool Posterior::evaluate_batch(const Eigen::Ref<const Eigen::VectorXd>& w, const std::vector<Index>& rows,
                               double* log_p, Eigen::VectorXd* grad) const {
  if (rows.empty()) throw Error(ErrorKind::kInvalidArgument, "posterior: empty minibatch");
  const Eigen::MatrixXd Xb = X_(rows, Eigen::all);
  const Eigen::MatrixXd Yb = Y_(rows, Eigen::all);
  const double scale = static_cast<double>(num_data()) / static_cast<double>(rows.size());
  const LogLikelihoodLoss loss(*likelihood_, Yb);
  Eigen::VectorXd prior_grad;
  double value;
  if (grad != nullptr) {
    value = scale * network_->value_gradient(w, Xb, loss, grad);
    *grad *= scale;
    value += prior_.log_density(w, &prior_grad);
    *grad += prior_grad;
  } else {
    Eigen::MatrixXd F;
    network_->forward(w, Xb, &F);
    value = scale * likelihood_->log_likelihood(F, Yb, nullptr) + prior_.log_density(w, nullptr);
  }
  *log_p = value;
  return std::isfinite(value) && (grad == nullptr || grad->allFinite());
}

double Posterior::log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w) const {
  Eigen::MatrixXd F;
  network_->forward(w, X_, &F);
  return likelihood_->log_likelihood(F, Y_, nullptr);
}

Eigen::MatrixXd Posterior::data_hessian(const Eigen::Ref<const Eigen::VectorXd>& w, HessianKind kind) const {
  Eigen::MatrixXd H;
  internal::accumulate_gauss_newton_upper(*this, w, kHessianBlockRows, &H);
  H.triangularView<Eigen::StrictlyLower>() = H.transpose();
  if (kind == HessianKind::kExact) {
    // The exact Hessian adds Σ_n Σ_k g_nk ∇²f_k(x_n), g = ∂(−log p)/∂f (Bishop 1995, §4.10).
    Eigen::MatrixXd F, curvature;
    OutputDerivatives d;
    for (Index start = 0; start < num_data(); start += kHessianBlockRows) {
      const Index rows = std::min(kHessianBlockRows, num_data() - start);
      const auto Xb = X_.middleRows(start, rows);
      network_->forward(w, Xb, &F);
      likelihood_->neg_log_derivatives(F, Y_.middleRows(start, rows), &d);
      network_->curvature_matrix(w, Xb, d.gradient, &curvature);
      H += curvature;
    }
  }
  return H;
}

Eigen::VectorXd Posterior::data_hessian_vp(const Eigen::Ref<const Eigen::VectorXd>& w,
                                           const Eigen::Ref<const Eigen::VectorXd>& v, HessianKind kind) const {
  Eigen::MatrixXd F, Jv;
  OutputDerivatives d;
  network_->forward(w, X_, &F);
  likelihood_->neg_log_derivatives(F, Y_, &d);
  network_->jvp(w, X_, v, &Jv);
  Eigen::VectorXd out;
  network_->backward(w, X_, apply_output_hessian(d.hessian, Jv), &out);
  if (kind == HessianKind::kExact) {
    Eigen::VectorXd curvature;
    network_->curvature_vp(w, X_, d.gradient, v, &curvature);
    out += curvature;
  }
  return out;
}

}  // namespace occam

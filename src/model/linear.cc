// linear.cc — a GLM's linear predictor as a Network: F = XB + 1bᵀ, θ = [vec(B), b].

#include "occam/linear.h"

#include <nlohmann/json.hpp>
#include <string>

#include "model/network_checks.h"
#include "occam/limits.h"
#include "occam/status.h"

namespace occam {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

Linear::Linear(Index inputs, Index outputs, bool intercept)
    : inputs_(inputs), outputs_(outputs), intercept_(intercept) {
  if (inputs < 1 || outputs < 1)
    throw Error(ErrorKind::kInvalidArgument, "linear: needs at least one input and one output, got " +
                                                 std::to_string(inputs) + " and " + std::to_string(outputs));
  // (inputs + 1)·outputs bounds W with or without the intercept; formed without overflow.
  if (inputs >= kMaxParameters || outputs > kMaxParameters / (inputs + 1))
    throw Error(ErrorKind::kInvalidArgument, "linear: " + std::to_string(inputs) + " inputs and " +
                                                 std::to_string(outputs) + " outputs give more than " +
                                                 std::to_string(kMaxParameters) +
                                                 " parameters, the most a network may have");
}

std::unique_ptr<Network> Linear::clone() const { return std::make_unique<Linear>(*this); }

std::vector<ParamGroup> Linear::default_groups() const {
  std::vector<ParamGroup> groups = {{"weights", {{0, inputs_ * outputs_}}}};
  if (intercept_) groups.push_back({"intercept", {{inputs_ * outputs_, outputs_}}});
  return groups;
}

Eigen::VectorXd Linear::initial_params(Rng&) const { return VectorXd::Zero(num_params()); }

void Linear::forward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                     Eigen::MatrixXd* F) const {
  detail::check_args(*this, w, X);
  F->resize(X.rows(), outputs_);
  if (intercept_)
    for (Index k = 0; k < outputs_; ++k) F->col(k).setConstant(w[inputs_ * outputs_ + k]);
  else
    F->setZero();
  F->noalias() += X * Map<const MatrixXd>(w.data(), inputs_, outputs_);
}

std::vector<DenseLayer> Linear::dense_layers() const {
  return {{inputs_, outputs_, 0, /*unit_major=*/false, intercept_ ? inputs_ * outputs_ : -1}};
}

void Linear::layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                             const SeedsAt& seeds_at, LayerGradients* out) const {
  MatrixXd F, seeds;
  forward(w, X, &F);
  seeds_at(F, &seeds);
  const Index m = X.rows(), K = outputs_;
  detail::check_seeds(*this, seeds, m);
  out->inputs.assign(1, X);
  // Row (k, n) is sensitive to output j by S_n(k, j).
  out->deltas.assign(1, MatrixXd(m * K, K));
  for (Index k = 0; k < K; ++k) {
    for (Index j = 0; j < K; ++j) out->deltas[0].col(j).segment(k * m, m) = seeds.col(k + j * K);
  }
}

void Linear::backward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                      const Eigen::MatrixXd& G, Eigen::VectorXd* grad) const {
  detail::check_args(*this, w, X, &G);
  grad->resize(num_params());
  Map<MatrixXd>(grad->data(), inputs_, outputs_).noalias() = X.transpose() * G;
  if (intercept_) grad->tail(outputs_) = G.colwise().sum().transpose();
}

double Linear::value_gradient(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                              const OutputLoss& loss, Eigen::VectorXd* grad) const {
  MatrixXd F, dF;
  forward(w, X, &F);
  const double value = loss(F, &dF);
  backward(w, X, dF, grad);
  return value;
}

void Linear::jvp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                 const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::MatrixXd* Jv) const {
  detail::check_args(*this, w, X, nullptr, &v);
  forward(v, X, Jv);  // f is linear in θ
}

// Row k·m + n is ∂f_k(x_n)/∂θ: x_n in the columns of B(·, k), and 1 in the column of b_k.
void Linear::jacobian(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                      Eigen::MatrixXd* J) const {
  detail::check_args(*this, w, X);
  const Index m = X.rows();
  J->setZero(m * outputs_, num_params());
  for (Index k = 0; k < outputs_; ++k) {
    J->block(k * m, k * inputs_, m, inputs_) = X;
    if (intercept_) J->block(k * m, inputs_ * outputs_ + k, m, 1).setOnes();
  }
}

void Linear::curvature_vp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                          const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                          Eigen::VectorXd* out) const {
  detail::check_args(*this, w, X, &G, &v);
  out->setZero(num_params());
}

void Linear::curvature_matrix(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                              const Eigen::MatrixXd& G, Eigen::MatrixXd* out) const {
  detail::check_args(*this, w, X, &G);
  out->setZero(num_params(), num_params());
}

nlohmann::json Linear::to_json() const {
  return {{"type", "linear"}, {"inputs", inputs_}, {"outputs", outputs_}, {"intercept", intercept_}};
}

std::string Linear::describe() const {
  return "linear " + std::to_string(inputs_) + "->" + std::to_string(outputs_) +
         (intercept_ ? " (intercept)" : " (no intercept)");
}

}  // namespace occam

// mlp.h — a multilayer perceptron of any depth.
//
// f(x) = W_L·σ(… σ(W_1·x + b_1) …) + b_L, one activation for all hidden layers, identity output.
// θ is laid out layer by layer: W_l (out × in, column-major) then b_l.
//
//   occam::Mlp net(/*inputs=*/1, /*hidden=*/{50}, occam::Activation::kTanh, /*outputs=*/1);
//   occam::Rng rng(1);
//   Eigen::VectorXd w = net.initial_params(rng);
#pragma once

#include <functional>
#include <vector>

#include "occam/network.h"

namespace occam {

enum class Activation { kTanh, kRelu, kSigmoid, kSoftplus, kIdentity };

const char* to_string(Activation a);
// Accepts "tanh", "relu", "sigmoid", "softplus", "identity"; throws Error(kInvalidArgument).
Activation parse_activation(std::string_view name);
// True for activations with σ(−a) = −σ(a) (tanh, identity): the hidden-unit sign-flip symmetry.
bool is_odd(Activation a);

class Mlp final : public Network {
 public:
  // hidden may be empty (a linear model with intercept). Throws Error(kInvalidArgument) on a
  // zero-sized layer.
  Mlp(Index inputs, std::vector<Index> hidden, Activation activation, Index outputs = 1);

  std::unique_ptr<Network> clone() const override;
  Index num_inputs() const override { return sizes_.front(); }
  Index num_outputs() const override { return sizes_.back(); }
  Index num_params() const override { return num_params_; }
  const std::vector<Index>& layer_sizes() const { return sizes_; }  // {D, H_1, ..., K}
  Activation activation() const { return activation_; }

  // Groups: "input_weights", "hidden_biases", "output_weights", "output_biases", and in nets
  // with two or more hidden layers "hidden_weights" (every hidden-to-hidden matrix).
  // With no hidden layer: "weights" and "biases".
  std::vector<ParamGroup> default_groups() const override;
  // Weights N(0, 1/fan_in), biases zero.
  Eigen::VectorXd initial_params(Rng& rng) const override;

  void forward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
               Eigen::MatrixXd* F) const override;
  void backward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                const Eigen::MatrixXd& G, Eigen::VectorXd* grad) const override;
  double value_gradient(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const OutputLoss& loss, Eigen::VectorXd* grad) const override;
  void jvp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
           const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::MatrixXd* Jv) const override;
  void jacobian(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                Eigen::MatrixXd* J) const override;
  void curvature_vp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                    const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                    Eigen::VectorXd* out) const override;
  void curvature_matrix(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const Eigen::MatrixXd& G, Eigen::MatrixXd* out) const override;
  // One hidden layer: a block per hidden unit, its input weights, bias and output weights (the
  // term is zero between units, and within the output layer, where f is linear).
  bool curvature_blocks(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const Eigen::MatrixXd& G, CurvatureBlocks* out) const override;
  // Keeps the forward pass and σ', σ'' of every hidden layer: each product is then one R-operator
  // pass, and hessian_vp one R-forward and one R-backward pass.
  std::unique_ptr<Linearisation> linearise(const Eigen::Ref<const Eigen::VectorXd>& w,
                                           const Eigen::Ref<const Eigen::MatrixXd>& X) const override;

  // {D, H_1, ..., K} as dense layers, unit-major, each with its biases after its weights.
  std::vector<DenseLayer> dense_layers() const override;
  // One forward pass, then one backward pass per output mixture k.
  void layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                       const SeedsAt& seeds_at, LayerGradients* out) const override;
  using Network::layer_gradients;

  // W_1 (H_1 × D, column-major) in the group "input_weights" ("weights" without a hidden layer).
  std::optional<InputWeightLayout> input_weight_layout() const override;
  // log(H!) + H log 2 per hidden layer (the sign flip for tanh and the logistic sigmoid only).
  double symmetry_log_factor() const override;
  double symmetry_log_factor(const std::vector<Index>& units_per_hidden_layer) const override;

  nlohmann::json to_json() const override;
  std::string describe() const override;

 private:
  std::vector<Index> sizes_;
  Activation activation_;
  Index num_params_ = 0;
};

}  // namespace occam

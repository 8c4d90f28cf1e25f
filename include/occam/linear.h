// linear.h — a generalised linear model's design matrix as a Network: f(x) = Bᵀx (+ b).
//
// With K outputs, θ = [B (D × K, column-major), b (K)]; the intercept is optional.
//
//   occam::Linear glm(/*inputs=*/13, /*outputs=*/1, /*intercept=*/true);
//   Eigen::MatrixXd F; glm.forward(w, X, &F);
#pragma once

#include "occam/network.h"

namespace occam {

class Linear final : public Network {
 public:
  Linear(Index inputs, Index outputs = 1, bool intercept = true);

  std::unique_ptr<Network> clone() const override;
  Index num_inputs() const override { return inputs_; }
  Index num_outputs() const override { return outputs_; }
  Index num_params() const override { return inputs_ * outputs_ + (intercept_ ? outputs_ : 0); }
  bool intercept() const { return intercept_; }

  // Groups: "weights" and, with an intercept, "intercept".
  std::vector<ParamGroup> default_groups() const override;
  Eigen::VectorXd initial_params(Rng& rng) const override;  // zeros: the objective is convex

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
  // f is linear in θ: the second-order term is zero.
  void curvature_vp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                    const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                    Eigen::VectorXd* out) const override;
  void curvature_matrix(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const Eigen::MatrixXd& G, Eigen::MatrixXd* out) const override;

  // B (D × K, column-major) in the group "weights".
  std::optional<InputWeightLayout> input_weight_layout() const override {
    return InputWeightLayout{"weights", outputs_, /*node_major=*/false};
  }

  // One dense layer, B (D × K, inputs-major) with the intercept, when there is one, after it.
  std::vector<DenseLayer> dense_layers() const override;
  // The layer's inputs are X; its pre-activations are the outputs, so deltas are the seeds.
  void layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                       const SeedsAt& seeds_at, LayerGradients* out) const override;
  using Network::layer_gradients;

  bool linear_in_weights() const override { return true; }
  nlohmann::json to_json() const override;
  std::string describe() const override;

 private:
  Index inputs_;
  Index outputs_;
  bool intercept_;
};

}  // namespace occam

// network.h — the map from inputs to outputs, f(θ; x), and its derivatives.
//
// A Network knows nothing of likelihoods or priors. Inputs X are m × D (one example per row),
// outputs F are m × K. Every method is batched over the examples with matrix products.
//
//   occam::Mlp net(/*inputs=*/13, {50}, occam::Activation::kTanh, /*outputs=*/1);
//   Eigen::VectorXd w = net.initial_params(rng);
//   Eigen::MatrixXd F; net.forward(w, X, &F);
#pragma once

#include <Eigen/Core>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "occam/rng.h"

namespace occam {

using Eigen::Index;

// A contiguous run of parameters inside θ.
struct ParamBlock {
  Index offset = 0;
  Index size = 0;
};

// A named set of parameters that share one prior precision α_g (MacKay 1992b, §2: separate
// α for input weights, hidden biases, output weights and output biases).
struct ParamGroup {
  std::string name;
  std::vector<ParamBlock> blocks;
  Index size() const;
};

// Per example n, the derivatives of a scalar loss ℓ(f_n) with respect to the network's output
// f_n ∈ R^K. `gradient` is m × K; `hessian` is m × K², row n holding ∂²ℓ/∂f_n² (column-major).
struct OutputDerivatives {
  Eigen::MatrixXd gradient;
  Eigen::MatrixXd hessian;
};

// A symmetric W × W matrix that is zero outside dense blocks on disjoint sets of weights:
// block[b](i, j) is the entry at (index[b][i], index[b][j]).
struct CurvatureBlocks {
  std::vector<std::vector<Index>> index;
  std::vector<Eigen::MatrixXd> block;
};

// The loss seen by Network::value_gradient: given F (m × K) it returns Σ_n ℓ(f_n) and writes
// ∂ℓ/∂F (m × K) into dF.
class OutputLoss {
 public:
  virtual ~OutputLoss() = default;
  virtual double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const = 0;
};

// Where a network's first-layer weights (those that multiply the inputs) lie in θ: one copy of
// the D inputs per unit of that layer. Priors over the inputs (ARD, graph smoothing) need it.
struct InputWeightLayout {
  std::string group;        // the default group (default_groups()) that holds exactly these weights
  Index copies = 1;         // units of the first layer (a Linear's outputs, an Mlp's first hidden layer)
  bool node_major = false;  // weight (input d, unit c) at offset + d·copies + c; otherwise offset + c·D + d
};

// One dense layer z = W·a (+ b) of a network made of such layers, and where its parameters lie in
// θ. W is out × in (unit c, input j): unit_major, weight (c, j) at weight_offset + c + j·out (an
// Mlp's column-major W_l), otherwise at weight_offset + j + c·in (a Linear's column-major B, inputs
// × outputs). Its biases, when it has them, at bias_offset + c.
struct DenseLayer {
  Index in = 0, out = 0;
  Index weight_offset = 0;
  bool unit_major = true;
  Index bias_offset = -1;  // -1: no biases
  Index weight_index(Index c, Index j) const { return weight_offset + (unit_major ? c + j * out : j + c * in); }
  // The parameter of unit c's input j, where input j = in is the bias (the constant input 1).
  Index parameter_index(Index c, Index j) const { return j < in ? weight_index(c, j) : bias_offset + c; }
  bool has_biases() const { return bias_offset >= 0; }
};

// What layer-wise curvatures (the Woodbury and dense Gauss–Newton forms from the layers, KFAC, the
// diagonal and last-layer Gauss–Newton) need of rows X of a network of dense layers: every layer's
// input a_l (inputs[l], rows × in_l; the first layer's is X) and the pre-activation gradients of
// the mixed outputs Σ_j S_n(k, j) f_j(x_n) for each k (deltas[l], (rows·K) × out_l, block k for the
// k-th mixture), with S_n(k, j) = seeds(n, k + j·K). With S_n = Λ_n^½ the rows of the weighted
// Jacobian Λ^½J are, at layer l's biases, deltas[l], and at its weights the row-wise Kronecker
// product of deltas[l] and a_l — without forming J ((rows·K) × W). Seeds of S_n = I give the
// Jacobian's own rows.
struct LayerGradients {
  std::vector<Eigen::MatrixXd> inputs, deltas;
};

// The network at one w on one X: its forward pass (outputs, hidden activations and their
// derivatives) done once and kept, so that the many products with J(w) and with the second-order
// term that an iterative solver needs at that w (a Newton step's conjugate gradients) each cost
// only their own R-operator pass. Made by Network::linearise; it refers to the network and to X,
// which must outlive it, and holds its own copy of w. Its products equal the Network methods of
// the same name at (w, X). Scratch space is kept between calls: use one object from one thread.
class Linearisation {
 public:
  virtual ~Linearisation() = default;
  // F = f(w; X), m × K.
  virtual const Eigen::MatrixXd& output() const = 0;
  // Jv = J(w)·v, m × K.
  virtual void jvp(const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::MatrixXd* Jv) const = 0;
  // grad = J(w)ᵀ·G.
  virtual void vjp(const Eigen::MatrixXd& G, Eigen::VectorXd* grad) const = 0;
  // out = Σ_n Σ_k G_nk ∇²_w f_k(x_n; w) · v (Network::curvature_vp).
  virtual void curvature_vp(const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                            Eigen::VectorXd* out) const = 0;
  // The Hessian-vector product of a loss Σ_n ℓ(f_n) with G = ∂ℓ/∂F:
  //   out = Jᵀ·Λ(Jv) + Σ_n Σ_k G_nk ∇²_w f_k(x_n; w)·v,
  // where output_hessian maps Jv (m × K) to the rows Λ_n (Jv)_n. This default calls jvp, vjp and
  // curvature_vp; a network overrides it with one R-forward and one R-backward pass
  // (Pearlmutter 1994, with R{∂ℓ/∂F} = Λ·R{F}).
  using OutputHessian = std::function<Eigen::MatrixXd(const Eigen::MatrixXd&)>;
  virtual void hessian_vp(const Eigen::MatrixXd& G, const OutputHessian& output_hessian,
                          const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::VectorXd* out) const;
};

class Network {
 public:
  virtual ~Network() = default;
  virtual std::unique_ptr<Network> clone() const = 0;

  virtual Index num_inputs() const = 0;
  virtual Index num_outputs() const = 0;
  virtual Index num_params() const = 0;

  // The default prior groups (see ParamGroup); they partition {0, ..., W-1}.
  virtual std::vector<ParamGroup> default_groups() const = 0;
  // A seeded random initialisation suitable for MAP training.
  virtual Eigen::VectorXd initial_params(Rng& rng) const = 0;

  // F = f(w; X), m × K.
  virtual void forward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                       Eigen::MatrixXd* F) const = 0;

  // grad = J(w)ᵀ·G = Σ_n Σ_k G_nk ∂f_k(x_n)/∂w  (a vector-Jacobian product; backprop).
  virtual void backward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                        const Eigen::MatrixXd& G, Eigen::VectorXd* grad) const = 0;

  // One forward pass, the loss on its output, one backward pass: returns loss(F) and writes
  // its gradient with respect to w. The hot path of MAP and of the samplers.
  virtual double value_gradient(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                                const OutputLoss& loss, Eigen::VectorXd* grad) const = 0;

  // Jv = J(w)·v, m × K (a Jacobian-vector product; forward mode).
  virtual void jvp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                   const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::MatrixXd* Jv) const = 0;

  // The per-example output Jacobians stacked output-major: J is (m·K) × W and row k·m + n is
  // ∂f_k(x_n)/∂w. For K = 1 this is the m × W design matrix of the linearised model.
  virtual void jacobian(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                        Eigen::MatrixXd* J) const = 0;

  // The second-order part of a Hessian-vector product (Pearlmutter's R-operator):
  //   out = Σ_n Σ_k G_nk ∇²_w f_k(x_n; w) · v.
  // With G = ∂ℓ/∂F and Λ_n = ∂²ℓ/∂f_n², the exact Hessian of Σ_n ℓ(f_n) is JᵀΛJ + this term.
  virtual void curvature_vp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                            const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                            Eigen::VectorXd* out) const = 0;

  // The same term as a full W × W symmetric matrix: Σ_n Σ_k G_nk ∇²_w f_k(x_n; w).
  // The default applies curvature_vp to each unit vector; networks override it with a faster form.
  virtual void curvature_matrix(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                                const Eigen::MatrixXd& G, Eigen::MatrixXd* out) const;

  // The same term where it is block diagonal in θ: the sets of `index` are disjoint and the term
  // is zero outside the blocks they span (a weight in no set has a zero row and column). Returns
  // false, and leaves *out alone, where the network has no such form (the default).
  virtual bool curvature_blocks(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                                const Eigen::MatrixXd& G, CurvatureBlocks* out) const;

  // The network at (w, X) with its forward pass kept (see Linearisation). The default keeps
  // only F and calls the methods above, each with its own forward pass; networks override it.
  virtual std::unique_ptr<Linearisation> linearise(const Eigen::Ref<const Eigen::VectorXd>& w,
                                                   const Eigen::Ref<const Eigen::MatrixXd>& X) const;

  // The first-layer weights' layout; empty for a network whose inputs have no such weights.
  virtual std::optional<InputWeightLayout> input_weight_layout() const { return std::nullopt; }
  // True when f(x; w) is linear in w (∇²_w f = 0): the Jacobian does not move with w, so
  // optimisers skip second-order corrections of their steps (rounding noise), the automatic MAP
  // optimiser takes Newton's method (S convex for a GLM), and the evidence's total gradient drops
  // the Jacobian's derivative along dw*/dθ. The library asks this, not the network's type.
  virtual bool linear_in_weights() const { return false; }
  // log of the number of weight vectors that give the same function as any one of them (hidden
  // units permuted, and sign-flipped for odd activations; MacKay 1992b, §4): the evidence of one
  // mode counts each of them. 0 for a network without such symmetries.
  virtual double symmetry_log_factor() const { return 0.0; }
  // The same counting only units_per_hidden_layer[l] units of hidden layer l (the units the data
  // determine: evidence.h, well_determined_hidden_units).
  virtual double symmetry_log_factor(const std::vector<Index>& /*units_per_hidden_layer*/) const { return 0.0; }

  // The dense layers the network is made of, from the input side: each fed by the activations of
  // the one before it (the first by X), the last giving the outputs. Empty for a network that is
  // not such a stack. The layer-wise curvatures and the hidden-unit symmetry term ask this, not
  // the network's type.
  virtual std::vector<DenseLayer> dense_layers() const { return {}; }
  // For a network with dense layers, LayerGradients at (w, X) with the seeds made from the outputs
  // F = f(w; X) (m × K) by seeds_at, which sees F after the one forward pass (e.g. the square roots
  // of the likelihood's output Hessians at F). Throws Error(kInvalidArgument) on seeds that are not
  // m × K², and for a network without dense layers (the default).
  using SeedsAt = std::function<void(const Eigen::MatrixXd& F, Eigen::MatrixXd* seeds)>;
  virtual void layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                               const SeedsAt& seeds_at, LayerGradients* out) const;
  // The same with seeds given.
  void layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                       const Eigen::MatrixXd& seeds, LayerGradients* out) const;

  // The architecture as JSON (no weights): {"type": "mlp", ...}. network_from_json inverts it.
  virtual nlohmann::json to_json() const = 0;
  // One line for reports, e.g. "mlp 13-50-1 tanh".
  virtual std::string describe() const = 0;
};

// Rebuilds a network from Network::to_json(); throws Error(kInvalidInput) on a bad description.
std::unique_ptr<Network> network_from_json(const nlohmann::json& j);

}  // namespace occam

// kronecker.cc — the Kronecker-factored (KFAC) Laplace approximation of an Mlp (Martens & Grosse
// 2015; Ritter, Botev & Barber 2018). For a dense layer z = W a + b, the Gauss–Newton block of W is
//   H_W = Σ_n Σ_k (a_n a_nᵀ) ⊗ (g_nk g_nkᵀ) ≈ Q ⊗ G,   Q = Σ_n a_n a_nᵀ,  G = (1/m) Σ_n Σ_k g_nk g_nkᵀ,
// with a_n the layer's input and g_nk = ∂(Λ_n^½ f_n)_k/∂z the pre-activation gradient of the k-th
// row of the GGN's square-root factor Λ^½J (exact when g does not vary with n, e.g. a layer that
// feeds a Gaussian output directly: G = β then). The bias is a block of its own, with Q = [m]:
// H_b = Σ_n Σ_k g_nk g_nkᵀ = m·G exactly; the cross terms between W and b, and between layers, are
// dropped. With one prior precision α per block, A_block = Q ⊗ G + αI has the eigenvalues
// λ_q,i λ_g,j + α and eigenvectors u_q,i ⊗ u_g,j (Immer et al. 2021, §3): log|A|, tr(A⁻¹) per
// group, solves and draws all come from the two eigendecompositions.
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "linalg.h"
#include "occam/mlp.h"
#include "occam/status.h"
#include "structured/structured.h"

namespace occam::internal {
namespace {

struct Layer {
  Index weight_offset = 0, bias_offset = 0, inputs = 0, outputs = 0;
};

std::vector<Layer> mlp_layers(const Mlp& mlp) {
  const std::vector<Index>& sizes = mlp.layer_sizes();
  std::vector<Layer> layers;
  Index offset = 0;
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    Layer layer{offset, offset + sizes[l] * sizes[l - 1], sizes[l - 1], sizes[l]};
    offset = layer.bias_offset + sizes[l];
    layers.push_back(layer);
  }
  return layers;
}

// One block's factors into its eigendecompositions; α from the prior, which must be one value.
KroneckerBlock make_block(Index offset, const Eigen::MatrixXd& Q, const Eigen::MatrixXd& G,
                          const Eigen::VectorXd& precision, const std::string& what) {
  KroneckerBlock b;
  b.offset = offset;
  b.rows = G.rows();
  b.cols = Q.rows();
  const auto segment = precision.segment(offset, b.rows * b.cols);
  if (segment.maxCoeff() != segment.minCoeff()) {
    throw Error(ErrorKind::kInvalidArgument,
                "hessian_structure kron needs one prior precision over each layer's weights and over each layer's "
                "biases; " + what + " has several (a per-input prior such as ard does not factor)");
  }
  b.prior_precision = segment[0];
  if (!symmetric_eigen(Q, &b.input_values, &b.input_vectors) || !symmetric_eigen(G, &b.output_values, &b.output_vectors)) {
    throw Error(ErrorKind::kNumerical, "kron Laplace: the eigendecomposition of a Kronecker factor failed");
  }
  // Q, G ⪰ 0: a negative eigenvalue is rounding.
  b.input_values = b.input_values.cwiseMax(0.0);
  b.output_values = b.output_values.cwiseMax(0.0);
  return b;
}

}  // namespace

std::vector<KroneckerFactors> kronecker_factors(const Posterior& posterior, const Eigen::VectorXd& w) {
  const auto* mlp = dynamic_cast<const Mlp*>(&posterior.network());
  if (mlp == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "hessian_structure kron needs an mlp, not " + posterior.network().describe());
  }
  const std::vector<Layer> layers = mlp_layers(*mlp);
  Index size = 0;
  for (const Layer& layer : layers) size += layer.inputs * layer.inputs + layer.outputs * layer.outputs;
  // Each block's Σ a aᵀ and Σ g gᵀ (lower triangles), layer after layer, summed over the blocks.
  const Eigen::VectorXd sums =
      sum_over_row_blocks(posterior, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
        out->setZero(size);
        Mlp::LayerGradients g;
        weighted_layer_gradients(posterior, *mlp, w, X, Y, &g);
        Index offset = 0;
        for (std::size_t l = 0; l < layers.size(); ++l) {
          const Index in = layers[l].inputs, n = layers[l].outputs;
          Eigen::Map<Eigen::MatrixXd>(out->data() + offset, in, in).selfadjointView<Eigen::Lower>().rankUpdate(
              g.inputs[l].transpose());
          offset += in * in;
          Eigen::Map<Eigen::MatrixXd>(out->data() + offset, n, n).selfadjointView<Eigen::Lower>().rankUpdate(
              g.deltas[l].transpose());
          offset += n * n;
        }
      });
  std::vector<KroneckerFactors> factors(layers.size());
  const double m = static_cast<double>(posterior.num_data());
  Index offset = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Index in = layers[l].inputs, n = layers[l].outputs;
    factors[l].Q = Eigen::Map<const Eigen::MatrixXd>(sums.data() + offset, in, in).selfadjointView<Eigen::Lower>();
    offset += in * in;
    factors[l].G = Eigen::MatrixXd(Eigen::Map<const Eigen::MatrixXd>(sums.data() + offset, n, n)
                                       .selfadjointView<Eigen::Lower>()) / m;
    offset += n * n;
    factors[l].weight_offset = layers[l].weight_offset;
    factors[l].bias_offset = layers[l].bias_offset;
  }
  return factors;
}

LaplaceApproximation kronecker_laplace(const Posterior& posterior, const Eigen::VectorXd& w) {
  LaplaceApproximation q;
  q.mean = w;
  q.structure = {HessianStructureKind::kKronecker};
  const Eigen::VectorXd precision = posterior.prior().precision_diagonal();
  const double m = static_cast<double>(posterior.num_data());
  const std::vector<KroneckerFactors> factors = kronecker_factors(posterior, w);
  for (std::size_t l = 0; l < factors.size(); ++l) {
    const std::string layer = "layer " + std::to_string(l + 1);
    q.kronecker.push_back(make_block(factors[l].weight_offset, factors[l].Q, factors[l].G, precision, layer + "'s weights"));
    q.kronecker.push_back(make_block(factors[l].bias_offset, Eigen::MatrixXd::Constant(1, 1, m), factors[l].G, precision,
                                     layer + "'s biases"));
  }
  q.log_det_precision = 0.0;
  for (const KroneckerBlock& b : q.kronecker) {
    q.log_det_precision += ((b.output_values * b.input_values.transpose()).array() + b.prior_precision).log().sum();
  }
  if (!std::isfinite(q.log_det_precision)) {
    throw Error(ErrorKind::kNumerical, "kron Laplace: log|A| is not finite (a zero prior precision?)");
  }
  return q;
}

}  // namespace occam::internal

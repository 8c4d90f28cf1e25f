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
#include <nlohmann/json.hpp>
#include <string>

#include "core/linalg.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"
#include "inference/laplace/structured/structured.h"

namespace occam::internal {
namespace {

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
                "biases; " +
                    what + " has several (a per-input prior such as ard does not factor)");
  }
  b.prior_precision = segment[0];
  if (!symmetric_eigen(Q, &b.input_values, &b.input_vectors) ||
      !symmetric_eigen(G, &b.output_values, &b.output_vectors)) {
    throw Error(ErrorKind::kNumerical, "kron Laplace: the eigendecomposition of a Kronecker factor failed");
  }
  // Q, G ⪰ 0: a negative eigenvalue is rounding.
  b.input_values = b.input_values.cwiseMax(0.0);
  b.output_values = b.output_values.cwiseMax(0.0);
  return b;
}

}  // namespace

std::vector<KroneckerFactors> kronecker_factors(const Posterior& posterior, const Eigen::VectorXd& w) {
  const std::vector<DenseLayer> layers = unit_major_layers(posterior.network());
  if (layers.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "hessian_structure kron needs an mlp (dense layers, unit-major, with "
                "biases), not " +
                    posterior.network().describe());
  }
  Index size = 0;
  for (const DenseLayer& layer : layers) size += layer.in * layer.in + layer.out * layer.out;
  // Each block's Σ a aᵀ and Σ g gᵀ (lower triangles), layer after layer, summed over the blocks.
  const Eigen::VectorXd sums =
      sum_over_row_blocks(posterior, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
        out->setZero(size);
        LayerGradients g;
        weighted_layer_gradients(posterior, w, X, Y, &g);
        Index offset = 0;
        for (std::size_t l = 0; l < layers.size(); ++l) {
          const Index in = layers[l].in, n = layers[l].out;
          Eigen::Map<Eigen::MatrixXd>(out->data() + offset, in, in)
              .selfadjointView<Eigen::Lower>()
              .rankUpdate(g.inputs[l].transpose());
          offset += in * in;
          Eigen::Map<Eigen::MatrixXd>(out->data() + offset, n, n)
              .selfadjointView<Eigen::Lower>()
              .rankUpdate(g.deltas[l].transpose());
          offset += n * n;
        }
      });
  std::vector<KroneckerFactors> factors(layers.size());
  const double m = static_cast<double>(posterior.num_data());
  Index offset = 0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Index in = layers[l].in, n = layers[l].out;
    factors[l].Q = Eigen::Map<const Eigen::MatrixXd>(sums.data() + offset, in, in).selfadjointView<Eigen::Lower>();
    offset += in * in;
    factors[l].G =
        Eigen::MatrixXd(Eigen::Map<const Eigen::MatrixXd>(sums.data() + offset, n, n).selfadjointView<Eigen::Lower>()) /
        m;
    offset += n * n;
    factors[l].weight_offset = layers[l].weight_offset;
    factors[l].bias_offset = layers[l].bias_offset;
  }
  return factors;
}

namespace {

// (λ_g,i λ_q,j + α)^power for a Kronecker block, rows × cols.
Eigen::ArrayXXd block_eigenvalues(const KroneckerBlock& b, double power) {
  return ((b.output_values * b.input_values.transpose()).array() + b.prior_precision).pow(power);
}

// The block's part of a vector of θ as its rows × cols matrix.
Eigen::Map<const Eigen::MatrixXd> block_of(const KroneckerBlock& b, const Eigen::Ref<const Eigen::VectorXd>& v) {
  return {v.data() + b.offset, b.rows, b.cols};
}

double sum_of_log_eigenvalues(const std::vector<KroneckerBlock>& blocks) {
  double log_det = 0.0;
  for (const KroneckerBlock& b : blocks) {
    log_det += ((b.output_values * b.input_values.transpose()).array() + b.prior_precision).log().sum();
  }
  if (!std::isfinite(log_det))
    throw Error(ErrorKind::kNumerical, "kron Laplace: log|A| is not finite (a zero prior precision?)");
  return log_det;
}

}  // namespace

KroneckerPrecision::KroneckerPrecision(std::vector<KroneckerBlock> blocks, double log_det)
    : PrecisionFactor(log_det), blocks_(std::move(blocks)) {}

KroneckerPrecision::KroneckerPrecision(std::vector<KroneckerBlock> blocks)
    : PrecisionFactor(sum_of_log_eigenvalues(blocks)), blocks_(std::move(blocks)) {}

Index KroneckerPrecision::dim() const {
  return blocks_.empty() ? 0 : blocks_.back().offset + blocks_.back().rows * blocks_.back().cols;
}

Eigen::VectorXd KroneckerPrecision::covariance_diagonal() const {
  Eigen::VectorXd out(dim());
  for (const KroneckerBlock& b : blocks_) {
    // (A⁻¹)_(i,j) = Σ_ab U_g(i,a)² U_q(j,b)² / (λ_g,a λ_q,b + α) = ((U_g∘U_g) M (U_q∘U_q)ᵀ)_ij.
    const Eigen::MatrixXd M = block_eigenvalues(b, -1.0).matrix();
    const Eigen::MatrixXd V = b.output_vectors.cwiseAbs2() * M * b.input_vectors.cwiseAbs2().transpose();
    out.segment(b.offset, V.size()) = Eigen::Map<const Eigen::VectorXd>(V.data(), V.size());
  }
  return out;
}

Eigen::VectorXd KroneckerPrecision::precision_diagonal() const {
  // diag(Q ⊗ G) + α = diag(G) diag(Q)ᵀ + α.
  Eigen::VectorXd out(dim());
  for (const KroneckerBlock& b : blocks_) {
    const Eigen::VectorXd dq = b.input_vectors.cwiseAbs2() * b.input_values;
    const Eigen::VectorXd dg = b.output_vectors.cwiseAbs2() * b.output_values;
    const Eigen::MatrixXd V = ((dg * dq.transpose()).array() + b.prior_precision).matrix();
    out.segment(b.offset, V.size()) = Eigen::Map<const Eigen::VectorXd>(V.data(), V.size());
  }
  return out;
}

Eigen::MatrixXd KroneckerPrecision::per_block(const Eigen::MatrixXd& G, double power, bool back_to_weights) const {
  Eigen::MatrixXd out(G.rows(), G.cols());
  for (const KroneckerBlock& b : blocks_) {
    const Eigen::ArrayXXd scale = block_eigenvalues(b, power);
    for (Index c = 0; c < G.cols(); ++c) {
      Eigen::MatrixXd Y = (b.output_vectors.transpose() * block_of(b, G.col(c)) * b.input_vectors).array() * scale;
      if (back_to_weights) Y = b.output_vectors * Y * b.input_vectors.transpose();
      out.col(c).segment(b.offset, Y.size()) = Eigen::Map<const Eigen::VectorXd>(Y.data(), Y.size());
    }
  }
  return out;
}

Eigen::MatrixXd KroneckerPrecision::covariance_factor_transpose(const Eigen::MatrixXd& G) const {
  // Sᵀ = diag(·)^-½ (U_q ⊗ U_g)ᵀ per block: vec(U_gᵀ X U_q) scaled.
  return per_block(G, -0.5, false);
}

Eigen::MatrixXd KroneckerPrecision::covariance_times(const Eigen::MatrixXd& R) const {
  // A⁻¹ = (U_q ⊗ U_g) diag(·)⁻¹ (U_q ⊗ U_g)ᵀ per block: vec(U_g ((U_gᵀ X U_q) ∘ M) U_qᵀ).
  return per_block(R, -1.0, true);
}

Eigen::VectorXd KroneckerPrecision::draw(Rng& rng) const {
  // Sz, S = (U_q ⊗ U_g) diag(·)^-½ per block: vec(U_g (Z∘scale) U_qᵀ).
  const Eigen::VectorXd z = rng.normal_vector(dim());
  Eigen::VectorXd out(dim());
  for (const KroneckerBlock& b : blocks_) {
    const Eigen::MatrixXd Zs = (block_of(b, z).array() * block_eigenvalues(b, -0.5)).matrix();
    const Eigen::MatrixXd Y = b.output_vectors * Zs * b.input_vectors.transpose();
    out.segment(b.offset, Y.size()) = Eigen::Map<const Eigen::VectorXd>(Y.data(), Y.size());
  }
  return out;
}

void KroneckerPrecision::write(nlohmann::json* j) const {
  (*j)["form"] = "kronecker";
  nlohmann::json blocks = nlohmann::json::array();
  for (const KroneckerBlock& b : blocks_) {
    blocks.push_back({{"offset", b.offset},
                      {"rows", b.rows},
                      {"cols", b.cols},
                      {"prior_precision", b.prior_precision},
                      {"input_vectors", as_vector(b.input_vectors)},
                      {"input_values", as_vector(b.input_values)},
                      {"output_vectors", as_vector(b.output_vectors)},
                      {"output_values", as_vector(b.output_values)}});
  }
  (*j)["kronecker_blocks"] = blocks;
}

std::shared_ptr<const KroneckerPrecision> KroneckerPrecision::read(const nlohmann::json& j, Index W, double log_det) {
  std::vector<KroneckerBlock> blocks;
  Index next = 0;  // the blocks partition θ in order
  for (const nlohmann::json& jb : j.at("kronecker_blocks")) {
    KroneckerBlock b;
    b.offset = jb.at("offset").get<Index>();
    b.rows = jb.at("rows").get<Index>();
    b.cols = jb.at("cols").get<Index>();
    b.prior_precision = jb.at("prior_precision").get<double>();
    if (b.offset != next || b.rows < 1 || b.cols < 1 || b.offset + b.rows * b.cols > W || !(b.prior_precision > 0.0)) {
      throw Error(ErrorKind::kInvalidInput,
                  "posterior 'kronecker_blocks' do not partition the weights in order, or "
                  "a block's prior precision is not positive");
    }
    next = b.offset + b.rows * b.cols;
    b.input_vectors = read_matrix(jb, "input_vectors", b.cols, b.cols);
    b.input_values = read_matrix(jb, "input_values", b.cols, 1);
    b.output_vectors = read_matrix(jb, "output_vectors", b.rows, b.rows);
    b.output_values = read_matrix(jb, "output_values", b.rows, 1);
    if ((b.input_values.array() < 0.0).any() || (b.output_values.array() < 0.0).any()) {
      throw Error(ErrorKind::kInvalidInput, "posterior 'kronecker_blocks' has a negative eigenvalue");
    }
    blocks.push_back(std::move(b));
  }
  if (next != W) throw Error(ErrorKind::kInvalidInput, "posterior 'kronecker_blocks' do not cover every weight");
  return std::shared_ptr<const KroneckerPrecision>(new KroneckerPrecision(std::move(blocks), log_det));
}

LaplaceApproximation kronecker_laplace(const Posterior& posterior, const Eigen::VectorXd& w) {
  const Eigen::VectorXd precision = posterior.prior().precision_diagonal();
  const double m = static_cast<double>(posterior.num_data());
  const std::vector<KroneckerFactors> factors = kronecker_factors(posterior, w);
  std::vector<KroneckerBlock> blocks;
  for (std::size_t l = 0; l < factors.size(); ++l) {
    const std::string layer = "layer " + std::to_string(l + 1);
    blocks.push_back(make_block(factors[l].weight_offset, factors[l].Q, factors[l].G, precision, layer + "'s weights"));
    blocks.push_back(make_block(factors[l].bias_offset, Eigen::MatrixXd::Constant(1, 1, m), factors[l].G, precision,
                                layer + "'s biases"));
  }
  return {.mean = w, .precision = std::make_shared<KroneckerPrecision>(std::move(blocks))};
}

}  // namespace occam::internal

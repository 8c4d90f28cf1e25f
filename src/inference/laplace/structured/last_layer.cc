// last_layer.cc — the last-layer Laplace approximation: the full Gauss–Newton block of the output
// layer's weights and biases, H_LL = Σ_n J_n,Lᵀ Λ_n J_n,L, every other weight held at w_MAP.
// Given the features of the last hidden layer the network is a GLM in the output layer, and for a
// network with no hidden layer (or a Linear) this is the full Laplace approximation.
#include <Eigen/Cholesky>
#include <algorithm>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/linalg.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"
#include "inference/laplace/structured/structured.h"

namespace occam::internal {

std::vector<Index> output_layer_indices(const Network& network) {
  // The output layer, its weights and then its biases, is the tail of θ: from its weights on.
  const std::vector<DenseLayer> layers = network.dense_layers();
  const auto is_tail = [&](const DenseLayer& l) {
    const Index weights_end = l.weight_offset + l.in * l.out;
    if (!l.has_biases()) return weights_end == network.num_params();
    return l.bias_offset == weights_end && weights_end + l.out == network.num_params();
  };
  if (layers.empty() || !is_tail(layers.back())) {
    throw Error(ErrorKind::kInvalidArgument,
                "hessian_structure last-layer needs an mlp or a linear model, not " + network.describe());
  }
  const Index first = layers.back().weight_offset;
  std::vector<Index> indices(static_cast<std::size_t>(network.num_params() - first));
  std::iota(indices.begin(), indices.end(), first);
  return indices;
}

namespace {

// The columns of Λ^½J at the output layer's p weights, a chunk of rows at a time (at most about 32
// MB). For unit-major layers with biases (an Mlp) from the last layer's input a and the seeds
// δ = Λ^½ (its output is the identity): the weight (i, j) column is δ_i a_j (column-major W_L),
// the bias column δ_i; otherwise the Jacobian's tail.
void for_each_output_layer_jacobian(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                    const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Index p,
                                    const std::function<void(const Eigen::MatrixXd& Z)>& visit) {
  if (unit_major_layers(posterior.network()).empty()) {
    for_each_weighted_jacobian(posterior, w, X, Y, [&](const Eigen::MatrixXd& Z) { visit(Z.rightCols(p)); });
    return;
  }
  const Index K = posterior.network().num_outputs(), rows = X.rows();
  const Index chunk = std::clamp<Index>((Index{1} << 22) / std::max<Index>(1, K * p), 1, rows);
  Eigen::MatrixXd Z;
  for (Index start = 0; start < rows; start += chunk) {
    const Index n = std::min(chunk, rows - start);
    LayerGradients g;
    weighted_layer_gradients(posterior, w, X.middleRows(start, n), Y.middleRows(start, n), &g);
    const Eigen::MatrixXd& a = g.inputs.back();
    const Eigen::MatrixXd& delta = g.deltas.back();  // (n·K) × K
    const Index inputs = a.cols();
    Z.resize(n * K, p);
    for (Index k = 0; k < K; ++k) {
      for (Index j = 0; j < inputs; ++j) {
        Z.block(k * n, j * K, n, K) = delta.middleRows(k * n, n).array().colwise() * a.col(j).array();
      }
      Z.block(k * n, inputs * K, n, K) = delta.middleRows(k * n, n);
    }
    visit(Z);
  }
}

}  // namespace

LastLayerPrecision::LastLayerPrecision(Index num_weights, std::vector<Index> integrated, Eigen::MatrixXd cholesky_lower,
                                       double log_det)
    : PrecisionFactor(log_det), W_(num_weights), integrated_(std::move(integrated)), L_(std::move(cholesky_lower)) {}

Eigen::MatrixXd LastLayerPrecision::integrated_rows(const Eigen::MatrixXd& G) const {
  // Eᵀg for the W × p embedding E of the integrated weights: the rows of G they index.
  Eigen::MatrixXd out(static_cast<Index>(integrated_.size()), G.cols());
  for (std::size_t i = 0; i < integrated_.size(); ++i) out.row(static_cast<Index>(i)) = G.row(integrated_[i]);
  return out;
}

Eigen::VectorXd LastLayerPrecision::covariance_diagonal() const {
  // Zero for the weights held at the mode; the integrated block's column norms² of L⁻¹.
  const Index p = integrated_dim();
  Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(p, p);
  L_.triangularView<Eigen::Lower>().solveInPlace(L_inv);
  const Eigen::VectorXd block = L_inv.colwise().squaredNorm().transpose();
  Eigen::VectorXd out = Eigen::VectorXd::Zero(W_);
  for (Index i = 0; i < p; ++i) out[integrated_[static_cast<std::size_t>(i)]] = block[i];
  return out;
}

Eigen::VectorXd LastLayerPrecision::precision_diagonal() const {
  // A weight held at the mode has no finite precision: +∞ (a point mass).
  Eigen::VectorXd out = Eigen::VectorXd::Constant(W_, std::numeric_limits<double>::infinity());
  const Eigen::VectorXd block = L_.triangularView<Eigen::Lower>().toDenseMatrix().rowwise().squaredNorm();
  for (std::size_t i = 0; i < integrated_.size(); ++i) out[integrated_[i]] = block[static_cast<Index>(i)];
  return out;
}

Eigen::MatrixXd LastLayerPrecision::covariance_factor_transpose(const Eigen::MatrixXd& G) const {
  // S = E L⁻ᵀ, so SᵀG = L⁻¹EᵀG (p rows).
  return L_.triangularView<Eigen::Lower>().solve(integrated_rows(G));
}

Eigen::MatrixXd LastLayerPrecision::covariance_times(const Eigen::MatrixXd& R) const {
  // A⁻¹R = E L⁻ᵀL⁻¹EᵀR: zero in the held weights' rows.
  const Eigen::MatrixXd block = L_.triangularView<Eigen::Lower>().transpose().solve(covariance_factor_transpose(R));
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(W_, R.cols());
  for (std::size_t i = 0; i < integrated_.size(); ++i) out.row(integrated_[i]) = block.row(static_cast<Index>(i));
  return out;
}

Eigen::VectorXd LastLayerPrecision::draw(Rng& rng) const {
  // E L⁻ᵀz with z ~ N(0, I_p): the held weights stay at the mode.
  Eigen::VectorXd z = rng.normal_vector(integrated_dim());
  L_.triangularView<Eigen::Lower>().transpose().solveInPlace(z);
  Eigen::VectorXd out = Eigen::VectorXd::Zero(W_);
  for (std::size_t i = 0; i < integrated_.size(); ++i) out[integrated_[i]] = z[static_cast<Index>(i)];
  return out;
}

void LastLayerPrecision::write(nlohmann::json* j) const {
  // "form" absent ("dense": the p × p factor of the integrated weights).
  (*j)["integrated"] = integrated_;
  write_packed_lower(L_, j);
}

std::shared_ptr<const LastLayerPrecision> LastLayerPrecision::read(const nlohmann::json& j, Index W, double log_det) {
  auto integrated = j.at("integrated").get<std::vector<Index>>();
  if (!std::is_sorted(integrated.begin(), integrated.end()) ||
      std::adjacent_find(integrated.begin(), integrated.end()) != integrated.end() ||
      std::any_of(integrated.begin(), integrated.end(), [W](Index i) { return i < 0 || i >= W; })) {
    throw Error(ErrorKind::kInvalidInput, "posterior 'integrated' must list distinct weight indices in [0, " +
                                              std::to_string(W) + ") in increasing order");
  }
  Eigen::MatrixXd L = read_packed_lower(j, static_cast<Index>(integrated.size()));
  return std::make_shared<LastLayerPrecision>(W, std::move(integrated), std::move(L), log_det);
}

LaplaceApproximation last_layer_laplace(const Posterior& posterior, const Eigen::VectorXd& w) {
  std::vector<Index> integrated = output_layer_indices(posterior.network());
  const auto p = static_cast<Index>(integrated.size());
  const Index first = integrated.front();  // contiguous: the tail of θ
  // H_LL's lower triangle, packed column by column, summed over the blocks of rows.
  const Eigen::VectorXd packed =
      sum_over_row_blocks(posterior, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
        Eigen::MatrixXd H = Eigen::MatrixXd::Zero(p, p);
        for_each_output_layer_jacobian(posterior, w, X, Y, p, [&](const Eigen::MatrixXd& Z) {
          H.selfadjointView<Eigen::Lower>().rankUpdate(Z.transpose());
        });
        pack_lower(H, out);
      });
  Eigen::MatrixXd A = symmetric_from_packed_lower(packed, p);
  A.diagonal() += posterior.prior().precision_diagonal().segment(first, p);
  Eigen::LLT<Eigen::MatrixXd> llt(A);
  if (llt.info() != Eigen::Success) {
    throw Error(ErrorKind::kNumerical, "last-layer Laplace: A = H_LL + prior precision is not positive definite");
  }
  Eigen::MatrixXd L = llt.matrixL();
  const double log_det = 2.0 * L.diagonal().array().log().sum();
  return {
      .mean = w,
      .precision = std::make_shared<LastLayerPrecision>(posterior.dim(), std::move(integrated), std::move(L), log_det)};
}

}  // namespace occam::internal

// jacobian_blocks.cc — the weighted Jacobian Λ^½J of the data for the structured curvatures, a
// block of rows at a time, and the sums of per-block curvature terms over the blocks: memory
// (rows·K) × W per block instead of W × W, and sums with the same bits however the rows are spread
// over processes and threads (row_sums.h).
#include <algorithm>

#include "inference/curvature/curvature_kernels.h"
#include "occam/status.h"
#include "inference/laplace/structured/structured.h"

namespace occam::internal {
namespace {

constexpr Index kBlockDoubles = Index{1} << 22;  // 32 MB of Jacobian at once

void require_gauss_newton_root(bool ok) {
  if (!ok) {
    throw Error(ErrorKind::kNumerical,
                "structured curvature: an output Hessian Λ_n is not positive semi-definite (it needs Λ^½)");
  }
}

}  // namespace

void for_each_weighted_jacobian(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y,
                                const std::function<void(const Eigen::MatrixXd& Z)>& visit) {
  const Index K = posterior.network().num_outputs();
  const Index block = std::clamp<Index>(kBlockDoubles / std::max<Index>(1, K * posterior.dim()), 1, 2048);
  Eigen::MatrixXd F, Z;
  OutputDerivatives d;
  for (Index start = 0; start < X.rows(); start += block) {
    const Index rows = std::min(block, X.rows() - start);
    const Eigen::MatrixXd Xs = X.middleRows(start, rows), Ys = Y.middleRows(start, rows);
    posterior.network().forward(w, Xs, &F);
    posterior.likelihood().neg_log_derivatives(F, Ys, &d);
    posterior.network().jacobian(w, Xs, &Z);
    require_gauss_newton_root(weight_jacobian_rows(d.hessian, rows, K, &Z));
    if (!Z.allFinite()) throw Error(ErrorKind::kNumerical, "structured curvature: the Jacobian is not finite at w");
    visit(Z);
  }
}

std::vector<DenseLayer> unit_major_layers(const Network& network) {
  std::vector<DenseLayer> layers = network.dense_layers();
  const bool indexed =
      std::all_of(layers.begin(), layers.end(), [](const DenseLayer& l) { return l.unit_major && l.has_biases(); });
  return indexed ? layers : std::vector<DenseLayer>{};
}

void weighted_layer_gradients(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                              const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, LayerGradients* out) {
  const Network& net = posterior.network();
  bool psd = true;
  net.layer_gradients(w, X, output_hessian_root_seeds(posterior.likelihood(), Y, &psd), out);
  require_gauss_newton_root(psd);
  for (const Eigen::MatrixXd& delta : out->deltas) {
    if (!delta.allFinite()) throw Error(ErrorKind::kNumerical, "structured curvature: the Jacobian is not finite at w");
  }
}

// diag(H) = Σ_n diag(J_nᵀΛ_nJ_n). For unit-major layers with biases, from the layers' gradients:
// at layer l's weight (i, j), Σ_rows δ_i² a_j² = ((δ∘δ)ᵀ(a∘a))_ij, one product per output mixture
// k; at its bias Σ_rows δ_i². Otherwise the column sums of Z∘Z.
Eigen::VectorXd gauss_newton_diagonal(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w) {
  const Index W = posterior.dim();
  const std::vector<DenseLayer> layers = unit_major_layers(posterior.network());
  if (layers.empty()) {
    return sum_over_row_blocks(
        posterior, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
          out->setZero(W);
          for_each_weighted_jacobian(posterior, w, X, Y,
                                     [&](const Eigen::MatrixXd& Z) { *out += Z.colwise().squaredNorm().transpose(); });
        });
  }
  const Index K = posterior.network().num_outputs();
  return sum_over_row_blocks(posterior, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
    out->setZero(W);
    LayerGradients g;
    weighted_layer_gradients(posterior, w, X, Y, &g);
    const Index rows = X.rows();
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const Index in = layers[l].in, n = layers[l].out;
      const Eigen::MatrixXd a2 = g.inputs[l].array().square().matrix();
      const Eigen::MatrixXd d2 = g.deltas[l].array().square().matrix();
      Eigen::Map<Eigen::MatrixXd> weights(out->data() + layers[l].weight_offset, n, in);  // unit-major: n × in
      for (Index k = 0; k < K; ++k) weights.noalias() += d2.middleRows(k * rows, rows).transpose() * a2;
      out->segment(layers[l].bias_offset, n) = d2.colwise().sum().transpose();
    }
  });
}

}  // namespace occam::internal

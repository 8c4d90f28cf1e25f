// last_layer.cc — the last-layer Laplace approximation: the full Gauss–Newton block of the output
// layer's weights and biases, H_LL = Σ_n J_n,Lᵀ Λ_n J_n,L, every other weight held at w_MAP.
// Given the features of the last hidden layer the network is a GLM in the output layer, and for a
// network with no hidden layer (or a Linear) this is the full Laplace approximation.
#include <Eigen/Cholesky>
#include <numeric>

#include "linalg.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/status.h"
#include "structured/structured.h"

namespace occam::internal {

std::vector<Index> output_layer_indices(const Network& network) {
  Index first = 0;
  if (const auto* mlp = dynamic_cast<const Mlp*>(&network)) {
    // θ is laid out layer by layer, W_l then b_l (mlp.h): the output layer is its tail.
    const std::vector<Index>& sizes = mlp->layer_sizes();
    const Index K = sizes.back(), inputs = sizes[sizes.size() - 2];
    first = network.num_params() - (K * inputs + K);
  } else if (dynamic_cast<const Linear*>(&network) == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "hessian_structure last-layer needs an mlp or a linear model, not " +
                                                 network.describe());
  }
  std::vector<Index> indices(static_cast<std::size_t>(network.num_params() - first));
  std::iota(indices.begin(), indices.end(), first);
  return indices;
}

LaplaceApproximation last_layer_laplace(const Posterior& posterior, const Eigen::VectorXd& w) {
  LaplaceApproximation q;
  q.mean = w;
  q.structure = {HessianStructureKind::kLastLayer};
  q.integrated = output_layer_indices(posterior.network());
  const auto p = static_cast<Index>(q.integrated.size());
  const Index first = q.integrated.front();  // contiguous: the tail of θ
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(p, p);
  for_each_weighted_jacobian_block(posterior, w, [&](const Eigen::MatrixXd& Z) {
    A.selfadjointView<Eigen::Lower>().rankUpdate(Z.middleCols(first, p).transpose());
  });
  A.diagonal() += posterior.prior().precision_diagonal().segment(first, p);
  Eigen::LLT<Eigen::MatrixXd> llt(A);
  if (llt.info() != Eigen::Success) {
    throw Error(ErrorKind::kNumerical, "last-layer Laplace: A = H_LL + prior precision is not positive definite");
  }
  q.precision_cholesky = llt.matrixL();
  q.log_det_precision = 2.0 * q.precision_cholesky.diagonal().array().log().sum();
  return q;
}

}  // namespace occam::internal

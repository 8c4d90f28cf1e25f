// jacobian_blocks.cc — the weighted Jacobian Λ^½J of the data, a block of rows at a time, for the
// structured curvatures: memory (rows·K) × W per block instead of W × W.
#include <algorithm>

#include "curvature_kernels.h"
#include "occam/status.h"
#include "structured/structured.h"

namespace occam::internal {

void for_each_weighted_jacobian_block(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                      const std::function<void(const Eigen::MatrixXd& Z)>& visit) {
  posterior.require_one_process("a structured curvature");
  constexpr Index kBlockDoubles = Index{1} << 22;  // 32 MB of Jacobian at once
  const Index m = posterior.num_data();
  const Index K = posterior.network().num_outputs();
  const Index W = posterior.dim();
  const Index block = std::clamp<Index>(kBlockDoubles / std::max<Index>(1, K * W), 1, 2048);
  Eigen::MatrixXd Z;
  for (Index start = 0; start < m; start += block) {
    const Index rows = std::min(block, m - start);
    if (!weighted_jacobian(posterior, w, start, rows, &Z)) {
      throw Error(ErrorKind::kNumerical,
                  "structured curvature: an output Hessian Λ_n is not positive semi-definite (it needs Λ^½)");
    }
    if (!Z.allFinite()) throw Error(ErrorKind::kNumerical, "structured curvature: the Jacobian is not finite at w");
    visit(Z);
  }
}

Eigen::VectorXd gauss_newton_diagonal(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w) {
  Eigen::VectorXd diagonal = Eigen::VectorXd::Zero(posterior.dim());
  for_each_weighted_jacobian_block(posterior, w,
                                   [&](const Eigen::MatrixXd& Z) { diagonal += Z.colwise().squaredNorm().transpose(); });
  return diagonal;
}

}  // namespace occam::internal

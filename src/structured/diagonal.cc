// diagonal.cc — the diagonal Laplace approximation A = diag(H) + P: every weight's curvature kept,
// every correlation between weights dropped. log|A| = Σ_i log a_i, (A⁻¹)_ii = 1/a_i.
#include <cmath>

#include "occam/status.h"
#include "structured/structured.h"

namespace occam::internal {

LaplaceApproximation diagonal_laplace(const Posterior& posterior, const Eigen::VectorXd& w) {
  LaplaceApproximation q;
  q.mean = w;
  q.structure = {HessianStructureKind::kDiagonal};
  q.diagonal_precision = gauss_newton_diagonal(posterior, w) + posterior.prior().precision_diagonal();
  if (!(q.diagonal_precision.array() > 0.0).all() || !q.diagonal_precision.allFinite()) {
    throw Error(ErrorKind::kNumerical, "diagonal Laplace: a diagonal entry of A = diag(H) + prior precision is not "
                                       "positive and finite");
  }
  q.log_det_precision = q.diagonal_precision.array().log().sum();
  return q;
}

}  // namespace occam::internal

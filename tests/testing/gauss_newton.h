// gauss_newton.h — the posterior precision A = scale·JᵀΛJ + P + μI formed in full from the full
// Jacobian, the reference the curvature code (dense, Woodbury, structured) is checked against.
#pragma once

#include <Eigen/Core>

#include "occam/posterior.h"

namespace occam::testing {

// H = Σ_{k,l} J_kᵀ diag(Λ_kl) J_l from the output-major Jacobian, scaled, plus the prior and μI.
inline Eigen::MatrixXd reference_precision(const Posterior& post, const Eigen::VectorXd& w, double scale = 1.0,
                                           double mu = 0.0) {
  const Eigen::Index m = post.num_data(), K = post.network().num_outputs(), W = post.dim();
  Eigen::MatrixXd F, J;
  OutputDerivatives d;
  post.network().forward(w, post.X(), &F);
  post.likelihood().neg_log_derivatives(F, post.Y(), &d);
  post.network().jacobian(w, post.X(), &J);
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(W, W);
  for (Eigen::Index k = 0; k < K; ++k)
    for (Eigen::Index l = 0; l < K; ++l)
      A += J.middleRows(k * m, m).transpose() * d.hessian.col(k + l * K).asDiagonal() * J.middleRows(l * m, m);
  A *= scale;
  post.prior().add_precision_to(&A);
  A.diagonal().array() += mu;
  return A;
}

}  // namespace occam::testing

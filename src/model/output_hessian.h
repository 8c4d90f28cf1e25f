// output_hessian.h (internal) — products with the per-example output matrices Λ_n that
// Likelihood::neg_log_derivatives lays out as rows of an m × K² matrix (column k + l·K holds
// Λ_n,kl): the Gauss–Newton and exact Hessian-vector products both need (ΛV)_n = Λ_n v_n.
#pragma once

#include <Eigen/Core>

namespace occam::internal {

// (ΛV)_n = Λ_n v_n for V (rows × K) and Λ (rows × K²).
inline Eigen::MatrixXd apply_output_hessian(const Eigen::MatrixXd& lambda, const Eigen::MatrixXd& V) {
  const Eigen::Index K = V.cols();
  Eigen::MatrixXd out = Eigen::MatrixXd::Zero(V.rows(), K);
  for (Eigen::Index k = 0; k < K; ++k) {
    for (Eigen::Index l = 0; l < K; ++l) out.col(k).array() += lambda.col(k + l * K).array() * V.col(l).array();
  }
  return out;
}

}  // namespace occam::internal

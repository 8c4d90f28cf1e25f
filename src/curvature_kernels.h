// curvature_kernels.h (internal) — the dense building blocks of the curvature code: weighted
// Jacobians, the Gauss–Newton matrix by blocked symmetric rank-k updates, the capacitance matrix
// of the Woodbury form (the dense linear algebra itself is in linalg.h).
//
// Every routine here writes into storage its caller owns, so that an optimiser that calls it
// every iteration allocates nothing after the first.
#pragma once

#include <Eigen/Core>

#include "occam/posterior.h"

namespace occam::internal {

// The output-major Jacobian J ((rows·K) × W) and the derivatives of −log p at rows
// [start, start + rows) of the posterior's data, at w.
void jacobian_block(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index start, Index rows,
                    Eigen::MatrixXd* J, OutputDerivatives* d);

// The square roots R_n of the output Hessians Λ_n (R_nᵀR_n = Λ_n; diagonal Λ_n: R_n = Λ_n^½; otherwise
// diag(√e)Qᵀ from Λ_n = Q diag(e) Qᵀ) into *R, rows × K², R(n, k + l·K) = R_n(k, l). Returns false
// when some Λ_n is not positive semi-definite.
bool output_hessian_root(const Eigen::MatrixXd& lambda, Index rows, Index K, Eigen::MatrixXd* R);

// Replaces J by Λ^½J: row block k of example n becomes Σ_l R_n(k, l)·J_l(n, ·) with R_nᵀR_n = Λ_n,
// so that (Λ^½J)ᵀ(Λ^½J) = JᵀΛJ. Returns false, leaving J as it was, when some Λ_n is not positive
// semi-definite (it has no real square root).
bool weight_jacobian_rows(const Eigen::MatrixXd& lambda, Index rows, Index K, Eigen::MatrixXd* J);

// Z = Λ^½J for rows [start, start + rows): false when some Λ_n is not positive semi-definite.
bool weighted_jacobian(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index start,
                       Index rows, Eigen::MatrixXd* Z);

// The upper triangle (diagonal included) of H = JᵀΛJ over all the data into *M (W × W, resized),
// block_rows examples at a time: one symmetric rank-k update per block. The strictly lower
// triangle is left unspecified.
void accumulate_gauss_newton_upper(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                   Index block_rows, Eigen::MatrixXd* M);

// The lower triangle of K = I + UUᵀ (n × n for U n × W) into *K, whose strictly upper triangle is
// left unspecified.
void capacitance_lower(const Eigen::MatrixXd& U, Eigen::MatrixXd* K);

}  // namespace occam::internal

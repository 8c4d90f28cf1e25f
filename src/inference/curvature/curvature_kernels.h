// curvature_kernels.h (internal) — the dense building blocks of the curvature code: weighted
// Jacobians, the Gauss–Newton matrix by blocked symmetric rank-k updates, the capacitance matrix
// of the Woodbury form (the dense linear algebra itself is in linalg.h).
//
// Every routine here writes into storage its caller owns, so that an optimiser that calls it
// every iteration allocates nothing after the first.
#pragma once

#include <Eigen/Core>
#include <vector>

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

// The seeds of Network::layer_gradients whose backward pass gives the layers' part of Λ^½J: at the
// outputs F of its forward pass, the roots R_n of the likelihood's Λ_n at the targets Y
// (output_hessian_root). Where some Λ_n is not positive semi-definite the seeds are zero and *psd
// becomes false. `likelihood`, Y and *psd must outlive the call.
Network::SeedsAt output_hessian_root_seeds(const Likelihood& likelihood, const Eigen::MatrixXd& Y, bool* psd);

// Replaces J by Λ^½J: row block k of example n becomes Σ_l R_n(k, l)·J_l(n, ·) with R_nᵀR_n = Λ_n,
// so that (Λ^½J)ᵀ(Λ^½J) = JᵀΛJ. Returns false, leaving J as it was, when some Λ_n is not positive
// semi-definite (it has no real square root).
bool weight_jacobian_rows(const Eigen::MatrixXd& lambda, Index rows, Index K, Eigen::MatrixXd* J);

// Z = Λ^½J for rows [start, start + rows): false when some Λ_n is not positive semi-definite.
bool weighted_jacobian(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index start, Index rows,
                       Eigen::MatrixXd* Z);

// The upper triangle (diagonal included) of H = JᵀΛJ over all the data into *M (W × W, resized),
// block_rows examples at a time. The strictly lower triangle is left unspecified. With a layered
// network (Mlp, Linear) and from_layers, from the layers' factors (accumulate_gauss_newton_from_layers)
// where gauss_newton_from_layers_pays; otherwise one symmetric rank-k update of Λ^½J per block.
void accumulate_gauss_newton_upper(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                   Index block_rows, Eigen::MatrixXd* M, bool from_layers = true);

// *M += Σ_n Σ_k g_nk ∇²f_k(x_n) (both triangles; *M W × W), the exact Hessian's second-order term
// (g = ∂(−log p)/∂f; Bishop 1995, §4.10), block_rows examples at a time: what
// Posterior::data_hessian adds to JᵀΛJ for HessianKind::kExact.
void add_output_curvature(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w, Index block_rows,
                          Eigen::MatrixXd* M);

// The same from the layers' factors (gauss_newton_layers.cc): H_ll' = Σ_n B_n ⊗ ã_n ã'_nᵀ per pair
// of layers, each layer's own block from its out(out+1)/2 · in(in+1)/2 distinct values: at most
// m·W²/2 multiply-adds against m·K·W²/2 for the rank-k update, and about half that where one
// layer holds most of the weights. False, with *M unspecified, where the network is not layered or
// some Λ_n is not positive semi-definite.
bool accumulate_gauss_newton_from_layers(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                         Index block_rows, Eigen::MatrixXd* M);
// Whether the layers' products are the faster way: with several outputs always (K times fewer
// flops); with one, for a network of one hidden layer with 8 or more inputs (gauss_newton_layers.cc
// says what was measured). False for a network that is not layered.
bool gauss_newton_from_layers_pays(const Posterior& posterior);

// What the exact gradient of the Laplace log-evidence needs of A⁻¹ (evidence/total_gradient.cc;
// the same blocks as WeightedJacobian::inverse_jacobian_blocks) in the dense form, from the lower
// Cholesky factor of A (the lower triangle of `factor`) and the layers' factors of J, block_rows
// examples at a time:
//   C (m × K²):   C(n, k + l·K) = (J A⁻¹ Jᵀ)_(k,n),(l,n),
//   E_h (m × K²): E_h(n, a + b·K) = (J A⁻¹ dJ_hᵀ)_(b,n),(a,n), dJ_h the derivative of J along u_h by
//                 a central difference of step h_base/‖u_h‖∞.
// With rows δ ⊗ ã of J over a layer's weights, (J A⁻¹ Jᵀ)_ρρ' = Σ_ij δ_ρ(i) δ'_ρ'(j) ã_nᵀ A⁻¹_ij ã'_n:
// A⁻¹ once (2W³/3), then m·W² multiply-adds for the ã_nᵀ A⁻¹_ij ã'_n of every unit pair, where
// A⁻¹Jᵀ by triangular solves costs 2·m·K·W². False, computing nothing, for K = 1 (no gain) or a
// network that is not layered.
bool dense_inverse_jacobian_blocks(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                   const Eigen::MatrixXd& factor, const Eigen::MatrixXd& U, double h_base,
                                   Index block_rows, Eigen::MatrixXd* C, std::vector<Eigen::MatrixXd>* E);

// The lower triangle of K = I + UUᵀ (n × n for U n × W) into *K, whose strictly upper triangle is
// left unspecified.
void capacitance_lower(const Eigen::MatrixXd& U, Eigen::MatrixXd* K);

}  // namespace occam::internal

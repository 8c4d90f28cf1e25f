// structured.h (internal) — Laplace approximations whose posterior precision A = H + P keeps only a
// structured part of the Gauss–Newton matrix H = Σ_n J_nᵀ Λ_n J_n, so that no W × W matrix is
// ever formed (laplace.h, HessianStructure; docs/scale.md). One file per structure.
#pragma once

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "occam/laplace.h"
#include "occam/network.h"
#include "occam/posterior.h"
#include "core/row_sums.h"

namespace occam::internal {

// Calls visit(Z) for consecutive chunks of the rows (X, Y) with their weighted Jacobian Z = Λ^½J
// ((rows·K) × W, output-major), so that Σ ZᵀZ = H over the rows; a chunk's Z stays below about 32 MB
// whatever W is. Throws Error(kNumerical) when some Λ_n is not positive semi-definite or the
// Jacobian is not finite.
void for_each_weighted_jacobian(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y,
                                const std::function<void(const Eigen::MatrixXd& Z)>& visit);

// The network's dense layers when every one is unit-major and has biases (an Mlp's layout, which
// the layer-wise formulas of KFAC, the diagonal and the last layer index); empty otherwise, and
// those structures then work from the Jacobian or refuse the network.
std::vector<DenseLayer> unit_major_layers(const Network& network);

// For a network with dense layers, the layers' inputs and the pre-activation gradients of the
// rows of Λ^½J at rows (X, Y) (Network::layer_gradients with seeds R_n = Λ_n^½): what the
// layer-wise structures need, without the (rows·K) × W Jacobian. Throws as above.
void weighted_layer_gradients(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                              const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, LayerGradients* out);

// diag(H) = Σ_n diag(J_nᵀΛ_nJ_n): the column sums of Z∘Z, exact (no Hutchinson estimate).
Eigen::VectorXd gauss_newton_diagonal(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w);

// The weights of the network's output layer (its weights and biases), in increasing order: the
// tail of θ for an Mlp (all of θ without a hidden layer), all of θ for a Linear. Throws
// Error(kInvalidArgument) for a network whose output layer is not known.
std::vector<Index> output_layer_indices(const Network& network);

// KFAC's factors of one Mlp layer (kronecker.cc): Q = Σ_n a_n a_nᵀ over the layer's inputs and
// G = (1/m) Σ_n Σ_k g_nk g_nkᵀ over the pre-activation gradients of the rows of Λ^½J.
struct KroneckerFactors {
  Eigen::MatrixXd Q, G;
  Index weight_offset = 0, bias_offset = 0;
};
std::vector<KroneckerFactors> kronecker_factors(const Posterior& posterior, const Eigen::VectorXd& w);

// A = diag(H) + P (diagonal.cc).
LaplaceApproximation diagonal_laplace(const Posterior& posterior, const Eigen::VectorXd& w);
// A = H_LL + P_LL over output_layer_indices (last_layer.cc).
LaplaceApproximation last_layer_laplace(const Posterior& posterior, const Eigen::VectorXd& w);
// Per layer Q ⊗ G + α_W I and m·G + α_b I (kronecker.cc).
LaplaceApproximation kronecker_laplace(const Posterior& posterior, const Eigen::VectorXd& w);
// A = D + V diag(s) Vᵀ from the top `rank` eigenpairs of H by Lanczos (lowrank.cc).
LaplaceApproximation lowrank_laplace(const Posterior& posterior, const Eigen::VectorXd& w, Index rank);

}  // namespace occam::internal

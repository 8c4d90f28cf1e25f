// laplace.h — the Laplace approximation N(w_MAP, A⁻¹) and the log-evidence it gives.
//
// A = −∇∇ log p(w, D) at w_MAP = H + Σ_g α_g P_g, with H the data Hessian (Gauss–Newton or exact).
// A is kept as a factor, never inverted: determinants from the factor, variances by solves. The
// factor has one of two forms (CurvatureForm), whichever is smaller to hold, when H is used in full
// (HessianStructure kFull):
//   dense     A = LLᵀ, L lower triangular (W × W);
//   woodbury  A = D^½ (I + UᵀU) D^½ with D diagonal and U = Λ^½ J D^-½ (n × W, n = m·K rows of
//             the weighted Jacobian), for n well below W with a group-diagonal prior; with
//             UUᵀ = Q diag(s) Qᵀ (n × n), every quantity below costs O(nW) per vector.
//
// A structured approximation of the Gauss–Newton H (HessianStructure; docs/scale.md) never forms
// a W × W matrix:
//   diagonal    A = diag(H) + P;
//   last-layer  A = H_LL + P_LL over the output layer's weights and biases (L), every other weight
//               held at w_MAP with zero posterior variance;
//   kron        per layer of an Mlp, A_W = Q ⊗ G + α_W I over its weights and A_b = m·G + α_b I over
//               its biases (KFAC; Martens & Grosse 2015), each from its factors' eigendecompositions;
//   lowrank:K   A = D + V diag(s) Vᵀ with (s, V) the top K eigenpairs of H found by Lanczos with full
//               reorthogonalisation from Gauss–Newton-vector products, and D = P + max(0, diag(H) −
//               diag(V diag(s) Vᵀ)), so that diag(A) = diag(H) + P exactly (wherever the remainder is
//               not clipped at 0); held in the Woodbury form above with U = diag(s)^½ Vᵀ D^-½ (K × W);
// with P = Σ_g α_g P_g group-diagonal.
//
//   occam::LaplaceApproximation q = occam::laplace(posterior, w_map, occam::HessianKind::kGgn);
//   double log_z = occam::log_evidence(posterior, q);
#pragma once

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "occam/posterior.h"
#include "occam/rng.h"

namespace occam {

// Which part of the Gauss–Newton matrix H the posterior precision A = H + P keeps.
enum class HessianStructureKind {
  kFull,       // all of H (dense, or Woodbury for n < W): W × W
  kDiagonal,   // diag(H), exact per weight from the per-row Jacobians: W numbers
  kLastLayer,  // the output layer's block of H, the other weights fixed at w_MAP: (K·H_L + K)² numbers
  kKronecker,  // KFAC: per layer Q ⊗ G for the weights and m·G for the biases: Σ_l (in_l² + 2·out_l²) numbers
  kLowRank,    // the top `rank` eigenpairs of H plus the rest of diag(H): (K + 1)·W numbers kept, and
               // the Lanczos basis, at most min(W, 2K + 100) vectors of W, while they are found
};

struct HessianStructure {
  HessianStructureKind kind = HessianStructureKind::kFull;
  Eigen::Index rank = 0;  // kLowRank: K, the eigenpairs of H kept (1 ≤ K ≤ W); 0 for the others
  bool full() const { return kind == HessianStructureKind::kFull; }
  bool operator==(const HessianStructure&) const = default;
};
// "full" | "diag" | "last-layer" | "kron" | "lowrank:K" (K a positive integer); throws
// Error(kInvalidArgument) naming the accepted values.
HessianStructure parse_hessian_structure(std::string_view text);
std::string to_string(const HessianStructure& structure);
// Throws Error(kInvalidArgument) if `structure` cannot be used with num_weights weights (lowrank:K
// with K above W).
void check_hessian_structure(const HessianStructure& structure, Eigen::Index num_weights);

// How the Lanczos iteration of a lowrank:K approximation ended: the steps taken (Gauss–Newton-
// vector products) and the largest residual ‖Hv − θv‖ of the K Ritz pairs kept, relative to the
// largest Ritz value θ_1 (from the three-term recurrence: β_j |e_jᵀy|). converged: every one of
// them at most 1e-8 θ_1, or the Krylov space became invariant (then the residuals are zero).
struct LanczosSummary {
  int steps = 0;
  double max_relative_residual = 0.0;
  bool converged = false;
};
// One Kronecker-factored block of A over θ[offset, offset + rows·cols), the column-major
// rows × cols matrix of a layer's weights (cols = 1 for its biases): A_block = Q ⊗ G + αI with
// Q = U_q diag(λ_q) U_qᵀ (cols × cols) and G = U_g diag(λ_g) U_gᵀ (rows × rows), so that its
// eigenvalues are λ_q,j λ_g,i + α (Immer et al. 2021).
struct KroneckerBlock {
  Eigen::Index offset = 0, rows = 0, cols = 0;
  Eigen::MatrixXd input_vectors, output_vectors;  // U_q, U_g
  Eigen::VectorXd input_values, output_values;    // λ_q, λ_g ≥ 0
  double prior_precision = 0.0;                   // α of the block
};

struct LaplaceApproximation {
  Eigen::VectorXd mean;                // w_MAP
  Eigen::MatrixXd precision_cholesky;  // dense form: L, lower triangular, A = LLᵀ (empty otherwise)
  // Woodbury form: diag(D) (W), U (n × W), and the eigendecomposition UUᵀ = Q diag(s) Qᵀ.
  Eigen::VectorXd woodbury_diagonal;
  Eigen::MatrixXd woodbury_root;
  Eigen::MatrixXd capacitance_eigenvectors;  // Q, n × n
  Eigen::VectorXd capacitance_eigenvalues;   // s ≥ 0
  double log_det_precision = 0.0;      // log |A| = 2 Σ log L_ii, or Σ log d_i + Σ log(1 + s_j)
  int clipped_eigenvalues = 0;         // exact Hessian only: negative eigenvalues of H set to 0
  HessianStructure structure;          // how H was approximated
  // kDiagonal: A's diagonal (W); A⁻¹ = diag(1/a).
  Eigen::VectorXd diagonal_precision;
  // kLastLayer: the weights A covers, in order (p of them; precision_cholesky is then p × p). The
  // others are held at the mean: their posterior variance is zero.
  std::vector<Eigen::Index> integrated;
  // kKronecker: the blocks, which partition θ.
  std::vector<KroneckerBlock> kronecker;
  // kLowRank: the Woodbury form above holds A; this is how its eigenpairs were found.
  LanczosSummary lanczos;

  // The Woodbury form from D's diagonal and U (computes the eigendecomposition and log|A|).
  static LaplaceApproximation from_woodbury(Eigen::VectorXd mean, Eigen::VectorXd diagonal, Eigen::MatrixXd root);

  CurvatureForm form() const { return woodbury_root.size() > 0 ? CurvatureForm::kWoodbury : CurvatureForm::kDense; }
  Eigen::Index dim() const { return mean.size(); }
  // The weights integrated over (W, or p for kLastLayer): the dimension of the Gaussian whose
  // normalising constant the log-evidence counts.
  Eigen::Index integrated_dim() const;
  // diag(A⁻¹).
  Eigen::VectorXd covariance_diagonal() const;
  // diag(A).
  Eigen::VectorXd precision_diagonal() const;
  // A⁻¹ in full (W × W).
  Eigen::MatrixXd covariance() const;
  // SᵀG for a factor A⁻¹ = SSᵀ (G is W × k): Var(gᵀw) = ‖Sᵀg‖². Dense: S = L⁻ᵀ; Woodbury: the
  // symmetric S = D^-½ (I + UᵀU)^-½, applied as D^-½(I + UᵀQ diag(f(s)) QᵀU) with
  // f(s) = ((1 + s)^-½ − 1)/s; diagonal: S = diag(a)^-½; last-layer: S = E L⁻ᵀ with E the W × p
  // embedding of the integrated weights, so that SᵀG = L⁻¹EᵀG has p rows; kron: per block
  // S = (U_q ⊗ U_g) diag(λ_q,j λ_g,i + α)^-½.
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const;
  // gᵀ A⁻¹ g for each column g of G (W × n): the linearised predictive variance of f.
  Eigen::VectorXd quadratic_form_inverse(const Eigen::MatrixXd& G) const;
  // w ~ N(mean, A⁻¹), i.e. mean + Sz with z ~ N(0, I) (W draws in either form).
  Eigen::VectorXd sample(Rng& rng) const;

  // Mean and the factor: the packed lower triangle of L, or D, U, Q and s (every number written
  // in full, so a loaded approximation predicts bit-identically).
  nlohmann::json to_json() const;
  static LaplaceApproximation from_json(const nlohmann::json& j);
};

// The data Hessian H = −∇∇ log p(D|w) at w, made positive semi-definite for kExact by setting
// its negative eigenvalues to zero; *clipped receives how many were (may be null).
Eigen::MatrixXd positive_data_hessian(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind,
                                      int* clipped);

// The Laplace approximation at w (normally w_MAP). Throws Error(kNumerical) if A is not positive
// definite.
LaplaceApproximation laplace(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind);
// The same with H approximated by `structure` (kFull: the function above). The structured forms
// need kind == kGgn, a group-diagonal prior and, for kLastLayer, a network whose output layer is
// known (Mlp, Linear), for kLowRank rank ≤ W; each throws Error(kInvalidArgument) naming what is
// missing.
LaplaceApproximation laplace(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind,
                             const HessianStructure& structure);
// The same from a data Hessian already computed (it must be positive semi-definite).
LaplaceApproximation laplace_from_hessian(const Posterior& posterior, const Eigen::VectorXd& w,
                                          const Eigen::MatrixXd& data_hessian);

// log p(D | α, β) ≈ log p(D | w_MAP) + log p(w_MAP | α) + (W/2) log 2π − ½ log|A|
// (MacKay 1992a, eq. 10; for a Gaussian likelihood this is
//  Σ_g (W_g/2) log α_g + (m/2) log β − (m/2) log 2π − ½ log|A| − Σ_g α_g E_W,g − β E_D).
// With a structure, log|A| is the structure's, and for kLastLayer W is p: the Laplace evidence of
// the output layer with the other weights w_H held at the mode, log p(D, w_H | α, β) with the
// output layer integrated out — their prior term log p(w_H | α) stays in (docs/evidence.md).
double log_evidence(const Posterior& posterior, const LaplaceApproximation& q);

// The hidden-unit symmetry term log(H!) + H log 2 summed over hidden layers (the sign-flip term
// only for odd activations): a network's evidence counts each of its equivalent modes
// (MacKay 1992b, §4).
double symmetry_log_factor(const Network& network);

}  // namespace occam

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
// with P = Σ_g α_g P_g group-diagonal. Each structure and form is a type of PrecisionFactor
// (below), owning its factor and algebra; LaplaceApproximation is the mode and one of them.
//
//   occam::LaplaceApproximation q = occam::laplace(posterior, w_map, occam::HessianKind::kGgn);
//   double log_z = occam::log_evidence(posterior, q);
#pragma once

#include <Eigen/Core>
#include <memory>
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

// The posterior precision A = H + P as one structure keeps it: one type per structure and form
// (src/inference/laplace/structured/: dense, woodbury — full and lowrank:K —, diagonal, last_layer,
// kronecker), each owning its factor, its log-determinant, the functional variance gᵀA⁻¹g, its draws and its JSON.
// Immutable once made; a LaplaceApproximation shares it between copies.
class PrecisionFactor {
 public:
  explicit PrecisionFactor(double log_det) : log_det_(log_det) {}
  virtual ~PrecisionFactor() = default;

  virtual HessianStructure structure() const = 0;
  // kWoodbury for the Woodbury forms (full with n < W, lowrank:K); kDense for every other.
  virtual CurvatureForm form() const { return CurvatureForm::kDense; }
  virtual Eigen::Index dim() const = 0;
  // The weights integrated over (W, or p for last-layer): the dimension of the Gaussian whose
  // normalising constant the log-evidence counts.
  virtual Eigen::Index integrated_dim() const { return dim(); }
  // log |A| (last-layer: of the p × p block).
  double log_det() const { return log_det_; }
  // diag(A⁻¹) and diag(A).
  virtual Eigen::VectorXd covariance_diagonal() const = 0;
  virtual Eigen::VectorXd precision_diagonal() const = 0;
  // SᵀG for a factor A⁻¹ = SSᵀ (G is W × k): Var(gᵀw) = ‖Sᵀg‖² (last-layer: p rows).
  virtual Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const = 0;
  // A⁻¹R = S(SᵀR) (W × k).
  virtual Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const = 0;
  // Sz with z ~ N(0, I) from rng: w − w_MAP of a draw from N(w_MAP, A⁻¹).
  virtual Eigen::VectorXd draw(Rng& rng) const = 0;
  // The factor's fields of the model file's "posterior" object ("form" and its arrays).
  virtual void write(nlohmann::json* j) const = 0;

 private:
  double log_det_ = 0.0;
};

// N(w_MAP, A⁻¹): the mode and A's factor in one of the structures' forms (laplace.h's header comment).
struct LaplaceApproximation {
  Eigen::VectorXd mean;                              // w_MAP
  std::shared_ptr<const PrecisionFactor> precision;  // A
  int clipped_eigenvalues = 0;                       // exact Hessian only: negative eigenvalues of H set to 0

  // How H was approximated, and the factor's form.
  HessianStructure structure() const { return factor().structure(); }
  CurvatureForm form() const { return factor().form(); }
  // log |A| = 2 Σ log L_ii, or Σ log d_i + Σ log(1 + s_j), or the structure's.
  double log_det_precision() const { return factor().log_det(); }
  Eigen::Index dim() const { return mean.size(); }
  Eigen::Index integrated_dim() const { return factor().integrated_dim(); }
  // diag(A⁻¹).
  Eigen::VectorXd covariance_diagonal() const { return factor().covariance_diagonal(); }
  // diag(A).
  Eigen::VectorXd precision_diagonal() const { return factor().precision_diagonal(); }
  // A⁻¹ in full (W × W).
  Eigen::MatrixXd covariance() const;
  // SᵀG for a factor A⁻¹ = SSᵀ (G is W × k): Var(gᵀw) = ‖Sᵀg‖². Dense: S = L⁻ᵀ; Woodbury:
  // S = D^-½ (I + UᵀU)^-½, so Sᵀ = (I + UᵀQ diag(f(s)) QᵀU) D^-½ with f(s) = ((1 + s)^-½ − 1)/s;
  // diagonal: S = diag(a)^-½; last-layer: S = E L⁻ᵀ with E the W × p
  // embedding of the integrated weights, so that SᵀG = L⁻¹EᵀG has p rows; kron: per block
  // S = (U_q ⊗ U_g) diag(λ_q,j λ_g,i + α)^-½.
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const {
    return factor().covariance_factor_transpose(G);
  }
  // A⁻¹R.
  Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const { return factor().covariance_times(R); }
  // gᵀ A⁻¹ g for each column g of G (W × n): the linearised predictive variance of f.
  Eigen::VectorXd quadratic_form_inverse(const Eigen::MatrixXd& G) const;
  // w ~ N(mean, A⁻¹), i.e. mean + Sz with z ~ N(0, I).
  Eigen::VectorXd sample(Rng& rng) const { return mean + factor().draw(rng); }
  // The factor as its type (src/inference/laplace/structured/precision_factors.h), or null when it is another.
  template <class Factor>
  const Factor* precision_as() const {
    return dynamic_cast<const Factor*>(precision.get());
  }

  // Mean and the factor: the packed lower triangle of L, or D, U, Q and s, or the structure's
  // arrays (every number written in full, so a loaded approximation predicts bit-identically).
  nlohmann::json to_json() const;
  static LaplaceApproximation from_json(const nlohmann::json& j);

 private:
  // Throws Error(kInvalidArgument) when there is no factor (a default-constructed approximation).
  const PrecisionFactor& factor() const;
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

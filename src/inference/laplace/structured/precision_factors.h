// precision_factors.h (internal) — the factor of the posterior precision A, one type per structure
// and form (laplace.h, PrecisionFactor), each with its algebra in the file that builds it:
//   DensePrecision      full H, A = LLᵀ (W × W)                                   dense.cc
//   WoodburyPrecision   A = D^½(I + UᵀU)D^½: full H with n < W, and lowrank:K      woodbury.cc
//   DiagonalPrecision   A = diag(H) + P                                           diagonal.cc
//   LastLayerPrecision  A = H_LL + P_LL = LLᵀ over the output layer's p weights     last_layer.cc
//   KroneckerPrecision  per layer Q ⊗ G + α_W I and m·G + α_b I (KFAC)             kronecker.cc
// A model file's "posterior" object names its form; LaplaceApproximation::from_json hands the
// object to the type's read(), which checks sizes, finiteness and signs.
#pragma once

#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "occam/laplace.h"

namespace occam::internal {

// The array `name` of `from` as a rows × cols column-major matrix; throws Error(kInvalidInput)
// naming it when it has the wrong number of entries or a non-finite one.
Eigen::MatrixXd read_matrix(const nlohmann::json& from, const char* name, Index rows, Index cols);
// A matrix's entries in column-major order, for the JSON arrays.
std::vector<double> as_vector(const Eigen::Ref<const Eigen::MatrixXd>& m);
// An order-p lower-triangular factor as "precision_cholesky_lower_packed" (column by column), and
// back; read checks the count and that the diagonal is positive (dense.cc).
void write_packed_lower(const Eigen::MatrixXd& L, nlohmann::json* j);
Eigen::MatrixXd read_packed_lower(const nlohmann::json& j, Index p);

// Full H held densely: A = LLᵀ, L lower triangular, log|A| = 2 Σ log L_ii.
class DensePrecision final : public PrecisionFactor {
 public:
  DensePrecision(Eigen::MatrixXd cholesky_lower, double log_det);
  // From the "posterior" object of form "dense" over W weights.
  static std::shared_ptr<const DensePrecision> read(const nlohmann::json& j, Index W, double log_det);

  const Eigen::MatrixXd& cholesky() const { return L_; }
  HessianStructure structure() const override { return {HessianStructureKind::kFull}; }
  Index dim() const override { return L_.rows(); }
  Eigen::VectorXd covariance_diagonal() const override;
  Eigen::VectorXd precision_diagonal() const override;
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const override;
  Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const override;
  Eigen::VectorXd draw(Rng& rng) const override;
  void write(nlohmann::json* j) const override;

 private:
  Eigen::MatrixXd L_;
};

// A = D^½(I + UᵀU)D^½ with D diagonal (W) and U (n × W), UUᵀ = Q diag(s) Qᵀ: every quantity
// costs O(nW) per vector. Full H with U = Λ^½ J D^-½ (n = m·K rows), or lowrank:K with
// U = diag(s)^½ Vᵀ D^-½ and the Lanczos summary of how its eigenpairs were found.
class WoodburyPrecision final : public PrecisionFactor {
 public:
  // From D's diagonal and U: the eigendecomposition of UUᵀ and log|A| = Σ log d_i + Σ log(1 + s_j)
  // (Sylvester's determinant identity). Throws Error(kNumerical) for a non-positive or non-finite
  // d_i or a non-finite U.
  static std::shared_ptr<const WoodburyPrecision> from_root(Eigen::VectorXd diagonal, Eigen::MatrixXd root,
                                                            std::optional<LanczosSummary> lanczos = std::nullopt);
  // From the "posterior" object of form "woodbury" over W weights (structure full or lowrank:K).
  static std::shared_ptr<const WoodburyPrecision> read(const nlohmann::json& j, Index W, double log_det,
                                                       const HessianStructure& structure);

  const Eigen::VectorXd& diagonal() const { return d_; }
  const Eigen::MatrixXd& root() const { return U_; }
  // lowrank:K only: how the Lanczos iteration ended.
  const std::optional<LanczosSummary>& lanczos() const { return lanczos_; }
  HessianStructure structure() const override;
  CurvatureForm form() const override { return CurvatureForm::kWoodbury; }
  Index dim() const override { return d_.size(); }
  Eigen::VectorXd covariance_diagonal() const override;
  Eigen::VectorXd precision_diagonal() const override;
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const override;
  Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const override;
  Eigen::VectorXd draw(Rng& rng) const override;
  void write(nlohmann::json* j) const override;

 private:
  WoodburyPrecision(Eigen::VectorXd diagonal, Eigen::MatrixXd root, Eigen::MatrixXd vectors, Eigen::VectorXd values,
                    double log_det, std::optional<LanczosSummary> lanczos);
  // (I + UᵀU)^-½ X.
  Eigen::MatrixXd inverse_root_times(Eigen::MatrixXd X) const;
  Eigen::VectorXd d_;
  Eigen::MatrixXd U_;
  Eigen::MatrixXd Q_;  // eigenvectors of UUᵀ, n × n
  Eigen::VectorXd s_;  // its eigenvalues, ≥ 0
  std::optional<LanczosSummary> lanczos_;
};

// A = diag(a), a = diag(H) + P: log|A| = Σ log a_i, (A⁻¹)_ii = 1/a_i.
class DiagonalPrecision final : public PrecisionFactor {
 public:
  // Throws Error(kNumerical) when some a_i is not positive and finite.
  explicit DiagonalPrecision(Eigen::VectorXd diagonal);
  static std::shared_ptr<const DiagonalPrecision> read(const nlohmann::json& j, Index W, double log_det);

  const Eigen::VectorXd& diagonal() const { return a_; }
  HessianStructure structure() const override { return {HessianStructureKind::kDiagonal}; }
  Index dim() const override { return a_.size(); }
  Eigen::VectorXd covariance_diagonal() const override;
  Eigen::VectorXd precision_diagonal() const override { return a_; }
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const override;
  Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const override;
  Eigen::VectorXd draw(Rng& rng) const override;
  void write(nlohmann::json* j) const override;

 private:
  DiagonalPrecision(Eigen::VectorXd diagonal, double log_det);
  Eigen::VectorXd a_;
};

// A = H_LL + P_LL = LLᵀ over the output layer's p weights (`integrated`, increasing indices into θ);
// every other weight is held at w_MAP: its variance is zero and its precision +∞.
class LastLayerPrecision final : public PrecisionFactor {
 public:
  LastLayerPrecision(Index num_weights, std::vector<Index> integrated, Eigen::MatrixXd cholesky_lower, double log_det);
  static std::shared_ptr<const LastLayerPrecision> read(const nlohmann::json& j, Index W, double log_det);

  const std::vector<Index>& integrated() const { return integrated_; }
  const Eigen::MatrixXd& cholesky() const { return L_; }
  HessianStructure structure() const override { return {HessianStructureKind::kLastLayer}; }
  Index dim() const override { return W_; }
  Index integrated_dim() const override { return static_cast<Index>(integrated_.size()); }
  Eigen::VectorXd covariance_diagonal() const override;
  Eigen::VectorXd precision_diagonal() const override;
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const override;
  Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const override;
  Eigen::VectorXd draw(Rng& rng) const override;
  void write(nlohmann::json* j) const override;

 private:
  Eigen::MatrixXd integrated_rows(const Eigen::MatrixXd& G) const;  // EᵀG
  Index W_ = 0;
  std::vector<Index> integrated_;
  Eigen::MatrixXd L_;  // p × p
};

// One Kronecker-factored block of A over θ[offset, offset + rows·cols), the column-major
// rows × cols matrix of a layer's weights (cols = 1 for its biases): A_block = Q ⊗ G + αI with
// Q = U_q diag(λ_q) U_qᵀ (cols × cols) and G = U_g diag(λ_g) U_gᵀ (rows × rows), so that its
// eigenvalues are λ_q,j λ_g,i + α (Immer et al. 2021).
struct KroneckerBlock {
  Index offset = 0, rows = 0, cols = 0;
  Eigen::MatrixXd input_vectors, output_vectors;  // U_q, U_g
  Eigen::VectorXd input_values, output_values;    // λ_q, λ_g ≥ 0
  double prior_precision = 0.0;                   // α of the block
};

// KFAC: the blocks partition θ in order; log|A| = Σ_blocks Σ_ij log(λ_g,i λ_q,j + α).
class KroneckerPrecision final : public PrecisionFactor {
 public:
  // Throws Error(kNumerical) when log|A| is not finite (a zero prior precision).
  explicit KroneckerPrecision(std::vector<KroneckerBlock> blocks);
  static std::shared_ptr<const KroneckerPrecision> read(const nlohmann::json& j, Index W, double log_det);

  const std::vector<KroneckerBlock>& blocks() const { return blocks_; }
  HessianStructure structure() const override { return {HessianStructureKind::kKronecker}; }
  Index dim() const override;
  Eigen::VectorXd covariance_diagonal() const override;
  Eigen::VectorXd precision_diagonal() const override;
  Eigen::MatrixXd covariance_factor_transpose(const Eigen::MatrixXd& G) const override;
  Eigen::MatrixXd covariance_times(const Eigen::MatrixXd& R) const override;
  Eigen::VectorXd draw(Rng& rng) const override;
  void write(nlohmann::json* j) const override;

 private:
  KroneckerPrecision(std::vector<KroneckerBlock> blocks, double log_det);
  // Per block and column of G, with X the column's block as a rows × cols matrix:
  // T = (U_gᵀ X U_q) ∘ (λ_g,i λ_q,j + α)^power, or U_g T U_qᵀ when back_to_weights.
  Eigen::MatrixXd per_block(const Eigen::MatrixXd& G, double power, bool back_to_weights) const;
  std::vector<KroneckerBlock> blocks_;
};

}  // namespace occam::internal

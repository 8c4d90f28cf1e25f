// lowrank.cc — the low-rank-plus-diagonal Laplace approximation. The top K eigenpairs (s, V) of the
// Gauss–Newton matrix H come from the Lanczos iteration with full reorthogonalisation (Golub & Van
// Loan, Matrix Computations, §10.1; Parlett, The Symmetric Eigenvalue Problem, ch. 13), which needs
// only products Hv; what they leave of H's diagonal is kept too:
//   A = D + V diag(s) Vᵀ,   D = P + max(0, diag(H) − diag(V diag(s) Vᵀ)),
// so that A's diagonal is H's plus the prior's exactly (the remainder is ≥ 0 when the Ritz pairs are
// eigenpairs: H − V diag(s) Vᵀ is then the sum over the other eigenpairs), and A is the Woodbury
// form D^½(I + UᵀU)D^½ with U = diag(s)^½ Vᵀ D^-½ (K × W): log|A|, tr_g(A⁻¹), solves and draws
// come from WoodburyPrecision (woodbury.cc). A depends on α only through P, and for a
// Gaussian likelihood H = βH₁ scales (s, diag remainder) by β with V unchanged (the Krylov space of
// βH₁ from the same start vector is H₁'s), so γ_g = W_g − α_g tr_g(A⁻¹) and γ_β = Σ_g γ_g are this
// A's derivatives, as for the other structures.
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "occam/rng.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"
#include "inference/laplace/structured/structured.h"

namespace occam::internal {
namespace {

// A Ritz pair (θ, y) is accepted when ‖Hy − θy‖ ≤ kResidualTolerance·θ_1 (θ_1 the largest Ritz
// value, ≈ ‖H‖): its eigenvalue is then within kResidualTolerance²·θ_1²/gap of one of H's.
constexpr double kResidualTolerance = 1e-8;
// The start vector's seed: the same fit gives the same Krylov space, hence the same A, every time.
constexpr std::uint64_t kStartSeed = 0x1a4c205;

struct TopEigenpairs {
  Eigen::VectorXd values;   // θ_1 ≥ … ≥ θ_K ≥ 0
  Eigen::MatrixXd vectors;  // W × K, orthonormal Ritz vectors
  LanczosSummary summary;
};

// v minus its projection on the columns of Q, twice: one classical Gram–Schmidt pass loses
// orthogonality in proportion to the condition of [Q v]; a second restores it ("twice is enough",
// Parlett ch. 6.9).
void orthogonalise(const Eigen::Ref<const Eigen::MatrixXd>& Q, Eigen::VectorXd* v) {
  for (int pass = 0; pass < 2; ++pass) v->noalias() -= Q * (Q.transpose() * *v);
}

// The top K eigenpairs of the symmetric positive semi-definite W × W operator `apply` by Lanczos
// with full reorthogonalisation. Every step's residual test is the three-term recurrence's
// β_j |e_jᵀy_i| for the Ritz pairs of T_j (exact while the basis stays orthonormal). It stops when
// the top K Ritz pairs pass it, when the Krylov space becomes invariant (β_j = 0, after at least K
// steps; before, it restarts from a fresh vector orthogonal to the basis, so that eigenvalues of
// every invariant subspace are reachable), or after min(W, 2K + 100) steps.
TopEigenpairs lanczos_top_eigenpairs(const std::function<Eigen::VectorXd(const Eigen::VectorXd&)>& apply, Index W,
                                     Index K) {
  const Index max_steps = std::min(W, 2 * K + 100);
  Eigen::MatrixXd Q(W, max_steps);  // the Lanczos basis: never more than max_steps vectors of W
  Eigen::VectorXd alpha(max_steps), beta(max_steps);
  Rng rng(kStartSeed);
  Q.col(0) = rng.normal_vector(W).normalized();
  // The convergence test costs an eigendecomposition of T_j; past 100 steps it runs every
  // (K/10)-th step only.
  const Index stride = std::max<Index>(1, K / 10);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ritz;
  double scale = 0.0;  // max_j |α_j| + 2 max_j β_j ≥ ‖T_j‖: the size a breakdown β_j is measured against
  for (Index j = 0;; ++j) {
    Eigen::VectorXd r = apply(Q.col(j));
    if (!r.allFinite())
      throw Error(ErrorKind::kNumerical, "lowrank Laplace: a Gauss–Newton-vector product is not finite");
    alpha[j] = Q.col(j).dot(r);
    r -= alpha[j] * Q.col(j);
    if (j > 0) r -= beta[j - 1] * Q.col(j - 1);
    orthogonalise(Q.leftCols(j + 1), &r);
    beta[j] = r.norm();
    scale = std::max(scale, std::abs(alpha[j]) + 2.0 * beta[j]);
    const Index steps = j + 1;
    const bool invariant = beta[j] <= 1e-12 * scale;
    if (invariant) beta[j] = 0.0;
    const bool last = steps == max_steps || (invariant && steps >= K);
    if (last || (steps >= K && (steps <= 100 || (steps - K) % stride == 0))) {
      ritz.computeFromTridiagonal(alpha.head(steps), beta.head(steps - 1), Eigen::ComputeEigenvectors);
      if (ritz.info() != Eigen::Success)
        throw Error(ErrorKind::kNumerical, "lowrank Laplace: the Lanczos T_j's eigendecomposition failed");
      const Index k = std::min(K, steps);
      const double theta_1 = std::max(ritz.eigenvalues()[steps - 1], 0.0);
      // Eigenvalues ascend: the top k are the last k; their residuals β_j |last entry of y_i|.
      const double residual = beta[j] * ritz.eigenvectors().bottomRightCorner(1, k).cwiseAbs().maxCoeff();
      const double relative = theta_1 > 0.0 ? residual / theta_1 : (residual > 0.0 ? 1.0 : 0.0);
      const bool converged = steps >= K && relative <= kResidualTolerance;
      if (converged || last) {
        TopEigenpairs top;
        top.values = ritz.eigenvalues().tail(K).reverse().cwiseMax(0.0);  // H ⪰ 0: a negative θ is rounding
        top.vectors = Q.leftCols(steps) * ritz.eigenvectors().rightCols(K).rowwise().reverse();
        top.summary = {static_cast<int>(steps), relative, converged || invariant};
        return top;
      }
    }
    if (invariant) {
      // An invariant subspace before K vectors: go on from a vector orthogonal to it (the coupling
      // β_j is 0, so T stays block diagonal and the blocks' eigenvalues are H's).
      r = rng.normal_vector(W);
      orthogonalise(Q.leftCols(steps), &r);
    }
    Q.col(j + 1) = r.normalized();
  }
}

}  // namespace

LaplaceApproximation lowrank_laplace(const Posterior& posterior, const Eigen::VectorXd& w, Index rank) {
  const Index W = posterior.dim();
  // H v through the posterior, whose sum over the rows has the same bits however they are spread.
  const TopEigenpairs top = lanczos_top_eigenpairs(
      [&](const Eigen::VectorXd& v) { return posterior.data_hessian_vp(w, v, HessianKind::kGgn); }, W, rank);
  // diag(V diag(s) Vᵀ)_i = Σ_k s_k V_ik²; D takes what it leaves of diag(H).
  const Eigen::VectorXd kept = top.vectors.cwiseAbs2() * top.values;
  const Eigen::VectorXd remainder = (gauss_newton_diagonal(posterior, w) - kept).cwiseMax(0.0);
  Eigen::VectorXd diagonal = posterior.prior().precision_diagonal() + remainder;
  if (!(diagonal.array() > 0.0).all() || !diagonal.allFinite()) {
    throw Error(ErrorKind::kNumerical,
                "lowrank Laplace: a diagonal entry of D = prior precision + the rest of diag(H) "
                "is not positive and finite");
  }
  // U = diag(s)^½ Vᵀ D^-½, so that D^½ UᵀU D^½ = V diag(s) Vᵀ.
  Eigen::MatrixXd root =
      (diagonal.array().rsqrt().matrix().asDiagonal() * top.vectors * top.values.cwiseSqrt().asDiagonal()).transpose();
  return {.mean = w, .precision = WoodburyPrecision::from_root(std::move(diagonal), std::move(root), top.summary)};
}

}  // namespace occam::internal

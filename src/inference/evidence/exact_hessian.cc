#include "inference/evidence/exact_hessian.h"

#include <Eigen/Cholesky>
#include <cmath>
#include <numeric>
#include <vector>

#include "inference/curvature/curvature_kernels.h"
#include "core/linalg.h"
#include "model/output_hessian.h"
#include "inference/curvature/weighted_jacobian.h"

namespace occam::evidence {

ExactHessian::ExactHessian(const Posterior& posterior, const Eigen::VectorXd& w)
    : posterior_(posterior), w_(w), linearisation_(posterior.network().linearise(w, posterior.X())) {
  OutputDerivatives d;
  posterior.likelihood().neg_log_derivatives(linearisation_->output(), posterior.Y(), &d);
  output_gradient_ = std::move(d.gradient);
  output_hessian_ = posterior.likelihood().neg_log_hessian(linearisation_->output(), posterior.Y());
}

Eigen::VectorXd ExactHessian::operator()(const Eigen::VectorXd& v) const {
  Eigen::VectorXd out;
  linearisation_->hessian_vp(
      output_gradient_,
      [this](const Eigen::MatrixXd& Jv) { return internal::apply_output_hessian(output_hessian_, Jv); }, v, &out);
  return out + posterior_.prior().apply_precision(v);
}

Eigen::VectorXd ExactHessian::pull_output_acceleration(const Eigen::VectorXd& v, double h) const {
  Eigen::MatrixXd plus, minus;
  posterior_.network().forward(w_ + h * v, posterior_.X(), &plus);
  posterior_.network().forward(w_ - h * v, posterior_.X(), &minus);
  const Eigen::MatrixXd f_vv = (plus - 2.0 * linearisation_->output() + minus) / (h * h);
  Eigen::VectorXd out;
  linearisation_->vjp(internal::apply_output_hessian(output_hessian_, f_vv), &out);
  return out;
}

Eigen::VectorXd solve_exact_hessian(const ExactHessian& hessian, const Preconditioner& precondition,
                                    const Eigen::VectorXd& b, bool* indefinite,
                                    const std::optional<Eigen::VectorXd>& start) {
  if (indefinite != nullptr) *indefinite = false;
  const Eigen::VectorXd fallback = precondition(b);
  Eigen::VectorXd x = start ? *start : fallback;
  Eigen::VectorXd r = b - hessian(x);
  const double target = 1e-10 * b.norm();
  if (r.norm() <= target) return x;
  Eigen::VectorXd z = precondition(r), p = z;
  double rz = r.dot(z);
  for (Index it = 0; it < 2 * b.size() && r.norm() > target; ++it) {
    const Eigen::VectorXd Hp = hessian(p);
    const double pHp = p.dot(Hp);
    if (!(pHp > 0.0)) {
      if (indefinite != nullptr) *indefinite = true;
      return fallback;
    }
    const double step = rz / pHp;
    x += step * p;
    r -= step * Hp;
    z = precondition(r);
    const double rz_next = r.dot(z);
    p = z + (rz_next / rz) * p;
    rz = rz_next;
  }
  return x;
}

namespace {

// The connected sets of weights of the symmetric D's non-zero pattern, each sorted; empty unless
// the blocks' factors cost at most 1/64 of a W × W factor (Σ_b b³ ≤ W³/64, so every b ≤ W/4): one
// hidden unit's fan-in + 2 weights each for a network of one hidden layer, one block of nearly all
// weights for a deeper one.
std::vector<std::vector<Index>> diagonal_blocks(const Eigen::MatrixXd& D) {
  const Index W = D.rows();
  std::vector<Index> parent(static_cast<std::size_t>(W));
  std::iota(parent.begin(), parent.end(), Index{0});
  auto root = [&](Index i) {
    while (parent[static_cast<std::size_t>(i)] != i) {
      parent[static_cast<std::size_t>(i)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(i)])];
      i = parent[static_cast<std::size_t>(i)];
    }
    return i;
  };
  for (Index j = 0; j < W; ++j) {
    for (Index i = j + 1; i < W; ++i) {
      if (D(i, j) != 0.0) {
        const Index a = root(i), b = root(j);
        if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
      }
    }
  }
  std::vector<Index> block_of(static_cast<std::size_t>(W), -1);
  std::vector<std::vector<Index>> blocks;
  for (Index i = 0; i < W; ++i) {
    const Index r = root(i);
    Index& b = block_of[static_cast<std::size_t>(r)];
    if (b < 0) {
      b = static_cast<Index>(blocks.size());
      blocks.emplace_back();
    }
    blocks[static_cast<std::size_t>(b)].push_back(i);
  }
  double cubes = 0.0;
  for (const std::vector<Index>& block : blocks) cubes += std::pow(static_cast<double>(block.size()), 3);
  if (cubes > std::pow(static_cast<double>(W), 3) / 64.0) return {};
  return blocks;
}

// D's blocks factored by LDLᵀ with pivoting (each may be indefinite), applied to W × k matrices.
class BlockDiagonalSolve {
 public:
  BlockDiagonalSolve(std::vector<std::vector<Index>> blocks, const std::vector<Eigen::MatrixXd>& matrices)
      : blocks_(std::move(blocks)) {
    factors_.reserve(blocks_.size());
    for (const Eigen::MatrixXd& Db : matrices) {
      factors_.emplace_back(Db);
      const Eigen::LDLT<Eigen::MatrixXd>& f = factors_.back();
      if (f.info() != Eigen::Success || !(f.vectorD().array().abs() > 0.0).all()) ok_ = false;
      negative_ += static_cast<Index>((f.vectorD().array() < 0.0).count());
    }
  }
  bool ok() const { return ok_; }
  Index negative_pivots() const { return negative_; }
  Eigen::MatrixXd solve(const Eigen::MatrixXd& X) const {
    Eigen::MatrixXd out(X.rows(), X.cols()), Xb;
    for (std::size_t k = 0; k < blocks_.size(); ++k) {
      const std::vector<Index>& block = blocks_[k];
      Xb.resize(static_cast<Index>(block.size()), X.cols());
      for (std::size_t i = 0; i < block.size(); ++i) Xb.row(static_cast<Index>(i)) = X.row(block[i]);
      Xb = factors_[k].solve(Xb);
      for (std::size_t i = 0; i < block.size(); ++i) out.row(block[i]) = Xb.row(static_cast<Index>(i));
    }
    return out;
  }

 private:
  std::vector<std::vector<Index>> blocks_;
  std::vector<Eigen::LDLT<Eigen::MatrixXd>> factors_;
  bool ok_ = true;
  Index negative_ = 0;
};

// D = P + R as blocks, or nothing where they are not small enough (diagonal_blocks' rule). With
// a diagonal prior and a network that gives R's blocks itself (Network::curvature_blocks: one per
// hidden unit for one hidden layer), D's blocks are R's plus P's diagonal, and every weight
// outside them a block of its own — m·W·b flops and no W × W matrix (on breast cancer, W = 1,601,
// 6% of the fit's CPU: forming, zeroing and scanning 20 MB at every evaluation). Otherwise D is
// formed (as Posterior::data_hessian adds R, 1024 rows at a time) and its blocks are its
// connected sets.
std::optional<BlockDiagonalSolve> factor_prior_plus_curvature(const Posterior& posterior, const Eigen::VectorXd& w) {
  const Index W = w.size(), m = posterior.num_data();
  constexpr Index kRows = 1024;
  if (posterior.prior().is_group_diagonal()) {
    CurvatureBlocks R, chunk;
    Eigen::MatrixXd F;
    OutputDerivatives d;
    bool structured = true;
    for (Index start = 0; start < m && structured; start += kRows) {
      const Index rows = std::min(kRows, m - start);
      const auto Xb = posterior.X().middleRows(start, rows);
      posterior.network().forward(w, Xb, &F);
      posterior.likelihood().neg_log_derivatives(F, posterior.Y().middleRows(start, rows), &d);
      structured = posterior.network().curvature_blocks(w, Xb, d.gradient, &chunk);
      if (!structured) break;
      if (start == 0) {
        R = std::move(chunk);
      } else {
        for (std::size_t b = 0; b < R.block.size(); ++b) R.block[b] += chunk.block[b];
      }
    }
    if (structured) {
      double cubes = static_cast<double>(W);  // the 1 × 1 blocks, at most W of them
      for (const std::vector<Index>& block : R.index) cubes += std::pow(static_cast<double>(block.size()), 3);
      if (cubes > std::pow(static_cast<double>(W), 3) / 64.0) return std::nullopt;  // as diagonal_blocks
      const Eigen::VectorXd p = posterior.prior().precision_diagonal();
      std::vector<bool> in_block(static_cast<std::size_t>(W), false);
      for (std::size_t b = 0; b < R.index.size(); ++b) {
        for (std::size_t i = 0; i < R.index[b].size(); ++i) {
          const Index j = R.index[b][i];
          R.block[b](static_cast<Index>(i), static_cast<Index>(i)) += p[j];
          in_block[static_cast<std::size_t>(j)] = true;
        }
      }
      for (Index j = 0; j < W; ++j) {
        if (in_block[static_cast<std::size_t>(j)]) continue;
        R.index.push_back({j});
        R.block.push_back(Eigen::MatrixXd::Constant(1, 1, p[j]));
      }
      return BlockDiagonalSolve(std::move(R.index), R.block);
    }
  }
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(W, W);
  internal::add_output_curvature(posterior, w, kRows, &D);
  posterior.prior().add_precision_to(&D);
  std::vector<std::vector<Index>> blocks = diagonal_blocks(D);
  if (blocks.empty()) return std::nullopt;
  std::vector<Eigen::MatrixXd> matrices;
  matrices.reserve(blocks.size());
  for (const std::vector<Index>& block : blocks) {
    const Index b = static_cast<Index>(block.size());
    Eigen::MatrixXd& Db = matrices.emplace_back(b, b);
    for (Index j = 0; j < b; ++j)
      for (Index i = 0; i < b; ++i)
        Db(i, j) = D(block[static_cast<std::size_t>(i)], block[static_cast<std::size_t>(j)]);
  }
  return BlockDiagonalSolve(std::move(blocks), matrices);
}

}  // namespace

std::optional<Eigen::MatrixXd> solve_exact_hessian_by_blocks(const Posterior& posterior, const Eigen::VectorXd& w,
                                                             const Eigen::MatrixXd& B, bool indefinite_allowed,
                                                             bool* indefinite) {
  if (indefinite != nullptr) *indefinite = false;
  const Index W = w.size(), n = posterior.num_data() * posterior.network().num_outputs();
  // Where W < 2n the Woodbury form's n²W + n³/3 flops are not enough below the full factor's
  // m·W² + W³/3 (at most 2.9× fewer) to pay for R, Z and the refinement: Boston split 0, 50 units
  // (n = 455, W = 751, 2.1× fewer), took 4.66 s by blocks against 4.48 s with the full factor.
  if (posterior.network().linear_in_weights() || 2 * n > W || posterior.distributed()) return std::nullopt;
  const std::optional<BlockDiagonalSolve> factored = factor_prior_plus_curvature(posterior, w);
  if (!factored || !factored->ok()) return std::nullopt;
  const BlockDiagonalSolve& D_solve = *factored;
  std::unique_ptr<internal::WeightedJacobian> Zj;
  try {
    Zj = internal::make_weighted_jacobian(posterior, w, /*layered=*/false);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!Zj) return std::nullopt;
  const Eigen::MatrixXd Z = Zj->dense();
  const Eigen::MatrixXd Y = D_solve.solve(Z.transpose());  // D⁻¹Zᵀ, W × n
  Eigen::MatrixXd K = Eigen::MatrixXd::Identity(n, n);
  internal::multiply(Z, false, Y, 1.0, K);
  // K by Cholesky (LAPACK) where it is positive definite — always when D is —, else by LDLᵀ with
  // pivoting, whose pivots count its negative eigenvalues.
  Eigen::MatrixXd K_lower = K;
  const bool K_definite = internal::cholesky_lower_in_place(&K_lower);
  std::optional<Eigen::LDLT<Eigen::MatrixXd>> K_ldlt;
  Index negative_K = 0;
  if (!K_definite) {
    K_ldlt.emplace(K);
    if (K_ldlt->info() != Eigen::Success || !(K_ldlt->vectorD().array().abs() > 0.0).all()) return std::nullopt;
    negative_K = static_cast<Index>((K_ldlt->vectorD().array() < 0.0).count());
  }
  if (negative_K != D_solve.negative_pivots()) {  // ∇∇S is not positive definite
    if (indefinite != nullptr) *indefinite = true;
    if (!indefinite_allowed) return std::nullopt;
  }
  const auto solve_K = [&](Eigen::MatrixXd T) -> Eigen::MatrixXd {
    if (!K_definite) return K_ldlt->solve(T);
    internal::triangular_solve_lower(K_lower, false, T);
    internal::triangular_solve_lower(K_lower, true, T);
    return T;
  };
  const auto solve = [&](const Eigen::MatrixXd& X) -> Eigen::MatrixXd {
    const Eigen::MatrixXd DX = D_solve.solve(X);
    Eigen::MatrixXd ZDX(n, X.cols());
    internal::multiply(Z, false, DX, 0.0, ZDX);
    return DX - Y * solve_K(std::move(ZDX));
  };
  const ExactHessian hessian(posterior, w);
  Eigen::MatrixXd U = solve(B);
  for (int refinement = 0; refinement <= 2; ++refinement) {
    Eigen::MatrixXd residual(W, B.cols());
    for (Index k = 0; k < B.cols(); ++k) residual.col(k) = B.col(k) - hessian(U.col(k));
    bool small = U.allFinite();
    for (Index k = 0; k < B.cols() && small; ++k) small = residual.col(k).norm() <= 1e-10 * B.col(k).norm();
    if (small) return U;
    if (refinement == 2 || !residual.allFinite()) break;
    U += solve(residual);
  }
  return std::nullopt;
}

}  // namespace occam::evidence

// weighted_jacobian.cc — Z = Λ^½J by its layers' factors (the structured NTK form) or in full; see
// weighted_jacobian.h for the algebra.

#include "inference/curvature/weighted_jacobian.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "inference/curvature/curvature_kernels.h"
#include "core/linalg.h"
#include "occam/status.h"

namespace occam::internal {

namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// True when every input column of every layer's weights, and every layer's biases, lie in one
// prior group: then D = P + μI is constant on each of them.
bool columns_within_groups(const std::vector<DenseLayer>& places, const Prior& prior) {
  if (!prior.is_group_diagonal()) return false;
  const Eigen::VectorXi& group = prior.group_of();
  for (const DenseLayer& p : places) {
    for (Index j = 0; j < p.in; ++j) {
      const int g = group[p.weight_index(0, j)];
      for (Index c = 1; c < p.out; ++c) {
        if (group[p.weight_index(c, j)] != g) return false;
      }
    }
    if (p.bias_offset >= 0) {
      for (Index c = 1; c < p.out; ++c) {
        if (group[p.bias_offset + c] != group[p.bias_offset]) return false;
      }
    }
  }
  return true;
}

// One layer's part of the Gram matrix in the lower triangle of *K (n × n):
//   K ∘= or += G_S ⊙ (s·G̃_A + t),
// G_S = SSᵀ (n × n, lower triangle held), G̃_A the m × m G_A (both triangles held) tiled K_out ×
// K_out times over the output-major rows; s scales the weights' part and t is the biases' 1/d. One
// pass over the triangle: the weights' and the biases' terms of a layer share G_S.
void gram_pass_lower(bool assign, double s, double t, const MatrixXd& GA, const MatrixXd& GS, Index m, Index K_out,
                     MatrixXd* K) {
  for (Index r = 0; r < K_out; ++r) {
    for (Index c = 0; c <= r; ++c) {
      for (Index j = 0; j < m; ++j) {
        const Index first = r == c ? j : 0;  // the diagonal blocks' lower triangle only
        const Index len = m - first;
        auto out = K->col(c * m + j).segment(r * m + first, len).array();
        const auto term =
            GS.col(c * m + j).segment(r * m + first, len).array() * (s * GA.col(j).segment(first, len).array() + t);
        if (assign)
          out = term;
        else
          out += term;
      }
    }
  }
}

// *out += P ⊙ (s·G̃_A + t) for n × n matrices P and *out (all entries), G̃_A the m × m G_A tiled over
// the output-major rows as above.
void add_tiled_product(double s, double t, const MatrixXd& GA, const MatrixXd& P, Index m, Index K_out, MatrixXd* out) {
  for (Index c = 0; c < K_out; ++c) {
    for (Index r = 0; r < K_out; ++r) {
      out->block(r * m, c * m, m, m).array() += P.block(r * m, c * m, m, m).array() * (s * GA.array() + t);
    }
  }
}

// The symmetric G = A diag(v) Aᵀ (m × m, both triangles) into *G.
void input_gram(const MatrixXd& A, const VectorXd& v, MatrixXd* G) {
  G->resize(A.rows(), A.rows());
  if ((v.array() == 1.0).all()) {
    rank_update_lower(A, G, 0.0);
  } else {
    rank_update_lower(A * v.cwiseSqrt().asDiagonal(), G, 0.0);
  }
  G->triangularView<Eigen::StrictlyUpper>() = G->transpose();
}

// The layered form. Its storage (the layers' factors and the Gram matrices of their inputs and
// sensitivities, n × n each) is kept from one form() to the next; the first layer's inputs are the
// data, so their Gram matrix is formed once.
class LayeredJacobian final : public WeightedJacobian {
 public:
  LayeredJacobian(std::vector<DenseLayer> places, Index m, Index K_out, Index W)
      : places_(std::move(places)), m_(m), K_(K_out) {
    rows_ = m * K_out;
    cols_ = W;
    set_of_.resize(W);
    Index set = 0;
    for (const DenseLayer& p : places_) {
      for (Index j = 0; j < p.in; ++j, ++set) {
        for (Index c = 0; c < p.out; ++c) set_of_[p.weight_index(c, j)] = static_cast<int>(set);
      }
      if (p.bias_offset >= 0) {
        set_of_.segment(p.bias_offset, p.out).setConstant(static_cast<int>(set));
        ++set;
      }
    }
    num_sets_ = set;
    const std::size_t L = places_.size();
    A_.resize(L);
    S_.resize(L);
    gram_S_.resize(L);
    gram_A_.resize(L);
    gram_S_ready_.assign(L, false);
    gram_A_ready_.assign(L, false);
  }

  bool layered() const override { return true; }

  bool form(const Posterior& posterior, const Eigen::Ref<const VectorXd>& w) override {
    const Network& net = posterior.network();
    bool psd = true;
    gradients_.inputs.swap(A_);
    gradients_.deltas.swap(S_);
    // Λ_n^½ at the outputs of the one forward pass: the seeds of the backward pass.
    net.layer_gradients(w, posterior.X(), output_hessian_root_seeds(posterior.likelihood(), posterior.Y(), &psd),
                        &gradients_);
    gradients_.inputs.swap(A_);
    gradients_.deltas.swap(S_);
    if (!psd) return false;
    for (std::size_t l = 0; l < places_.size(); ++l) {
      if (!A_[l].allFinite() || !S_[l].allFinite()) {
        throw Error(ErrorKind::kNumerical, "curvature: the Jacobian is not finite at w");
      }
      gram_S_ready_[l] = false;
      if (l > 0) gram_A_ready_[l] = false;  // the first layer's inputs are the data
    }
    return true;
  }

  // Both products run over blocks of columns of V (or T), each layer's part one matrix product per
  // block (m·fan-in·fan-out multiply-adds a column), so that many right-hand sides (A⁻¹Jᵀ in the
  // evidence gradient) run at the speed of the general matrix product.
  void multiply(const Eigen::Ref<const MatrixXd>& V, MatrixXd* out) const override {
    out->setZero(rows_, V.cols());
    MatrixXd B, T;
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      const MatrixXd &A = A_[l], &S = S_[l];
      const Index block = column_block(p);
      for (Index q0 = 0; q0 < V.cols(); q0 += block) {
        const Index cols = std::min(block, V.cols() - q0);
        // T = A·[W_v₁ᵀ … W_vₖᵀ] (m × out·k), W_v each direction's weights as out × in; then
        // (Zv)_ρ = δ_ρ·(W_v a_n), the row sums of S ∘ T.
        B.resize(p.in, p.out * cols);
        for (Index q = 0; q < cols; ++q) {
          const double* v = V.col(q0 + q).data() + p.weight_offset;
          if (p.unit_major) {
            B.middleCols(q * p.out, p.out) = Eigen::Map<const MatrixXd>(v, p.out, p.in).transpose();
          } else {
            B.middleCols(q * p.out, p.out) = Eigen::Map<const MatrixXd>(v, p.in, p.out);
          }
        }
        T.resize(m_, p.out * cols);
        internal::multiply(A, false, B, 0.0, T);
        for (Index q = 0; q < cols; ++q) {
          for (Index k = 0; k < K_; ++k) {
            out->col(q0 + q).segment(k * m_, m_) +=
                (S.middleRows(k * m_, m_).array() * T.middleCols(q * p.out, p.out).array()).rowwise().sum().matrix();
          }
        }
      }
      if (p.bias_offset >= 0) {
        internal::multiply(S, false, V.middleRows(p.bias_offset, p.out), 1.0, *out);
      }
    }
  }

  void multiply_transpose(const Eigen::Ref<const MatrixXd>& T, MatrixXd* out) const override {
    out->setZero(cols_, T.cols());
    MatrixXd St, G;
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      const MatrixXd &A = A_[l], &S = S_[l];
      const Index block = column_block(p);
      for (Index q0 = 0; q0 < T.cols(); q0 += block) {
        const Index cols = std::min(block, T.cols() - q0);
        // Σ_ρ t_ρ δ_ρ ⊗ a_n, the backward pass's weight gradient: Gᵀ = Σ_k Aᵀ (S_k ∘ t_k), all the
        // block's columns in one product (in × out·k).
        St.resize(rows_, p.out * cols);
        for (Index q = 0; q < cols; ++q) St.middleCols(q * p.out, p.out) = S.array().colwise() * T.col(q0 + q).array();
        G.resize(p.in, p.out * cols);
        for (Index k = 0; k < K_; ++k) internal::multiply(A, true, St.middleRows(k * m_, m_), k == 0 ? 0.0 : 1.0, G);
        for (Index q = 0; q < cols; ++q) {
          double* o = out->col(q0 + q).data() + p.weight_offset;
          if (p.unit_major) {
            Eigen::Map<MatrixXd>(o, p.out, p.in) = G.middleCols(q * p.out, p.out).transpose();
          } else {
            Eigen::Map<MatrixXd>(o, p.in, p.out) = G.middleCols(q * p.out, p.out);
          }
        }
      }
      if (p.bias_offset >= 0) {
        internal::multiply(S, true, T, 0.0, out->middleRows(p.bias_offset, p.out));
      }
    }
  }

  void gram_lower(const VectorXd& d_inverse, double scale, MatrixXd* K) const override {
    K->resize(rows_, rows_);
    bool written = false;  // whether K's lower triangle holds a first term yet
    // A layer with one sensitivity a row (one unit, one output: the output layer of a regressor or
    // a binary classifier) has Z's block diag(s)[A, 1], whose part of K is Z̃Z̃ᵀ with
    // Z̃ = diag(s)[A diag(scale·v)^½, (scale·d_b)^½ 1]: one rank-k update of in + 1 columns,
    // written into K directly, where the Hadamard form would form SSᵀ (rank one) and AAᵀ apart
    // and pass over the triangle a third time to combine them.
    MatrixXd scaled;
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      if (!single_sensitivity(p)) continue;
      const Index bias_column = p.bias_offset >= 0 ? 1 : 0;
      scaled.resize(m_, p.in + bias_column);
      for (Index j = 0; j < p.in; ++j) {
        scaled.col(j) = std::sqrt(scale * d_inverse[p.weight_index(0, j)]) * S_[l].col(0).cwiseProduct(A_[l].col(j));
      }
      if (bias_column == 1) scaled.col(p.in) = std::sqrt(scale * d_inverse[p.bias_offset]) * S_[l].col(0);
      rank_update_lower(scaled, K, written ? 1.0 : 0.0);
      written = true;
    }
    MatrixXd weighted;  // A diag(v) Aᵀ where v varies over the layer's inputs (ARD)
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      if (single_sensitivity(p)) continue;
      const MatrixXd& GS = gram_S(l);
      VectorXd v(p.in);
      for (Index j = 0; j < p.in; ++j) v[j] = d_inverse[p.weight_index(0, j)];
      const double bias = p.bias_offset >= 0 ? scale * d_inverse[p.bias_offset] : 0.0;
      const bool uniform = p.in == 0 || (v.array() == v[0]).all();
      const MatrixXd* GA = nullptr;
      double s = 0.0;
      if (uniform) {
        // One α over the layer's weights: A Aᵀ is formed once per w and scaled.
        GA = &gram_A(l);
        s = p.in > 0 ? scale * v[0] : 0.0;
      } else {
        input_gram(A_[l], v, &weighted);
        GA = &weighted;
        s = scale;
      }
      gram_pass_lower(!written, s, bias, *GA, GS, m_, K_, K);
      written = true;
    }
    if (!written) K->triangularView<Eigen::Lower>().setZero();
    K->diagonal().array() += 1.0;
  }

  VectorXd set_quadratic_sums(const MatrixXd& M) const override {
    VectorXd sums(num_sets_);
    Index set = 0;
    MatrixXd P, PA, A_rows;
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      const MatrixXd &A = A_[l], &S = S_[l];
      // Σ_c z_(c,j)ᵀ M z_(c,j) = ã_jᵀ (M ⊙ SSᵀ) ã_j for input column j.
      P = gram_S(l).selfadjointView<Eigen::Lower>();
      P.array() *= M.array();
      A_rows = A.replicate(K_, 1);  // Ã: row (k, n) is a_n
      PA.resize(rows_, p.in);
      internal::multiply(P, false, A_rows, 0.0, PA);
      sums.segment(set, p.in) = (A_rows.array() * PA.array()).colwise().sum().transpose();
      set += p.in;
      if (p.bias_offset >= 0) sums[set++] = (S.array() * (M * S).array()).sum();
    }
    return sums;
  }

  VectorXd column_squared_norms() const override {
    VectorXd out(cols_);
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      const MatrixXd A2 = A_[l].array().square().matrix();
      const MatrixXd S2 = S_[l].array().square().matrix();
      MatrixXd G = S2.topRows(m_).transpose() * A2;  // out × in
      for (Index k = 1; k < K_; ++k) G.noalias() += S2.middleRows(k * m_, m_).transpose() * A2;
      for (Index j = 0; j < p.in; ++j) {
        for (Index c = 0; c < p.out; ++c) out[p.weight_index(c, j)] = G(c, j);
      }
      if (p.bias_offset >= 0) out.segment(p.bias_offset, p.out) = S2.colwise().sum().transpose();
    }
    return out;
  }

  bool inverse_jacobian_blocks(const Posterior& posterior, const Eigen::Ref<const VectorXd>& w,
                               const VectorXd& d_inverse, double c, const MatrixXd& K_factor, const MatrixXd& U,
                               double h_base, MatrixXd* C, std::vector<MatrixXd>* E) const override {
    const std::size_t L = places_.size();
    const Index n = rows_;
    // J's own factors: the layers' inputs (those of Z) and the sensitivities with seeds I.
    std::vector<MatrixXd> SJ;
    jacobian_factors(posterior, w, nullptr, &SJ);
    // Per layer: v (1/d over the inputs, or its one value) and the bias's 1/d; G_A·v; P = S_Z S_Jᵀ.
    std::vector<MatrixXd> weighted_A(L), P(L);
    std::vector<double> v0(L, 0.0), bias(L, 0.0);
    std::vector<bool> uniform(L, true);
    std::vector<VectorXd> v(L);
    MatrixXd G_ZJ = MatrixXd::Zero(n, n);
    for (std::size_t l = 0; l < L; ++l) {
      const DenseLayer& p = places_[l];
      v[l].resize(p.in);
      for (Index j = 0; j < p.in; ++j) v[l][j] = d_inverse[p.weight_index(0, j)];
      uniform[l] = p.in == 0 || (v[l].array() == v[l][0]).all();
      v0[l] = p.in > 0 ? v[l][0] : 0.0;
      bias[l] = p.bias_offset >= 0 ? d_inverse[p.bias_offset] : 0.0;
      if (!uniform[l]) input_gram(A_[l], v[l], &weighted_A[l]);
      P[l].resize(n, n);
      internal::multiply(S_[l], false, SJ[l], true, 0.0, P[l]);
      add_tiled_product(uniform[l] ? v0[l] : 1.0, bias[l], uniform[l] ? gram_A(l) : weighted_A[l], P[l], m_, K_, &G_ZJ);
    }
    // M = K⁻¹ G_ZJ by the two triangular solves with K's factor.
    MatrixXd M = G_ZJ;
    triangular_solve_lower(K_factor, false, M);
    triangular_solve_lower(K_factor, true, M);
    // C = blocks of G_JJ − c·Mᵀ G_ZJ, G_JJ's blocks per example from the factors.
    const auto quadratic = [&](std::size_t l, const MatrixXd& A1, const MatrixXd& A2) -> VectorXd {
      // a1_nᵀ diag(v) a2_n per example.
      if (uniform[l]) return v0[l] * (A1.array() * A2.array()).rowwise().sum().matrix();
      return ((A1.array() * A2.array()).rowwise() * v[l].transpose().array()).rowwise().sum().matrix();
    };
    std::vector<VectorXd> aa(L);
    for (std::size_t l = 0; l < L; ++l) aa[l] = quadratic(l, A_[l], A_[l]);
    C->setZero(m_, K_ * K_);
    for (Index k = 0; k < K_; ++k) {
      for (Index q = 0; q < K_; ++q) {
        auto col = C->col(k + q * K_);
        for (std::size_t l = 0; l < L; ++l) {
          col.array() += (aa[l].array() + bias[l]) *
                         (SJ[l].middleRows(k * m_, m_).array() * SJ[l].middleRows(q * m_, m_).array()).rowwise().sum();
        }
        col.array() -=
            c * (M.middleCols(k * m_, m_).array() * G_ZJ.middleCols(q * m_, m_).array()).colwise().sum().transpose();
      }
    }
    // With one output, −c·Σ_ρ M_ρn (G_Z,dJ)_ρn, the part of E_h that G_Z,dJ enters, is linear in
    // dS and dÃ row by row: with T_l = v·G_A + b (the layer's G̃_A as add_tiled_product weights it),
    //   Σ_ρ M_ρn (T_l)_ρn (S_Z dSᵀ)_ρn = Σ_c dS_nc Q_nc,        Q = (M ⊙ T_l)ᵀ S_Z,
    //   Σ_ρ M_ρn P_ρn (Ãv dÃᵀ)_ρn      = Σ_j dÃ_nj R_nj,        R = (M ⊙ P_l)ᵀ (Ã diag v),
    // so Q and R are formed once (m²·(fan-in + fan-out) multiply-adds a layer) and each direction
    // costs m·(fan-in + fan-out) beyond its two passes for dÃ and dS, where forming G_Z,dJ cost
    // m²·(fan-in + fan-out) and three passes over n × n a direction (bench/evidence_bench.cc,
    // BM_TotalGradientBlocks: 19.3 → 14.1 ms at (455, 751) with 5 directions; what is left is
    // mostly M's two triangular solves, n³). Several outputs pair the blocks of M and P across
    // outputs (K³ m²·fan-in for R), so there G_Z,dJ is formed as below.
    const bool contracted = K_ == 1;
    std::vector<MatrixXd> Q(contracted ? L : 0), R(contracted ? L : 0);
    if (contracted) {
      MatrixXd weighted(n, n);
      for (std::size_t l = 0; l < L; ++l) {
        const DenseLayer& p = places_[l];
        const MatrixXd& GA = uniform[l] ? gram_A(l) : weighted_A[l];
        const double s = uniform[l] ? v0[l] : 1.0;
        weighted = M.array() * (s * GA.array() + bias[l]);
        Q[l].resize(m_, p.out);
        internal::multiply(weighted, true, S_[l], 0.0, Q[l]);
        weighted = M.array() * P[l].array();
        R[l].resize(m_, p.in);
        if (uniform[l]) {
          internal::multiply(weighted, true, v0[l] * A_[l], 0.0, R[l]);
        } else {
          internal::multiply(weighted, true, A_[l] * v[l].asDiagonal(), 0.0, R[l]);
        }
      }
    }
    // E_h from the derivative of J's factors along u_h.
    E->assign(static_cast<std::size_t>(U.cols()), MatrixXd());
    std::vector<MatrixXd> A_plus, S_plus, A_minus, S_minus;
    MatrixXd G_ZdJ, PdS, GdA;
    if (!contracted) {
      G_ZdJ.resize(n, n);
      PdS.resize(n, n);
    }
    for (Index h = 0; h < U.cols(); ++h) {
      MatrixXd& Eh = (*E)[static_cast<std::size_t>(h)];
      Eh.setZero(m_, K_ * K_);
      const double u_scale = U.col(h).cwiseAbs().maxCoeff();
      if (u_scale == 0.0) continue;
      const double step = h_base / u_scale;
      jacobian_factors(posterior, w + step * U.col(h), &A_plus, &S_plus);
      jacobian_factors(posterior, w - step * U.col(h), &A_minus, &S_minus);
      if (!contracted) G_ZdJ.setZero();
      for (std::size_t l = 0; l < L; ++l) {
        const MatrixXd dA = (A_plus[l] - A_minus[l]) / (2.0 * step);
        const MatrixXd dS = (S_plus[l] - S_minus[l]) / (2.0 * step);
        if (contracted) {
          Eh.col(0).array() -=
              c * ((dS.array() * Q[l].array()).rowwise().sum() + (dA.array() * R[l].array()).rowwise().sum());
          Eh.col(0).array() += (aa[l].array() + bias[l]) * (SJ[l].array() * dS.array()).rowwise().sum() +
                               quadratic(l, A_[l], dA).array() * SJ[l].array().square().rowwise().sum();
          continue;
        }
        // G_Z,dJ = Σ_l (ÃvÃᵀ) ⊙ S_Z dSᵀ + (Ãv dÃᵀ) ⊙ S_Z S_Jᵀ + b·S_Z dSᵀ.
        internal::multiply(S_[l], false, dS, true, 0.0, PdS);
        add_tiled_product(uniform[l] ? v0[l] : 1.0, bias[l], uniform[l] ? gram_A(l) : weighted_A[l], PdS, m_, K_,
                          &G_ZdJ);
        GdA.resize(m_, m_);
        if (uniform[l]) {
          internal::multiply(A_[l], false, dA, true, 0.0, GdA);
          add_tiled_product(v0[l], 0.0, GdA, P[l], m_, K_, &G_ZdJ);
        } else {
          internal::multiply(A_[l] * v[l].asDiagonal(), false, dA, true, 0.0, GdA);
          add_tiled_product(1.0, 0.0, GdA, P[l], m_, K_, &G_ZdJ);
        }
        // G_J,dJ's blocks per example: (a_nᵀv a_n + b)(s_J·ds) + (a_nᵀv da_n)(s_J·s_J).
        const VectorXd ada = quadratic(l, A_[l], dA);
        for (Index a = 0; a < K_; ++a) {
          for (Index b = 0; b < K_; ++b) {
            Eh.col(a + b * K_).array() +=
                (aa[l].array() + bias[l]) *
                    (SJ[l].middleRows(b * m_, m_).array() * dS.middleRows(a * m_, m_).array()).rowwise().sum() +
                ada.array() *
                    (SJ[l].middleRows(b * m_, m_).array() * SJ[l].middleRows(a * m_, m_).array()).rowwise().sum();
          }
        }
      }
      if (contracted) continue;
      for (Index a = 0; a < K_; ++a) {
        for (Index b = 0; b < K_; ++b) {
          Eh.col(a + b * K_).array() -=
              c * (M.middleCols(b * m_, m_).array() * G_ZdJ.middleCols(a * m_, m_).array()).colwise().sum().transpose();
        }
      }
    }
    return true;
  }

  MatrixXd dense() const override {
    MatrixXd Z = MatrixXd::Zero(rows_, cols_);
    for (std::size_t l = 0; l < places_.size(); ++l) {
      const DenseLayer& p = places_[l];
      const MatrixXd &A = A_[l], &S = S_[l];
      for (Index j = 0; j < p.in; ++j) {
        for (Index c = 0; c < p.out; ++c) {
          for (Index k = 0; k < K_; ++k) {
            Z.col(p.weight_index(c, j)).segment(k * m_, m_) = S.col(c).segment(k * m_, m_).cwiseProduct(A.col(j));
          }
        }
      }
      if (p.bias_offset >= 0) Z.middleCols(p.bias_offset, p.out) = S;
    }
    return Z;
  }

 private:
  // One sensitivity a row: the layer has one unit and the network one output.
  bool single_sensitivity(const DenseLayer& p) const { return p.out == 1 && K_ == 1; }

  // G_S = SSᵀ (lower triangle) and G_A = AAᵀ (both triangles), formed once per w.
  const MatrixXd& gram_S(std::size_t l) const {
    if (!gram_S_ready_[l]) {
      gram_S_[l].resize(rows_, rows_);
      rank_update_lower(S_[l], &gram_S_[l], 0.0);
      gram_S_ready_[l] = true;
    }
    return gram_S_[l];
  }
  const MatrixXd& gram_A(std::size_t l) const {
    if (!gram_A_ready_[l]) {
      input_gram(A_[l], VectorXd::Ones(places_[l].in), &gram_A_[l]);
      gram_A_ready_[l] = true;
    }
    return gram_A_[l];
  }

  // The layers' inputs (into *A when given) and the rows' sensitivities with seeds I, i.e. J's own
  // factors, at w.
  void jacobian_factors(const Posterior& posterior, const Eigen::Ref<const VectorXd>& w, std::vector<MatrixXd>* A,
                        std::vector<MatrixXd>* S) const {
    const Network& net = posterior.network();
    MatrixXd identity = MatrixXd::Zero(m_, K_ * K_);
    for (Index k = 0; k < K_; ++k) identity.col(k + k * K_).setOnes();
    LayerGradients g;
    net.layer_gradients(w, posterior.X(), identity, &g);
    if (A != nullptr) *A = std::move(g.inputs);
    *S = std::move(g.deltas);
  }

  // Columns of a product's right-hand side per block: about 4 MB of T (m × out per column).
  Index column_block(const DenseLayer& p) const {
    return std::max<Index>(1, (Index{1} << 19) / std::max<Index>(1, rows_ * p.out));
  }

  std::vector<DenseLayer> places_;
  Index m_, K_;
  std::vector<MatrixXd> A_;  // each layer's inputs, m × in
  std::vector<MatrixXd> S_;  // the rows' output sensitivities at each layer, n × out
  LayerGradients gradients_;
  mutable std::vector<MatrixXd> gram_S_, gram_A_;
  mutable std::vector<bool> gram_S_ready_, gram_A_ready_;
};

// Z in full.
class FullJacobian final : public WeightedJacobian {
 public:
  explicit FullJacobian(Index n, Index W) {
    rows_ = n;
    cols_ = W;
    set_of_ = Eigen::VectorXi::LinSpaced(cols_, 0, static_cast<int>(cols_) - 1);
    num_sets_ = cols_;
  }
  bool layered() const override { return false; }
  bool form(const Posterior& posterior, const Eigen::Ref<const VectorXd>& w) override {
    if (!weighted_jacobian(posterior, w, 0, posterior.num_data(), &Z_)) return false;
    if (!Z_.allFinite()) throw Error(ErrorKind::kNumerical, "curvature: the Jacobian is not finite at w");
    return true;
  }
  void multiply(const Eigen::Ref<const MatrixXd>& V, MatrixXd* out) const override {
    out->resize(rows_, V.cols());
    if (V.cols() == 1) {
      out->noalias() = Z_ * V;
    } else {
      internal::multiply(Z_, false, V, 0.0, *out);
    }
  }
  void multiply_transpose(const Eigen::Ref<const MatrixXd>& T, MatrixXd* out) const override {
    out->resize(cols_, T.cols());
    if (T.cols() == 1) {
      out->noalias() = Z_.transpose() * T;
    } else {
      internal::multiply(Z_, true, T, 0.0, *out);
    }
  }
  void gram_lower(const VectorXd& d_inverse, double scale, MatrixXd* K) const override {
    K->resize(rows_, rows_);
    rank_update_lower(Z_ * (scale * d_inverse).cwiseSqrt().asDiagonal(), K, 0.0);
    K->diagonal().array() += 1.0;
  }
  VectorXd set_quadratic_sums(const MatrixXd& M) const override {
    MatrixXd MZ(rows_, cols_);
    internal::multiply(M, false, Z_, 0.0, MZ);
    return (Z_.array() * MZ.array()).colwise().sum().transpose();
  }
  VectorXd column_squared_norms() const override { return Z_.colwise().squaredNorm().transpose(); }
  MatrixXd dense() const override { return Z_; }

 private:
  MatrixXd Z_;
};

}  // namespace

bool layered_jacobian_applies(const Posterior& posterior) {
  const std::vector<DenseLayer> places = posterior.network().dense_layers();
  return !places.empty() && columns_within_groups(places, posterior.prior());
}

std::unique_ptr<WeightedJacobian> make_weighted_jacobian(const Posterior& posterior, bool layered) {
  const Index n = posterior.num_data() * posterior.network().num_outputs();
  if (layered) {
    std::vector<DenseLayer> places = posterior.network().dense_layers();
    if (!places.empty() && columns_within_groups(places, posterior.prior())) {
      return std::make_unique<LayeredJacobian>(std::move(places), posterior.num_data(),
                                               posterior.network().num_outputs(), posterior.dim());
    }
  }
  return std::make_unique<FullJacobian>(n, posterior.dim());
}

std::unique_ptr<WeightedJacobian> make_weighted_jacobian(const Posterior& posterior,
                                                         const Eigen::Ref<const VectorXd>& w, bool layered) {
  auto Z = make_weighted_jacobian(posterior, layered);
  if (!Z->form(posterior, w)) return nullptr;
  return Z;
}

}  // namespace occam::internal

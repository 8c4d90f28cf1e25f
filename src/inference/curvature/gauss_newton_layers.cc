// gauss_newton_layers.cc — the Gauss–Newton matrix JᵀΛJ of a layered network from its layers'
// factors, for several outputs.
//
// The rows of Λ^½J that belong to example n are its K weighted rows ρ = (k, n); over the weights of
// a dense layer l such a row is δ_ρ ⊗ ã_n (weighted_jacobian.h: ã_n the layer's inputs with a 1 for
// the biases, δ_ρ the sensitivities of the layer's outputs). So the block of H = Σ_ρ z_ρ z_ρᵀ
// between layers l and l' is
//
//     H_ll' = Σ_n B_n ⊗ ã_n ã'_nᵀ,     B_n = Σ_k δ_(k,n) δ'_(k,n)ᵀ   (out_l × out_l'),
//
// and its entry between unit i's input p and unit j's input q is Σ_n B_n(i, j) ã_n(p) ã'_n(q): for
// each unit i one matrix product Ãᵀ C_i with C_i(n, (j, q)) = B_n(i, j) ã'_n(q). Over all layer
// pairs that is m·W²/2 multiply-adds (plus m·K·out_l·out_l' for the B_n), where the symmetric
// rank-k update over the m·K rows of Λ^½J costs m·K·W²/2: K times fewer. (With K = 1 the two
// counts are equal and the rank-k update, one BLAS call, is the faster; the caller keeps it.)

#include <algorithm>
#include <vector>

#include "inference/curvature/curvature_kernels.h"
#include "core/linalg.h"
#include "occam/status.h"

namespace occam::internal {
namespace {

using Eigen::MatrixXd;

// The layers' inputs, with a column of ones appended for layers with biases (ã_n), and the rows'
// sensitivities (rows·K × out, output-major) for rows [start, start + rows) at w: of Λ^½J when
// weighted (false when some Λ_n is not positive semi-definite), of J itself otherwise.
bool block_factors(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                   const std::vector<DenseLayer>& places, Index start, Index rows, bool weighted,
                   std::vector<MatrixXd>* inputs, std::vector<MatrixXd>* deltas) {
  const Network& net = posterior.network();
  const Index K = net.num_outputs();
  const auto Xb = posterior.X().middleRows(start, rows);
  const MatrixXd Yb = posterior.Y().middleRows(start, rows);
  bool psd = true;
  const auto identity = [&](const MatrixXd&, MatrixXd* seeds) {  // R_n = I
    seeds->setZero(rows, K * K);
    for (Index k = 0; k < K; ++k) seeds->col(k + k * K).setOnes();
  };
  LayerGradients g;
  net.layer_gradients(
      w, Xb, weighted ? output_hessian_root_seeds(posterior.likelihood(), Yb, &psd) : Network::SeedsAt(identity), &g);
  if (!psd) return false;
  *inputs = std::move(g.inputs);
  *deltas = std::move(g.deltas);
  for (std::size_t l = 0; l < places.size(); ++l) {
    MatrixXd& A = (*inputs)[l];
    if (!A.allFinite() || !(*deltas)[l].allFinite()) {
      throw Error(ErrorKind::kNumerical, "curvature: the Jacobian is not finite at w");
    }
    if (places[l].has_biases()) {
      A.conservativeResize(Eigen::NoChange, A.cols() + 1);
      A.col(A.cols() - 1).setOnes();
    }
  }
  return true;
}

// H_ll' of one block of rows added into the upper triangle of *M (l ≤ l'; for l = l' only the
// pairs of units j ≥ i, and for j = i the inputs q ≥ p, so that each entry is added once).
void add_layer_pair(const DenseLayer& first, const MatrixXd& A1, const MatrixXd& S1, const DenseLayer& second,
                    const MatrixXd& A2, const MatrixXd& S2, bool same_layer, Index rows, Index K, MatrixXd* M) {
  const Index in1 = A1.cols(), in2 = A2.cols();
  MatrixXd B(rows, second.out), C, G;
  for (Index i = 0; i < first.out; ++i) {
    // B(n, j) = B_n(i, j) = Σ_k δ_(k,n)(i) δ'_(k,n)(j).
    B = S2.topRows(rows).array().colwise() * S1.col(i).head(rows).array();
    for (Index k = 1; k < K; ++k) {
      B.array() += S2.middleRows(k * rows, rows).array().colwise() * S1.col(i).segment(k * rows, rows).array();
    }
    const Index j0 = same_layer ? i : 0, units = second.out - j0;
    C.resize(rows, units * in2);
    for (Index j = 0; j < units; ++j) {
      C.middleCols(j * in2, in2) = A2.array().colwise() * B.col(j0 + j).array();
    }
    G.resize(in1, units * in2);
    multiply(A1, true, C, 0.0, G);
    for (Index j = 0; j < units; ++j) {
      for (Index q = 0; q < in2; ++q) {
        const Index c = second.parameter_index(j0 + j, q);
        const Index p_end = same_layer && j == 0 ? q + 1 : in1;  // unit i with itself: p ≤ q
        for (Index p = 0; p < p_end; ++p) {
          const Index r = first.parameter_index(i, p);
          (*M)(std::min(r, c), std::max(r, c)) += G(p, j * in2 + q);
        }
      }
    }
  }
}

}  // namespace

bool accumulate_gauss_newton_from_layers(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                         Index block_rows, MatrixXd* M) {
  const std::vector<DenseLayer> places = posterior.network().dense_layers();
  if (places.empty()) return false;
  const Index W = posterior.dim(), m = posterior.num_data(), K = posterior.network().num_outputs();
  M->resize(W, W);
  M->triangularView<Eigen::Upper>().setZero();
  std::vector<MatrixXd> inputs, deltas;
  for (Index start = 0; start < m; start += block_rows) {
    const Index rows = std::min(block_rows, m - start);
    if (!block_factors(posterior, w, places, start, rows, true, &inputs, &deltas)) return false;
    for (std::size_t l = 0; l < places.size(); ++l) {
      for (std::size_t l2 = l; l2 < places.size(); ++l2) {
        add_layer_pair(places[l], inputs[l], deltas[l], places[l2], inputs[l2], deltas[l2], l == l2, rows, K, M);
      }
    }
  }
  return true;
}

bool dense_inverse_jacobian_blocks(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                   const MatrixXd& factor, const MatrixXd& U, double h_base, Index block_rows,
                                   MatrixXd* C, std::vector<MatrixXd>* E) {
  const std::vector<DenseLayer> places = posterior.network().dense_layers();
  const Index K = posterior.network().num_outputs(), m = posterior.num_data(), W = posterior.dim();
  if (places.empty() || K < 2) return false;
  const std::size_t L = places.size();
  const Index H = U.cols();

  // A⁻¹ (dpotri from the factor, 2W³/3 flops), its rows and columns in the layers' order: layer
  // l's unit i's inputs p (the bias last, as input `in`) at first[l] + i·width[l] + p, so that the
  // rows of one unit and the columns of a whole layer are contiguous blocks.
  std::vector<Index> first(L + 1, 0), width(L);
  for (std::size_t l = 0; l < L; ++l) {
    const DenseLayer& p = places[l];
    width[l] = p.in + (p.has_biases() ? 1 : 0);
    first[l + 1] = first[l] + p.out * width[l];
  }
  Eigen::VectorXi order(W);
  for (std::size_t l = 0; l < L; ++l) {
    const DenseLayer& p = places[l];
    for (Index i = 0; i < p.out; ++i)
      for (Index q = 0; q < width[l]; ++q)
        order[first[l] + i * width[l] + q] = static_cast<int>(p.parameter_index(i, q));
  }
  MatrixXd inverse = factor.triangularView<Eigen::Lower>();
  cholesky_inverse_lower_in_place(&inverse);
  inverse.triangularView<Eigen::StrictlyUpper>() = inverse.transpose();
  const MatrixXd ordered = inverse(order, order);
  inverse.resize(0, 0);

  C->setZero(m, K * K);
  E->assign(static_cast<std::size_t>(H), MatrixXd::Zero(m, K * K));
  std::vector<double> steps(static_cast<std::size_t>(H), 0.0);
  for (Index h = 0; h < H; ++h) {
    const double u_scale = U.col(h).cwiseAbs().maxCoeff();
    if (u_scale > 0.0) steps[static_cast<std::size_t>(h)] = h_base / u_scale;
  }
  std::vector<MatrixXd> A, S, A_plus, S_plus, A_minus, S_minus;
  std::vector<std::vector<MatrixXd>> dA(static_cast<std::size_t>(H)), dS(static_cast<std::size_t>(H));
  MatrixXd P, Q, R, V;
  for (Index start = 0; start < m; start += block_rows) {
    const Index rows = std::min(block_rows, m - start);
    block_factors(posterior, w, places, start, rows, false, &A, &S);
    // J's factors along each u_h by a central difference of step h_base/‖u_h‖∞.
    for (Index h = 0; h < H; ++h) {
      const double step = steps[static_cast<std::size_t>(h)];
      if (step == 0.0) continue;
      block_factors(posterior, w + step * U.col(h), places, start, rows, false, &A_plus, &S_plus);
      block_factors(posterior, w - step * U.col(h), places, start, rows, false, &A_minus, &S_minus);
      auto& dAh = dA[static_cast<std::size_t>(h)];
      auto& dSh = dS[static_cast<std::size_t>(h)];
      dAh.resize(L);
      dSh.resize(L);
      for (std::size_t l = 0; l < L; ++l) {
        dAh[l] = (A_plus[l] - A_minus[l]) / (2.0 * step);
        dSh[l] = (S_plus[l] - S_minus[l]) / (2.0 * step);
      }
    }
    for (std::size_t l = 0; l < L; ++l) {
      const DenseLayer& p1 = places[l];
      for (std::size_t l2 = 0; l2 < L; ++l2) {
        const DenseLayer& p2 = places[l2];
        const Index in2 = width[l2];
        for (Index i = 0; i < p1.out; ++i) {
          // P(n, (j, q)) = Σ_p ã_n(p) A⁻¹[(l, i, p), (l2, j, q)]: one product for unit i of layer l.
          P.resize(rows, p2.out * in2);
          multiply(A[l], false, ordered.block(first[l] + i * width[l], first[l2], width[l], p2.out * in2), 0.0, P);
          // Q(n, j) = ã_nᵀ A⁻¹_ij ã'_n.
          Q.resize(rows, p2.out);
          for (Index j = 0; j < p2.out; ++j)
            Q.col(j) = (P.middleCols(j * in2, in2).array() * A[l2].array()).rowwise().sum();
          // C_n(k, k') += S(k,n)_i Σ_j Q(n, j) S'(k',n)_j.
          V.resize(rows, K);
          for (Index k2 = 0; k2 < K; ++k2)
            V.col(k2) = (Q.array() * S[l2].middleRows(k2 * rows, rows).array()).rowwise().sum();
          for (Index k = 0; k < K; ++k) {
            const auto s_ki = S[l].col(i).segment(k * rows, rows).array();
            for (Index k2 = 0; k2 < K; ++k2)
              C->col(k + k2 * K).segment(start, rows).array() += s_ki * V.col(k2).array();
          }
          // E_h,n(a, b) = (J A⁻¹ dJ_hᵀ)_(b,n),(a,n) += S(b,n)_i Σ_j [Q(n, j) dS'(a,n)_j + R(n, j) S'(a,n)_j],
          // R(n, j) = ã_nᵀ A⁻¹_ij dã'_n.
          for (Index h = 0; h < H; ++h) {
            if (steps[static_cast<std::size_t>(h)] == 0.0) continue;
            const auto& dAh = dA[static_cast<std::size_t>(h)];
            const auto& dSh = dS[static_cast<std::size_t>(h)];
            R.setZero(rows, p2.out);  // the first layer's inputs are the data: dã = 0
            for (Index j = 0; j < p2.out && l2 > 0; ++j) {
              R.col(j) = (P.middleCols(j * in2, in2).array() * dAh[l2].array()).rowwise().sum();
            }
            for (Index a = 0; a < K; ++a) {
              V.col(a) = (Q.array() * dSh[l2].middleRows(a * rows, rows).array() +
                          R.array() * S[l2].middleRows(a * rows, rows).array())
                             .rowwise()
                             .sum();
            }
            MatrixXd& Eh = (*E)[static_cast<std::size_t>(h)];
            for (Index b = 0; b < K; ++b) {
              const auto s_bi = S[l].col(i).segment(b * rows, rows).array();
              for (Index a = 0; a < K; ++a) Eh.col(a + b * K).segment(start, rows).array() += s_bi * V.col(a).array();
            }
          }
        }
      }
    }
  }
  return true;
}

}  // namespace occam::internal

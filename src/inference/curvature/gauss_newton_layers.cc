// gauss_newton_layers.cc — the Gauss–Newton matrix JᵀΛJ of a layered network from its layers'
// factors: for several outputs, and for one where a layer's own block is large.
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
// rank-k update over the m·K rows of Λ^½J costs m·K·W²/2: K times fewer.
//
// Within one layer (l = l') B_n is symmetric, and so is ã_n ã_nᵀ: the entry between unit i's input p
// and unit j's input q, Σ_n B_n(i, j) ã_n(p) ã_n(q), is symmetric in (i, j) and in (p, q) apart,
// so the layer's block holds only out(out+1)/2 · in(in+1)/2 distinct values — about a quarter of
// its (out·in)² entries, where the rank-k update computes half. They come from one product
//
//     T = Σ_n vech(B_n) vech(ã_n ã_nᵀ)ᵀ = Pᵀ Q,   P(n, {i,j}) = B_n(i, j),  Q(n, {p,q}) = ã_n(p) ã_n(q),
//
// and each is written to the two entries it stands for. For a network of one hidden layer whose
// first layer holds most of the weights this nearly halves the flops even with one output (naval,
// 16 inputs and 50 units: 240 000 multiply-adds an example against the rank-k update's 406 000;
// gauss_newton_from_layers_pays decides where it is used).

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

// H_ll' of one block of rows added into the upper triangle of *M, for two different layers.
void add_layer_pair(const DenseLayer& first, const MatrixXd& A1, const MatrixXd& S1, const DenseLayer& second,
                    const MatrixXd& A2, const MatrixXd& S2, Index rows, Index K, MatrixXd* M) {
  const Index in1 = A1.cols(), in2 = A2.cols();
  MatrixXd B(rows, second.out), C, G;
  for (Index i = 0; i < first.out; ++i) {
    // B(n, j) = B_n(i, j) = Σ_k δ_(k,n)(i) δ'_(k,n)(j).
    B = S2.topRows(rows).array().colwise() * S1.col(i).head(rows).array();
    for (Index k = 1; k < K; ++k) {
      B.array() += S2.middleRows(k * rows, rows).array().colwise() * S1.col(i).segment(k * rows, rows).array();
    }
    C.resize(rows, second.out * in2);
    for (Index j = 0; j < second.out; ++j) C.middleCols(j * in2, in2) = A2.array().colwise() * B.col(j).array();
    G.resize(in1, second.out * in2);
    multiply(A1, true, C, 0.0, G);
    for (Index j = 0; j < second.out; ++j) {
      for (Index q = 0; q < in2; ++q) {
        const Index c = second.parameter_index(j, q);
        for (Index p = 0; p < in1; ++p) {
          const Index r = first.parameter_index(i, p);
          (*M)(std::min(r, c), std::max(r, c)) += G(p, j * in2 + q);
        }
      }
    }
  }
}

// With one output the rank-k update is one BLAS call over W columns at about the dgemm rate, and
// the layers' products gain only through each layer's own block: its product Pᵀ Q uses each value
// of P in(in+1)/2 times, and P is formed at the speed of memory. On this project's benchmark
// (bench/evidence_bench.cc, BM_GaussNewtonDense: 10 741 rows, one hidden layer of 50 or 100 units)
// it was no faster than the rank-k update with 4 inputs (15 input pairs with the bias) and faster
// from 8 (45 pairs) on: 1.24–1.30× there, 1.36–1.62× at 16 and 32 inputs (docs/BENCHMARKS.md). So with one
// output the layers are used only where every layer of several units has at least kMinInputPairs
// input pairs, and every pair of layers has a layer of one unit (the product per unit of
// add_layer_pair is then one large product).
constexpr Index kMinInputPairs = 45;  // 8 inputs and the bias

// The index of the unordered pair {a, b}, a ≤ b, in a packed upper triangle (column-major).
Index packed(Index a, Index b) { return b * (b + 1) / 2 + a; }

// A layer's inputs ã_n: its inputs and, with biases, the constant 1.
Index input_width(const DenseLayer& layer) { return layer.in + (layer.has_biases() ? 1 : 0); }

// Rows of P and Q formed at a time, and columns of P (pairs of units): P stays within 1 MB.
constexpr Index kPackedRows = 256;
constexpr Index kPackedColumns = 512;

// T += Pᵀ Q over one block of rows of one layer (ã_n with its 1, S its rows' sensitivities,
// output-major): the distinct values of the layer's block (file comment); for a layer of one unit,
// the block itself.
void accumulate_same_layer(const MatrixXd& A, const MatrixXd& S, Index rows, Index K, MatrixXd* T) {
  const Index in = A.cols(), out = S.cols();
  if (out == 1) {
    // One unit: B_n = Σ_k δ_(k,n)² ≥ 0, and the block is the rank-k update of the rows B_n^½ ã_n
    // (in × in, upper triangle).
    Eigen::VectorXd b = S.col(0).head(rows).cwiseAbs2();
    for (Index k = 1; k < K; ++k) b += S.col(0).segment(k * rows, rows).cwiseAbs2();
    const MatrixXd U = A.array().colwise() * b.cwiseSqrt().array();
    rank_update_upper(U, T);
    return;
  }
  MatrixXd P, Q;
  for (Index start = 0; start < rows; start += kPackedRows) {
    const Index r = std::min(kPackedRows, rows - start);
    Q.resize(r, in * (in + 1) / 2);
    for (Index q = 0; q < in; ++q)
      for (Index p = 0; p <= q; ++p)
        Q.col(packed(p, q)) = A.col(p).segment(start, r).cwiseProduct(A.col(q).segment(start, r));
    // P a few units j at a time (the pairs i ≤ j of units j0 ≤ j < j1 are contiguous columns), so
    // that it is still in cache when the product reads it.
    for (Index j0 = 0, j1; j0 < out; j0 = j1) {
      const Index first = packed(0, j0);
      for (j1 = j0 + 1; j1 < out && packed(0, j1 + 1) - first <= kPackedColumns;) ++j1;
      const Index pairs = packed(0, j1) - first;
      P.resize(r, pairs);
      for (Index j = j0; j < j1; ++j) {
        for (Index i = 0; i <= j; ++i) {
          auto column = P.col(packed(i, j) - first);
          column = S.col(i).segment(start, r).cwiseProduct(S.col(j).segment(start, r));
          for (Index k = 1; k < K; ++k) {
            column += S.col(i).segment(k * rows + start, r).cwiseProduct(S.col(j).segment(k * rows + start, r));
          }
        }
      }
      multiply(P, true, Q, 1.0, T->middleRows(first, pairs));
    }
  }
}

// Each value of T into the upper triangle of *M at the entries it stands for: unit i's input p
// with unit j's input q and, for i ≠ j and p ≠ q, unit i's input q with unit j's input p.
void scatter_same_layer(const DenseLayer& layer, const MatrixXd& T, MatrixXd* M) {
  const Index in = input_width(layer);
  const auto add = [M](Index r, Index c, double value) { (*M)(std::min(r, c), std::max(r, c)) += value; };
  if (layer.out == 1) {  // T is the block itself (upper triangle)
    for (Index q = 0; q < in; ++q)
      for (Index p = 0; p <= q; ++p) add(layer.parameter_index(0, p), layer.parameter_index(0, q), T(p, q));
    return;
  }
  for (Index j = 0; j < layer.out; ++j) {
    for (Index i = 0; i <= j; ++i) {
      for (Index q = 0; q < in; ++q) {
        for (Index p = 0; p <= q; ++p) {
          const double value = T(packed(i, j), packed(p, q));
          add(layer.parameter_index(i, p), layer.parameter_index(j, q), value);
          if (i != j && p != q) add(layer.parameter_index(i, q), layer.parameter_index(j, p), value);
        }
      }
    }
  }
}

}  // namespace

bool gauss_newton_from_layers_pays(const Posterior& posterior) {
  const std::vector<DenseLayer> places = posterior.network().dense_layers();
  if (places.empty()) return false;
  if (posterior.network().num_outputs() > 1) return true;  // K times fewer flops
  bool hidden = false;  // a layer of several units, whose block has the double symmetry
  for (std::size_t l = 0; l < places.size(); ++l) {
    hidden = hidden || places[l].out > 1;
    const Index in = input_width(places[l]);
    if (places[l].out > 1 && in * (in + 1) / 2 < kMinInputPairs) return false;
    for (std::size_t l2 = l + 1; l2 < places.size(); ++l2) {
      if (places[l].out > 1 && places[l2].out > 1) return false;
    }
  }
  return hidden;
}

bool accumulate_gauss_newton_from_layers(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                         Index block_rows, MatrixXd* M) {
  const std::vector<DenseLayer> places = posterior.network().dense_layers();
  if (places.empty()) return false;
  const Index W = posterior.dim(), m = posterior.num_data(), K = posterior.network().num_outputs();
  M->resize(W, W);
  M->triangularView<Eigen::Upper>().setZero();
  std::vector<MatrixXd> inputs, deltas, same(places.size());
  for (std::size_t l = 0; l < places.size(); ++l) {
    const Index in = input_width(places[l]), out = places[l].out;
    if (out == 1) {
      same[l].setZero(in, in);
    } else {
      same[l].setZero(out * (out + 1) / 2, in * (in + 1) / 2);
    }
  }
  for (Index start = 0; start < m; start += block_rows) {
    const Index rows = std::min(block_rows, m - start);
    if (!block_factors(posterior, w, places, start, rows, true, &inputs, &deltas)) return false;
    for (std::size_t l = 0; l < places.size(); ++l) {
      accumulate_same_layer(inputs[l], deltas[l], rows, K, &same[l]);
      for (std::size_t l2 = l + 1; l2 < places.size(); ++l2) {
        // One product per unit of the first argument: the layer with fewer units goes first.
        if (places[l2].out < places[l].out) {
          add_layer_pair(places[l2], inputs[l2], deltas[l2], places[l], inputs[l], deltas[l], rows, K, M);
        } else {
          add_layer_pair(places[l], inputs[l], deltas[l], places[l2], inputs[l2], deltas[l2], rows, K, M);
        }
      }
    }
  }
  for (std::size_t l = 0; l < places.size(); ++l) scatter_same_layer(places[l], same[l], M);
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
    width[l] = input_width(p);
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

// mlp.cc — the multilayer perceptron: forward pass, backpropagation, Jacobians and the R-operator,
// each batched over the examples with matrix products (no loop over examples anywhere).
//
// Notation. Layer l = 1..L maps H_{l-1} (m × n_{l-1}, H_0 = X) to A_l = H_{l-1}W_lᵀ + 1b_lᵀ and
// H_l = σ(A_l); the output is F = A_L. θ stores W_l (column-major) and then b_l, which is the
// column-major W̃_l = [W_l b_l], n_l × (n_{l-1} + 1). Δ_l = ∂φ/∂A_l for φ = Σ G∘F.

#include "occam/mlp.h"

#include <cmath>
#include <memory>
#include <numbers>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/linalg.h"
#include "model/activation_kernels.h"
#include "model/network_checks.h"
#include "occam/limits.h"
#include "occam/status.h"
#include "occam/types.h"

namespace occam {
namespace {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::Ref;
using Eigen::VectorXd;
namespace ei = Eigen::internal;

// ---------------------------------------------------------------------------------------------
// Activations. Eigen 3.4 vectorises exp and log for double but not tanh or expm1, and a libm call
// per unit and example costs more than the matrix products of a forward pass. So the activations
// are written once on Eigen's packet primitives, which also have scalar versions (used for an
// array's tail). In pmin/pmax the input goes first: they return the first argument when either is
// NaN, so a NaN pre-activation stays NaN.

// 2^k for integral k in [−1022, 1023].
template <typename P>
P pow2(const P& k) {
  return ei::pldexp(ei::pset1<P>(1.0), k);
}
#ifdef EIGEN_VECTORIZE_AVX2
// The same by writing k + 1023 into the exponent field (Eigen's pldexp also copes with k outside
// the normal range, at several times the cost).
template <>
ei::Packet4d pow2(const ei::Packet4d& k) {
  const __m256i biased = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023));
  return _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52));
}
#endif
#ifdef EIGEN_VECTORIZE_SSE2
// The same for two doubles with SSE2 alone (the portable build): k + 1023 as 32-bit integers,
// spread to the low words of the two 64-bit lanes (k + 1023 ≥ 1, so the high words are zero).
template <>
ei::Packet2d pow2(const ei::Packet2d& k) {
  const __m128i biased = _mm_add_epi32(_mm_cvtpd_epi32(k), _mm_set1_epi32(1023));
  return _mm_castsi128_pd(_mm_slli_epi64(_mm_unpacklo_epi32(biased, _mm_setzero_si128()), 52));
}
#endif

// exp(t) = 2^k·(1 + q) with k = rint(t/ln 2), f = t − k·ln 2 (ln 2 in two parts, Cody & Waite
// 1980, so f is exact to an ulp), |f| ≤ ln2/2, and q = expm1(f) from its Taylor series to f¹³,
// whose truncation error is below 2^-53 relative there. Returns q and sets *scale = 2^k. No
// division, no libm call; |t| ≤ 708 keeps 2^k normal.
template <typename P>
P expm1_reduced(const P& t, P* scale) {
  const P k = ei::print(ei::pmul(t, ei::pset1<P>(1.4426950408889634)));
  const P f = ei::psub(ei::psub(t, ei::pmul(k, ei::pset1<P>(0.693145751953125))),
                       ei::pmul(k, ei::pset1<P>(1.42860682030941723212e-6)));
  constexpr double kInverseFactorials[] = {1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
                                           1.0 / 40320,     1.0 / 5040,     1.0 / 720,     1.0 / 120,
                                           1.0 / 24,        1.0 / 6,        1.0 / 2,       1.0};  // 1/12! .. 1/1!
  P q = ei::pset1<P>(1.0 / 6227020800);                                                           // 1/13!
  for (double c : kInverseFactorials) q = ei::pmadd(q, f, ei::pset1<P>(c));
  *scale = pow2(k);
  return ei::pmul(q, f);
}

// exp(t) for t ≤ 0, clamped at −708 (below which it returns e^−708 ≈ 3e−308 instead of smaller).
template <typename P>
P exp_nonpositive(const P& t) {
  P scale;
  const P q = expm1_reduced(ei::pmax(t, ei::pset1<P>(-708.0)), &scale);
  return ei::pmadd(scale, q, scale);
}

// tanh a = −u/(2 + u) with u = expm1(−2a) = 2^k·q + (2^k − 1): for k = 0 that is q itself, accurate
// to an ulp as a → 0 (where 1 − 2/(e^{2a} + 1) would lose every digit); for k ≠ 0, |u| > 0.29 and
// the parts do not cancel. |a| is capped at 20, where tanh rounds to ±1. A few ulp everywhere.
template <typename P>
P tanh_of(const P& a) {
  const P one = ei::pset1<P>(1.0), cap = ei::pset1<P>(20.0);
  P scale;
  const P q = expm1_reduced(ei::pmul(ei::pset1<P>(-2.0), ei::pmin(ei::pmax(a, ei::pnegate(cap)), cap)), &scale);
  const P u = ei::pmadd(scale, q, ei::psub(scale, one));
  return ei::pdiv(ei::pnegate(u), ei::padd(ei::pset1<P>(2.0), u));
}

// σ(a) = (a < 0 ? e : 1)/(1 + e) with e = exp(−|a|) ≤ 1: nothing overflows, and the tail σ(a) ≈ eᵃ
// (a ≪ 0) keeps its relative accuracy.
template <typename P>
P sigmoid_of(const P& a) {
  const P one = ei::pset1<P>(1.0);
  const P e = exp_nonpositive(ei::pnegate(ei::pabs(a)));
  return ei::pdiv(ei::pselect(ei::pcmp_lt(a, ei::pzero(a)), e, one), ei::padd(one, e));
}

// softplus(a) = log(1 + eᵃ) = max(a, 0) + log1p(e), e = exp(−|a|), with log1p(e) = log u − ((u − 1) − e)/u,
// u = 1 + e (the correction restores the digits of e lost in forming u; Goldberg 1991, Thm 4).
template <typename P>
P softplus_of(const P& a) {
  const P one = ei::pset1<P>(1.0);
  const P e = exp_nonpositive(ei::pnegate(ei::pabs(a)));
  const P u = ei::padd(one, e);
  const P log1p_e = ei::psub(ei::plog(u), ei::pdiv(ei::psub(ei::psub(u, one), e), u));
  return ei::padd(ei::pmax(a, ei::pzero(a)), log1p_e);
}

template <Activation kAct>
struct ActivationOp {
  template <typename P>
  P packetOp(const P& a) const {
    if constexpr (kAct == Activation::kTanh) return tanh_of(a);
    if constexpr (kAct == Activation::kSigmoid) return sigmoid_of(a);
    if constexpr (kAct == Activation::kSoftplus) return softplus_of(a);
  }
  double operator()(const double& a) const { return packetOp(a); }
};

}  // namespace
}  // namespace occam

namespace Eigen::internal {
template <occam::Activation kAct>
struct functor_traits<occam::ActivationOp<kAct>> {
  enum { Cost = 60, PacketAccess = true };
};
}  // namespace Eigen::internal

namespace occam::internal {

void tanh_portable(double* x, Index n) {
  Eigen::Map<Eigen::ArrayXd> a(x, n);
  a = a.unaryExpr(ActivationOp<Activation::kTanh>());
}

}  // namespace occam::internal

namespace occam {
namespace {

// H = σ(A), in place.
void activate(Activation act, MatrixXd& A) {
  switch (act) {
    case Activation::kTanh:
      internal::tanh_in_place(A.data(), A.size());  // AVX2 where the CPU has it, with these bits
      break;
    case Activation::kSigmoid:
      A = A.unaryExpr(ActivationOp<Activation::kSigmoid>());
      break;
    case Activation::kSoftplus:
      A = A.unaryExpr(ActivationOp<Activation::kSoftplus>());
      break;
    case Activation::kRelu:
      A = A.cwiseMax(0.0);
      break;
    case Activation::kIdentity:
      break;
  }
}

// Calls use(σ'(A)) with σ' written as an array expression in H = σ(A), which is what the forward
// pass keeps: tanh' = 1 − h², sigmoid' = h(1 − h), softplus' = sigmoid = 1 − e^{−h}, relu' = [h > 0].
template <class Derived, class Use>
void with_slope(Activation act, const Eigen::MatrixBase<Derived>& H, Use use) {
  const auto h = H.array();
  switch (act) {
    case Activation::kTanh:
      use(1.0 - h.square());
      break;
    case Activation::kSigmoid:
      use(h * (1.0 - h));
      break;
    case Activation::kSoftplus:
      use(1.0 - (-h).exp());
      break;
    case Activation::kRelu:
      use((h > 0.0).template cast<double>());
      break;
    case Activation::kIdentity:
      use(Eigen::ArrayXXd::Ones(H.rows(), H.cols()));
      break;
  }
}

// E ∘= σ'(A).
void times_slope(Activation act, const MatrixXd& H, MatrixXd& E) {
  if (act == Activation::kIdentity) return;
  with_slope(act, H, [&](const auto& s) { E.array() *= s; });
}

// d1 = σ'(A) and d2 = σ''(A), from H = σ(A): tanh'' = −2h·tanh', sigmoid'' = sigmoid'·(1 − 2h),
// softplus'' = sigmoid' = s(1 − s) with s = softplus'; relu'' = identity'' = 0.
void slopes(Activation act, const MatrixXd& H, MatrixXd* d1, MatrixXd* d2) {
  with_slope(act, H, [&](const auto& s) { *d1 = s.matrix(); });
  const auto h = H.array();
  switch (act) {
    case Activation::kTanh:
      *d2 = (-2.0 * h * d1->array()).matrix();
      break;
    case Activation::kSigmoid:
      *d2 = (d1->array() * (1.0 - 2.0 * h)).matrix();
      break;
    case Activation::kSoftplus:
      *d2 = (d1->array() * (1.0 - d1->array())).matrix();
      break;
    case Activation::kRelu:
    case Activation::kIdentity:
      d2->setZero(H.rows(), H.cols());
      break;
  }
}

// ---------------------------------------------------------------------------------------------
// Layers and passes.

// θ-shaped vectors (weights, directions, gradients) seen layer by layer.
class Layers {
 public:
  explicit Layers(const std::vector<Index>& sizes) : n_(sizes) {}
  int count() const { return static_cast<int>(n_.size()) - 1; }  // L
  Index in(int l) const { return n_[l - 1]; }
  Index out(int l) const { return n_[l]; }
  Index offset(int l) const {
    Index o = 0;
    for (int k = 1; k < l; ++k) o += n_[k] * (n_[k - 1] + 1);
    return o;
  }
  Index size(int l) const { return n_[l] * (n_[l - 1] + 1); }
  // W̃_l = [W_l b_l].
  Map<const MatrixXd> of(const double* theta, int l) const { return {theta + offset(l), out(l), in(l) + 1}; }
  Map<MatrixXd> of(double* theta, int l) const { return {theta + offset(l), out(l), in(l) + 1}; }

 private:
  const std::vector<Index>& n_;
};

// The passes' matrix products go through internal::multiply (core/linalg.h): OpenBLAS's dgemm where
// the build has it, whose kernels are chosen for the CPU when the program starts, where Eigen's are
// fixed when occam is compiled — SSE2 on a portable build, 2.6× slower at 128 × 256 × 256 on an
// AVX2 core (18.5 against 47.5 Gflop/s). One thread each: the same shapes give the same bits
// whichever thread or process runs a block.

// out = In·Wᵀ + 1bᵀ for W̃ = [W b]. The bias fills out first and the product accumulates onto it.
void affine(const Ref<const MatrixXd>& in, const Map<const MatrixXd>& Wt, MatrixXd* out) {
  const Index n_in = in.cols();
  out->resize(in.rows(), Wt.rows());
  for (Index i = 0; i < Wt.rows(); ++i) out->col(i).setConstant(Wt(i, n_in));
  internal::multiply(in, false, Wt.leftCols(n_in), true, 1.0, *out);
}

// g̃ = Δᵀ[In 1]: the gradient with respect to W̃ = [W b] of Σ Δ∘(In·Wᵀ + 1bᵀ).
void affine_gradient(const MatrixXd& delta, const Ref<const MatrixXd>& in, Map<MatrixXd> g) {
  const Index n_in = in.cols();
  internal::multiply(delta, true, in, false, 0.0, g.leftCols(n_in));
  g.col(n_in).noalias() = delta.colwise().sum().transpose();
}

// Everything a pass needs besides its inputs and outputs: the hidden activations h[l] = H_l
// (l = 1..L−1), the output f and its loss derivative df, backward deltas, and for the R-operator
// σ', σ'' of the hidden layers (d1, d2) and the forward quantities ra[l] = R{A_l}, rh[l] = R{H_l}.
struct Workspace {
  std::vector<MatrixXd> h, d1, d2, ra, rh;
  MatrixXd f, df, delta, next, rdelta, rnext, e, re;
};

// A Workspace lent for one call, from a per-thread pool. value_gradient runs thousands of times on
// the same shapes, and fresh allocations of a few hundred kB per call cost as much as its arithmetic
// (glibc hands them back to the kernel on free and the next call page-faults them in again). Each
// thread keeps the matrices of its last call. Leases nest, so a loss that evaluates a network gets
// a workspace of its own.
class WorkspaceLease {
 public:
  WorkspaceLease() {
    if (depth_ == pool_.size()) pool_.push_back(std::make_unique<Workspace>());
    workspace_ = pool_[depth_++].get();
  }
  ~WorkspaceLease() { --depth_; }
  WorkspaceLease(const WorkspaceLease&) = delete;
  WorkspaceLease& operator=(const WorkspaceLease&) = delete;
  Workspace& operator*() const { return *workspace_; }

 private:
  static thread_local std::vector<std::unique_ptr<Workspace>> pool_;
  static thread_local std::size_t depth_;
  Workspace* workspace_;
};
thread_local std::vector<std::unique_ptr<Workspace>> WorkspaceLease::pool_;
thread_local std::size_t WorkspaceLease::depth_ = 0;

// The input of layer l: X for the first layer, H_{l-1} above it.
Ref<const MatrixXd> input_of(const Ref<const MatrixXd>& X, const Workspace& ws, int l) {
  return l == 1 ? X : Ref<const MatrixXd>(ws.h[l - 1]);
}

// Fills ws.h and writes the output to *F (which may be &ws.f).
void forward_pass(const Layers& layers, Activation act, const double* w, const Ref<const MatrixXd>& X, Workspace& ws,
                  MatrixXd* F) {
  const int L = layers.count();
  ws.h.resize(L);
  for (int l = 1; l < L; ++l) {
    affine(input_of(X, ws, l), layers.of(w, l), &ws.h[l]);
    activate(act, ws.h[l]);
  }
  affine(input_of(X, ws, L), layers.of(w, L), F);
}

// Backpropagation (Rumelhart, Hinton & Williams 1986): from Δ_L = G, ∂φ/∂W̃_l = Δ_lᵀ[H_{l-1} 1] and
// Δ_{l-1} = (Δ_l W_l) ∘ σ'(A_{l-1}). Δ_{l-1} is finished a hidden unit (column) at a time: its σ'
// factor and its column sum, the bias gradient, in one pass; with one output Δ_l W_l is an outer
// product and is formed in that pass too.
void backward_pass(const Layers& layers, Activation act, const double* w, const Ref<const MatrixXd>& X, Workspace& ws,
                   const MatrixXd& G, double* grad) {
  MatrixXd* buffers[2] = {&ws.delta, &ws.next};
  const MatrixXd* delta = &G;
  const int L = layers.count();
  layers.of(grad, L).col(layers.in(L)).noalias() = G.colwise().sum().transpose();
  for (int l = L; l >= 1; --l) {
    const Index n_in = layers.in(l);
    internal::multiply(*delta, true, input_of(X, ws, l), false, 0.0, layers.of(grad, l).leftCols(n_in));
    if (l == 1) break;
    const auto W = layers.of(w, l).leftCols(n_in);
    const bool outer = delta->cols() == 1;
    MatrixXd& next = *buffers[l % 2];
    next.resize(delta->rows(), n_in);
    if (!outer) internal::multiply(*delta, false, W, false, 0.0, next);
    auto bias_gradient = layers.of(grad, l - 1).col(layers.in(l - 1));
    for (Index i = 0; i < n_in; ++i) {
      auto column = next.col(i).array();
      with_slope(act, ws.h[l - 1].col(i), [&](const auto& slope) {
        if (outer)
          column = W(0, i) * delta->col(0).array() * slope;
        else
          column *= slope;
      });
      bias_gradient[i] = column.sum();
    }
    delta = &next;
  }
}

// The R-operator (Pearlmutter 1994): R{·} = ∂/∂t (·)(w + t·v) at t = 0, for a direction v that is
// non-zero only in layers first..last.
struct Direction {
  const double* v;
  int first, last;
};

// σ' and σ'' of the hidden layers, once per forward pass.
void prepare_slopes(Activation act, Workspace& ws) {
  ws.d1.resize(ws.h.size());
  ws.d2.resize(ws.h.size());
  for (std::size_t l = 1; l < ws.h.size(); ++l) slopes(act, ws.h[l], &ws.d1[l], &ws.d2[l]);
}

// R-forward pass: R{A_l} = R{H_{l-1}}W_lᵀ + [H_{l-1} 1]Ṽ_lᵀ and R{H_l} = σ'(A_l)∘R{A_l}, where
// Ṽ_l = [V_l c_l] is layer l of v. Below v.first everything is zero and is skipped.
void r_forward(const Layers& layers, const double* w, const Direction& v, const Ref<const MatrixXd>& X, Workspace& ws) {
  const int L = layers.count();
  ws.ra.resize(L + 1);
  ws.rh.resize(L);
  for (int l = v.first; l <= L; ++l) {
    if (l <= v.last)
      affine(input_of(X, ws, l), layers.of(v.v, l), &ws.ra[l]);
    else
      ws.ra[l].setZero(X.rows(), layers.out(l));
    if (l > v.first)
      internal::multiply(ws.rh[l - 1], false, layers.of(w, l).leftCols(layers.in(l)), true, 1.0, ws.ra[l]);
    if (l < L) ws.rh[l] = (ws.d1[l].array() * ws.ra[l].array()).matrix();
  }
}

// R-backward pass with G held fixed (R{Δ_L} = 0), which leaves out = Σ_nk G_nk ∇²f_k(x_n)·v rather
// than the Gauss-Newton part that R{G} would add:
//   R{∂φ/∂W̃_l} = R{Δ_l}ᵀ[H_{l-1} 1] + Δ_lᵀ[R{H_{l-1}} 0],
//   E = Δ_l W_l, R{E} = R{Δ_l}W_l + Δ_l V_l,
//   Δ_{l-1} = σ'∘E, R{Δ_{l-1}} = σ'∘R{E} + σ''∘R{A_{l-1}}∘E.
// The pass stops at layer v.first: only layers l ≥ v.first of out are written.
// With RG = R{Δ_L} given (Λ·R{F} for a loss with output Hessian Λ), the same pass adds the
// Gauss–Newton part Jᵀ·RG: out is then the whole Hessian-vector product of the loss.
void r_backward(const Layers& layers, const double* w, const Direction& v, const Ref<const MatrixXd>& X, Workspace& ws,
                const MatrixXd& G, double* out, const MatrixXd* RG = nullptr) {
  const int L = layers.count();
  ws.delta = G;
  if (RG != nullptr) ws.rdelta = *RG;
  for (int l = L; l >= v.first; --l) {
    const Index n_in = layers.in(l);
    auto o = layers.of(out, l);
    if (l == L && RG == nullptr)
      o.setZero();
    else
      affine_gradient(ws.rdelta, input_of(X, ws, l), o);
    if (l > v.first) internal::multiply(ws.delta, true, ws.rh[l - 1], false, 1.0, o.leftCols(n_in));
    if (l == v.first) break;

    const auto W = layers.of(w, l).leftCols(n_in);
    ws.e.resize(ws.delta.rows(), n_in);
    internal::multiply(ws.delta, false, W, false, 0.0, ws.e);
    ws.re.resize(ws.delta.rows(), n_in);
    if (l <= v.last)
      internal::multiply(ws.delta, false, layers.of(v.v, l).leftCols(n_in), false, 0.0, ws.re);
    else
      ws.re.setZero();
    if (l < L || RG != nullptr) internal::multiply(ws.rdelta, false, W, false, 1.0, ws.re);
    const auto d1 = ws.d1[l - 1].array(), d2 = ws.d2[l - 1].array();
    ws.rnext = (d1 * ws.re.array() + d2 * ws.ra[l - 1].array() * ws.e.array()).matrix();
    ws.next = (d1 * ws.e.array()).matrix();
    ws.delta.swap(ws.next);
    ws.rdelta.swap(ws.rnext);
  }
}

// The closed form of Σ_nk G_nk ∇²f_k(x_n) for one hidden layer, f = W₂σ(W₁x + b₁) + b₂ (W₂ without
// b₂ below). With x̃ = [x 1], E = G·W₂ (m × H) and σ', σ'' at A₁, the only non-zero entries are
//   ∂²/∂W̃₁(i,j)∂W̃₁(i,j') = Σ_n E_ni σ''_ni x̃_nj x̃_nj'   (block-diagonal over hidden units i),
//   ∂²/∂W̃₁(i,j)∂W₂(k,i)  = Σ_n G_nk σ'_ni x̃_nj;
// the rest vanish because f is linear in W̃₂. O(m·H·D²) instead of W R-operator passes. As blocks:
// unit i's input weights and bias (θ indices i + j·H, j = 0..D) and its output weights
// (offset2 + k + i·K), a (D + 1 + K)² block whose output-weight corner is zero.
void one_hidden_layer_curvature_blocks(const Layers& layers, const double* w, const Ref<const MatrixXd>& X,
                                       const Workspace& ws, const MatrixXd& G, CurvatureBlocks* out) {
  const Index D = layers.in(1), H = layers.out(1), K = layers.out(2), b = D + 1 + K;
  const Index offset2 = layers.offset(2);
  MatrixXd Xt(X.rows(), D + 1);
  Xt << X, VectorXd::Ones(X.rows());
  const MatrixXd c = ((G * layers.of(w, 2).leftCols(H)).array() * ws.d2[1].array()).matrix();  // E∘σ''
  out->index.assign(static_cast<std::size_t>(H), std::vector<Index>(static_cast<std::size_t>(b)));
  out->block.assign(static_cast<std::size_t>(H), MatrixXd::Zero(b, b));
  MatrixXd weighted(X.rows(), D + 1);
  for (Index i = 0; i < H; ++i) {
    std::vector<Index>& index = out->index[static_cast<std::size_t>(i)];
    for (Index j = 0; j <= D; ++j) index[static_cast<std::size_t>(j)] = i + j * H;
    for (Index k = 0; k < K; ++k) index[static_cast<std::size_t>(D + 1 + k)] = offset2 + k + i * K;
    weighted = Xt.array().colwise() * c.col(i).array();
    out->block[static_cast<std::size_t>(i)].topLeftCorner(D + 1, D + 1).noalias() = Xt.transpose() * weighted;
  }
  MatrixXd cross(H, D + 1), scaled(X.rows(), H);
  for (Index k = 0; k < K; ++k) {
    scaled = ws.d1[1].array().colwise() * G.col(k).array();
    cross.noalias() = scaled.transpose() * Xt;
    for (Index i = 0; i < H; ++i) {
      MatrixXd& block = out->block[static_cast<std::size_t>(i)];
      block.block(0, D + 1 + k, D + 1, 1) = cross.row(i).transpose();
      block.block(D + 1 + k, 0, 1, D + 1) = cross.row(i);
    }
  }
}

// The same, scattered into the zeroed W × W *out.
void one_hidden_layer_curvature(const Layers& layers, const double* w, const Ref<const MatrixXd>& X,
                                const Workspace& ws, const MatrixXd& G, MatrixXd* out) {
  CurvatureBlocks blocks;
  one_hidden_layer_curvature_blocks(layers, w, X, ws, G, &blocks);
  for (std::size_t u = 0; u < blocks.index.size(); ++u) {
    const std::vector<Index>& index = blocks.index[u];
    for (std::size_t j = 0; j < index.size(); ++j)
      for (std::size_t i = 0; i < index.size(); ++i)
        (*out)(index[i], index[j]) = blocks.block[u](static_cast<Index>(i), static_cast<Index>(j));
  }
}

// The Mlp at one (w, X): the forward pass and σ', σ'' of every hidden layer kept in a Workspace of
// its own, so that each product is one R-forward (and R-backward) pass.
class MlpLinearisation final : public Linearisation {
 public:
  MlpLinearisation(const std::vector<Index>& sizes, Activation act, const Ref<const VectorXd>& w,
                   const Ref<const MatrixXd>& X)
      : sizes_(sizes), act_(act), w_(w), X_(X) {
    forward_pass(layers(), act_, w_.data(), X_, ws_, &ws_.f);
    prepare_slopes(act_, ws_);
  }
  const MatrixXd& output() const override { return ws_.f; }
  void jvp(const Ref<const VectorXd>& v, MatrixXd* Jv) const override {
    check(nullptr, &v);
    r_forward(layers(), w_.data(), {v.data(), 1, layers().count()}, X_, ws_);
    *Jv = ws_.ra[layers().count()];
  }
  void vjp(const MatrixXd& G, VectorXd* grad) const override {
    check(&G, nullptr);
    grad->resize(w_.size());
    backward_pass(layers(), act_, w_.data(), X_, ws_, G, grad->data());
  }
  void curvature_vp(const MatrixXd& G, const Ref<const VectorXd>& v, VectorXd* out) const override {
    check(&G, &v);
    const Direction direction{v.data(), 1, layers().count()};
    r_forward(layers(), w_.data(), direction, X_, ws_);
    VectorXd result(w_.size());  // v may alias *out
    r_backward(layers(), w_.data(), direction, X_, ws_, G, result.data());
    out->swap(result);
  }
  void hessian_vp(const MatrixXd& G, const OutputHessian& output_hessian, const Ref<const VectorXd>& v,
                  VectorXd* out) const override {
    check(&G, &v);
    const Direction direction{v.data(), 1, layers().count()};
    r_forward(layers(), w_.data(), direction, X_, ws_);
    const MatrixXd RG = output_hessian(ws_.ra[layers().count()]);
    if (RG.rows() != X_.rows() || RG.cols() != sizes_.back()) {
      throw Error(ErrorKind::kInvalidArgument, "hessian_vp: the output Hessian's product has the wrong shape");
    }
    VectorXd result(w_.size());
    r_backward(layers(), w_.data(), direction, X_, ws_, G, result.data(), &RG);
    out->swap(result);
  }

 private:
  Layers layers() const { return Layers(sizes_); }
  void check(const MatrixXd* G, const Ref<const VectorXd>* v) const {
    if (G != nullptr && (G->rows() != X_.rows() || G->cols() != sizes_.back())) {
      throw Error(ErrorKind::kInvalidArgument, "linearisation: the output derivative has the wrong shape");
    }
    if (v != nullptr && v->size() != w_.size()) {
      throw Error(ErrorKind::kInvalidArgument, "linearisation: v has " + std::to_string(v->size()) +
                                                   " entries, expected " + std::to_string(w_.size()));
    }
  }

  std::vector<Index> sizes_;
  Activation act_;
  VectorXd w_;
  Ref<const MatrixXd> X_;
  mutable Workspace ws_;
};

std::string join_sizes(const std::vector<Index>& sizes) {
  std::string s;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) s += '-';
    s += std::to_string(sizes[i]);
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const char* to_string(Activation a) { return enum_names<Activation>().name(a); }

Activation parse_activation(std::string_view name) { return enum_names<Activation>().parse(name); }

bool is_odd(Activation a) { return a == Activation::kTanh || a == Activation::kIdentity; }

Mlp::Mlp(Index inputs, std::vector<Index> hidden, Activation activation, Index outputs) : activation_(activation) {
  sizes_.push_back(inputs);
  sizes_.insert(sizes_.end(), hidden.begin(), hidden.end());
  sizes_.push_back(outputs);
  for (Index n : sizes_)
    if (n < 1) throw Error(ErrorKind::kInvalidArgument, "mlp " + join_sizes(sizes_) + ": every layer needs a unit");
  // W = Σ_l n_l (n_{l-1} + 1), counted so that it cannot overflow: every n_l ≤ kMaxParameters makes
  // each term fit in an Index, and the running total is checked after each layer.
  Index total = 0;
  for (std::size_t l = 1; l < sizes_.size() && total <= kMaxParameters; ++l) {
    const Index in = sizes_[l - 1], out = sizes_[l];
    total = in > kMaxParameters || out > kMaxParameters ? kMaxParameters + 1 : total + out * (in + 1);
  }
  if (total > kMaxParameters) {
    throw Error(ErrorKind::kInvalidArgument, "mlp " + join_sizes(sizes_) + ": more than " +
                                                 std::to_string(kMaxParameters) +
                                                 " parameters, the most a network may have (layer sizes too large)");
  }
  num_params_ = total;
}

std::unique_ptr<Network> Mlp::clone() const { return std::make_unique<Mlp>(*this); }

std::vector<ParamGroup> Mlp::default_groups() const {
  const Layers layers(sizes_);
  const int L = layers.count();
  auto weights = [&](int l) { return ParamBlock{layers.offset(l), layers.out(l) * layers.in(l)}; };
  auto biases = [&](int l) { return ParamBlock{layers.offset(l) + layers.out(l) * layers.in(l), layers.out(l)}; };
  if (L == 1) return {{"weights", {weights(1)}}, {"biases", {biases(1)}}};
  ParamGroup hidden_biases{"hidden_biases", {}}, hidden_weights{"hidden_weights", {}};
  for (int l = 1; l < L; ++l) hidden_biases.blocks.push_back(biases(l));
  for (int l = 2; l < L; ++l) hidden_weights.blocks.push_back(weights(l));
  std::vector<ParamGroup> groups = {
      {"input_weights", {weights(1)}}, hidden_biases, {"output_weights", {weights(L)}}, {"output_biases", {biases(L)}}};
  if (L > 2) groups.push_back(hidden_weights);
  return groups;
}

Eigen::VectorXd Mlp::initial_params(Rng& rng) const {
  const Layers layers(sizes_);
  VectorXd w = VectorXd::Zero(num_params_);
  for (int l = 1; l <= layers.count(); ++l) {
    auto W = layers.of(w.data(), l).leftCols(layers.in(l));
    const double sd = 1.0 / std::sqrt(static_cast<double>(layers.in(l)));
    for (Index j = 0; j < W.cols(); ++j)
      for (Index i = 0; i < W.rows(); ++i) W(i, j) = sd * rng.normal();
  }
  return w;
}

void Mlp::forward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                  Eigen::MatrixXd* F) const {
  detail::check_args(*this, w, X);
  WorkspaceLease ws;
  forward_pass(Layers(sizes_), activation_, w.data(), X, *ws, F);
}

void Mlp::backward(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                   const Eigen::MatrixXd& G, Eigen::VectorXd* grad) const {
  detail::check_args(*this, w, X, &G);
  const Layers layers(sizes_);
  WorkspaceLease ws;
  forward_pass(layers, activation_, w.data(), X, *ws, &(*ws).f);
  grad->resize(num_params_);
  backward_pass(layers, activation_, w.data(), X, *ws, G, grad->data());
}

double Mlp::value_gradient(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                           const OutputLoss& loss, Eigen::VectorXd* grad) const {
  detail::check_args(*this, w, X);
  const Layers layers(sizes_);
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  const double value = loss(ws.f, &ws.df);
  detail::check_args(*this, w, X, &ws.df);
  grad->resize(num_params_);
  backward_pass(layers, activation_, w.data(), X, ws, ws.df, grad->data());
  return value;
}

void Mlp::jvp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
              const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::MatrixXd* Jv) const {
  detail::check_args(*this, w, X, nullptr, &v);
  const Layers layers(sizes_);
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  prepare_slopes(activation_, ws);
  r_forward(layers, w.data(), {v.data(), 1, layers.count()}, X, ws);
  *Jv = ws.ra[layers.count()];
}

// Row k·m + n of J is ∂f_k(x_n)/∂θ. Backpropagating G = 1e_kᵀ gives Δ_l^{(k)}, and the columns of
// J for W̃_l(·, j) are Δ_l^{(k)} scaled row-wise by column j of [H_{l-1} 1]: n_l adjacent columns.
void Mlp::jacobian(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                   Eigen::MatrixXd* J) const {
  detail::check_args(*this, w, X);
  const Layers layers(sizes_);
  const Index m = X.rows(), K = num_outputs();
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  J->resize(m * K, num_params_);
  for (Index k = 0; k < K; ++k) {
    ws.delta.setZero(m, K);
    ws.delta.col(k).setOnes();
    for (int l = layers.count(); l >= 1; --l) {
      const auto in = input_of(X, ws, l);
      const Index n = layers.out(l), base = layers.offset(l);
      for (Index j = 0; j < in.cols(); ++j)
        J->block(k * m, base + j * n, m, n) = ws.delta.array().colwise() * in.col(j).array();
      J->block(k * m, base + in.cols() * n, m, n) = ws.delta;
      if (l == 1) break;
      ws.next.noalias() = ws.delta * layers.of(w.data(), l).leftCols(layers.in(l));
      times_slope(activation_, ws.h[l - 1], ws.next);
      ws.delta.swap(ws.next);
    }
  }
}

std::vector<DenseLayer> Mlp::dense_layers() const {
  // θ layer by layer: W_l (out × in, column-major: unit-major) then b_l.
  std::vector<DenseLayer> layers;
  Index offset = 0;
  for (std::size_t l = 1; l < sizes_.size(); ++l) {
    layers.push_back({sizes_[l - 1], sizes_[l], offset, /*unit_major=*/true, offset + sizes_[l] * sizes_[l - 1]});
    offset += sizes_[l] * (sizes_[l - 1] + 1);
  }
  return layers;
}

void Mlp::layer_gradients(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                          const SeedsAt& seeds_at, LayerGradients* out) const {
  detail::check_args(*this, w, X);
  const Layers layers(sizes_);
  const Index m = X.rows(), K = num_outputs();
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  MatrixXd seeds;
  seeds_at(ws.f, &seeds);
  detail::check_seeds(*this, seeds, m);
  const int L = layers.count();
  out->inputs.resize(L);
  out->deltas.resize(L);
  for (int l = 1; l <= L; ++l) {
    out->inputs[l - 1] = input_of(X, ws, l);
    out->deltas[l - 1].resize(m * K, layers.out(l));
  }
  // The backward pass of jacobian() above, from the seed S_n(k, ·) instead of e_k.
  for (Index k = 0; k < K; ++k) {
    ws.delta.resize(m, K);
    for (Index j = 0; j < K; ++j) ws.delta.col(j) = seeds.col(k + j * K);
    for (int l = L; l >= 1; --l) {
      out->deltas[l - 1].middleRows(k * m, m) = ws.delta;
      if (l == 1) break;
      ws.next.noalias() = ws.delta * layers.of(w.data(), l).leftCols(layers.in(l));
      times_slope(activation_, ws.h[l - 1], ws.next);
      ws.delta.swap(ws.next);
    }
  }
}

void Mlp::curvature_vp(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                       const Eigen::MatrixXd& G, const Eigen::Ref<const Eigen::VectorXd>& v,
                       Eigen::VectorXd* out) const {
  detail::check_args(*this, w, X, &G, &v);
  const Layers layers(sizes_);
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  prepare_slopes(activation_, ws);
  const Direction direction{v.data(), 1, layers.count()};
  r_forward(layers, w.data(), direction, X, ws);
  VectorXd result(num_params_);  // not *out directly: v may alias it
  r_backward(layers, w.data(), direction, X, ws, G, result.data());
  out->swap(result);
}

std::unique_ptr<Linearisation> Mlp::linearise(const Eigen::Ref<const Eigen::VectorXd>& w,
                                              const Eigen::Ref<const Eigen::MatrixXd>& X) const {
  detail::check_args(*this, w, X);
  return std::make_unique<MlpLinearisation>(sizes_, activation_, w, X);
}

// One hidden layer: the closed form above. Deeper: one forward pass shared by W R-operator passes,
// each starting at the layer of its unit direction e_d (below it R{·} = 0) and stopping there, so
// it fills column d only for rows in layers at or above d's; the rest follows by symmetry.
void Mlp::curvature_matrix(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                           const Eigen::MatrixXd& G, Eigen::MatrixXd* out) const {
  detail::check_args(*this, w, X, &G);
  const Layers layers(sizes_);
  const int L = layers.count();
  const Index W = num_params_;
  out->setZero(W, W);
  if (L == 1) return;  // f is linear in θ
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  prepare_slopes(activation_, ws);
  if (L == 2) return one_hidden_layer_curvature(layers, w.data(), X, ws, G, out);

  VectorXd e = VectorXd::Zero(W), column(W);
  for (int l = 1; l <= L; ++l) {
    const Index begin = layers.offset(l);
    for (Index d = begin; d < begin + layers.size(l); ++d) {
      e[d] = 1.0;
      const Direction direction{e.data(), l, l};
      r_forward(layers, w.data(), direction, X, ws);
      r_backward(layers, w.data(), direction, X, ws, G, column.data());
      out->col(d).tail(W - begin) = column.tail(W - begin);
      e[d] = 0.0;
    }
  }
  for (Index j = 1; j < W; ++j) out->col(j).head(j) = out->row(j).head(j).transpose();
}

bool Mlp::curvature_blocks(const Eigen::Ref<const Eigen::VectorXd>& w, const Eigen::Ref<const Eigen::MatrixXd>& X,
                           const Eigen::MatrixXd& G, CurvatureBlocks* out) const {
  detail::check_args(*this, w, X, &G);
  const Layers layers(sizes_);
  if (layers.count() != 2) return false;  // deeper: adjacent layers' units are coupled
  WorkspaceLease lease;
  Workspace& ws = *lease;
  forward_pass(layers, activation_, w.data(), X, ws, &ws.f);
  prepare_slopes(activation_, ws);
  one_hidden_layer_curvature_blocks(layers, w.data(), X, ws, G, out);
  return true;
}

nlohmann::json Mlp::to_json() const {
  return {{"type", "mlp"}, {"layers", sizes_}, {"activation", to_string(activation_)}};
}

std::string Mlp::describe() const { return "mlp " + join_sizes(sizes_) + " " + to_string(activation_); }

std::optional<InputWeightLayout> Mlp::input_weight_layout() const {
  return InputWeightLayout{sizes_.size() > 2 ? "input_weights" : "weights", sizes_[1], /*node_major=*/true};
}

double Mlp::symmetry_log_factor() const {
  return symmetry_log_factor(std::vector<Index>(sizes_.begin() + 1, sizes_.end() - 1));
}

double Mlp::symmetry_log_factor(const std::vector<Index>& units_per_hidden_layer) const {
  // H! orderings of each hidden layer's units give the same function; for tanh (odd) a unit's
  // sign can be flipped too, and for the logistic sigmoid (σ(−a) = 1 − σ(a)) the flip is
  // absorbed by the next layer's bias: 2^H more (MacKay 1992b, §4; Bishop 1995, §4.4).
  const bool sign_flip = activation_ == Activation::kTanh || activation_ == Activation::kSigmoid;
  double log_factor = 0.0;
  for (const Index units : units_per_hidden_layer) {
    const double H = static_cast<double>(units);
    log_factor += std::lgamma(H + 1.0) + (sign_flip ? H * std::numbers::ln2 : 0.0);
  }
  return log_factor;
}

}  // namespace occam

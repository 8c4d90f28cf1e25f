// total_gradient.cc — the exact gradient of the Laplace log-evidence in log θ, with w_MAP moving.
//
//   L(φ) = log p(D | w*) + log p(w* | θ) + (W/2) log 2π − ½ log|A(w*, φ)|,  A = JᵀΛJ + P(θ),
//   dL/dφ_k = ∂L/∂φ_k |_w  −  ½ tr(A⁻¹ dA[u_k]),   u_k = dw*/dφ_k = (∇∇S)⁻¹ b_k,
// with b_k = ∂(∇ log p(w, D))/∂φ_k (−θ_k P_k w* for a prior hyperparameter, −β∇E_D for β): the
// implicit-function theorem at the mode, where ∇ log p(w*, D) = 0 and so the first two terms move
// only through φ. ∂L/∂φ_k |_w is MacKay's ½γ_k − θ_k E_k. The directional derivative of A along u:
//   tr(A⁻¹ dA[u]) = Σ_n tr(C_n dΛ_n[J_n u]) + 2 Σ_n tr(Λ_n J_n A⁻¹ dJ_n[u]ᵀ),  C_n = J_n A⁻¹ J_nᵀ,
// where dΛ_n is the likelihood's own third derivative (exact) and dJ[u] the directional derivative
// of the network's Jacobian, zero for a linear model and otherwise a central difference of J
// along u with step h = ε^⅓·max(1, ‖w‖∞)/‖u‖∞: truncation O(h²) and rounding O(ε/h) balance at a
// relative error of order ε^⅔ ≈ 4e-11 (times the ratio of J's third to first derivatives).
// u_k is solved by conjugate gradients on the exact Hessian-vector product (exact_hessian.h),
// preconditioned by the factor of A: for a GLM with a canonical link ∇∇S = A and one iteration
// suffices; for a network a few.
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "inference/evidence/engine.h"
#include "inference/evidence/exact_hessian.h"
#include "inference/evidence/prior_pieces.h"
#include "core/linalg.h"
#include "occam/callback.h"

namespace occam {
namespace {

// Rows of X handled at once, so that the Jacobian blocks stay small whatever m is.
constexpr Index kBlockRows = 1024;
// Up to this many weights, dw*/dφ is solved with ∇∇S formed and factored rather than by
// conjugate gradients: m·W² + W³/3 flops through BLAS against some 50–100 iterations of
// matrix-free products per right-hand side. On breast cancer (398 rows, 30 inputs, 50 units,
// W = 1601, Bernoulli) the fit took 30.0 s of CPU with the factor and 42.4 s by conjugate
// gradients (docs/BENCHMARKS.md, "Classifiers").
constexpr Index kDenseExactSolve = 3000;

// Whether the likelihood's Gauss–Newton weights are its exact output Hessian at F (a canonical
// link: every family but hetero, whose weights are Fisher's), so that Posterior::data_hessian
// with HessianKind::kExact is ∇∇ of −log p(D|w).
bool exact_weights_are_gauss_newton(const Likelihood& likelihood, const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) {
  OutputDerivatives d;
  likelihood.neg_log_derivatives(F, Y, &d);
  const Eigen::MatrixXd exact = likelihood.neg_log_hessian(F, Y);
  return exact.rows() == d.hessian.rows() && exact.cols() == d.hessian.cols() && exact == d.hessian;
}

}  // namespace

namespace evidence {

TotalGradient total_gradient(const Posterior& posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma,
                             const InverseCurvature& solve_A, const Eigen::MatrixXd* guess,
                             bool along_stationary_points, const internal::Curvature* curvature) {
  const Prior& prior = posterior.prior();
  const Network& net = posterior.network();
  const Likelihood& likelihood = posterior.likelihood();
  const Index W = w.size(), J = prior.num_hyperparameters();
  const bool has_beta = likelihood.has_precision();
  const Index num_hyper = J + (has_beta ? 1 : 0);
  const bool linear = net.linear_in_weights();

  // b_k, then u_k = dw*/dφ_k.
  Eigen::MatrixXd U;
  U.resize(W, num_hyper);
  {
    // The right-hand sides b_k.
    Eigen::MatrixXd rhs(W, num_hyper);
    const std::vector<PriorPiece> pieces = prior_pieces(prior);
    const Eigen::VectorXd theta = prior.hyperparameters();
    for (Index k = 0; k < J; ++k) rhs.col(k) = -theta[k] * apply_piece(pieces[static_cast<std::size_t>(k)], w);
    Eigen::MatrixXd F;
    net.forward(w, posterior.X(), &F);
    if (has_beta) {
      // −β∇E_D = β Jᵀ(y − f) (β JᵀΩ(y − f) with row weights): the log-likelihood's output gradient.
      Eigen::VectorXd b;
      Eigen::MatrixXd dF;
      likelihood.log_likelihood(F, posterior.Y(), &dF);
      net.backward(w, posterior.X(), dF, &b);
      rhs.col(J) = b;
    }
    bool form_and_factor =
        !linear && W <= kDenseExactSolve && exact_weights_are_gauss_newton(likelihood, F, posterior.Y());
    // dw*/dφ solved: the rest of the gradient, and whether ∇∇S was found positive definite.
    const auto finish = [&](Eigen::MatrixXd solved, bool definite) {
      TotalGradient out = finish_total_gradient(posterior, w, gamma, solve_A, std::move(solved), curvature);
      out.definite = definite;
      return out;
    };
    bool found_indefinite = false;  // by the blocks' pivots or a failed Cholesky factor
    if (form_and_factor) {
      // At most half as many rows as weights and ∇∇S = (P + R) + ZᵀZ with P + R block diagonal (one hidden
      // layer): Woodbury over the rows, m·W·b + n²W + n³/3 flops (exact_hessian.h), with the
      // answers of the factor below (an indefinite ∇∇S only where LU would solve it).
      bool indefinite_by_pivots = false;
      if (std::optional<Eigen::MatrixXd> by_blocks =
              solve_exact_hessian_by_blocks(posterior, w, rhs, along_stationary_points, &indefinite_by_pivots)) {
        return finish(std::move(*by_blocks), !indefinite_by_pivots);
      }
      // Indefinite by the pivots and not to be solved as a saddle's motion: the Cholesky factor
      // below would fail, so on to conjugate gradients without forming ∇∇S.
      form_and_factor = !indefinite_by_pivots || along_stationary_points;
      found_indefinite = indefinite_by_pivots;
    }
    if (form_and_factor) {
      // ∇∇S formed (Gauss–Newton part plus Σ_n g_n ∇²f_n, Posterior::data_hessian) and factored:
      // m·W² + W³/3 flops, against some 50–100 conjugate-gradient iterations of ~6 m·W per
      // right-hand side on a network.
      Eigen::MatrixXd H = posterior.data_hessian(w, HessianKind::kExact);
      prior.add_precision_to(&H);
      std::optional<Eigen::MatrixXd> indefinite;
      if (along_stationary_points) indefinite = H;
      if (internal::cholesky_lower_in_place(&H)) {
        U = rhs;
        internal::triangular_solve_lower(H, false, U);
        internal::triangular_solve_lower(H, true, U);
        if (U.allFinite()) return finish(std::move(U), true);
      } else {
        found_indefinite = true;
        if (indefinite) {
          // Not positive definite: w is a stationary point but not a minimum (a saddle), and
          // (∇∇S)⁻¹b, by LU with partial pivoting, is how w moves along the stationary points.
          U = indefinite->partialPivLu().solve(rhs);
          if (U.allFinite()) return finish(std::move(U), false);
        }
      }
      // Not positive definite (w is not at a minimum): conjugate gradients say so below.
    }
    const ExactHessian hessian(posterior, w);
    const Preconditioner by_A = [&solve_A](const Eigen::VectorXd& r) -> Eigen::VectorXd { return solve_A(r); };
    const bool warm = guess != nullptr && guess->rows() == W && guess->cols() == num_hyper;
    bool definite = !found_indefinite;
    for (Index k = 0; k < num_hyper; ++k) {
      bool indefinite = false;
      U.col(k) = solve_exact_hessian(hessian, by_A, rhs.col(k), &indefinite,
                                     warm ? std::optional<Eigen::VectorXd>(guess->col(k)) : std::nullopt);
      definite = definite && !indefinite;
    }
    return finish(std::move(U), definite);
  }
}

TotalGradient finish_total_gradient(const Posterior& posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma,
                                    const InverseCurvature& solve_A, Eigen::MatrixXd U,
                                    const internal::Curvature* curvature) {
  const Prior& prior = posterior.prior();
  const Network& net = posterior.network();
  const Likelihood& likelihood = posterior.likelihood();
  const Index J = prior.num_hyperparameters(), K = net.num_outputs(), m = posterior.num_data(), W = w.size();
  const Index num_hyper = J + (likelihood.has_precision() ? 1 : 0);
  const bool linear = net.linear_in_weights();
  TotalGradient out;
  const Eigen::VectorXd gradient = mode_held_gradient(posterior, w, gamma);

  // tr(A⁻¹ dA[u_k]), accumulated over blocks of rows.
  Eigen::VectorXd trace = Eigen::VectorXd::Zero(num_hyper);
  const double w_scale = std::max(1.0, w.cwiseAbs().maxCoeff());
  const double h_base = std::cbrt(std::numeric_limits<double>::epsilon()) * w_scale;
  Eigen::MatrixXd F, Jb, Y_inv, Jv, J_plus, J_minus, Jb_columns, T;
  OutputDerivatives d;
  {
    // In the layered Woodbury form: C_n and J_n A⁻¹ dJ_nᵀ from the Gram matrices of the rows.
    Eigen::MatrixXd C;
    std::vector<Eigen::MatrixXd> E;
    if (curvature != nullptr && curvature->inverse_jacobian_blocks(w, U, h_base, &C, &E)) {
      net.forward(w, posterior.X(), &F);
      likelihood.neg_log_derivatives(F, posterior.Y(), &d);
      for (Index k = 0; k < num_hyper; ++k) {
        net.jvp(w, posterior.X(), U.col(k), &Jv);
        trace[k] += (C.array() * likelihood.gauss_newton_weight_derivative(F, posterior.Y(), Jv).array()).sum();
        if (linear) continue;
        const Eigen::MatrixXd& Ek = E[static_cast<std::size_t>(k)];
        double sum = 0.0;
        for (Index a = 0; a < K; ++a) {
          for (Index bb = 0; bb < K; ++bb) {
            sum += (d.hessian.col(d.hessian.cols() == 1 ? 0 : a + bb * K).array() * Ek.col(a + bb * K).array()).sum();
          }
        }
        trace[k] += 2.0 * sum;
      }
      out.gradient = gradient - 0.5 * trace;
      out.mode_derivative = std::move(U);
      return out;
    }
  }
  for (Index start = 0; start < m; start += kBlockRows) {
    const Index rows = std::min(kBlockRows, m - start);
    const auto Xb = posterior.X().middleRows(start, rows);
    const Eigen::MatrixXd Yb = posterior.Y().middleRows(start, rows);
    net.forward(w, Xb, &F);
    likelihood.neg_log_derivatives(F, Yb, &d);
    net.jacobian(w, Xb, &Jb);  // (rows·K) × W, output-major
    // Everything below works on columns of W entries, one per (output k, row n), each contiguous
    // in column-major storage: Jᵀ, A⁻¹Jᵀ, T and dJᵀ.
    Jb_columns = Jb.transpose();
    Jb.resize(0, 0);
    Y_inv = solve_A(Jb_columns);  // A⁻¹J_bᵀ: C_n,kl = J_{n,k} A⁻¹ J_{n,l}ᵀ
    // Λ_n,kl of output pair (k, l), rows × 1; one column for all pairs when K = 1.
    auto lambda = [&](Index k, Index l) { return d.hessian.col(d.hessian.cols() == 1 ? 0 : k + l * K); };
    // C is symmetric in (k, l): K(K+1)/2 column dot products of W entries per row.
    Eigen::MatrixXd C(rows, K * K);
    for (Index k = 0; k < K; ++k) {
      // K(K+1)/2 products of rows × W: minutes for hundreds of outputs, so a stop is polled here.
      if (stop_requested()) throw StoppedOnRequest("the evidence's gradient was stopped on request");
      for (Index l = k; l < K; ++l) {
        C.col(k + l * K) = (Jb_columns.middleCols(k * rows, rows).array() * Y_inv.middleCols(l * rows, rows).array())
                               .colwise()
                               .sum()
                               .transpose();
        C.col(l + k * K) = C.col(k + l * K);
      }
    }
    // T_n,a = Σ_b Λ_n,ab A⁻¹J_{n,b}ᵀ, once per block, so that each hyperparameter's term
    // Σ_n Σ_ab Λ_n,ab (J_n,b A⁻¹ dJ_n,aᵀ) = Σ_n Σ_a dJ_n,a · T_n,a costs K·W a row, not K²·W.
    // Output pairs whose Λ is zero on every row (a diagonal Λ) are skipped.
    if (!linear) {
      T.setZero(W, rows * K);
      for (Index a = 0; a < K; ++a) {
        for (Index b = 0; b < K; ++b) {
          const auto lambda_ab = lambda(a, b);
          if ((lambda_ab.array() == 0.0).all()) continue;
          T.middleCols(a * rows, rows).noalias() += Y_inv.middleCols(b * rows, rows) * lambda_ab.asDiagonal();
        }
      }
    }
    Eigen::MatrixXd& dJ_columns = Jb_columns;  // its storage, free once C is formed
    for (Index k = 0; k < num_hyper; ++k) {
      const Eigen::VectorXd u = U.col(k);
      net.jvp(w, Xb, u, &Jv);
      const Eigen::MatrixXd dLambda = likelihood.gauss_newton_weight_derivative(F, Yb, Jv);
      trace[k] += (C.array() * dLambda.array()).sum();
      if (linear) continue;
      const double u_scale = u.cwiseAbs().maxCoeff();
      if (u_scale == 0.0) continue;
      const double h = h_base / u_scale;
      net.jacobian(w + h * u, Xb, &J_plus);
      net.jacobian(w - h * u, Xb, &J_minus);
      dJ_columns = (J_plus - J_minus).transpose() / (2.0 * h);
      // 2 Σ_n Σ_ab Λ_n,ab (J_n,b A⁻¹ dJ_n,aᵀ).
      trace[k] += 2.0 * (dJ_columns.array() * T.array()).sum();
    }
  }
  out.gradient = gradient - 0.5 * trace;
  out.mode_derivative = std::move(U);
  return out;
}

}  // namespace evidence

Eigen::VectorXd total_log_evidence_gradient(const Posterior& posterior, const LaplaceApproximation& q) {
  // A⁻¹R = S SᵀR from the factor A⁻¹ = SSᵀ, whatever its form.
  const evidence::InverseCurvature solve_A = [&q](const Eigen::MatrixXd& R) -> Eigen::MatrixXd {
    return q.covariance_times(R);
  };
  return evidence::total_gradient(posterior, q.mean, well_determined_parameters(posterior.prior(), q), solve_A, nullptr,
                                  /*along_stationary_points=*/true)
      .gradient;
}

}  // namespace occam

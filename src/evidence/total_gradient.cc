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
#include <algorithm>
#include <cmath>
#include <limits>

#include "evidence/engine.h"
#include "evidence/exact_hessian.h"
#include "evidence/prior_pieces.h"
#include "occam/linear.h"

namespace occam {
namespace {

// Rows of X handled at once, so that the Jacobian blocks stay small whatever m is.
constexpr Index kBlockRows = 1024;

}  // namespace

Eigen::VectorXd total_log_evidence_gradient(const Posterior& posterior, const LaplaceApproximation& q) {
  if (q.form() == CurvatureForm::kWoodbury) {
    // The traces below solve with the Cholesky factor of A: the same A, factored densely.
    return total_log_evidence_gradient(
        posterior, laplace_from_hessian(posterior, q.mean, positive_data_hessian(posterior, q.mean, HessianKind::kGgn, nullptr)));
  }
  const Eigen::VectorXd& w = q.mean;
  const Prior& prior = posterior.prior();
  const Network& net = posterior.network();
  const Likelihood& likelihood = posterior.likelihood();
  const Index W = w.size(), J = prior.num_hyperparameters(), K = net.num_outputs(), m = posterior.num_data();
  const bool has_beta = likelihood.has_precision();
  const Index num_hyper = J + (has_beta ? 1 : 0);
  const bool linear = dynamic_cast<const Linear*>(&net) != nullptr;

  Eigen::VectorXd gradient = evidence::mode_held_gradient(posterior, w, well_determined_parameters(prior, q));

  // b_k, then u_k = dw*/dφ_k.
  Eigen::MatrixXd U(W, num_hyper);
  {
    const std::vector<evidence::PriorPiece> pieces = evidence::prior_pieces(prior);
    const Eigen::VectorXd theta = prior.hyperparameters();
    const evidence::ExactHessian hessian(posterior, w);
    const evidence::Preconditioner by_A = [&q](const Eigen::VectorXd& r) {
      Eigen::VectorXd z = q.precision_cholesky.triangularView<Eigen::Lower>().solve(r);
      q.precision_cholesky.triangularView<Eigen::Lower>().transpose().solveInPlace(z);
      return z;
    };
    for (Index k = 0; k < J; ++k) {
      U.col(k) = evidence::solve_exact_hessian(hessian, by_A,
                                               -theta[k] * evidence::apply_piece(pieces[static_cast<std::size_t>(k)], w));
    }
    if (has_beta) {
      // −β∇E_D = β Jᵀ(y − f).
      Eigen::MatrixXd F;
      net.forward(w, posterior.X(), &F);
      Eigen::VectorXd b;
      net.backward(w, posterior.X(), likelihood.precision() * (posterior.Y() - F), &b);
      U.col(J) = evidence::solve_exact_hessian(hessian, by_A, b);
    }
  }

  // tr(A⁻¹ dA[u_k]), accumulated over blocks of rows.
  Eigen::VectorXd trace = Eigen::VectorXd::Zero(num_hyper);
  const auto L = q.precision_cholesky.triangularView<Eigen::Lower>();
  const double w_scale = std::max(1.0, w.cwiseAbs().maxCoeff());
  const double h_base = std::cbrt(std::numeric_limits<double>::epsilon()) * w_scale;
  Eigen::MatrixXd F, Jb, Z, Y_inv, Jv, J_plus, J_minus;
  OutputDerivatives d;
  for (Index start = 0; start < m; start += kBlockRows) {
    const Index rows = std::min(kBlockRows, m - start);
    const auto Xb = posterior.X().middleRows(start, rows);
    const Eigen::MatrixXd Yb = posterior.Y().middleRows(start, rows);
    net.forward(w, Xb, &F);
    likelihood.neg_log_derivatives(F, Yb, &d);
    net.jacobian(w, Xb, &Jb);  // (rows·K) × W, output-major
    Z = L.solve(Jb.transpose());  // L⁻¹J_bᵀ: C_n,kl = Z_{·,k·rows+n} · Z_{·,l·rows+n}
    Eigen::MatrixXd C(rows, K * K);
    for (Index k = 0; k < K; ++k) {
      for (Index l = 0; l < K; ++l) {
        C.col(k + l * K) = (Z.middleCols(k * rows, rows).array() * Z.middleCols(l * rows, rows).array()).colwise().sum().transpose();
      }
    }
    if (!linear) Y_inv = L.transpose().solve(Z);  // A⁻¹J_bᵀ
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
      const Eigen::MatrixXd dJ = (J_plus - J_minus) / (2.0 * h);
      // 2 Σ_n Σ_ab Λ_n,ab (J_n,b A⁻¹ dJ_n,aᵀ).
      double sum = 0.0;
      for (Index a = 0; a < K; ++a) {
        for (Index bb = 0; bb < K; ++bb) {
          const Eigen::ArrayXd lambda = d.hessian.col(d.hessian.cols() == 1 ? 0 : a + bb * K).array();
          const Eigen::ArrayXd inner =
              (Y_inv.middleCols(bb * rows, rows).transpose().array() * dJ.middleRows(a * rows, rows).array()).rowwise().sum();
          sum += (lambda * inner).sum();
        }
      }
      trace[k] += 2.0 * sum;
    }
  }
  return gradient - 0.5 * trace;
}

}  // namespace occam

// linear_gaussian.cc — the exact type-II maximum likelihood of a linear model with Gaussian
// noise: Newton's method on φ = (log θ, log β) with the exact gradient and Hessian of the exact
// log-evidence, to machine precision.
//
// For y = Jw + ε, w ~ N(0, P⁻¹), P = Σ_j θ_j P_j, ε ~ N(0, β⁻¹I), with Q = JᵀJ and A = βQ + P:
//   L(φ) = ½ log|P| − ½ log|A| − ½ w*ᵀPw* − βE_D(w*) + (n/2) log β − (n/2) log 2π,  w* = βA⁻¹Jᵀy
// (MacKay 1992a, eq. 10, exact here). With M_k = θ_k P_k, M_β = βQ, Σ = A⁻¹ and, by the
// envelope theorem (w* maximises the bracket), the first derivatives
//   ∂L/∂φ_k = ½ tr(P⁻¹M_k) − ½ tr(ΣM_k) − ½ w*ᵀM_k w* = ½γ_k − θ_k E_k,
//   ∂L/∂φ_β = n/2 − ½ tr(ΣM_β) − βE_D = ½(n − γ) − βE_D.
// Differentiating again, with dw*/dφ_l = Σ s_l (s_k = −M_k w*, s_β = βJᵀ(y − Jw*)):
//   ∂²L/∂φ_k∂φ_l = δ_kl[½ tr(P⁻¹M_k) − ½ tr(ΣM_k) − c_k] − ½ tr(P⁻¹M_l P⁻¹M_k)
//                  + ½ tr(ΣM_l ΣM_k) + s_kᵀΣ s_l,
// where c_k = ½ w*ᵀM_k w* (c_β = βE_D) and the P⁻¹ terms vanish for β and cancel for a diagonal
// group (P⁻¹M_k is then a projector). Every trace comes from Σ: for diagonal pieces
// tr(ΣD_kΣD_l) = Σ_{i∈k, j∈l} θ_kθ_l Σ_ij², and ΣM_β = I − ΣP gives the β rows from the θ ones.
// Newton steps use the Hessian with its eigenvalues made negative (an ascent direction where L is
// not concave), a backtracking line search and the box [1e-10, 1e10] (a coordinate whose gradient
// points out of the box at its bound is held there).
#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "inference/evidence/engine.h"
#include "inference/evidence/prior_pieces.h"

namespace occam::evidence {
namespace {

struct Evaluation {
  bool ok = false;
  double value = 0.0;        // L(φ)
  Eigen::VectorXd gradient;  // ∂L/∂φ
  Eigen::MatrixXd hessian;   // ∂²L/∂φ∂φ (when asked for)
  Eigen::VectorXd w;         // w*(φ)
  Eigen::VectorXd gamma;     // γ_k per prior hyperparameter
};

class LinearGaussianEvidence {
 public:
  explicit LinearGaussianEvidence(const Posterior& posterior)
      : prior_(posterior.prior()), pieces_(prior_pieces(prior_)) {
    posterior.network().jacobian(Eigen::VectorXd::Zero(posterior.dim()), posterior.X(), &J_);
    y_ = Eigen::Map<const Eigen::VectorXd>(posterior.Y().data(), posterior.Y().size());
    n_ = static_cast<double>(y_.size());
    Q_ = Eigen::MatrixXd::Zero(J_.cols(), J_.cols());
    Q_.selfadjointView<Eigen::Lower>().rankUpdate(J_.transpose());
    Q_.triangularView<Eigen::StrictlyUpper>() = Q_.transpose();
    b_ = J_.transpose() * y_;
  }

  Index num_hyperparameters() const { return prior_.num_hyperparameters() + 1; }

  Evaluation evaluate(const Eigen::VectorXd& phi, bool with_hessian) {
    Evaluation e;
    const Index J = prior_.num_hyperparameters(), W = Q_.rows();
    const Eigen::VectorXd theta = phi.head(J).array().exp();
    const double beta = std::exp(phi[J]);
    prior_.set_hyperparameters(theta);
    Eigen::MatrixXd A = beta * Q_;
    prior_.add_precision_to(&A);
    const Eigen::LLT<Eigen::MatrixXd> llt(A);
    if (llt.info() != Eigen::Success) return e;
    e.w = beta * llt.solve(b_);
    const Eigen::VectorXd residual = y_ - J_ * e.w;
    const double E_D = 0.5 * residual.squaredNorm();
    const Eigen::VectorXd E = prior_.hyperparameter_energies(e.w);
    const double log_det_A = 2.0 * llt.matrixLLT().diagonal().array().log().sum();
    e.value = 0.5 * prior_.log_det_precision() - 0.5 * log_det_A - theta.dot(E) - beta * E_D +
              0.5 * n_ * std::log(beta) - 0.5 * n_ * std::log(2.0 * std::numbers::pi);
    const Eigen::MatrixXd Sigma = llt.solve(Eigen::MatrixXd::Identity(W, W));
    const Eigen::VectorXd gamma = prior_.well_determined(Sigma);  // θ_k tr(P⁻¹P_k) − θ_k tr(ΣP_k)
    e.gamma = gamma;
    e.gradient.resize(J + 1);
    e.gradient.head(J) = 0.5 * gamma - theta.cwiseProduct(E);
    e.gradient[J] = 0.5 * (n_ - gamma.sum()) - beta * E_D;
    e.ok = std::isfinite(e.value) && e.gradient.allFinite();
    if (!with_hessian || !e.ok) return e;

    // tr(ΣM_k) and tr(P⁻¹M_k) for the prior pieces, and T_kl = tr(ΣM_k ΣM_l).
    const Eigen::VectorXd tr_PM = prior_.hyperparameter_dimensions();
    const Eigen::VectorXd tr_SM = tr_PM - gamma;
    Eigen::MatrixXd T = Eigen::MatrixXd::Zero(J, J);
    const Eigen::VectorXi& group_of = prior_.group_of();
    for (Index j = 0; j < W; ++j) {
      for (Index i = 0; i < W; ++i) T(group_of[i], group_of[j]) += Sigma(i, j) * Sigma(i, j);
    }
    for (Index k = 0; k < prior_.num_groups(); ++k) {
      for (Index l = 0; l < prior_.num_groups(); ++l) T(k, l) *= theta[k] * theta[l];
    }
    Eigen::MatrixXd S(W, J + 1);  // the columns s_k = −M_k w*, then s_β
    for (Index k = 0; k < J; ++k) {
      S.col(k) = -theta[k] * apply_piece(pieces_[static_cast<std::size_t>(k)], e.w);
    }
    S.col(J) = beta * J_.transpose() * residual;
    Eigen::MatrixXd R = Eigen::MatrixXd::Zero(J, J);  // −½ tr(P⁻¹M_l P⁻¹M_k) + ½ tr(P⁻¹M_k)δ_kl, smoothed group only
    if (const auto& s = prior_.smoothing()) {
      const PriorPiece& piece = pieces_.back();
      const Index size = piece.dense.rows(), ks = J - 1, kg = s->group;
      const auto Sigma_bb = Sigma.block(piece.offset, piece.offset, size, size);
      const Eigen::MatrixXd SM = theta[ks] * Sigma_bb * piece.dense;  // Σ_bb M_s (M_s lives on the block)
      const Eigen::MatrixXd SMS = theta[ks] * Sigma.middleCols(piece.offset, size) * piece.dense *
                                  Sigma.middleRows(piece.offset, size);  // Σ M_s Σ
      T(ks, ks) = (SM.array() * SM.transpose().array()).sum();
      for (Index l = 0; l < prior_.num_groups(); ++l) {
        double trace = 0.0;
        for (Index i : pieces_[static_cast<std::size_t>(l)].indices) trace += SMS(i, i);
        T(ks, l) = T(l, ks) = theta[l] * trace;
      }
      // The block of P: α_g I + λ_s L, whose pieces P⁻¹M_g = α_g P_b⁻¹ and P⁻¹M_s = λ_s P_b⁻¹L.
      Eigen::MatrixXd P_b = theta[ks] * piece.dense;
      P_b.diagonal().array() += theta[kg];
      const Eigen::MatrixXd P_inv = P_b.llt().solve(Eigen::MatrixXd::Identity(size, size));
      const Eigen::MatrixXd PM_g = theta[kg] * P_inv, PM_s = theta[ks] * P_inv * piece.dense;
      R(kg, kg) = 0.5 * tr_PM[kg] - 0.5 * (PM_g.array() * PM_g.transpose().array()).sum();
      R(ks, ks) = 0.5 * tr_PM[ks] - 0.5 * (PM_s.array() * PM_s.transpose().array()).sum();
      R(kg, ks) = R(ks, kg) = -0.5 * (PM_g.array() * PM_s.transpose().array()).sum();
    }
    const Eigen::MatrixXd StSigmaS = S.transpose() * Sigma * S;
    const double tr_SM_beta = static_cast<double>(W) - tr_SM.sum();  // tr(Σ M_β) = tr(I − ΣP)
    e.hessian.resize(J + 1, J + 1);
    e.hessian.topLeftCorner(J, J) = R + 0.5 * T;
    for (Index k = 0; k < J; ++k) {
      e.hessian(k, k) += -0.5 * tr_SM[k] - theta[k] * E[k];
      // tr(ΣM_βΣM_k) = tr(ΣM_k) − Σ_j tr(ΣM_jΣM_k).
      e.hessian(k, J) = e.hessian(J, k) = 0.5 * (tr_SM[k] - T.col(k).sum());
    }
    e.hessian(J, J) = -0.5 * tr_SM_beta + 0.5 * (static_cast<double>(W) - 2.0 * tr_SM.sum() + T.sum()) - beta * E_D;
    e.hessian += StSigmaS;
    e.ok = e.hessian.allFinite();
    return e;
  }

 private:
  Prior prior_;
  std::vector<PriorPiece> pieces_;
  Eigen::MatrixXd J_, Q_;
  Eigen::VectorXd y_, b_;
  double n_ = 0.0;
};

}  // namespace

void fit_linear_gaussian(Run& run) {
  Posterior& posterior = run.posterior;
  const EvidenceOptions& options = run.options;
  EvidenceSummary& summary = run.summary;
  run.gradient_kind = EvidenceGradient::kModeHeld;  // exact here: A does not depend on w
  summary.exact_linear_gaussian = true;
  LinearGaussianEvidence evidence(posterior);
  const Index K = evidence.num_hyperparameters();
  const double lower = std::log(kMinHyper), upper = std::log(kMaxHyper);
  Eigen::VectorXd phi = all_hyperparameters(posterior).array().log().cwiseMax(lower).cwiseMin(upper);
  std::vector<bool> movable(static_cast<std::size_t>(K), true);
  if (options.fix_prior) std::fill(movable.begin(), movable.end() - 1, false);
  constexpr double kEpsilon = std::numeric_limits<double>::epsilon();
  constexpr double kMaxStep = 3.0;  // at most a factor e³ per Newton step

  Evaluation current = evidence.evaluate(phi, true);
  if (!current.ok) {
    run.stop = Termination::kFailure;
    summary.message = "the posterior precision A = beta X'X + P is not positive definite at the start";
    return;
  }
  // The start, as round 0 of the trace.
  record(run, {0, current.value, posterior.prior().hyperparameters(), current_beta(posterior), current.gamma, 0, true,
               current.gradient.cwiseAbs().maxCoeff(), 0.0});
  run.stop = Termination::kMaxIterations;
  summary.stopping_test = "Newton step budget (max_outer_iterations)";
  summary.message = "reached the maximum of " + std::to_string(options.max_outer_iterations) + " Newton steps";
  for (int it = 1; !run.aborted && it <= options.max_outer_iterations; ++it) {
    // The free coordinates: movable, and not held at a bound by a gradient pointing out.
    std::vector<Index> free;
    for (Index k = 0; k < K; ++k) {
      const bool held =
          (phi[k] <= lower && current.gradient[k] < 0.0) || (phi[k] >= upper && current.gradient[k] > 0.0);
      if (movable[static_cast<std::size_t>(k)] && !held) free.push_back(k);
    }
    if (free.empty() || current.gradient(free).cwiseAbs().maxCoeff() == 0.0) {
      run.stop = Termination::kConverged;
      summary.stopping_test = "Newton: the gradient is zero on the free hyperparameters";
      summary.message = "exact type-II maximum likelihood";
      break;
    }
    // Newton direction −H⁻¹g with H's eigenvalues made negative: |λ| keeps a saddle from pulling.
    const Eigen::MatrixXd H = current.hessian(free, free);
    const Eigen::VectorXd g = current.gradient(free);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(H);
    const Eigen::VectorXd curvature =
        eig.eigenvalues().cwiseAbs().cwiseMax(1e-12 * std::max(eig.eigenvalues().cwiseAbs().maxCoeff(), 1e-300));
    Eigen::VectorXd d = eig.eigenvectors() * (eig.eigenvectors().transpose() * g).cwiseQuotient(curvature);
    if (d.cwiseAbs().maxCoeff() > kMaxStep) d *= kMaxStep / d.cwiseAbs().maxCoeff();
    // Backtracking: sufficient increase, or — once L no longer resolves the step — the full
    // Newton step, which the gradient then judges.
    bool accepted = false;
    Eigen::VectorXd trial_phi = phi;
    Evaluation trial;
    for (double t = 1.0; t > 1e-10; t *= 0.5) {
      trial_phi = phi;
      for (std::size_t i = 0; i < free.size(); ++i)
        trial_phi[free[i]] = std::clamp(phi[free[i]] + t * d[static_cast<Index>(i)], lower, upper);
      trial = evidence.evaluate(trial_phi, true);
      if (!trial.ok) continue;
      const double expected = current.gradient.dot(trial_phi - phi);
      const double resolution = 16.0 * kEpsilon * std::max(1.0, std::abs(current.value));
      if (trial.value - current.value >= 1e-4 * expected ||
          (t == 1.0 && std::abs(trial.value - current.value) <= resolution)) {
        accepted = true;
        break;
      }
    }
    summary.outer_iterations = it;
    if (!accepted) {
      run.stop = Termination::kNoProgress;
      summary.stopping_test = "Newton: no step along the Newton direction increases the log-evidence";
      summary.message = "the line search found no increase of the log-evidence";
      break;
    }
    const double moved = (trial_phi - phi).cwiseAbs().maxCoeff();
    phi = trial_phi;
    current = std::move(trial);
    set_all_hyperparameters(&posterior, phi.array().exp().matrix());
    record(run, {it, current.value, posterior.prior().hyperparameters(), current_beta(posterior), current.gamma, 0,
                 true, current.gradient.cwiseAbs().maxCoeff(), 0.0});
    if (run.aborted) break;
    if (moved <= 4.0 * kEpsilon * std::max(1.0, phi.cwiseAbs().maxCoeff())) {
      run.stop = Termination::kConverged;
      summary.stopping_test = "Newton: the step is below the rounding of log theta (machine precision)";
      summary.message = "exact type-II maximum likelihood";
      break;
    }
  }
  if (run.aborted) {
    run.stop = Termination::kAborted;
    summary.stopping_test = "the callback asked to stop";
    summary.message = "stopped by the callback; the last Newton iterate is kept";
  }
  set_all_hyperparameters(&posterior, phi.array().exp().matrix());
  run.w = current.w;
  summary.last_map.termination = Termination::kConverged;
  summary.last_map.message = "w = beta A^-1 J'y, solved directly";
}

}  // namespace occam::evidence

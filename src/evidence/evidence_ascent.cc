// evidence_ascent.cc — the maximum of the Laplace log-evidence over φ = log θ (α_g, λ_s, β):
// a trust-region quasi-Newton ascent in which w_MAP moves with θ.
//
//   L(φ) = log p(D | w*) + log p(w* | θ) + (W/2) log 2π − ½ log|A(w*, θ)|,  w* = w_MAP(θ).
//
// MacKay's fixed point ½γ_j = θ_j E_j is where ∂L/∂φ_j vanishes with w* held. On a network, and
// for the non-Gaussian families on any model, A moves with w* (through the Jacobian and through
// the likelihood's weights Λ(f)), and the fixed point is not where L is largest; on a network
// MacKay's iteration can even run away from the maximum, each update lowering L. Here every step
// climbs L itself, driven by its exact total gradient (total_log_evidence_gradient), inside a
// trust region in φ (Nocedal & Wright 2006, Alg. 4.1) with a BFGS model of ∂²L/∂φ² (eq. 6.19,
// kept negative definite by skipping pairs with sᵀy ≥ 0). Each trial re-optimises w from the
// current mode; a trial that lowers L is refused and the radius shrinks. With the Gauss–Newton
// Hessian off a linear model (HessianKind::kExact on a network) the gradient is MacKay's, w held.
//
// Each trial's MAP is a few Newton steps from the current mode (trust_region_map.cc), solved
// three digits beyond the gradient tolerance: L is not stationary in w (−½ log|A| moves with it
// to first order), so an error in w is an error in L, and a step smaller than the MAP's
// tolerance would not move w at all. The factor of A at the new mode serves the Laplace
// approximation, the log-evidence and its gradient. The loop ends when both conditions hold:
// ‖∇S‖ ≤ tol·max(1, ‖w‖) and max_j |∂L/∂φ_j| ≤ hyper_gradient_tolerance.
#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>

#include "evidence/curvature.h"
#include "evidence/engine.h"

namespace occam::evidence {
namespace {

// The MAP of each trial point is solved to this fraction of the gradient tolerance.
constexpr double kTighten = 1e-3;

struct Point {
  bool ok = false;
  int map_iterations = 0;  // spent on this point's MAP
  Termination map = Termination::kFailure;
  Eigen::VectorXd phi, w, gradient;
  double value = -std::numeric_limits<double>::infinity();
  double w_gradient_norm = 0.0;
  LaplaceApproximation laplace;
};

class EvidenceAscent {
 public:
  explicit EvidenceAscent(Run& run)
      : run_(run), posterior_(run.posterior), total_(total_gradient_applies(run.posterior, run.options.hessian)) {}

  void climb();

 private:
  Point evaluate(const Eigen::VectorXd& phi, const Eigen::VectorXd& w_start);

  Run& run_;
  Posterior& posterior_;
  bool total_;
};

Point EvidenceAscent::evaluate(const Eigen::VectorXd& phi, const Eigen::VectorXd& w_start) {
  const EvidenceOptions& options = run_.options;
  Point p;
  p.phi = phi;
  p.w = w_start;
  set_all_hyperparameters(&posterior_, phi.array().exp().matrix());
  Run trial{posterior_, options, p.w, run_.summary};
  std::string message;
  Curvature curvature;
  const int before = run_.summary.map_iterations;
  p.map = minimize_map(trial, &message, &curvature, kTighten);
  p.map_iterations = run_.summary.map_iterations - before;
  if (p.map == Termination::kAborted) run_.aborted = true;
  if (p.map == Termination::kFailure || p.map == Termination::kAborted) return p;
  try {
    // The factor of A at w* from the curvature the MAP ended on, where it has one.
    if (options.hessian == HessianKind::kGgn && uses_levenberg_marquardt(options.map, posterior_) &&
        curvature.factor(posterior_, 0.0)) {
      p.laplace = curvature.laplace(p.w);
    } else {
      p.laplace = laplace(posterior_, p.w, options.hessian);
    }
    p.value = log_evidence(posterior_, p.laplace);
    p.gradient = total_ ? total_log_evidence_gradient(posterior_, p.laplace)
                        : mode_held_gradient(posterior_, p.w, well_determined_parameters(posterior_.prior(), p.laplace));
  } catch (const Error&) {
    return p;
  }
  double log_p;
  Eigen::VectorXd grad;
  posterior_.evaluate(p.w, &log_p, &grad);
  p.w_gradient_norm = grad.norm();
  // L is judged only where w is at the mode: elsewhere −½ log|A| moves with the error in w.
  p.ok = p.map == Termination::kConverged && std::isfinite(p.value) && p.gradient.allFinite();
  return p;
}

void EvidenceAscent::climb() {
  const EvidenceOptions& options = run_.options;
  EvidenceSummary& summary = run_.summary;
  run_.gradient_kind = total_ ? EvidenceGradient::kTotal : EvidenceGradient::kModeHeld;
  const bool has_beta = posterior_.likelihood().has_precision();
  const Index J = posterior_.prior().num_hyperparameters() + (has_beta ? 1 : 0);
  const Index first_free = options.fix_prior ? J - (has_beta ? 1 : 0) : 0;  // fix_prior: β alone moves
  const double lower = std::log(kMinHyper), upper = std::log(kMaxHyper);
  const double tolerance = options.hyper_gradient_tolerance;
  if (first_free >= J) {
    // fix_prior on a likelihood without β: nothing to optimise but w.
    run_.gradient_kind = EvidenceGradient::kNone;
    std::string message;
    run_.stop = minimize_map(run_, &message);
    summary.stopping_test = "MAP: " + message;
    return;
  }

  Point current = evaluate(all_hyperparameters(posterior_).array().log().matrix(), run_.w);
  if (!current.ok) {
    // Left where the MAP left it: the finish reports the gradients there.
    run_.stop = current.map == Termination::kConverged ? Termination::kFailure : current.map;
    summary.message += std::string(summary.message.empty() ? "" : "; ") +
                       "the evidence ascent could not start: the MAP did not reach its tolerance";
    if (current.map != Termination::kFailure) run_.w = current.w;
    return;
  }
  // The start, as round 0 of the trace: its α, β, w_MAP and log-evidence.
  record(run_, {summary.outer_iterations, current.value, posterior_.prior().hyperparameters(), has_beta ? posterior_.likelihood().precision()
                                                                                 : std::numeric_limits<double>::quiet_NaN(),
                well_determined_parameters(posterior_.prior(), current.laplace), current.map_iterations, true,
                current.gradient.cwiseAbs().maxCoeff(), current.w_gradient_norm});
  // The curvature of L in log θ_j is about −θ_j E_j (−βE_D for β): the model's first guess.
  Eigen::VectorXd energy =
      posterior_.prior().hyperparameters().cwiseProduct(posterior_.prior().hyperparameter_energies(current.w));
  if (has_beta) {
    energy.conservativeResize(J);
    energy[J - 1] = posterior_.likelihood().precision() * data_error(posterior_, current.w);
  }
  Eigen::MatrixXd B = (-(energy.array().abs() + 1e-8)).matrix().asDiagonal();
  double radius = 1.0;
  run_.stop = Termination::kMaxIterations;
  std::string test = "quasi-Newton step budget (max_outer_iterations) of the evidence ascent";
  std::string outcome = "reached the maximum of " + std::to_string(options.max_outer_iterations) + " steps";
  if (run_.aborted) {
    run_.stop = Termination::kAborted;
    test = "the callback asked to stop";
    outcome = "stopped by the callback at the start";
  }
  for (int it = 1; !run_.aborted && it <= options.max_outer_iterations; ++it) {
    // The free coordinates: not fixed, and not held at a bound by a gradient pointing out.
    std::vector<Index> free;
    double norm = 0.0;
    for (Index j = first_free; j < J; ++j) {
      const double g = current.gradient[j];
      if ((current.phi[j] <= lower && g < 0.0) || (current.phi[j] >= upper && g > 0.0)) continue;
      free.push_back(j);
      norm = std::max(norm, std::abs(g));
    }
    if (norm <= tolerance || free.empty()) {
      run_.stop = Termination::kConverged;
      test = "gradient conditions: |grad S| and max |d log Z/d log theta| below their tolerances";
      outcome = "at the maximum of the Laplace log-evidence";
      break;
    }
    // The model step −B⁻¹g on the free coordinates, cut back to the trust radius (∞-norm).
    const Eigen::VectorXd g_free = current.gradient(free);
    Eigen::VectorXd s_free = (-B(free, free)).llt().solve(g_free);
    if (!s_free.allFinite()) s_free = g_free / std::max(1.0, g_free.cwiseAbs().maxCoeff());
    if (s_free.cwiseAbs().maxCoeff() > radius) s_free *= radius / s_free.cwiseAbs().maxCoeff();
    Eigen::VectorXd phi = current.phi;
    for (std::size_t i = 0; i < free.size(); ++i) {
      phi[free[i]] = std::clamp(phi[free[i]] + s_free[static_cast<Index>(i)], lower, upper);
    }
    const Eigen::VectorXd s = phi - current.phi;
    const double predicted = current.gradient.dot(s) + 0.5 * s.dot(B * s);
    Point trial = evaluate(phi, current.w);
    summary.outer_iterations += 1;
    if (!trial.ok) {
      radius = 0.25 * s.cwiseAbs().maxCoeff();
      set_all_hyperparameters(&posterior_, current.phi.array().exp().matrix());
      if (radius < 1e-12) {
        run_.stop = Termination::kNoProgress;
        test = "evidence ascent: no trial point near the current one has a converged MAP";
        outcome = test;
        break;
      }
      continue;
    }
    const Eigen::VectorXd y = trial.gradient - current.gradient;
    const double sy = s.dot(y);
    if (sy < -1e-12 * s.norm() * y.norm()) {
      const Eigen::VectorXd Bs = B * s;
      B += -Bs * Bs.transpose() / s.dot(Bs) + y * y.transpose() / sy;
    }
    const double gain = trial.value - current.value;
    const double rho = predicted > 0.0 ? gain / predicted : -1.0;
    // Accept a real increase. Where the model's gain is below the rounding of L (a sum over m
    // terms, and −½ log|A| moves with the last digits of w), ρ is noise: accept when the
    // gradient falls instead — but never a fall of L beyond its rounding, which means w moved
    // to another mode rather than along this one.
    const double resolution = 1e3 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(current.value));
    const bool accept = predicted <= resolution
                            ? gain >= -resolution &&
                                  trial.gradient.cwiseAbs().maxCoeff() < current.gradient.cwiseAbs().maxCoeff()
                            : gain > 0.0 && rho > 1e-4;
    record(run_, {summary.outer_iterations, trial.value,
                  trial.phi.head(posterior_.prior().num_hyperparameters()).array().exp().matrix(),
                  has_beta ? std::exp(trial.phi[J - 1]) : std::numeric_limits<double>::quiet_NaN(),
                  well_determined_parameters(posterior_.prior(), trial.laplace), trial.map_iterations, accept,
                  trial.gradient.cwiseAbs().maxCoeff(), trial.w_gradient_norm});
    if (accept) {
      current = std::move(trial);
      if (rho > 0.75 && s.cwiseAbs().maxCoeff() >= 0.9 * radius) radius *= 2.0;
      if (rho < 0.25) radius *= 0.5;
    } else {
      radius = 0.25 * s.cwiseAbs().maxCoeff();
      set_all_hyperparameters(&posterior_, current.phi.array().exp().matrix());
    }
    if (run_.aborted) {  // after the trial was taken or undone: `current` is the best point
      run_.stop = Termination::kAborted;
      test = "the callback asked to stop";
      outcome = "stopped by the callback; the best point so far is kept";
      break;
    }
    if (radius < 1e-12) {
      run_.stop = Termination::kNoProgress;
      test = "evidence ascent: the trust region shrank below 1e-12 in log theta";
      outcome = "no step increases the Laplace log-evidence any further";
      break;
    }
  }
  summary.stopping_test = test;
  set_all_hyperparameters(&posterior_, current.phi.array().exp().matrix());
  run_.w = current.w;
  run_.laplace = std::move(current.laplace);
  summary.message += std::string(summary.message.empty() ? "" : "; ") + "evidence ascent: " + outcome;
}

}  // namespace

void ascend_evidence(Run& run) {
  EvidenceAscent ascent(run);
  ascent.climb();
}

}  // namespace occam::evidence

// trust_region_map.cc — the MAP inside the evidence loops: a trust-region Newton method on the
// exact Hessian, preconditioned by the Gauss–Newton A, to the gradient condition.
//
// Each iteration forms the Gauss–Newton curvature H at w (internal::Curvature, src/curvature.h:
// the m × m Woodbury form when there are fewer data than weights) and factors A = H + P(θ),
// which is positive definite whatever w. The step minimises the exact quadratic
// model gᵀs + ½ sᵀ∇²S s inside the trust region ‖s‖_A ≤ Δ by Steihaug's truncated conjugate
// gradients preconditioned with A (Steihaug 1983; Nocedal & Wright 2006, Alg. 7.2; Conn, Gould &
// Toint 2000, §7.5.1 for the norms): products with ∇²S are exact (R-operator), so negative
// curvature — common on a network just after its hyperparameters move — is followed to the
// boundary instead of being damped away, and where A is the Hessian (a GLM with a canonical link)
// one CG iteration gives Newton's step. Δ is measured in the A-norm, i.e. in posterior standard
// deviations, and moves by the ratio of actual to predicted decrease, as Levenberg–Marquardt's
// damping does. Where S can no longer resolve a step (a sum over m terms), the step is judged by
// the gradient, so that w reaches the mode to the gradient tolerance rather than to the
// resolution of S.
#include <algorithm>
#include <cmath>
#include <limits>

#include "evidence/engine.h"
#include "evidence/exact_hessian.h"

namespace occam::evidence {
namespace {

// A predicted decrease below kUnresolved·ε·|S| is within the rounding of S.
constexpr double kUnresolved = 1e3;
constexpr int kMaxCgIterations = 200;

struct TrustRegionStep {
  Eigen::VectorXd s;
  double norm = 0.0;  // ‖s‖_A
  bool boundary = false;
};

// Steihaug's conjugate gradients for min gᵀs + ½sᵀHs, ‖s‖_A ≤ Δ, preconditioned by A, with the
// A-norms kept by their recurrences (Conn, Gould & Toint 2000, eq. 7.5.5–7.5.7).
TrustRegionStep steihaug(const ExactHessian& H, const internal::Curvature& A, const Eigen::VectorXd& g, double radius) {
  TrustRegionStep out;
  const Index W = g.size();
  out.s = Eigen::VectorXd::Zero(W);
  Eigen::VectorXd r = g, z = A.precondition(r), d = -z;
  double rz = r.dot(z);
  const double target = std::min(0.5, std::sqrt(std::sqrt(rz))) * std::sqrt(rz);  // superlinear forcing in the A⁻¹-norm
  double sMs = 0.0, sMd = 0.0, dMd = rz;
  // The τ ≥ 0 with ‖s + τd‖_A = Δ.
  auto to_boundary = [&]() {
    const double tau = (-sMd + std::sqrt(std::max(0.0, sMd * sMd + dMd * (radius * radius - sMs)))) / dMd;
    out.s += tau * d;
    out.norm = radius;
    out.boundary = true;
  };
  for (int j = 0; j < kMaxCgIterations; ++j) {
    const Eigen::VectorXd Hd = H(d);
    const double dHd = d.dot(Hd);
    if (!(dHd > 0.0)) {
      to_boundary();
      return out;
    }
    const double a = rz / dHd;
    const double next_sMs = sMs + 2.0 * a * sMd + a * a * dMd;
    if (next_sMs >= radius * radius) {
      to_boundary();
      return out;
    }
    out.s += a * d;
    sMs = next_sMs;
    r += a * Hd;
    z = A.precondition(r);
    const double rz_next = r.dot(z);
    if (std::sqrt(std::max(rz_next, 0.0)) <= target) break;
    const double beta = rz_next / rz;
    sMd = beta * (sMd + a * dMd);
    dMd = rz_next + beta * beta * dMd;
    d = -z + beta * d;
    rz = rz_next;
  }
  out.norm = std::sqrt(sMs);
  return out;
}

}  // namespace

Termination minimize_map(Run& run, std::string* message, std::unique_ptr<internal::Curvature>* curvature, double tighten,
                         int max_iterations) {
  const MapOptions& map = run.options.map;
  if (!uses_levenberg_marquardt(map, run.posterior)) {
    run.summary.last_map = find_map(run.posterior, map, &run.w);
    run.summary.map_iterations += run.summary.last_map.iterations;
    *message = run.summary.last_map.message;
    return run.summary.last_map.termination;
  }

  Posterior& posterior = run.posterior;
  EvidenceSummary& summary = run.summary;
  Eigen::VectorXd& w = run.w;
  constexpr double kEpsilon = std::numeric_limits<double>::epsilon();
  const int budget = max_iterations > 0 ? max_iterations : map.max_iterations;
  std::unique_ptr<internal::Curvature> own;
  std::unique_ptr<internal::Curvature>& A = curvature != nullptr ? *curvature : own;

  double S, log_p;
  Eigen::VectorXd g, grad;
  int iterations = 0;
  auto finish = [&](Termination t, const std::string& why) {
    summary.last_map.termination = t;
    summary.last_map.message = why;
    summary.last_map.iterations = iterations;
    summary.last_map.objective = S;
    summary.last_map.gradient_norm = g.size() > 0 ? g.norm() : std::numeric_limits<double>::quiet_NaN();
    *message = why;
    return t;
  };
  if (!posterior.evaluate(w, &log_p, &grad)) {
    S = std::numeric_limits<double>::quiet_NaN();
    return finish(Termination::kFailure, "no finite value of S(w) at the start point");
  }
  S = -log_p;
  g = -grad;
  // The curvature at w; one already formed for this posterior is re-formed in its own storage.
  auto form_and_factor = [&]() {
    try {
      if (A) {
        A->form(w);
      } else {
        A = std::make_unique<internal::Curvature>(posterior, w);
      }
      return A->factor(0.0);
    } catch (const Error&) {  // a Jacobian that is not finite
      return false;
    }
  };
  if (!form_and_factor()) return finish(Termination::kFailure, "the posterior precision A is not positive definite");
  double radius = -1.0;  // set from the first Gauss–Newton step
  // Where double precision stops the iteration short of a tightened tolerance, the options' own
  // tolerance decides.
  auto stalled = [&](const std::string& why) {
    return g.norm() <= map.gradient_tolerance * std::max(1.0, w.norm())
               ? finish(Termination::kConverged, "gradient norm below tolerance (" + why + ")")
               : finish(Termination::kNoProgress, why);
  };
  while (true) {
    const double g_norm = g.norm();
    if (g_norm <= tighten * map.gradient_tolerance * std::max(1.0, w.norm())) {
      return finish(Termination::kConverged, "gradient norm below tolerance");
    }
    if (iterations >= budget) {
      return finish(Termination::kMaxIterations, "reached the maximum of " + std::to_string(budget) + " iterations");
    }
    const ExactHessian hessian(posterior, w);
    if (radius < 0.0) radius = std::max(1.0, std::sqrt(g.dot(A->solve(g))));
    const TrustRegionStep step = steihaug(hessian, *A, g, radius);
    ++iterations;
    ++summary.map_iterations;
    if (step.s.norm() <= kEpsilon * (w.norm() + 1e-12)) {
      return stalled("the step is below the rounding of w");
    }
    const double predicted = -(g.dot(step.s) + 0.5 * step.s.dot(hessian(step.s)));
    const double resolution = kUnresolved * kEpsilon * std::max(1.0, std::abs(S));
    const bool unresolved = predicted <= resolution;
    const Eigen::VectorXd trial = w + step.s;
    Eigen::VectorXd trial_grad;
    const bool finite = posterior.evaluate(trial, &log_p, &trial_grad);
    const double rho = finite ? (S + log_p) / predicted : -1.0;
    const bool better = unresolved ? finite && trial_grad.norm() < g_norm : finite && rho > 0.0;
    if (unresolved) {
      radius = better ? std::max(radius, 2.0 * step.norm) : 0.25 * step.norm;
    } else if (rho < 0.25) {
      radius = 0.25 * step.norm;
    } else if (rho > 0.75 && step.boundary) {
      radius = 2.0 * radius;
    }
    if (better) {
      w = trial;
      S = -log_p;
      g = -trial_grad;
      if (map.callback && map.callback({iterations, S, g.norm()}) == CallbackReturn::kAbort) {
        return finish(Termination::kAborted, "stopped by the callback; the best point so far is kept");
      }
      if (!form_and_factor()) return finish(Termination::kFailure, "the posterior precision A is not positive definite");
    } else if (radius <= kEpsilon * std::max(1.0, w.norm())) {
      return stalled("S(w) cannot be decreased further in double precision");
    }
  }
}

}  // namespace occam::evidence

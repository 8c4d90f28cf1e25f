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
// damping does.
//
// A network's weights are sloppy: most directions (pruned units, weights the prior holds) barely
// move the outputs to first order but do to second, and the data's precision, β·m, turns that
// second-order motion into a change of S that the quadratic model does not see, so the region
// where the model holds shrinks to hundredths of a posterior standard deviation and the method
// crawls along a curved valley (naval, 10 741 rows: hundreds of steps of 0.01–0.04 a round). Each
// step s is therefore bent along the valley by its geodesic acceleration (Transtrum & Sethna
// 2012, arXiv:1201.5885): a = −A⁻¹JᵀΛ f_ss, f_ss the outputs' second derivative along s,
// and the trial is w + s + ½a, whose outputs move by Js to second order. Its predicted decrease
// is the model's along that path, −(gᵀs + ½sᵀ∇²S s + ½gᵀa); near the mode g → 0 and the path's
// model is the step's. No bound on ‖a‖/‖s‖ is imposed (Transtrum's 0.75 halved the steps here):
// the ratio of actual to predicted decrease judges the bent step as it judged the straight one.
//
// Where S can no longer resolve a step (a sum over m terms), the step is judged by the gradient,
// measured as the Newton decrement gᵀA⁻¹g with the A of the current iterate, so that w reaches
// the mode to the gradient tolerance rather than to the resolution of S. The decrement, not ‖g‖:
// in the stiff directions a Newton step can raise the Euclidean ‖g‖ on its way to the mode
// (naval split 0: ‖g‖ 3.6e-4 → 5.4e-2 → 1.1e-7 in two steps), and judged by ‖g‖ the radius
// stayed a tenth of the Newton step and w crept to the tolerance by ~0.5% of ‖g‖ a step (~1 000
// steps a round). Near a fold, where ∇∇S is nearly singular, Newton's method converges only
// linearly; kMaxUnresolvedSteps bounds that crawl.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "evidence/engine.h"
#include "evidence/exact_hessian.h"

namespace occam::evidence {
namespace {

// A predicted decrease below kUnresolved·ε·|S| is within the rounding of S.
constexpr double kUnresolved = 1e3;
constexpr int kMaxCgIterations = 200;
// The central-difference step, as a fraction of s, of the outputs' second derivative along s.
constexpr double kAccelerationDifference = 0.1;
// Newton's method reaches the gradient tolerance in a few steps once S cannot resolve them, unless
// ∇∇S is nearly singular (w near a fold of its branch), where it converges only linearly: on a
// 10-unit network on 500 rows of the smooth target with noise 0.003, trials of 5 000 such steps
// made 89 600 MAP iterations of a fit that took 5 400 with straight steps. After this many
// unresolved steps in a row the MAP ends as a stall (converged only if the options' own
// tolerance holds): 15 300 iterations there. At 50 the stalls' cruder w cost yacht split 5
// 0.43 nats and split 6 its convergence (test LL −0.13 and −0.34, against 0.29 and 0.08 at 500).
constexpr int kMaxUnresolvedSteps = 500;

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

// Whether the Laplace log-evidence at the mode that the Gauss–Newton model predicts from w, with
// S(w) lowered by the model's decrease ½gᵀA⁻¹g (the Newton decrement), is below the floor
// (engine.h, MapFloor).
bool below_floor(const MapFloor& floor, double S, const Eigen::VectorXd& g, const internal::Curvature& A) {
  const double estimate = -S + 0.5 * g.dot(A.precondition(g)) +
                          0.5 * static_cast<double>(g.size()) * std::log(2.0 * std::numbers::pi) - 0.5 * A.log_det();
  return estimate < floor.log_evidence;
}

}  // namespace

Termination minimize_map(Run& run, std::string* message, std::unique_ptr<internal::Curvature>* curvature, double tighten,
                         int max_iterations, MapFloor* floor) {
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
  const bool curved = !posterior.network().linear_in_weights();
  int unresolved_steps = 0;  // in a row
  // Where double precision stops the iteration short of a tightened tolerance, the options' own
  // tolerance decides.
  auto stalled = [&](const std::string& why) {
    return g.norm() <= map.gradient_tolerance * std::max(1.0, w.norm())
               ? finish(Termination::kConverged, "gradient norm below tolerance (" + why + ")")
               : finish(Termination::kNoProgress, why);
  };
  bool unchecked = true;  // w is an iterate the floor has not been checked at
  while (true) {
    if (floor != nullptr && unchecked && iterations >= floor->after_iterations) {
      unchecked = false;
      if (below_floor(*floor, S, g, *A)) {
        floor->reached = true;
        return finish(Termination::kNoProgress, "abandoned: the estimate of the log-evidence at the mode it is heading "
                                                "for is below the floor");
      }
    }
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
    double predicted = -(g.dot(step.s) + 0.5 * step.s.dot(hessian(step.s)));
    const double resolution = kUnresolved * kEpsilon * std::max(1.0, std::abs(S));
    const bool unresolved = predicted <= resolution;
    unresolved_steps = unresolved ? unresolved_steps + 1 : 0;
    if (unresolved_steps > kMaxUnresolvedSteps) {
      return stalled("S(w) resolves no step and " + std::to_string(kMaxUnresolvedSteps) +
                     " Newton steps have not reached the tolerance");
    }
    Eigen::VectorXd trial = w + step.s;
    if (!unresolved && curved) {
      // The geodesic acceleration; where the path's model predicts no decrease (far from the
      // mode, g·a can outweigh the step's own decrease) the straight step is taken.
      const Eigen::VectorXd a = -A->solve(hessian.pull_output_acceleration(step.s, kAccelerationDifference));
      const double path_predicted = predicted - 0.5 * g.dot(a);
      if (a.allFinite() && path_predicted > resolution) {
        trial += 0.5 * a;
        predicted = path_predicted;
      }
    }
    Eigen::VectorXd trial_grad;
    const bool finite = posterior.evaluate(trial, &log_p, &trial_grad);
    const double rho = finite ? (S + log_p) / predicted : -1.0;
    const bool better = unresolved ? finite && trial_grad.dot(A->solve(trial_grad)) < g.dot(A->solve(g))
                                   : finite && rho > 0.0;
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
      unchecked = true;
    } else if (radius <= kEpsilon * std::max(1.0, w.norm())) {
      return stalled("S(w) cannot be decreased further in double precision");
    }
  }
}

}  // namespace occam::evidence

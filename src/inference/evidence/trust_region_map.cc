// trust_region_map.cc — the MAP inside the evidence loops: a trust-region Newton method on the
// exact Hessian, preconditioned by the Gauss–Newton A, to the gradient condition.
//
// Each iteration forms the Gauss–Newton curvature H at w (internal::Curvature, src/inference/curvature/curvature.h:
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
#include <optional>

#include "inference/evidence/engine.h"
#include "inference/evidence/exact_hessian.h"

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
  bool negative_curvature = false;  // CG met dᵀ∇∇S d ≤ 0 and followed d to the boundary
  int cg_iterations = 0;
  double newton_decrement = 0.0;  // √(gᵀA⁻¹g): CG's first preconditioned residual, for free
};

// Steihaug's conjugate gradients for min gᵀs + ½sᵀHs, ‖s‖_A ≤ Δ, preconditioned by A, with the
// A-norms kept by their recurrences (Conn, Gould & Toint 2000, eq. 7.5.5–7.5.7).
TrustRegionStep steihaug(const ExactHessian& H, const internal::Curvature& A, const Eigen::VectorXd& g, double radius) {
  TrustRegionStep out;
  const Index W = g.size();
  out.s = Eigen::VectorXd::Zero(W);
  Eigen::VectorXd r = g, z = A.precondition(r), d = -z;
  double rz = r.dot(z);
  out.newton_decrement = std::sqrt(std::max(rz, 0.0));
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
    ++out.cg_iterations;
    const Eigen::VectorXd Hd = H(d);
    const double dHd = d.dot(Hd);
    if (!(dHd > 0.0)) {
      to_boundary();
      out.negative_curvature = true;
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

// The trust-region Newton method of the file comment as named steps: start, then per iteration the
// stopping rules (the floor, the gradient condition, the budget), the step, its trial, the
// radius's update, and the trial taken or refused; one predicate per stopping rule.
class TrustRegionMap {
 public:
  TrustRegionMap(Run& run, std::string* message, std::unique_ptr<internal::Curvature>* curvature, double tighten,
                 int max_iterations, MapFloor* floor)
      : map_(run.options.map),
        posterior_(run.posterior),
        summary_(run.summary),
        w_(run.w),
        message_(message),
        A_(curvature != nullptr ? *curvature : own_),
        tighten_(tighten),
        budget_(max_iterations > 0 ? max_iterations : map_.max_iterations),
        floor_(floor),
        curved_(!posterior_.network().linear_in_weights()),
        step_(run.step) {}

  Termination minimize() {
    if (const auto failed = start()) return *failed;
    while (true) {
      if (below_the_floor()) {
        floor_->reached = true;
        return finish(Termination::kNoProgress,
                      "abandoned: the estimate of the log-evidence at the mode it is heading "
                      "for is below the floor");
      }
      if (at_tolerance()) return finish(Termination::kConverged, "gradient norm below tolerance");
      if (iterations_ >= budget_) {
        return finish(Termination::kMaxIterations, "reached the maximum of " + std::to_string(budget_) + " iterations");
      }
      if (const auto stop = iterate()) return *stop;
    }
  }

 private:
  static constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

  Termination finish(Termination t, const std::string& why) {
    summary_.last_map.termination = t;
    summary_.last_map.message = why;
    summary_.last_map.iterations = iterations_;
    summary_.last_map.objective = S_;
    summary_.last_map.gradient_norm = g_.size() > 0 ? g_.norm() : std::numeric_limits<double>::quiet_NaN();
    *message_ = why;
    return t;
  }

  // S, g and the factored curvature at the start point.
  std::optional<Termination> start() {
    double log_p;
    Eigen::VectorXd grad;
    if (!posterior_.evaluate(w_, &log_p, &grad)) {
      S_ = std::numeric_limits<double>::quiet_NaN();
      return finish(Termination::kFailure, "no finite value of S(w) at the start point");
    }
    S_ = -log_p;
    g_ = -grad;
    if (!form_and_factor()) return finish(Termination::kFailure, "the posterior precision A is not positive definite");
    return std::nullopt;
  }

  // The curvature at w; one already formed for this posterior is re-formed in its own storage.
  bool form_and_factor() {
    try {
      if (A_) {
        A_->form(w_);
      } else {
        A_ = std::make_unique<internal::Curvature>(posterior_, w_);
      }
      return A_->factor(0.0);
    } catch (const Error&) {  // a Jacobian that is not finite
      return false;
    }
  }

  // The floor is checked once at each new iterate from its after_iterations-th iteration on.
  bool below_the_floor() {
    if (floor_ == nullptr || !unchecked_ || iterations_ < floor_->after_iterations) return false;
    unchecked_ = false;
    return below_floor(*floor_, S_, g_, *A_);
  }

  bool at_tolerance() const { return g_.norm() <= tighten_ * map_.gradient_tolerance * std::max(1.0, w_.norm()); }

  // Where double precision stops the iteration short of a tightened tolerance, the options' own
  // tolerance decides.
  Termination stalled(const std::string& why) {
    return g_.norm() <= map_.gradient_tolerance * std::max(1.0, w_.norm())
               ? finish(Termination::kConverged, "gradient norm below tolerance (" + why + ")")
               : finish(Termination::kNoProgress, why);
  }

  // One iteration: Steihaug's step inside the radius, bent by its geodesic acceleration where S
  // resolves it; the trial judged by ρ (or by the Newton decrement where S cannot resolve it); the
  // radius moved; the trial accepted when better, and the curvature formed there; the iteration
  // reported to the callback, taken or refused. A stopping rule met on the way ends the MAP.
  std::optional<Termination> iterate() {
    const ExactHessian hessian(posterior_, w_);
    if (radius_ < 0.0) radius_ = std::max(1.0, std::sqrt(g_.dot(A_->solve(g_))));  // from the first Gauss–Newton step
    const TrustRegionStep step = steihaug(hessian, *A_, g_, radius_);
    ++iterations_;
    ++summary_.map_iterations;
    EvidenceSummary::MapSteps& steps = summary_.map_steps;
    ++(step.negative_curvature ? steps.negative_curvature : step.boundary ? steps.boundary : steps.interior);
    if (step.s.norm() <= kEpsilon * (w_.norm() + 1e-12)) {
      return untried(step, std::nullopt, false, "the step is below the rounding of w");
    }
    double predicted = -(g_.dot(step.s) + 0.5 * step.s.dot(hessian(step.s)));
    const double resolution = kUnresolved * kEpsilon * std::max(1.0, std::abs(S_));
    const bool unresolved = predicted <= resolution;
    unresolved_steps_ = unresolved ? unresolved_steps_ + 1 : 0;
    if (unresolved_steps_ > kMaxUnresolvedSteps) {
      return untried(step, predicted, unresolved,
                     "S(w) resolves no step and " + std::to_string(kMaxUnresolvedSteps) +
                         " Newton steps have not reached the tolerance");
    }
    Eigen::VectorXd trial = w_ + step.s;
    if (!unresolved && curved_) bend_along_the_valley(hessian, step, resolution, &trial, &predicted);
    double log_p;
    Eigen::VectorXd trial_grad;
    const bool finite = posterior_.evaluate(trial, &log_p, &trial_grad);
    const double rho = finite ? (S_ + log_p) / predicted : -1.0;
    const bool better =
        unresolved ? finite && trial_grad.dot(A_->solve(trial_grad)) < g_.dot(A_->solve(g_)) : finite && rho > 0.0;
    MapIteration record =
        describe(step, predicted, finite ? S_ + log_p : std::numeric_limits<double>::quiet_NaN(), unresolved, better);
    update_radius(step, unresolved, better, rho);
    if (better) {
      w_ = trial;
      S_ = -log_p;
      g_ = -trial_grad;
    } else {
      ++steps.refused;
    }
    record.objective = S_;
    record.gradient_norm = g_.norm();
    if (map_.callback && map_.callback(record) == CallbackReturn::kAbort) {
      return finish(Termination::kAborted, "stopped by the callback; the best point so far is kept");
    }
    if (better) {
      if (!form_and_factor())
        return finish(Termination::kFailure, "the posterior precision A is not positive definite");
      unchecked_ = true;
      return std::nullopt;
    }
    if (radius_collapsed()) return stalled("S(w) cannot be decreased further in double precision");
    return std::nullopt;
  }

  // An iteration whose step ends the MAP as a stall before its trial is evaluated: counted, and
  // reported like every other (refused, no actual decrease), so that a trace holds each one.
  Termination untried(const TrustRegionStep& step, std::optional<double> predicted, bool unresolved,
                      const std::string& why) {
    ++summary_.map_steps.refused;
    MapIteration record = describe(step, predicted.value_or(std::numeric_limits<double>::quiet_NaN()),
                                   std::numeric_limits<double>::quiet_NaN(), unresolved, false);
    record.objective = S_;
    record.gradient_norm = g_.norm();
    if (map_.callback && map_.callback(record) == CallbackReturn::kAbort) {
      return finish(Termination::kAborted, "stopped by the callback; the best point so far is kept");
    }
    return stalled(why);
  }

  // The iteration's record for the callback, before the radius moves.
  MapIteration describe(const TrustRegionStep& step, double predicted, double actual, bool unresolved,
                        bool taken) const {
    MapIteration it;
    it.iteration = iterations_;
    it.step_taken = taken;
    it.trust_radius = radius_;
    it.step_norm = step.norm;
    it.on_boundary = step.boundary;
    it.negative_curvature = step.negative_curvature;
    it.cg_iterations = step.cg_iterations;
    it.newton_decrement = step.newton_decrement;
    it.predicted_decrease = predicted;
    it.actual_decrease = actual;
    it.unresolved = unresolved;
    it.evidence_step = step_;
    return it;
  }

  // The geodesic acceleration; where the path's model predicts no decrease (far from the mode,
  // g·a can outweigh the step's own decrease) the straight step is taken.
  void bend_along_the_valley(const ExactHessian& hessian, const TrustRegionStep& step, double resolution,
                             Eigen::VectorXd* trial, double* predicted) const {
    const Eigen::VectorXd a = -A_->solve(hessian.pull_output_acceleration(step.s, kAccelerationDifference));
    const double path_predicted = *predicted - 0.5 * g_.dot(a);
    if (a.allFinite() && path_predicted > resolution) {
      *trial += 0.5 * a;
      *predicted = path_predicted;
    }
  }

  // Nocedal & Wright 2006, Alg. 4.1's radius rule on ρ; an unresolved step grows the radius when
  // the decrement fell and shrinks it otherwise.
  void update_radius(const TrustRegionStep& step, bool unresolved, bool better, double rho) {
    if (unresolved) {
      radius_ = better ? std::max(radius_, 2.0 * step.norm) : 0.25 * step.norm;
    } else if (rho < 0.25) {
      radius_ = 0.25 * step.norm;
    } else if (rho > 0.75 && step.boundary) {
      radius_ = 2.0 * radius_;
    }
  }

  bool radius_collapsed() const { return radius_ <= kEpsilon * std::max(1.0, w_.norm()); }

  const MapOptions& map_;
  Posterior& posterior_;
  EvidenceSummary& summary_;
  Eigen::VectorXd& w_;
  std::string* message_;
  std::unique_ptr<internal::Curvature> own_;
  std::unique_ptr<internal::Curvature>& A_;
  const double tighten_;
  const int budget_;
  MapFloor* floor_;
  const bool curved_;
  const int step_;  // MapIteration::evidence_step
  double S_ = 0.0;
  Eigen::VectorXd g_;
  int iterations_ = 0;
  double radius_ = -1.0;      // set from the first Gauss–Newton step
  int unresolved_steps_ = 0;  // in a row
  bool unchecked_ = true;     // w is an iterate the floor has not been checked at
};

}  // namespace

Termination minimize_map(Run& run, std::string* message, std::unique_ptr<internal::Curvature>* curvature,
                         double tighten, int max_iterations, MapFloor* floor) {
  if (!uses_levenberg_marquardt(run.options.map, run.posterior)) {
    MapOptions map = run.options.map;
    if (map.callback) {
      map.callback = [&run](const MapIteration& it) {
        MapIteration stamped = it;
        stamped.evidence_step = run.step;
        return run.options.map.callback(stamped);
      };
    }
    run.summary.last_map = find_map(run.posterior, map, &run.w);
    run.summary.map_iterations += run.summary.last_map.iterations;
    *message = run.summary.last_map.message;
    return run.summary.last_map.termination;
  }
  return TrustRegionMap(run, message, curvature, tighten, max_iterations, floor).minimize();
}

}  // namespace occam::evidence

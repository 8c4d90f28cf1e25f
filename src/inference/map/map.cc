#include "occam/map.h"

#include <Eigen/Cholesky>
#include <LBFGS.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>

#include "inference/curvature/curvature.h"
#include "occam/minibatch_map.h"
#include "occam/rng.h"
#include "occam/types.h"

namespace occam {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Thrown inside the L-BFGS objective when log p is not finite at the start point, and when the
// line search proposes a non-finite point (LBFGS++'s zoom step divides 0 by 0 when two trial
// values agree to the last bit); both are caught below.
struct NonFiniteObjective {};
struct NonFiniteTrialPoint {};
// Thrown inside the L-BFGS objective when the callback asks to stop (LBFGS++ has no other exit).
struct StopRequested {};

// S(θ) = −log p(θ) and its gradient for LBFGS++, remembering the best finite point seen so that
// a failed line search never loses the progress made.
class NegativeLogDensity {
 public:
  explicit NegativeLogDensity(const LogDensity& density)
      : density_(density), best_value_(std::numeric_limits<double>::infinity()) {}

  double operator()(const Eigen::VectorXd& theta, Eigen::VectorXd& grad) {
    if (!theta.allFinite()) throw NonFiniteTrialPoint{};
    ++evaluations_;
    double log_p;
    last_finite_ = density_.evaluate(theta, &log_p, &grad);
    if (!last_finite_) {
      if (!std::isfinite(best_value_)) throw NonFiniteObjective{};  // nowhere finite to go back to
      // A trial point too far along the search direction (e.g. an overflow): report a value far
      // above any seen, so the strong-Wolfe search treats it as no decrease and interpolates back
      // toward the last good step. +∞ would turn its interpolation into NaN.
      grad = best_gradient_;
      return best_value_ + kBarrier * (1.0 + std::abs(best_value_));
    }
    grad = -grad;
    const double value = -log_p;
    if (value < best_value_) {
      best_value_ = value;
      best_theta_ = theta;
      best_gradient_ = grad;
      best_gradient_norm_ = grad.norm();
    }
    return value;
  }

  bool last_finite() const { return last_finite_; }

  int evaluations() const { return evaluations_; }
  double best_value() const { return best_value_; }
  double best_gradient_norm() const { return best_gradient_norm_; }
  const Eigen::VectorXd& best_theta() const { return best_theta_; }

 private:
  const LogDensity& density_;
  static constexpr double kBarrier = 1e6;
  int evaluations_ = 0;
  bool last_finite_ = true;
  double best_value_;
  Eigen::VectorXd best_gradient_;
  double best_gradient_norm_ = 0.0;
  Eigen::VectorXd best_theta_;
};

// The time-keeping and the final message every full-batch optimiser below shares.
struct RunState {
  Clock::time_point start = Clock::now();
  MapSummary summary;
  MapSummary finish(Termination termination, std::string message) {
    summary.termination = termination;
    summary.message = std::move(message);
    summary.seconds = seconds_since(start);
    return summary;
  }
  // S and ∇S at the start point w; false, with the failure recorded, where they are not finite.
  bool begin(const Posterior& posterior, const Eigen::VectorXd& w, double* S, Eigen::VectorXd* g) {
    double log_p;
    ++summary.evaluations;
    if (!posterior.evaluate(w, &log_p, g)) {
      summary.objective = std::numeric_limits<double>::quiet_NaN();
      finish(Termination::kFailure, "no finite value of the objective at the start point");
      return false;
    }
    *S = -log_p;
    *g = -*g;
    summary.objective = *S;
    summary.gradient_norm = g->norm();
    return true;
  }
};

// Near w_MAP the decrease a Newton or Gauss–Newton step promises falls to the rounding error in
// the value of S itself, a sum over the data: S then cannot tell a good step from a bad one, and
// both optimisers also accept a step there when it shrinks ‖∇S‖, which keeps falling
// (quadratically for Newton) after S has stopped changing. `ulps` sets how many units in the last
// place of S count as rounding.
bool below_rounding_of(double predicted_decrease, double S, double ulps) {
  return predicted_decrease <= ulps * std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(S));
}

// The end of a full-batch run whose steps have fallen below the rounding of S and no longer
// reduce ‖∇S‖: converged when the gradient is within √tolerance (as L-BFGS judges it), else a
// failure that says so.
MapSummary finish_at_rounding_floor(RunState& run, const MapOptions& options, const Eigen::VectorXd& w) {
  const bool near = run.summary.gradient_norm <= std::sqrt(options.gradient_tolerance) * std::max(1.0, w.norm());
  return run.finish(near ? Termination::kConverged : Termination::kFailure,
                    near ? "no further decrease possible in double precision (‖∇S‖ is at its rounding floor)"
                         : "no further decrease possible in double precision, but ‖∇S‖ is above √tolerance; "
                           "the best point is kept");
}

MapSummary run_levenberg_marquardt(const Posterior& posterior, const MapOptions& options, Eigen::VectorXd* w) {
  // Levenberg–Marquardt with Nielsen's damping update (Madsen, Nielsen & Tingleff 2004, Alg. 3.16),
  // on S(w) = −log p(w, D) with the positive semi-definite model Hessian A = JᵀΛJ + P: solve
  // (A + μI)Δ = −∇S, accept when S decreases, and move μ by the gain ratio ρ. The curvature is
  // formed once per accepted step and only refactored for each new μ (internal::Curvature: the
  // n × n Woodbury form when there are fewer Jacobian rows than weights, else the W × W triangle).
  RunState run;
  MapSummary& summary = run.summary;
  double S, log_p;
  Eigen::VectorXd g;
  if (!run.begin(posterior, *w, &S, &g)) return summary;
  std::optional<internal::Curvature> curvature;
  curvature.emplace(posterior, *w, internal::CurvatureOptions{.form = options.curvature_form});
  bool exact = false;  // the model Hessian: Gauss–Newton until its steps stall, then exact
  double mu = 1e-3 * (curvature->hessian_diagonal() + posterior.prior().precision_diagonal()).maxCoeff();
  double nu = 2.0;
  Eigen::VectorXd step, trial, trial_grad;
  constexpr int kMaxStalls = 5;
  int stalls = 0;
  double smallest_gradient_norm = summary.gradient_norm;
  while (summary.iterations < options.max_iterations) {
    if (summary.gradient_norm <= options.gradient_tolerance * std::max(1.0, w->norm())) {
      return run.finish(Termination::kConverged, "gradient norm below tolerance");
    }
    ++summary.iterations;
    bool accepted = false;
    while (!accepted) {
      if (!std::isfinite(mu) || mu > 1e300) {
        return run.finish(Termination::kFailure,
                          "the damped Gauss–Newton system could not be solved; the best point is kept");
      }
      if (!curvature->factor(mu)) {
        mu *= nu;
        nu *= 2.0;
        continue;
      }
      step = curvature->solve(-g);
      if (step.norm() <= std::numeric_limits<double>::epsilon() * (w->norm() + 1e-12)) {
        return finish_at_rounding_floor(run, options, *w);  // the step is below the rounding of w
      }
      trial = *w + step;
      ++summary.evaluations;
      const bool finite = posterior.evaluate(trial, &log_p, &trial_grad);
      const double predicted = 0.5 * step.dot(mu * step - g);  // decrease of the quadratic model
      // Below the rounding of S the gain ratio is noise: a step is taken (ρ = 1, the model
      // trusted) when S does not rise or ‖∇S‖ shrinks. A Gauss–Newton step is not a Newton step,
      // so ‖∇S‖ need not fall at every one of them; after kMaxStalls steps or rejections in a row
      // without a new smallest ‖∇S‖ the run is at its floor.
      // Ten ulps: a Gauss–Newton iteration converges only linearly, and a decrease of S by more
      // than its rounding is still progress to be judged by ρ.
      const bool below_rounding = below_rounding_of(predicted, S, 10.0);
      double rho = !finite ? -1.0 : (S - (-log_p)) / predicted;
      if (below_rounding) {
        const bool take = finite && (-log_p <= S || trial_grad.norm() < summary.gradient_norm);
        rho = take ? 1.0 : -1.0;
        if (take && trial_grad.norm() < smallest_gradient_norm) {
          smallest_gradient_norm = trial_grad.norm();
          stalls = 0;
        } else if (++stalls >= kMaxStalls) {
          return finish_at_rounding_floor(run, options, *w);
        }
      }
      if (finite && rho > 0.0) {
        const double decrease = S + log_p;
        w->swap(trial);
        S = -log_p;
        g = -trial_grad;
        mu *= std::max(1.0 / 3.0, 1.0 - std::pow(2.0 * rho - 1.0, 3));
        nu = 2.0;
        accepted = true;
        summary.objective = S;
        summary.gradient_norm = g.norm();
        if (options.callback &&
            options.callback({summary.iterations, S, summary.gradient_norm}) == CallbackReturn::kAbort) {
          return run.finish(Termination::kAborted, "stopped by the callback");
        }
        if (!exact && !below_rounding && decrease <= options.function_tolerance * std::max(1.0, std::abs(S))) {
          if (!options.lm_exact_hessian) {
            return run.finish(Termination::kConverged, "relative change of the objective below tolerance");
          }
          // Gauss–Newton has stalled: near w_MAP it converges only linearly, at a rate set by the
          // curvature JᵀΛJ leaves out (Σ_n g_n ∇²f_n). The exact Hessian, damped until A is
          // positive definite, converges quadratically from here (a Levenberg–Marquardt method
          // on the true Hessian: Moré & Sorensen 1983).
          exact = true;
          curvature.emplace(
              posterior, *w,
              internal::CurvatureOptions{.hessian = HessianKind::kExact, .clip_negative_eigenvalues = false});
          continue;
        }
        curvature->form(*w);
      } else {
        mu *= nu;
        nu *= 2.0;
      }
    }
  }
  return run.finish(Termination::kMaxIterations,
                    "reached the maximum of " + std::to_string(options.max_iterations) + " iterations");
}

MapSummary run_newton(const Posterior& posterior, const MapOptions& options, Eigen::VectorXd* w) {
  // Newton's method with a backtracking line search (Nocedal & Wright 2006, Alg. 3.1 with the
  // Armijo condition, c₁ = 1e-4). For a GLM (a Linear network) with the canonical link of its
  // family, the Gauss–Newton matrix XᵀΓX + P is the exact Hessian of the convex S, and the
  // iteration is iteratively reweighted least squares (McCullagh & Nelder 1989, §2.5): one weighted
  // Gram matrix and one Cholesky factorisation per iteration, quadratic convergence near w_MAP.
  // The line search makes every step descend, whatever the start; for other models the same
  // iteration is a damped Gauss–Newton (Fisher scoring) method.
  RunState run;
  MapSummary& summary = run.summary;
  constexpr double kArmijo = 1e-4;
  constexpr int kMaxBacktracks = 50;
  double S, log_p;
  Eigen::VectorXd g;
  if (!run.begin(posterior, *w, &S, &g)) return summary;
  internal::Curvature curvature(posterior, *w, {.form = options.curvature_form});
  Eigen::VectorXd direction, trial, trial_grad;
  while (true) {
    if (summary.gradient_norm <= options.gradient_tolerance * std::max(1.0, w->norm())) {
      return run.finish(Termination::kConverged, "gradient norm below tolerance");
    }
    if (summary.iterations >= options.max_iterations) break;
    ++summary.iterations;
    // A is positive definite whenever the prior is proper; a tiny damping rescues rounding.
    double mu = 0.0;
    while (!curvature.factor(mu)) {
      mu = mu == 0.0 ? 1e-12 * std::max(1.0, curvature.hessian_diagonal().maxCoeff()) : 10.0 * mu;
      if (!std::isfinite(mu)) return run.finish(Termination::kFailure, "the Newton system could not be factored");
    }
    direction = curvature.solve(-g);
    const double slope = g.dot(direction);  // −λ², λ the Newton decrement: < 0, A is positive definite
    // A thousand ulps: the Newton decrement λ²/2 predicts S − S(w_MAP) closely, and below that
    // the full step (which the quadratic model makes exact) is taken when it shrinks ‖∇S‖.
    const bool below_rounding = below_rounding_of(-0.5 * slope, S, 1e3);
    bool accepted = false;
    double t = 1.0;
    for (int k = 0; k < kMaxBacktracks && !accepted; ++k) {
      if (k > 0) t *= 0.5;
      trial = *w + t * direction;
      ++summary.evaluations;
      if (!posterior.evaluate(trial, &log_p, &trial_grad)) continue;
      accepted = -log_p <= S + kArmijo * t * slope || (below_rounding && trial_grad.norm() < summary.gradient_norm);
      if (!accepted && below_rounding) return finish_at_rounding_floor(run, options, *w);
    }
    if (!accepted) {
      return run.finish(Termination::kFailure,
                        "the line search found no decrease along the Newton direction; the best point is kept");
    }
    w->swap(trial);
    S = -log_p;
    g = -trial_grad;
    summary.objective = S;
    summary.gradient_norm = g.norm();
    if (options.callback &&
        options.callback({summary.iterations, S, summary.gradient_norm}) == CallbackReturn::kAbort) {
      return run.finish(Termination::kAborted, "stopped by the callback");
    }
    curvature.form(*w);
  }
  return run.finish(Termination::kMaxIterations,
                    "reached the maximum of " + std::to_string(options.max_iterations) + " iterations");
}

}  // namespace

Optimizer parse_optimizer(std::string_view name) { return enum_names<Optimizer>().parse(name); }

const char* to_string(Optimizer optimizer) { return enum_names<Optimizer>().name(optimizer); }

bool is_minibatch(Optimizer optimizer) { return optimizer == Optimizer::kAdam || optimizer == Optimizer::kSgd; }

void MapOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("MapOptions", field, value, rule);
  };
  if (max_iterations < 1) fail("max_iterations", max_iterations, "must be at least 1");
  if (!(gradient_tolerance >= 0.0)) fail("gradient_tolerance", gradient_tolerance, "must be non-negative");
  if (!(function_tolerance >= 0.0)) fail("function_tolerance", function_tolerance, "must be non-negative");
  if (lbfgs_memory < 1) fail("lbfgs_memory", lbfgs_memory, "must be at least 1");
  if (!(learning_rate > 0.0)) fail("learning_rate", learning_rate, "must be positive");
  if (batch_size < 1) fail("batch_size", static_cast<double>(batch_size), "must be at least 1");
  if (lm_max_params < 0) fail("lm_max_params", static_cast<double>(lm_max_params), "must be non-negative");
}

std::string MapSummary::brief_report() const {
  std::ostringstream out;
  out << "MAP: " << to_string(termination) << " after " << iterations << " iterations (" << evaluations
      << " evaluations), S = " << objective << ", |grad S| = " << gradient_norm << ", " << seconds << " s";
  if (!message.empty()) out << " — " << message;
  return out.str();
}

MapSummary maximize(const LogDensity& density, const MapOptions& options, Eigen::VectorXd* theta) {
  options.validate();
  if (theta->size() != density.dim()) {
    throw Error(ErrorKind::kInvalidArgument, "maximize: the start point has " + std::to_string(theta->size()) +
                                                 " entries but the density has " + std::to_string(density.dim()));
  }
  const auto start = Clock::now();
  LBFGSpp::LBFGSParam<double> param;
  param.m = options.lbfgs_memory;
  // LBFGS++ tests ‖g‖ ≤ max(ε, ε_rel‖x‖): the same as ‖g‖ ≤ tol·max(1, ‖x‖).
  param.epsilon = options.gradient_tolerance;
  param.epsilon_rel = options.gradient_tolerance;
  param.past = options.function_tolerance > 0.0 ? 10 : 0;
  param.delta = options.function_tolerance;
  param.max_iterations = options.max_iterations;
  param.max_linesearch = 40;
  // Debian's LBFGS++ 0.1.0 offers Moré–Thuente only to its bound-constrained solver; the strong
  // Wolfe search of Nocedal & Wright (2006, Alg. 3.5–3.6) is the equivalent for L-BFGS.
  param.linesearch = LBFGSpp::LBFGS_LINESEARCH_BACKTRACKING_STRONG_WOLFE;

  NegativeLogDensity objective(density);
  // LBFGS++ has no per-iteration callback; the progress callback sees every evaluation instead.
  auto f = [&](const Eigen::VectorXd& point, Eigen::VectorXd& grad) {
    const double value = objective(point, grad);
    if (options.callback &&
        options.callback({objective.evaluations(), objective.best_value(), grad.norm()}) == CallbackReturn::kAbort) {
      throw StopRequested{};
    }
    return value;
  };
  auto gradient_converged = [&] {
    return objective.best_gradient_norm() <= options.gradient_tolerance * std::max(1.0, objective.best_theta().norm());
  };

  // L-BFGS is restarted from the best point with a fresh memory when it stops without meeting a
  // criterion (a failed line search, a trial point with a non-finite objective): the curvature
  // pairs gathered far away are often what misled it. A restart that gains nothing ends it.
  constexpr int kMaxRestarts = 5;
  MapSummary summary;
  std::string stop_reason;
  bool flat_at_best = false;
  bool stopped = false;
  Eigen::VectorXd x = *theta;
  for (int attempt = 0; attempt <= kMaxRestarts; ++attempt) {
    param.max_iterations = options.max_iterations - summary.iterations;
    LBFGSpp::LBFGSSolver<double, LBFGSpp::LineSearchNocedalWright> solver(param);
    const double best_before = objective.best_value();
    stop_reason.clear();
    double fx = 0.0;
    try {
      summary.iterations += solver.minimize(f, x, fx);
    } catch (const NonFiniteObjective&) {
      stop_reason = "the objective is not finite at the start point";
      break;
    } catch (const StopRequested&) {
      stopped = true;
      break;
    } catch (const NonFiniteTrialPoint&) {
      stop_reason = "the line search broke down (a non-finite step)";
    } catch (const std::exception& e) {
      // LBFGS++ throws when the line search cannot find a decrease (e.g. at the limit of double
      // precision) or when the search direction is not a descent direction.
      stop_reason = std::string("the line search stopped: ") + e.what();
    }
    if (gradient_converged() || summary.iterations >= options.max_iterations) break;
    if (stop_reason.empty() && objective.last_finite()) break;  // the function-change criterion
    if (!(objective.best_value() < best_before)) {
      // A fresh start from the best point, whose first step is along −∇S, found no decrease at
      // all: S is flat to double precision there, though ‖∇S‖ may not be small when a stiff
      // direction (a large α_g) magnifies the rounding of w.
      flat_at_best = attempt > 0;
      break;
    }
    x = objective.best_theta();
  }

  summary.evaluations = objective.evaluations();
  if (!std::isfinite(objective.best_value())) {
    summary.termination = Termination::kFailure;
    summary.message = "no finite value of the objective at the start point";
    summary.seconds = seconds_since(start);
    summary.objective = std::numeric_limits<double>::quiet_NaN();
    return summary;
  }
  *theta = objective.best_theta();
  summary.objective = objective.best_value();
  summary.gradient_norm = objective.best_gradient_norm();
  const double scale = std::max(1.0, theta->norm());
  if (stopped) {
    summary.termination = Termination::kAborted;
    summary.message = "stopped by the callback; the best point found is kept";
  } else if (gradient_converged()) {
    summary.termination = Termination::kConverged;
    summary.message = "gradient norm below tolerance";
  } else if (summary.iterations >= options.max_iterations) {
    summary.termination = Termination::kMaxIterations;
    summary.message = "reached the maximum of " + std::to_string(options.max_iterations) + " iterations";
  } else if (stop_reason.empty() && objective.last_finite()) {
    summary.termination = Termination::kConverged;
    summary.message = "relative change of the objective below tolerance";
  } else if (flat_at_best || summary.gradient_norm <= std::sqrt(options.gradient_tolerance) * scale) {
    summary.termination = Termination::kConverged;
    summary.message = "no further decrease possible in double precision (" +
                      (stop_reason.empty() ? std::string("a trial point overflowed") : stop_reason) + ")";
  } else {
    summary.termination = Termination::kFailure;
    summary.message = (stop_reason.empty() ? std::string("a trial point overflowed") : stop_reason) +
                      "; the best point found is kept";
  }
  summary.seconds = seconds_since(start);
  return summary;
}

MapSummary find_map(const Posterior& posterior, const MapOptions& options, Eigen::VectorXd* w) {
  options.validate();
  if (w->size() != posterior.dim()) {
    throw Error(ErrorKind::kInvalidArgument, "find_map: the start point has " + std::to_string(w->size()) +
                                                 " entries but the network has " + std::to_string(posterior.dim()));
  }
  // Spread over processes, a posterior gives only full-data and minibatch values and gradients:
  // L-BFGS, or Adam and SGD on minibatches.
  if (posterior.distributed()) {
    if (is_minibatch(options.optimizer)) {
      return find_map_minibatch(posterior, MinibatchOptions::from(options), w).as_map_summary();
    }
    if (options.optimizer != Optimizer::kAuto && options.optimizer != Optimizer::kLbfgs) {
      posterior.require_one_process(std::string("the ") + to_string(options.optimizer) + " optimiser");
    }
    return maximize(posterior, options, w);
  }
  switch (options.optimizer) {
    case Optimizer::kAdam:
    case Optimizer::kSgd:
      return find_map_minibatch(posterior, MinibatchOptions::from(options), w).as_map_summary();
    case Optimizer::kLevenbergMarquardt:
      return run_levenberg_marquardt(posterior, options, w);
    case Optimizer::kNewton:
      return run_newton(posterior, options, w);
    case Optimizer::kLbfgs:
      return maximize(posterior, options, w);
    case Optimizer::kAuto:
      break;
  }
  if (posterior.dim() > options.lm_max_params) return maximize(posterior, options, w);
  // A GLM's S is convex and its Gauss–Newton matrix exact: Newton needs no damping loop.
  if (posterior.network().linear_in_weights()) return run_newton(posterior, options, w);
  return run_levenberg_marquardt(posterior, options, w);
}

}  // namespace occam

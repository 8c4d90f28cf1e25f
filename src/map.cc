#include "occam/map.h"

#include <Eigen/Cholesky>
#include <LBFGS.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "occam/rng.h"

namespace occam {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

MapSummary run_adam(const Posterior& posterior, const MapOptions& options, Eigen::VectorXd* w) {
  // Kingma & Ba 2015, Algorithm 1, with bias-corrected moments; one iteration = one epoch of
  // shuffled minibatches. Convergence is judged on the full-data gradient after each epoch.
  const auto start = Clock::now();
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-8;
  const Index m = posterior.num_data();
  const Index batch = std::min<Index>(options.batch_size, m);
  Rng rng(options.seed, /*stream=*/0x6164616d);
  std::vector<Index> order(m);
  std::iota(order.begin(), order.end(), Index{0});
  Eigen::VectorXd first = Eigen::VectorXd::Zero(w->size()), second = first, grad;
  MapSummary summary;
  double step = 0.0;
  Eigen::VectorXd best = *w;
  double best_value = std::numeric_limits<double>::infinity();
  for (int epoch = 1; epoch <= options.max_iterations; ++epoch) {
    for (Index i = m - 1; i > 0; --i) std::swap(order[i], order[rng.uniform_int(i + 1)]);  // Fisher–Yates
    for (Index begin = 0; begin < m; begin += batch) {
      const std::vector<Index> rows(order.begin() + begin, order.begin() + std::min(m, begin + batch));
      double log_p;
      ++summary.evaluations;
      if (!posterior.evaluate_batch(*w, rows, &log_p, &grad)) {
        *w = best;
        summary.termination = Termination::kFailure;
        summary.message = "adam: non-finite objective or gradient at epoch " + std::to_string(epoch) +
                          "; the best full-data point is kept (try a smaller --learning-rate)";
        summary.iterations = epoch;
        summary.seconds = seconds_since(start);
        return summary;
      }
      grad = -grad;  // minimise S = −log p
      step += 1.0;
      first = kBeta1 * first + (1.0 - kBeta1) * grad;
      second = kBeta2 * second + (1.0 - kBeta2) * grad.cwiseAbs2();
      const double rate = options.learning_rate * std::sqrt(1.0 - std::pow(kBeta2, step)) / (1.0 - std::pow(kBeta1, step));
      w->array() -= rate * first.array() / (second.array().sqrt() + kEpsilon);
    }
    double log_p;
    ++summary.evaluations;
    const bool finite = posterior.evaluate(*w, &log_p, &grad);
    summary.iterations = epoch;
    if (finite && -log_p < best_value) {
      best_value = -log_p;
      best = *w;
      summary.gradient_norm = grad.norm();
    }
    if (options.callback && options.callback({epoch, -log_p, grad.norm()}) == CallbackReturn::kAbort) {
      summary.termination = Termination::kAborted;
      summary.message = "adam: stopped by the callback";
      break;
    }
    if (finite && grad.norm() <= options.gradient_tolerance * std::max(1.0, w->norm())) {
      summary.termination = Termination::kConverged;
      summary.message = "adam: gradient norm below tolerance";
      break;
    }
  }
  if (summary.termination != Termination::kConverged && summary.termination != Termination::kAborted) {
    summary.termination = Termination::kMaxIterations;
    summary.message = "adam: reached the maximum of " + std::to_string(options.max_iterations) + " epochs";
  }
  *w = best;
  summary.objective = best_value;
  summary.seconds = seconds_since(start);
  return summary;
}

MapSummary run_levenberg_marquardt(const Posterior& posterior, const MapOptions& options, Eigen::VectorXd* w) {
  // Levenberg–Marquardt with Nielsen's damping update (Madsen, Nielsen & Tingleff 2004, Alg. 3.16),
  // on S(w) = −log p(w, D) with the positive semi-definite model Hessian A = JᵀΛJ + diag(α):
  // solve (A + μI)Δ = −∇S, accept when S decreases, and move μ by the gain ratio ρ.
  const auto start = Clock::now();
  MapSummary summary;
  auto finish = [&](Termination termination, std::string message) {
    summary.termination = termination;
    summary.message = std::move(message);
    summary.seconds = seconds_since(start);
    return summary;
  };
  double log_p;
  Eigen::VectorXd grad;
  ++summary.evaluations;
  if (!posterior.evaluate(*w, &log_p, &grad)) {
    summary.objective = std::numeric_limits<double>::quiet_NaN();
    return finish(Termination::kFailure, "no finite value of the objective at the start point");
  }
  double S = -log_p;
  Eigen::VectorXd g = -grad;
  auto model_hessian = [&](const Eigen::VectorXd& at) {
    Eigen::MatrixXd A = posterior.data_hessian(at, HessianKind::kGgn);
    posterior.prior().add_precision_to(&A);
    return A;
  };
  Eigen::MatrixXd A = model_hessian(*w);
  double mu = 1e-3 * A.diagonal().maxCoeff();
  double nu = 2.0;
  Eigen::LLT<Eigen::MatrixXd> llt;
  Eigen::MatrixXd damped;
  summary.objective = S;
  summary.gradient_norm = g.norm();
  while (summary.iterations < options.max_iterations) {
    if (summary.gradient_norm <= options.gradient_tolerance * std::max(1.0, w->norm())) {
      return finish(Termination::kConverged, "gradient norm below tolerance");
    }
    ++summary.iterations;
    bool accepted = false;
    while (!accepted) {
      damped = A;
      damped.diagonal().array() += mu;
      llt.compute(damped);
      if (llt.info() != Eigen::Success || !std::isfinite(mu)) {
        if (!std::isfinite(mu) || mu > 1e300) {
          return finish(Termination::kFailure, "the damped Gauss–Newton system could not be solved; the best point is kept");
        }
        mu *= nu;
        nu *= 2.0;
        continue;
      }
      const Eigen::VectorXd step = llt.solve(-g);
      if (step.norm() <= std::numeric_limits<double>::epsilon() * (w->norm() + 1e-12)) {
        return finish(Termination::kConverged, "no further decrease possible in double precision (the step is below the rounding of w)");
      }
      const Eigen::VectorXd trial = *w + step;
      Eigen::VectorXd trial_grad;
      ++summary.evaluations;
      const bool finite = posterior.evaluate(trial, &log_p, &trial_grad);
      const double predicted = 0.5 * step.dot(mu * step - g);  // decrease of the quadratic model
      const double rho = finite ? (S - (-log_p)) / predicted : -1.0;
      if (finite && rho > 0.0) {
        const double decrease = S + log_p;
        *w = trial;
        S = -log_p;
        g = -trial_grad;
        mu *= std::max(1.0 / 3.0, 1.0 - std::pow(2.0 * rho - 1.0, 3));
        nu = 2.0;
        accepted = true;
        summary.objective = S;
        summary.gradient_norm = g.norm();
        if (options.callback &&
            options.callback({summary.iterations, S, summary.gradient_norm}) == CallbackReturn::kAbort) {
          return finish(Termination::kAborted, "stopped by the callback");
        }
        if (decrease <= options.function_tolerance * std::max(1.0, std::abs(S))) {
          return finish(Termination::kConverged, "relative change of the objective below tolerance");
        }
        A = model_hessian(*w);
      } else {
        mu *= nu;
        nu *= 2.0;
        if (predicted <= std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(S)) && finite) {
          return finish(Termination::kConverged, "no further decrease possible in double precision");
        }
      }
    }
  }
  return finish(Termination::kMaxIterations,
                "reached the maximum of " + std::to_string(options.max_iterations) + " iterations");
}

}  // namespace

Optimizer parse_optimizer(std::string_view name) {
  if (name == "auto") return Optimizer::kAuto;
  if (name == "lm") return Optimizer::kLevenbergMarquardt;
  if (name == "lbfgs") return Optimizer::kLbfgs;
  if (name == "adam") return Optimizer::kAdam;
  throw Error(ErrorKind::kInvalidArgument,
              "optimizer must be 'auto', 'lm', 'lbfgs' or 'adam', got '" + std::string(name) + "'");
}

const char* to_string(Optimizer optimizer) {
  switch (optimizer) {
    case Optimizer::kAuto: return "auto";
    case Optimizer::kLevenbergMarquardt: return "lm";
    case Optimizer::kLbfgs: return "lbfgs";
    case Optimizer::kAdam: return "adam";
  }
  return "unknown";
}

void MapOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) { invalid_option("MapOptions", field, value, rule); };
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
  switch (options.optimizer) {
    case Optimizer::kAdam: return run_adam(posterior, options, w);
    case Optimizer::kLevenbergMarquardt: return run_levenberg_marquardt(posterior, options, w);
    case Optimizer::kLbfgs: return maximize(posterior, options, w);
    case Optimizer::kAuto: break;
  }
  return posterior.dim() <= options.lm_max_params ? run_levenberg_marquardt(posterior, options, w)
                                                  : maximize(posterior, options, w);
}

}  // namespace occam

// map.h — the maximum a posteriori weights: minimise S(w) = −log p(w, D | α, β).
//
// Levenberg–Marquardt on the Gauss–Newton matrix for networks of up to a few thousand weights
// (the Foresee & Hagan 1997 practice: MacKay's posteriors are ill-conditioned, α_g spanning
// orders of magnitude, and first-order methods creep), L-BFGS with a strong-Wolfe line search
// (LBFGS++) for larger ones, and Adam with minibatches for large data. Termination is reported as converged, maximum iterations or
// failure, never confused.
//
//   occam::MapOptions options;            // L-BFGS by default
//   occam::MapSummary s = occam::find_map(posterior, options, &w);
//   if (s.termination != occam::Termination::kConverged) std::cerr << s.message;
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "occam/callback.h"
#include "occam/posterior.h"
#include "occam/status.h"

namespace occam {

enum class Optimizer {
  kAuto,                // W ≤ MapOptions::lm_max_params: Newton for a Linear network (a GLM),
                        // Levenberg–Marquardt otherwise; L-BFGS above
  kLevenbergMarquardt,  // damped Gauss–Newton on JᵀΛJ + α: few, W³-costly iterations
  kNewton,              // Newton/IRLS with a backtracking line search: GLMs, where JᵀΛJ is the Hessian
  kLbfgs,               // L-BFGS: many, O(mW)-cheap iterations
  kAdam,                // minibatch Adam, for data too large for full-batch passes (minibatch_map.h)
  kSgd,                 // minibatch SGD with momentum (minibatch_map.h)
};
Optimizer parse_optimizer(std::string_view name);  // "auto" | "lm" | "newton" | "lbfgs" | "adam" | "sgd"
bool is_minibatch(Optimizer optimizer);            // kAdam or kSgd
const char* to_string(Optimizer optimizer);

struct MapIteration {
  int iteration = 0;            // LM iteration, L-BFGS evaluation, or minibatch epoch (the one under way)
  double objective = 0.0;       // S(w) = −log p(w, D) (minibatch: the epoch's mean minibatch estimate so far)
  double gradient_norm = 0.0;   // minibatch: the full-batch ‖∇S‖ at the last check (NaN before one)
  int total = 0;                // minibatch: the epochs planned (for an ETA); 0 otherwise
  double epoch_fraction = 1.0;  // minibatch: how much of `iteration` is done

  // The trust-region Newton MAP inside the evidence loops (docs/evidence.md, "Sloppy weights and
  // the curved valley") reports every iteration, its trial taken or refused, with the step's anatomy, as
  // Ceres's IterationSummary does; other optimisers leave these at their defaults (NaN, -1).
  // objective and gradient_norm are at the iterate after the iteration: the trial's where it
  // was taken, else unchanged. Norms are A-norms, A = JᵀΛJ + P(θ) at the iterate the step
  // started from: posterior standard deviations.
  bool step_taken = true;
  double trust_radius = std::numeric_limits<double>::quiet_NaN();  // Δ the step was computed in
  double step_norm = std::numeric_limits<double>::quiet_NaN();     // ‖s‖_A
  bool on_boundary = false;                                        // the step reached ‖s‖_A = Δ
  bool negative_curvature = false;  // CG met dᵀ∇∇S d ≤ 0 and followed d to the boundary
  int cg_iterations = -1;           // Steihaug's conjugate-gradient iterations for the step
  // √(gᵀA⁻¹g) where the step started: the Gauss–Newton model's distance to the mode.
  double newton_decrement = std::numeric_limits<double>::quiet_NaN();
  double predicted_decrease = std::numeric_limits<double>::quiet_NaN();  // of the quadratic model (along the bent path)
  double actual_decrease =
      std::numeric_limits<double>::quiet_NaN();  // S(w) − S(trial); NaN where S(trial) is not finite
  // Where S cannot resolve the predicted decrease, the trial is judged by the Newton decrement
  // instead of by actual / predicted decrease.
  bool unresolved = false;
  // Inside the evidence loops (joint and outer): the step of EvidenceSummary::trace this MAP run
  // serves, its entry's `iteration` — 0 for the joint ascent's start (the outer loop's last round
  // where that loop ran first), k for the trial (or round)
  // recorded as step k and, at a fold, for the MAP at the current θ recorded beside it; -1 outside.
  int evidence_step = -1;
};

struct MapOptions {
  Optimizer optimizer = Optimizer::kAuto;
  Index lm_max_params = 3000;  // kAuto: the largest W given to Levenberg–Marquardt or Newton
  // Levenberg–Marquardt and Newton: how the damped system is held (kAuto: by size; see CurvatureForm).
  CurvatureForm curvature_form = CurvatureForm::kAuto;
  // Levenberg–Marquardt: once a Gauss–Newton step changes S by ≤ function_tolerance·max(1, |S|),
  // go on with the exact Hessian (damped until positive definite), which converges quadratically
  // where Gauss–Newton converges only linearly, to the gradient tolerance; false stops there and
  // reports it as converged (the behaviour before this option).
  bool lm_exact_hessian = true;
  int max_iterations = 5000;         // LM or L-BFGS iterations, or Adam epochs
  double gradient_tolerance = 1e-6;  // converged when ‖∇S‖ ≤ tol · max(1, ‖w‖)
  double function_tolerance = 1e-9;  // or when S changes by ≤ tol·max(1,|S|) (LM: in one step;
                                     // L-BFGS: over 10 iterations)
  // When a line search fails, L-BFGS restarts from the best point with a fresh memory. It counts
  // as converged when ‖∇S‖ is already within √gradient_tolerance · max(1, ‖w‖), or when a restart,
  // whose first step is along −∇S, finds no decrease at all (S is flat to double precision);
  // otherwise it is a failure.
  int lbfgs_memory = 10;
  double learning_rate = 1e-3;  // Adam, SGD (more in MinibatchOptions::from, minibatch_map.h)
  Index batch_size = 128;       // Adam, SGD
  std::uint64_t seed = 1;       // Adam's and SGD's minibatch order
  // Called after each iteration (e.g. for a progress line); may be empty. kAbort stops the run
  // with the best point so far (termination kAborted).
  IterationCallback<MapIteration> callback;

  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

struct MapSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  int iterations = 0;
  int evaluations = 0;
  double objective = 0.0;  // S(w) at the returned w
  double gradient_norm = 0.0;
  double seconds = 0.0;
  std::string brief_report() const;
};

// Minimises S from the w given (which must have posterior.dim() entries) and leaves the best
// point found in w, whatever the termination.
MapSummary find_map(const Posterior& posterior, const MapOptions& options, Eigen::VectorXd* w);

// L-BFGS on any LogDensity: maximises log p (minimises S = −log p) from *theta. Used by find_map
// and by engines whose objective is not the posterior itself (e.g. integrated-out hyperparameters).
// It is L-BFGS whatever options.optimizer says: a plain LogDensity has no curvature to offer.
MapSummary maximize(const LogDensity& density, const MapOptions& options, Eigen::VectorXd* theta);

}  // namespace occam

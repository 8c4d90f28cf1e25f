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
// kept negative definite by skipping pairs with sᵀy ≥ 0, and pairs across two modes). A trial
// that lowers L is refused and the radius shrinks. With the Gauss–Newton Hessian off a linear
// model (HessianKind::kExact on a network) the gradient is MacKay's, w held.
//
// Each trial's MAP starts at the mode predicted to first order, w* + (dw*/dφ)s, with dw*/dφ from
// the implicit-function theorem (the total gradient's own solves), and takes a few Newton steps
// from there (trust_region_map.cc), solved three digits beyond the gradient tolerance: L is not
// stationary in w (−½ log|A| moves with it to first order), so an error in w is an error in L.
// Modes track θ along branches; a branch can end at a fold, where the smallest eigenvalue of
// ∇∇S reaches zero and w* jumps to another mode, and L rises towards the fold with no stationary
// point on the branch. A short trial that leaves the branch is refused without paying for its
// whole MAP; where every step down to kFoldRadius leaves it, the ascent goes on from the mode w
// falls to. The factor of A at the new mode (internal::Curvature: m × m by Woodbury when m < W)
// serves the log-evidence, γ and the gradient, and at the end the Laplace approximation. A
// trial's gradient is solved for only where it is used (the BFGS pair of a trial on the branch,
// the test of an unresolved gain, a point the ascent goes on from): a trial that left the branch
// and is refused on its value costs its MAP and log|A| alone. The loop ends when both conditions
// hold: ‖∇S‖ ≤ tol·max(1, ‖w‖) and max_j |∂L/∂φ_j| ≤ hyper_gradient_tolerance.
#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>

#include "inference/evidence/engine.h"

namespace occam::evidence {
namespace {

// The MAP of each trial point is solved to this fraction of the gradient tolerance. Solving it
// more loosely while ∂L/∂φ is large (an inexact Newton method's forcing term, Eisenstat & Walker
// 1996) was tried: tighten = 10⁻³·√(‖∂L/∂φ‖/tol), at most 0.1, led the ascent to saddle points of S
// on small networks where this fixed fraction converges.
constexpr double kTighten = 1e-3;
// A trial's MAP starts at the mode predicted to first order; on the branch of the current mode
// Newton's method converges from there in a few iterations. A MAP that ends more than
// kBranchRadius posterior standard deviations (in the A-norm of the current mode) from the
// prediction has left for another mode. A long step in θ may do so (and is taken when L rises:
// the ascent is free to find a better mode); for a step shorter than kShortStep in log θ the MAP
// gets at most kTrackIterations iterations, and one that needs more has left the branch too: it
// is refused without paying for the rest of its MAP.
constexpr int kTrackIterations = 25;
constexpr double kBranchRadius = 3.0;
constexpr double kShortStep = 0.1;
// Where every trial step down to this size (in log θ) leaves the branch, the branch ends there:
// w_MAP(θ) meets a fold (the smallest eigenvalue of ∇∇S goes to zero) and L has no stationary
// point on it. The ascent then goes on from the mode the MAP falls to, at most kMaxBranchSwitches
// times.
constexpr double kFoldRadius = 1e-6;
// L is a sum over m terms, and its −½ log|A| moves with the error in w that the MAP's tolerance
// leaves (first order in it, as L is not stationary in w): changes in L below this fraction of
// |L| are not resolved (4e-12 relative was seen between trials 1e-11 apart in log θ on a 751-weight network).
constexpr double kValueResolution = 1e-10;
// A prior group whose weights the data no longer determine (γ_j → 0 as α_j → ∞: the evidence
// prunes it) has its maximum at α_j = ∞, approached like γ_j: near there ∂L/∂log α_j ≈ ½γ_j ∝ 1/α_j,
// so all that L can still gain by raising α_j is about the gradient itself. A quasi-Newton model
// sees almost no curvature along it and takes ever longer steps outward that shake the other
// coordinates (Boston, 50 units: 17 steps walked α of the output bias from 1e4 to 3e7, log Z the
// same to 1e-6 nats). So once γ_j ≤ kPrunedGamma and 0 < ∂L/∂log α_j ≤ the tolerance, α_j is set to
// its upper bound in one trial step, kept if L does not fall beyond its resolution, and the
// group is then held at the bound (reported in at_bound) like any other bound.
constexpr double kPrunedGamma = 1e-3;
constexpr int kMaxBranchSwitches = 4;
// A long trial step may carry w_MAP(θ) off its branch, through a fold onto a far mode whose L is
// far lower (Boston, 50 units: a step of 5.2 in log α of the hidden biases, predicted to gain 20
// nats, spent 158–317 Newton iterations reaching a mode 100 nats below the current one, and was
// refused). Such a trial is seen early: from kTrackIterations iterations on, the MAP estimates the
// trial's L at the mode its Gauss–Newton model predicts (engine.h, MapFloor) and is abandoned when
// that falls more than kAbandonNats + |predicted gain| below the current L. On that fit (at its
// 5th, 10th, 25th, 50th … iterations) the estimate of every trial that was accepted was within 14
// nats of its final L and above the current L, and 78 nats below the
// current L at the rejected trial's 25th iteration; the abandoned trial is refused like any other.
// The floor is given to every trial: a short one, whose MAP stops at kTrackIterations anyway, that
// is below it there ends as abandoned (kNoProgress) rather than as having left its branch
// (kMaxIterations), so it does not mark where w departed for the fold rule.
constexpr double kAbandonNats = 10.0;
// A branch can also end at a fold that its trials do not leave by kBranchRadius: there ∇∇S is
// singular at w, and a trial a hair away in θ either stays at w or slides a few Newton steps to a
// nearby mode whose L is lower by far more than the step can change L along a branch (protein,
// split 0: 0.37 nats at steps of 1e-10 in log θ, the total gradient there 381, the smallest
// eigenvalue of the exact ∇∇S −4.7e-5; the ascent stalled with no_progress). A trial below
// kFoldRadius whose L differs from the model's prediction by more than kJumpNats has therefore
// left its branch, and the fold rule may go on from a mode whose L differs from the current one
// by more than kJumpNats as well as from one more than kBranchRadius away (protein then converged
// after one such switch; docs/BENCHMARKS.md, "A branch left by a jump in L").
constexpr double kJumpNats = 0.01;
// Near a fold the trials need not leave the branch at every step down to kFoldRadius: with
// dw*/dφ large there, a trial's MAP from its predicted start may stay on the branch (L a hair
// lower, not the model's gain) or fall to the mode beyond. Where two trials in a row, at steps 4×
// apart, fall to the same other mode (their w within kSameMode posterior standard deviations of
// each other, their L within kJumpNats, both more than kJumpNats below the current L), the fold
// rule is taken at once rather than after the trials between there and kFoldRadius (breast cancer,
// 50 units: twice 6–7 trials, every second one a MAP of 13–21 iterations to that same mode, and
// the same mode reached in the end).
constexpr double kSameMode = 0.1;

struct Point {
  bool ok = false;         // the MAP converged and L is finite (and the gradient, where has_gradient)
  int map_iterations = 0;  // spent on this point's MAP
  Termination map = Termination::kFailure;
  Eigen::VectorXd phi, w, gradient, gamma;
  Eigen::MatrixXd mode_derivative;  // dw*/dφ at (w, φ), with the total gradient
  bool has_gradient = false;        // gradient (and mode_derivative) computed; ok then covers them
  bool definite = false;            // the total gradient's solves found ∇∇S positive definite
  double value = -std::numeric_limits<double>::infinity();
  double w_gradient_norm = std::numeric_limits<double>::quiet_NaN();  // ‖∇S‖ at w, once the MAP converged
  // A at (w, φ): the factor the MAP ended on (Gauss–Newton, trust-region Newton), or else the
  // Laplace approximation.
  std::unique_ptr<internal::Curvature> curvature;
  std::optional<LaplaceApproximation> laplace;
};

class EvidenceAscent {
 public:
  explicit EvidenceAscent(Run& run)
      : run_(run),
        posterior_(run.posterior),
        total_(total_gradient_applies(run.posterior, run.options.hessian)),
        reuse_curvature_(run.options.hessian == HessianKind::kGgn &&
                         uses_levenberg_marquardt(run.options.map, run.posterior)),
        has_beta_(posterior_.likelihood().has_precision()),
        num_prior_(posterior_.prior().num_hyperparameters()),
        J_(num_prior_ + (has_beta_ ? 1 : 0)),
        first_free_(run.options.fix_prior ? J_ - (has_beta_ ? 1 : 0) : 0),  // fix_prior: β alone moves
        prune_declined_(static_cast<std::size_t>(J_), false) {}

  // The ascent as Nocedal & Wright's Algorithm 4.1 in φ: start, then per step the free
  // coordinates, the stopping test, the pruning trial, the trust-region trial; finish.
  void climb();

 private:
  // The MAP at φ from w_start (at most max_map_iterations when positive), then L, γ and the
  // gradient of L there; mode_guess, when given, is dw*/dφ at a nearby point, the start of the
  // solves for this point's.
  Point evaluate(const Eigen::VectorXd& phi, const Eigen::VectorXd& w_start, int max_map_iterations = 0,
                 const Eigen::MatrixXd* mode_guess = nullptr, MapFloor* floor = nullptr);
  // The same without the gradient, which add_gradient() adds where the point is to be used: a
  // trial refused on its value alone, where w left the current branch, needs none.
  Point evaluate_value(const Eigen::VectorXd& phi, const Eigen::VectorXd& w_start, int max_map_iterations = 0,
                       MapFloor* floor = nullptr);
  // The total gradient of L at p (p.ok false where it is not finite); true when p is ok.
  bool add_gradient(Point& p, const Eigen::MatrixXd* mode_guess);

  // --- The steps of climb(), in order. ---
  // The first MAP and its point (round 0 of the trace); false when the ascent cannot start.
  bool start();
  // Instead of start(): the state of a checkpoint (EvidenceOptions::resume), the factor of A at
  // its mode formed again; returns the steps it had taken.
  int resume_from(const EvidenceCheckpoint& checkpoint);
  // The state after `steps` steps to EvidenceOptions::checkpoint, where there is one.
  void save(int steps) const;
  // The coordinates not fixed and not held at a bound by a gradient pointing out; *norm is the
  // largest |∂L/∂φ_j| over them.
  std::vector<Index> free_coordinates(double* norm) const;
  // Groups the evidence prunes (kPrunedGamma) sent to their bound in one trial; true when taken.
  bool prune(const std::vector<Index>& free);
  // The model step −B⁻¹g on the free coordinates, cut back to the trust radius (∞-norm), and its
  // trial: taken, refused, or a move to the branch beyond a fold. Updates B and the radius.
  void trust_region_step(const std::vector<Index>& free);
  // Hands the current point to the run: θ, w, the Laplace approximation, the message.
  void finish();

  // --- One predicate per stopping rule; each sets the termination it names. ---
  bool at_maximum(const std::vector<Index>& free, double norm);
  bool stopped_by_callback(const char* where);
  bool radius_collapsed(const char* test, const char* outcome);

  void stop(Termination termination, std::string test, std::string outcome);
  Eigen::MatrixXd first_model() const;
  void record_trial(const Point& trial, bool accepted);
  double deviations(const Eigen::VectorXd& v) const;  // in posterior standard deviations at the mode
  void restore_current_hyperparameters() { set_all_hyperparameters(&posterior_, current_.phi.array().exp().matrix()); }

  Run& run_;
  Posterior& posterior_;
  const bool total_;
  const bool reuse_curvature_;
  const bool has_beta_;
  const Index num_prior_, J_, first_free_;
  const double lower_ = std::log(kMinHyper), upper_ = std::log(kMaxHyper);

  // The state of the ascent.
  Point current_;
  Eigen::MatrixXd B_;  // the BFGS model of ∂²L/∂φ² (negative definite)
  double radius_ = 1.0;
  // Where the last trial that left the current mode's branch ended, and how often the ascent
  // moved to another branch at a fold.
  std::optional<Eigen::VectorXd> departed_;
  int switches_ = 0;
  // The last trial, where it was refused at a mode more than kJumpNats below the current L.
  struct Fallen {
    Eigen::VectorXd w;
    double value = 0.0;
  };
  std::optional<Fallen> fallen_;
  std::vector<bool> prune_declined_;  // a pruning trial of the group lowered L
  bool stopped_ = false;
  std::string test_, outcome_;
};

Point EvidenceAscent::evaluate(const Eigen::VectorXd& phi, const Eigen::VectorXd& w_start, int max_map_iterations,
                               const Eigen::MatrixXd* mode_guess, MapFloor* floor) {
  Point p = evaluate_value(phi, w_start, max_map_iterations, floor);
  if (p.ok) add_gradient(p, mode_guess);
  return p;
}

Point EvidenceAscent::evaluate_value(const Eigen::VectorXd& phi, const Eigen::VectorXd& w_start, int max_map_iterations,
                                     MapFloor* floor) {
  const EvidenceOptions& options = run_.options;
  Point p;
  p.phi = phi;
  p.w = w_start;
  set_all_hyperparameters(&posterior_, phi.array().exp().matrix());
  Run trial{posterior_, options, p.w, run_.summary};
  trial.step = run_.step;
  std::string message;
  const int before = run_.summary.map_iterations;
  p.map = minimize_map(trial, &message, reuse_curvature_ ? &p.curvature : nullptr, kTighten, max_map_iterations, floor);
  p.map_iterations = run_.summary.map_iterations - before;
  if (p.map == Termination::kAborted) run_.aborted = true;
  // L is judged only where w is at the mode (elsewhere −½ log|A| moves with the error in w), so a
  // MAP that did not converge leaves nothing to evaluate: the caller uses its w and why it stopped.
  if (p.map != Termination::kConverged) return p;
  double log_joint;
  Eigen::VectorXd grad;
  if (!posterior_.evaluate(p.w, &log_joint, &grad)) return p;
  p.w_gradient_norm = grad.norm();
  try {
    double log_det;
    if (p.curvature && p.curvature->factored()) {
      // log|A| and γ from the factor of A at w* the MAP ended on (m × m when m < W).
      const internal::Curvature& A = *p.curvature;
      log_det = A.log_det();
      p.gamma = A.well_determined();
    } else {
      p.curvature.reset();
      p.laplace = laplace(posterior_, p.w, options.hessian);
      const LaplaceApproximation& q = *p.laplace;
      log_det = q.log_det_precision();
      p.gamma = well_determined_parameters(posterior_.prior(), q);
    }
    // MacKay 1992a, eq. 10, as log_evidence() computes it.
    p.value = log_joint + 0.5 * static_cast<double>(p.w.size()) * std::log(2.0 * std::numbers::pi) - 0.5 * log_det;
  } catch (const Error&) {
    return p;
  }
  p.ok = std::isfinite(p.value);
  return p;
}

bool EvidenceAscent::add_gradient(Point& p, const Eigen::MatrixXd* mode_guess) {
  if (!p.ok || p.has_gradient) return p.ok;
  p.has_gradient = true;
  set_all_hyperparameters(&posterior_, p.phi.array().exp().matrix());
  try {
    if (total_) {
      // A⁻¹ from the factor the MAP ended on (m × m when m < W), or else the Laplace approximation.
      InverseCurvature solve_A;
      if (p.curvature) {
        const internal::Curvature& A = *p.curvature;
        solve_A = [&A](const Eigen::MatrixXd& R) -> Eigen::MatrixXd { return A.solve_matrix(R); };
      } else {
        const LaplaceApproximation& q = *p.laplace;
        solve_A = [&q](const Eigen::MatrixXd& R) -> Eigen::MatrixXd { return q.covariance_times(R); };
      }
      TotalGradient total = total_gradient(posterior_, p.w, p.gamma, solve_A, mode_guess, false, p.curvature.get());
      p.gradient = std::move(total.gradient);
      p.mode_derivative = std::move(total.mode_derivative);
      p.definite = total.definite;
    } else {
      p.gradient = mode_held_gradient(posterior_, p.w, p.gamma);
    }
  } catch (const Error&) {
    p.ok = false;
    return false;
  }
  p.ok = p.gradient.allFinite();
  return p.ok;
}

void EvidenceAscent::climb() {
  run_.gradient_kind = total_ ? EvidenceGradient::kTotal : EvidenceGradient::kModeHeld;
  int done = 0;  // steps taken
  if (run_.options.resume) {
    done = resume_from(*run_.options.resume);
  } else if (!start()) {
    return;
  }
  // Unless another rule ends it first, the ascent ends at its step budget.
  run_.stop = Termination::kMaxIterations;
  test_ = "quasi-Newton step budget (max_outer_iterations) of the evidence ascent";
  outcome_ = "reached the maximum of " + std::to_string(run_.options.max_outer_iterations) + " steps";
  // A checkpoint saved after the step that ended its ascent ends this one there too.
  if (run_.options.resume && run_.options.resume->ended) {
    const EvidenceCheckpoint::Ending& e = *run_.options.resume->ended;
    stop(e.termination, e.stopping_test, e.outcome);
  }
  stopped_by_callback("stopped by the callback at the start");
  // The state is saved before each step and once more at the end: a resume from the last one
  // ends as this run does.
  int saved = run_.options.resume ? done : -1;
  // run_.aborted without a stop: the user's callback asked to stop as a step was recorded.
  for (int it = done + 1; !stopped_ && !run_.aborted && it <= run_.options.max_outer_iterations; ++it) {
    if (saved != it - 1) save(saved = it - 1);
    double norm = 0.0;
    const std::vector<Index> free = free_coordinates(&norm);
    if (at_maximum(free, norm)) break;
    done = it;
    if (prune(free)) continue;
    if (stopped_) break;
    trust_region_step(free);
  }
  if (saved != done) save(done);
  finish();
}

int EvidenceAscent::resume_from(const EvidenceCheckpoint& c) {
  const Index W = posterior_.dim();
  const auto mismatch = [](const std::string& what) {
    throw Error(ErrorKind::kInvalidArgument,
                "EvidenceOptions.resume: the checkpoint's " + what + " does not fit this posterior");
  };
  if (c.w.size() != W) mismatch("w (" + std::to_string(c.w.size()) + " weights, not " + std::to_string(W) + ")");
  if (c.log_hyperparameters.size() != J_ || c.gradient.size() != J_ || c.model.rows() != J_ || c.model.cols() != J_ ||
      c.prune_declined.size() != static_cast<std::size_t>(J_)) {
    mismatch("hyperparameters (" + std::to_string(c.log_hyperparameters.size()) + ", not " + std::to_string(J_) + ")");
  }
  if (c.mode_derivative.size() > 0 && (c.mode_derivative.rows() != W || c.mode_derivative.cols() != J_))
    mismatch("dw*/dphi");
  if ((c.departed && c.departed->size() != W) || (c.fallen && c.fallen->size() != W)) mismatch("fold rule's points");
  if (c.steps < 0) mismatch("step count");
  // The summary so far; what fit_evidence set before the ascent (the loop, its choice, the
  // structure) is this run's own.
  EvidenceSummary& summary = run_.summary;
  summary.message = c.summary.message;
  summary.outer_iterations = c.summary.outer_iterations;
  summary.map_iterations = c.summary.map_iterations;
  summary.abandoned_trials = c.summary.abandoned_trials;
  summary.map_steps = c.summary.map_steps;
  summary.subset_start = c.summary.subset_start;
  summary.trace = c.summary.trace;
  summary.last_map = c.summary.last_map;
  run_.seconds_before = c.summary.seconds;
  summary.resumed_at_step = c.steps;

  Point p;
  p.phi = c.log_hyperparameters;
  p.w = c.w;
  p.map = Termination::kConverged;
  p.map_iterations = c.map_iterations;
  p.value = c.log_evidence;
  p.gradient = c.gradient;
  p.gamma = c.gamma;
  p.mode_derivative = c.mode_derivative;
  p.definite = c.definite;
  p.w_gradient_norm = c.w_gradient_norm;
  p.has_gradient = true;
  set_all_hyperparameters(&posterior_, p.phi.array().exp().matrix());
  // The factor of A at the mode, as the MAP left it: formed at w, factored at θ.
  if (reuse_curvature_) {
    p.curvature = std::make_unique<internal::Curvature>(posterior_, p.w);
    if (!p.curvature->factor(0.0)) mismatch("mode (A is not positive definite there)");
  } else {
    p.laplace = laplace(posterior_, p.w, run_.options.hessian);
  }
  p.ok = true;
  current_ = std::move(p);
  B_ = c.model;
  radius_ = c.radius;
  switches_ = c.branch_switches;
  prune_declined_ = c.prune_declined;
  departed_ = c.departed;
  fallen_.reset();
  if (c.fallen) fallen_ = Fallen{*c.fallen, c.fallen_log_evidence};
  run_.w = current_.w;
  return c.steps;
}

void EvidenceAscent::save(int steps) const {
  if (!run_.options.checkpoint) return;
  EvidenceCheckpoint c;
  c.steps = steps;
  c.w = current_.w;
  c.log_hyperparameters = current_.phi;
  c.log_evidence = current_.value;
  c.gradient = current_.gradient;
  c.gamma = current_.gamma;
  c.mode_derivative = current_.mode_derivative;
  c.definite = current_.definite;
  c.w_gradient_norm = current_.w_gradient_norm;
  c.map_iterations = current_.map_iterations;
  c.model = B_;
  c.radius = radius_;
  c.branch_switches = switches_;
  c.prune_declined = prune_declined_;
  c.departed = departed_;
  if (fallen_) {
    c.fallen = fallen_->w;
    c.fallen_log_evidence = fallen_->value;
  }
  if (stopped_ && run_.stop != Termination::kConverged && run_.stop != Termination::kAborted) {
    c.ended = EvidenceCheckpoint::Ending{run_.stop, test_, outcome_};
  }
  c.summary = run_.summary;
  c.summary.seconds = run_.seconds();
  run_.options.checkpoint(c);
}

bool EvidenceAscent::start() {
  EvidenceSummary& summary = run_.summary;
  if (first_free_ >= J_) {
    // fix_prior on a likelihood without β: nothing to optimise but w.
    run_.gradient_kind = EvidenceGradient::kNone;
    std::string message;
    run_.step = 0;
    run_.stop = minimize_map(run_, &message);
    summary.stopping_test = "MAP: " + message;
    return false;
  }
  run_.step = summary.outer_iterations;  // the start's entry: step 0, or where an outer loop before it ended
  current_ = evaluate(all_hyperparameters(posterior_).array().log().matrix(), run_.w);
  if (!current_.ok) {
    // Left where the MAP left it: the finish reports the gradients there.
    run_.stop = current_.map == Termination::kConverged ? Termination::kFailure : current_.map;
    summary.stopping_test =
        run_.aborted ? "the callback asked to stop" : std::string("MAP: ") + to_string(current_.map);
    summary.message += std::string(summary.message.empty() ? "" : "; ") +
                       (run_.aborted ? "stopped by the callback during the first MAP, before the evidence ascent"
                                     : "the evidence ascent could not start: the MAP did not reach its tolerance");
    if (current_.map != Termination::kFailure) run_.w = current_.w;
    return false;
  }
  // The start, as round 0 of the trace: its α, β, w_MAP and log-evidence.
  record(run_,
         {summary.outer_iterations, current_.value, posterior_.prior().hyperparameters(),
          has_beta_ ? posterior_.likelihood().precision() : std::numeric_limits<double>::quiet_NaN(), current_.gamma,
          current_.map_iterations, true, current_.gradient.cwiseAbs().maxCoeff(), current_.w_gradient_norm});
  B_ = first_model();
  return true;
}

std::vector<Index> EvidenceAscent::free_coordinates(double* norm) const {
  std::vector<Index> free;
  *norm = 0.0;
  for (Index j = first_free_; j < J_; ++j) {
    const double g = current_.gradient[j];
    if ((current_.phi[j] <= lower_ && g < 0.0) || (current_.phi[j] >= upper_ && g > 0.0)) continue;
    free.push_back(j);
    *norm = std::max(*norm, std::abs(g));
  }
  return free;
}

bool EvidenceAscent::prune(const std::vector<Index>& free) {
  const double tolerance = run_.options.hyper_gradient_tolerance;
  std::vector<Index> pruned;
  for (Index j : free) {
    if (j < num_prior_ && current_.gamma.size() == num_prior_ && !prune_declined_[static_cast<std::size_t>(j)] &&
        current_.phi[j] < upper_ && current_.gamma[j] <= kPrunedGamma && current_.gradient[j] > 0.0 &&
        current_.gradient[j] <= tolerance) {
      pruned.push_back(j);
    }
  }
  if (pruned.empty()) return false;
  Eigen::VectorXd phi = current_.phi;
  for (Index j : pruned) phi[j] = upper_;
  run_.step = run_.summary.outer_iterations + 1;
  Point trial = evaluate(phi, current_.w);
  run_.summary.outer_iterations += 1;
  const double resolution = kValueResolution * std::max(1.0, std::abs(current_.value));
  const bool accept = trial.ok && trial.value >= current_.value - resolution;
  record_trial(trial, accept);
  if (accept) {
    current_ = std::move(trial);
    fallen_.reset();
    return true;
  }
  for (Index j : pruned) prune_declined_[static_cast<std::size_t>(j)] = true;
  restore_current_hyperparameters();
  stopped_by_callback("stopped by the callback during a trial's MAP; the best point so far is kept");
  return false;
}

void EvidenceAscent::trust_region_step(const std::vector<Index>& free) {
  EvidenceSummary& summary = run_.summary;
  // The model step −B⁻¹g on the free coordinates, cut back to the trust radius (∞-norm).
  const Eigen::VectorXd g_free = current_.gradient(free);
  Eigen::VectorXd s_free = (-B_(free, free)).llt().solve(g_free);
  if (!s_free.allFinite()) s_free = g_free / std::max(1.0, g_free.cwiseAbs().maxCoeff());
  if (s_free.cwiseAbs().maxCoeff() > radius_) s_free *= radius_ / s_free.cwiseAbs().maxCoeff();
  Eigen::VectorXd phi = current_.phi;
  for (std::size_t i = 0; i < free.size(); ++i) {
    phi[free[i]] = std::clamp(phi[free[i]] + s_free[static_cast<Index>(i)], lower_, upper_);
  }
  const Eigen::VectorXd s = phi - current_.phi;
  const double predicted = current_.gradient.dot(s) + 0.5 * s.dot(B_ * s);
  // The trial's MAP starts from the mode predicted to first order, w* + (dw*/dφ)s (the
  // implicit-function theorem, from the total gradient's own solves), not from w*.
  const Eigen::VectorXd w_start =
      current_.mode_derivative.size() > 0 ? Eigen::VectorXd(current_.w + current_.mode_derivative * s) : current_.w;
  const bool short_step = s.cwiseAbs().maxCoeff() < kShortStep;
  MapFloor floor{current_.value - kAbandonNats - std::abs(predicted), kTrackIterations};
  run_.step = summary.outer_iterations + 1;
  Point trial = evaluate_value(phi, w_start, short_step ? kTrackIterations : 0, &floor);
  summary.outer_iterations += 1;
  if (floor.reached) ++summary.abandoned_trials;
  const bool jumped = trial.ok && s.cwiseAbs().maxCoeff() < kFoldRadius &&
                      std::abs(trial.value - current_.value - predicted) > kJumpNats;
  const bool left_branch = (short_step && trial.map == Termination::kMaxIterations) ||
                           (trial.ok && deviations(trial.w - w_start) > kBranchRadius) || jumped;
  if (left_branch) departed_ = trial.w;
  const bool fell = trial.ok && trial.value < current_.value - kJumpNats;
  const bool fell_again = fell && fallen_ && std::abs(trial.value - fallen_->value) <= kJumpNats &&
                          deviations(trial.w - fallen_->w) <= kSameMode;
  fallen_.reset();
  if (fell) fallen_ = Fallen{trial.w, trial.value};
  if (fell_again) departed_ = trial.w;
  if (((left_branch && !(trial.ok && trial.value > current_.value) && radius_ < kFoldRadius) || fell_again) &&
      switches_ < kMaxBranchSwitches) {
    // The branch ends within kFoldRadius, or where the last two trials fell: the MAP at the
    // current θ from where w went, recorded beside the trial as the same step.
    Point other = evaluate_value(current_.phi, *departed_);
    departed_.reset();
    if (other.ok &&
        (deviations(other.w - current_.w) > kBranchRadius ||
         ((jumped || fell_again) && std::abs(other.value - current_.value) > kJumpNats)) &&
        add_gradient(other, nullptr)) {
      ++switches_;
      fallen_.reset();
      record_trial(trial, false);
      record_trial(other, true);
      current_ = std::move(other);
      B_ = first_model();
      radius_ = 1.0;
      return;
    }
    record_trial(other, false);  // its MAP's iterations belong to the trace too
    restore_current_hyperparameters();
  }
  // The trial's gradient serves the model (pairs on one branch), the test of a gain below the
  // resolution of L, and the step after a taken trial; a trial that left the branch and is refused
  // on its value needs none (the solves for dw*/dφ and the trace term: on breast cancer, 50
  // units, some 40% of an evaluation).
  const double resolution = kValueResolution * std::max(1.0, std::abs(current_.value));
  const bool unresolved = predicted <= resolution;
  const double gain = trial.value - current_.value;
  const double rho = predicted > 0.0 ? gain / predicted : -1.0;
  const bool gain_taken = gain > 0.0 && rho > 1e-4;  // the acceptance test where the gain is resolved
  if (!left_branch || unresolved || (trial.ok && gain_taken)) {
    add_gradient(trial, current_.mode_derivative.size() > 0 ? &current_.mode_derivative : nullptr);
  }
  if (!trial.ok) {
    record_trial(trial, false);
    radius_ = 0.25 * s.cwiseAbs().maxCoeff();
    restore_current_hyperparameters();
    // The trial's MAP was stopped: `current` is the best point.
    if (stopped_by_callback("stopped by the callback during a trial's MAP; the best point so far is kept")) return;
    radius_collapsed("evidence ascent: no trial point near the current one has a converged MAP",
                     "no trial point near the current one has a converged MAP");
    return;
  }
  // The model of ∂²L/∂φ² learns from pairs on one branch only.
  if (!left_branch) {
    const Eigen::VectorXd y = trial.gradient - current_.gradient;
    const double sy = s.dot(y);
    if (sy < -1e-12 * s.norm() * y.norm()) {
      const Eigen::VectorXd Bs = B_ * s;
      B_ += -Bs * Bs.transpose() / s.dot(Bs) + y * y.transpose() / sy;
    }
  }
  // Accept a real increase. Where the model's gain is below the resolution of L, ρ is noise:
  // accept when the gradient falls instead — but never a fall of L beyond its resolution,
  // which means w moved to another mode rather than along this one.
  const bool accept =
      unresolved ? gain >= -resolution && trial.gradient.cwiseAbs().maxCoeff() < current_.gradient.cwiseAbs().maxCoeff()
                 : gain_taken;
  record_trial(trial, accept);
  if (accept) {
    current_ = std::move(trial);
    fallen_.reset();
    if (unresolved) {
      radius_ = std::max(radius_, 2.0 * s.cwiseAbs().maxCoeff());
    } else {
      if (rho > 0.75 && s.cwiseAbs().maxCoeff() >= 0.9 * radius_) radius_ *= 2.0;
      if (rho < 0.25) radius_ *= 0.5;
    }
  } else {
    radius_ = 0.25 * s.cwiseAbs().maxCoeff();
    restore_current_hyperparameters();
  }
  // After the trial was taken or undone: `current` is the best point.
  if (stopped_by_callback("stopped by the callback; the best point so far is kept")) return;
  radius_collapsed("evidence ascent: the trust region shrank below 1e-12 in log theta",
                   "no step increases the Laplace log-evidence any further");
}

bool EvidenceAscent::at_maximum(const std::vector<Index>& free, double norm) {
  if (norm > run_.options.hyper_gradient_tolerance && !free.empty()) return false;
  stop(Termination::kConverged, "gradient conditions: |grad S| and max |d log Z/d log theta| below their tolerances",
       "at the maximum of the Laplace log-evidence");
  return true;
}

bool EvidenceAscent::stopped_by_callback(const char* where) {
  if (!run_.aborted) return false;
  stop(Termination::kAborted, "the callback asked to stop", where);
  return true;
}

bool EvidenceAscent::radius_collapsed(const char* test, const char* outcome) {
  if (radius_ >= 1e-12) return false;
  stop(Termination::kNoProgress, test, outcome);
  return true;
}

void EvidenceAscent::stop(Termination termination, std::string test, std::string outcome) {
  run_.stop = termination;
  test_ = std::move(test);
  outcome_ = std::move(outcome);
  stopped_ = true;
}

// The curvature of L in log θ_j is about −θ_j E_j (−βE_D for β): the model's first guess.
Eigen::MatrixXd EvidenceAscent::first_model() const {
  Eigen::VectorXd energy =
      posterior_.prior().hyperparameters().cwiseProduct(posterior_.prior().hyperparameter_energies(current_.w));
  if (has_beta_) {
    energy.conservativeResize(J_);
    energy[J_ - 1] = posterior_.likelihood().precision() * data_error(posterior_, current_.w);
  }
  return (-(energy.array().abs() + 1e-8)).matrix().asDiagonal();
}

// A trial in the trace: its α and β from its φ, whether it was taken; its log-evidence NaN where
// its MAP did not converge (or L is not finite there).
void EvidenceAscent::record_trial(const Point& trial, bool accepted) {
  record(run_, {run_.summary.outer_iterations, trial.ok ? trial.value : std::numeric_limits<double>::quiet_NaN(),
                trial.phi.head(num_prior_).array().exp().matrix(),
                has_beta_ ? std::exp(trial.phi[J_ - 1]) : std::numeric_limits<double>::quiet_NaN(), trial.gamma,
                trial.map_iterations, accepted,
                trial.has_gradient ? trial.gradient.cwiseAbs().maxCoeff() : std::numeric_limits<double>::quiet_NaN(),
                trial.w_gradient_norm});
}

double EvidenceAscent::deviations(const Eigen::VectorXd& v) const {
  return current_.curvature ? std::sqrt(current_.curvature->squared_norm(v)) : 0.0;
}

void EvidenceAscent::finish() {
  EvidenceSummary& summary = run_.summary;
  if (switches_ > 0) {
    outcome_ += "; the mode w_MAP(theta) vanished at a fold " + std::to_string(switches_) +
                " time(s) and the ascent went on from the mode the MAP fell to";
  }
  summary.stopping_test = test_;
  restore_current_hyperparameters();
  run_.w = current_.w;
  if (current_.curvature) {
    run_.laplace = current_.curvature->laplace(current_.w);
  } else {
    run_.laplace = std::move(current_.laplace);
  }
  if (total_ && current_.ok && current_.definite) run_.total_gradient = current_.gradient;
  summary.message += std::string(summary.message.empty() ? "" : "; ") + "evidence ascent: " + outcome_;
}

}  // namespace

void ascend_evidence(Run& run) {
  EvidenceAscent ascent(run);
  ascent.climb();
}

}  // namespace occam::evidence

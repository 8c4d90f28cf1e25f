// outer_loop.cc — MacKay's outer loop: a warm-started MAP to convergence, the Laplace
// approximation, one re-estimation of α and β; and kPeriodic, the same with MAP runs cut to
// `reestimate_every` iterations.
//
// The fixed-point updates are not an ascent method: on a network w_MAP moves with α and β and an
// update can overshoot into a worse mode. The loop is therefore safeguarded: a round whose
// log-evidence falls below the best so far is undone, and the step from the best hyperparameters
// is halved in log space, up to kMaxHalvings times. The accepted rounds increase the log-evidence
// monotonically; the trace marks the rejected ones (with a structured curvature the safeguard is
// off: see `safeguarded`). An accepted round after a halving that gains
// less than halved_step_gain nats ends the loop. None of these stops is convergence by itself:
// the shared finish checks the gradient conditions at the state the loop ends on.
#include <cmath>
#include <limits>
#include <sstream>

#include "inference/evidence/engine.h"

namespace occam::evidence {
namespace {

bool evidence_settled(double previous, double current, double tolerance) {
  return std::abs(current - previous) <= tolerance * std::max(1.0, std::abs(current));
}

// The loop as named steps: per round the MAP, the Laplace approximation and its log-evidence,
// the safeguard (undo and halve a round that lowered it), one predicate per stopping rule, and
// MacKay's update.
class OuterLoop {
 public:
  explicit OuterLoop(Run& run)
      : run_(run),
        posterior_(run.posterior),
        options_(run.options),
        summary_(run.summary),
        w_(run.w),
        round_options_(cut_short(run.options)),
        round_{posterior_, round_options_, w_, summary_},
        safeguarded_(options_.structure.full()) {}

  void fit() {
    run_.gradient_kind = EvidenceGradient::kModeHeld;
    run_.stop = Termination::kMaxIterations;
    summary_.message = "reached the maximum of " + std::to_string(options_.max_outer_iterations) + " re-estimations";
    summary_.stopping_test = "update budget (max_outer_iterations)";
    for (int it = 1; it <= options_.max_outer_iterations; ++it) {
      if (!round(it)) break;
    }
    if (run_.stop != Termination::kFailure && q_.dim() == w_.size()) run_.laplace = std::move(q_);
  }

 private:
  static constexpr int kMaxHalvings = 4;

  struct State {
    double log_z = -std::numeric_limits<double>::infinity();
    Eigen::VectorXd w, theta;
    LaplaceApproximation laplace;
  };

  // What a round measured at the α, β its MAP and log-evidence belong to.
  struct Round {
    int it = 0, map_iterations = 0;
    bool map_done = false;
    double log_z = 0.0, hyper_norm = 0.0;
    Eigen::VectorXd gamma;
  };

  static EvidenceOptions cut_short(const EvidenceOptions& options) {  // the MAP runs of kPeriodic
    EvidenceOptions round_options = options;
    if (options.strategy == HyperStrategy::kPeriodic) round_options.map.max_iterations = options.reestimate_every;
    return round_options;
  }

  void end_on(Termination stop, const std::string& message, const std::string& test) {
    run_.stop = stop;
    summary_.message = message;
    summary_.stopping_test = test;
  }
  void end_aborted(const std::string& message) { end_on(Termination::kAborted, message, "the callback asked to stop"); }
  void restore_best_hyperparameters() { set_all_hyperparameters(&posterior_, best_.theta); }

  void trace(const Round& r, bool accepted) {
    record(run_, {r.it, r.log_z, posterior_.prior().hyperparameters(), current_beta(posterior_), r.gamma,
                  r.map_iterations, accepted, r.hyper_norm, summary_.last_map.gradient_norm});
  }

  // One round; false when the loop ends with it.
  bool round(int it) {
    const int before = summary_.map_iterations;
    std::string map_message;
    round_.step = it;  // recorded as round `it`, taken or undone
    const Termination map = minimize_map(round_, &map_message);
    if (map == Termination::kFailure) {
      end_on(Termination::kFailure, "MAP: " + map_message, "MAP failure");
      return false;
    }
    if (map == Termination::kAborted) {  // the MAP's callback asked to stop: end on the best round
      run_.aborted = true;
      if (std::isfinite(best_.log_z)) {
        w_ = best_.w;
        q_ = best_.laplace;
        restore_best_hyperparameters();
      }
      end_aborted("stopped by the callback; the best state so far is kept");
      return false;
    }
    Round r = measure(it, summary_.map_iterations - before, map == Termination::kConverged);
    if (lowered_the_evidence(r)) return undo_and_halve(r);
    const double previous = best_.log_z;
    const bool after_halving = halvings_ > 0;
    if (r.map_done) {
      best_ = {r.log_z, w_, all_hyperparameters(posterior_), q_};
      halvings_ = 0;
    }
    if (r.map_done && at_fixed_point(r)) {
      trace(r, true);
      end_on(Termination::kConverged, "MacKay's fixed point: the gradient conditions hold",
             "gradient conditions: |grad S| and max |d log Z/d log theta| (w held) below their tolerances");
      return false;
    }
    if (r.map_done && evidence_settled(previous, r.log_z, options_.tolerance)) {
      trace(r, true);
      end_on(Termination::kConverged, "log-evidence changed by less than the tolerance",
             "outer loop: relative change of the log-evidence below the tolerance");
      return false;
    }
    if (r.map_done && after_halving && r.log_z - previous < options_.halved_step_gain) {
      trace(r, true);
      std::ostringstream message;
      message << "a halved step gained " << r.log_z - previous << " nats of log-evidence, less than "
              << options_.halved_step_gain << "; the loop is at its maximum along the update direction";
      end_on(Termination::kConverged, message.str(), "outer loop: a halved step gained less than halved_step_gain");
      return false;
    }
    trace(r, true);  // this round, at the α, β its MAP and log-evidence belong to
    if (it == options_.max_outer_iterations) return false;
    if (run_.aborted) {
      end_aborted("stopped by the callback; this round's state is kept");
      return false;
    }
    mackay_update(&posterior_, w_, r.gamma, options_.fix_prior, held_weights(q_));
    return true;
  }

  // The Laplace approximation at the round's MAP, its log-evidence, γ and the mode-held gradient.
  Round measure(int it, int map_iterations, bool map_done) {
    Round r;
    r.it = it;
    r.map_iterations = map_iterations;
    r.map_done = map_done;
    q_ = laplace_at(posterior_, w_, options_);
    r.log_z = log_evidence(posterior_, q_);
    summary_.outer_iterations = it;
    r.gamma = well_determined_parameters(posterior_.prior(), q_);
    r.hyper_norm = free_hyperparameters(posterior_, mode_held_gradient(posterior_, w_, r.gamma, held_weights(q_)),
                                        options_.fix_prior)
                       .norm;
    return r;
  }

  bool lowered_the_evidence(const Round& r) const { return r.map_done && safeguarded_ && r.log_z < best_.log_z; }
  bool at_fixed_point(const Round& r) const { return r.hyper_norm <= options_.hyper_gradient_tolerance; }

  // The round is undone; the step from the best hyperparameters is halved in log space, or the
  // loop ends on the best state when the halvings or the rounds are spent. False when it ends.
  bool undo_and_halve(const Round& r) {
    trace(r, false);
    w_ = best_.w;
    q_ = best_.laplace;
    if (run_.aborted) {
      restore_best_hyperparameters();
      end_aborted("stopped by the callback; the best state so far is kept");
      return false;
    }
    if (halvings_ == kMaxHalvings || r.it == options_.max_outer_iterations) {
      // End on the best state, whose w and Laplace factor belong to its α and β.
      restore_best_hyperparameters();
      if (halvings_ == kMaxHalvings) {
        end_on(Termination::kNoProgress,
               "no re-estimation step increased the log-evidence (after " + std::to_string(kMaxHalvings) +
                   " halvings); the best state is kept",
               "outer loop: " + std::to_string(kMaxHalvings) + " halved steps all lowered the log-evidence");
      }
      return false;
    }
    ++halvings_;
    // Half the step in log space: the geometric mean of the best and the rejected values.
    set_all_hyperparameters(&posterior_,
                            (best_.theta.array() * all_hyperparameters(posterior_).array()).sqrt().matrix());
    return true;
  }

  Run& run_;
  Posterior& posterior_;
  const EvidenceOptions& options_;
  EvidenceSummary& summary_;
  Eigen::VectorXd& w_;
  const EvidenceOptions round_options_;
  Run round_;
  // With a structured curvature the loop is the plain fixed-point iteration: its target is the
  // zero of the structure's mode-held gradient, and log Z_structure(θ, w*(θ)) need not rise on the
  // way there (its total derivative has the term −½ ∂log|A_structure|/∂w · dw*/dθ, which the
  // structure's fixed point does not zero), so undoing the rounds where it falls would stop the
  // loop short of that fixed point.
  const bool safeguarded_;
  State best_;
  int halvings_ = 0;
  LaplaceApproximation q_;
};

}  // namespace

void fit_outer_loop(Run& run) { OuterLoop(run).fit(); }

}  // namespace occam::evidence

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

#include "evidence/engine.h"

namespace occam::evidence {
namespace {

bool evidence_settled(double previous, double current, double tolerance) {
  return std::abs(current - previous) <= tolerance * std::max(1.0, std::abs(current));
}

}  // namespace

void fit_outer_loop(Run& run) {
  constexpr int kMaxHalvings = 4;
  Posterior& posterior = run.posterior;
  const EvidenceOptions& options = run.options;
  EvidenceSummary& summary = run.summary;
  Eigen::VectorXd& w = run.w;
  run.gradient_kind = EvidenceGradient::kModeHeld;

  EvidenceOptions round_options = options;  // the MAP runs of kPeriodic are cut short
  if (options.strategy == HyperStrategy::kPeriodic) round_options.map.max_iterations = options.reestimate_every;
  Run round{posterior, round_options, w, summary};

  struct State {
    double log_z = -std::numeric_limits<double>::infinity();
    Eigen::VectorXd w, theta;
    LaplaceApproximation laplace;
  } best;
  int halvings = 0;
  // With a structured curvature the loop is the plain fixed-point iteration: its target is the
  // zero of the structure's mode-held gradient, and log Z_structure(θ, w*(θ)) need not rise on the
  // way there (its total derivative has the term −½ ∂log|A_structure|/∂w · dw*/dθ, which the
  // structure's fixed point does not zero), so undoing the rounds where it falls would stop the
  // loop short of that fixed point.
  const bool safeguarded = options.structure.full();
  run.stop = Termination::kMaxIterations;
  summary.message = "reached the maximum of " + std::to_string(options.max_outer_iterations) + " re-estimations";
  summary.stopping_test = "update budget (max_outer_iterations)";
  LaplaceApproximation q;
  auto end_on = [&](Termination stop, const std::string& message, const std::string& test) {
    run.stop = stop;
    summary.message = message;
    summary.stopping_test = test;
  };
  for (int it = 1; it <= options.max_outer_iterations; ++it) {
    const int before = summary.map_iterations;
    std::string map_message;
    const Termination map = minimize_map(round, &map_message);
    if (map == Termination::kFailure) {
      end_on(Termination::kFailure, "MAP: " + map_message, "MAP failure");
      break;
    }
    if (map == Termination::kAborted) {  // the MAP's callback asked to stop: end on the best round
      run.aborted = true;
      if (std::isfinite(best.log_z)) {
        w = best.w;
        q = best.laplace;
        set_all_hyperparameters(&posterior, best.theta);
      }
      end_on(Termination::kAborted, "stopped by the callback; the best state so far is kept", "the callback asked to stop");
      break;
    }
    const int map_iterations = summary.map_iterations - before;
    q = laplace_at(posterior, w, options);
    const double log_z = log_evidence(posterior, q);
    summary.outer_iterations = it;
    const bool map_done = map == Termination::kConverged;
    const Eigen::VectorXd gamma = well_determined_parameters(posterior.prior(), q);
    const double hyper_norm =
        free_hyperparameters(posterior, mode_held_gradient(posterior, w, gamma, held_weights(q)), options.fix_prior).norm;
    auto trace = [&](bool accepted) {
      record(run, {it, log_z, posterior.prior().hyperparameters(), current_beta(posterior), gamma, map_iterations,
                   accepted, hyper_norm, summary.last_map.gradient_norm});
    };
    if (map_done && safeguarded && log_z < best.log_z) {
      trace(false);
      w = best.w;
      q = best.laplace;
      if (run.aborted) {
        set_all_hyperparameters(&posterior, best.theta);
        end_on(Termination::kAborted, "stopped by the callback; the best state so far is kept", "the callback asked to stop");
        break;
      }
      if (halvings == kMaxHalvings || it == options.max_outer_iterations) {
        // End on the best state, whose w and Laplace factor belong to its α and β.
        set_all_hyperparameters(&posterior, best.theta);
        if (halvings == kMaxHalvings) {
          end_on(Termination::kNoProgress,
                 "no re-estimation step increased the log-evidence (after " + std::to_string(kMaxHalvings) +
                     " halvings); the best state is kept",
                 "outer loop: " + std::to_string(kMaxHalvings) + " halved steps all lowered the log-evidence");
        }
        break;
      }
      ++halvings;
      // Half the step in log space: the geometric mean of the best and the rejected values.
      set_all_hyperparameters(&posterior, (best.theta.array() * all_hyperparameters(posterior).array()).sqrt().matrix());
      continue;
    }
    const double previous = best.log_z;
    const bool after_halving = halvings > 0;
    if (map_done) {
      best = {log_z, w, all_hyperparameters(posterior), q};
      halvings = 0;
    }
    if (map_done && hyper_norm <= options.hyper_gradient_tolerance) {
      trace(true);
      end_on(Termination::kConverged, "MacKay's fixed point: the gradient conditions hold",
             "gradient conditions: |grad S| and max |d log Z/d log theta| (w held) below their tolerances");
      break;
    }
    if (map_done && evidence_settled(previous, log_z, options.tolerance)) {
      trace(true);
      end_on(Termination::kConverged, "log-evidence changed by less than the tolerance",
             "outer loop: relative change of the log-evidence below the tolerance");
      break;
    }
    if (map_done && after_halving && log_z - previous < options.halved_step_gain) {
      trace(true);
      std::ostringstream message;
      message << "a halved step gained " << log_z - previous << " nats of log-evidence, less than "
              << options.halved_step_gain << "; the loop is at its maximum along the update direction";
      end_on(Termination::kConverged, message.str(), "outer loop: a halved step gained less than halved_step_gain");
      break;
    }
    if (it == options.max_outer_iterations) {
      trace(true);
      break;
    }
    trace(true);  // this round, at the α, β its MAP and log-evidence belong to
    if (run.aborted) {
      end_on(Termination::kAborted, "stopped by the callback; this round's state is kept", "the callback asked to stop");
      break;
    }
    mackay_update(&posterior, w, gamma, options.fix_prior, held_weights(q));
  }
  if (run.stop != Termination::kFailure && q.dim() == w.size()) run.laplace = std::move(q);
}

}  // namespace occam::evidence

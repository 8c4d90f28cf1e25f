// minibatch_map.h — the MAP weights by stochastic gradients on minibatches: Adam, or SGD with
// momentum, for data too large for full-batch passes (docs/scale.md, "Minibatch MAP").
//
// One epoch is one pass over the rows in an order shuffled from the seeded stream (Fisher–Yates),
// cut into batches of batch_size rows; each step follows the unbiased minibatch estimate of ∇S
// (Posterior::evaluate_batch: the likelihood term scaled by m/|batch|). The step size follows a
// schedule over the epochs. Convergence is judged on the full-batch gradient only: the run ends as
// kConverged when ‖∇S‖ ≤ gradient_tolerance·max(1, ‖w‖) at a check, and otherwise as what it is
// (kMaxIterations: the epochs were spent). The same seed gives the same numbers whatever the
// number of threads and processes: a batch's likelihood is a sum over chunks of kBatchChunkRows
// rows along a fixed-order tree (Posterior::batch_log_likelihood), which a posterior's threads
// (DataShard::threads) and processes share, and the full-batch sums are fixed-order. With the rows
// spread over processes every process runs the loop (a collective) on the same batches, the batch's
// rows gathered; a stop asked of one process (the callback) stops all at the same step.
//
//   occam::MinibatchOptions options;            // Adam, 100 epochs of 128 rows
//   occam::MinibatchSummary s = occam::find_map_minibatch(posterior, options, &w);
//   std::cout << s.brief_report();
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "occam/callback.h"
#include "occam/map.h"
#include "occam/posterior.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {

// The step size over the epochs: constant, or cosine annealing from learning_rate to
// final_learning_rate over the run (Loshchilov & Hutter 2017, eq. 5, one cycle).
enum class LearningRateSchedule { kConstant, kCosine };
LearningRateSchedule parse_learning_rate_schedule(std::string_view name);  // "constant" | "cosine"
const char* to_string(LearningRateSchedule schedule);

struct MinibatchOptions {
  Optimizer optimizer = Optimizer::kAdam;  // kAdam or kSgd
  int epochs = 100;
  Index batch_size = 128;  // rows per step (min(m, batch_size))
  double learning_rate = 1e-3;
  LearningRateSchedule schedule = LearningRateSchedule::kConstant;
  double final_learning_rate = 0.0;  // kCosine: the rate at the end of the last epoch
  double momentum = 0.9;             // kSgd: heavy-ball momentum μ (v ← μv + ∇S, w ← w − ηv)
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8;  // kAdam (Kingma & Ba 2015)
  // Converged when the full-batch ‖∇S‖ ≤ gradient_tolerance·max(1, ‖w‖) at a check.
  double gradient_tolerance = 1e-6;
  // A full-batch check (S and ∇S over all rows, about one epoch's arithmetic) after every this many
  // epochs; 0: only at the end of the run, which always has one.
  int check_every = 0;
  std::uint64_t seed = 1;  // the shuffling stream
  // Called after each epoch, and within long epochs every steps_between_reports steps (iteration =
  // the epoch under way, total = epochs, objective = the mean minibatch estimate of S so far this
  // epoch); kAbort ends the run after the current step (termination kAborted).
  IterationCallback<MapIteration> callback;
  int steps_between_reports = 100;
  // Called after each completed epoch with that epoch and w, before the full-batch check and the
  // callback; it may change the posterior's hyperparameters between epochs (the online evidence
  // loop, evidence.h, does). kAbort ends the run (termination kAborted). May be empty.
  std::function<CallbackReturn(int epoch, const Eigen::VectorXd& w)> after_epoch;

  // The options a MapOptions of optimizer kAdam or kSgd stands for: its max_iterations as epochs,
  // its learning_rate, batch_size, seed, gradient_tolerance and callback.
  static MinibatchOptions from(const MapOptions& map);
  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

struct MinibatchSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  int epochs = 0;                     // epochs completed
  long long steps = 0;                // minibatch steps taken
  double objective = 0.0;             // full-batch S(w) at the returned w
  double gradient_norm = 0.0;         // full-batch ‖∇S(w)‖ at the returned w
  double gradient_tolerance = 0.0;    // gradient_tolerance·max(1, ‖w‖) at the returned w
  double last_epoch_objective = 0.0;  // mean minibatch estimate of S over the last epoch
  double seconds = 0.0;
  std::string brief_report() const;
  MapSummary as_map_summary() const;  // for callers that keep a MapSummary (iterations = epochs)
};

// Runs options.epochs epochs from *w (posterior.dim() entries) and leaves the last iterate in *w
// (a stochastic method's last point; the full-batch S and ∇S in the summary are at it). A step
// whose minibatch value or gradient is not finite ends the run as kFailure, with *w at the last
// finite iterate. Throws Error(kInvalidArgument) on bad options, and for a posterior whose rows are
// spread over processes.
MinibatchSummary find_map_minibatch(const Posterior& posterior, const MinibatchOptions& options, Eigen::VectorXd* w);

}  // namespace occam

// minibatch_map.cc — Adam and SGD with momentum on minibatches (minibatch_map.h).
#include "occam/minibatch_map.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>

#include "inference/map/adam.h"
#include "core/parallel/agreement.h"
#include "occam/types.h"

namespace occam {
namespace {

using Clock = std::chrono::steady_clock;

// The stream the minibatch order is drawn from (the seed's stream "mbat"): the same as no other
// engine's, so that a seed shared with the initial weights gives unrelated draws.
constexpr std::uint64_t kShuffleStream = 0x6d626174;

// Loshchilov & Hutter 2017, eq. 5: η_t = η_min + ½(η_max − η_min)(1 + cos(π t/T)), t the
// fraction of the run done (in steps) and T the whole run.
double scheduled_rate(const MinibatchOptions& o, double done_fraction) {
  if (o.schedule == LearningRateSchedule::kConstant) return o.learning_rate;
  return o.final_learning_rate +
         0.5 * (o.learning_rate - o.final_learning_rate) * (1.0 + std::cos(std::numbers::pi * done_fraction));
}

// One optimiser's state and its update from a minibatch gradient g of S.
class Stepper {
 public:
  Stepper(const MinibatchOptions& options, Index dim)
      : o_(options),
        adam_(dim, options.adam_beta1, options.adam_beta2, options.adam_epsilon),
        velocity_(Eigen::VectorXd::Zero(dim)) {}

  void step(const Eigen::VectorXd& g, double rate, Eigen::VectorXd* w) {
    if (o_.optimizer == Optimizer::kSgd) {
      // Heavy ball (Polyak 1964) in the form of Sutskever et al. 2013, eq. 1: v ← μv + g, w ← w − ηv.
      velocity_ = o_.momentum * velocity_ + g;
      *w -= rate * velocity_;
      return;
    }
    *w -= adam_.step(g, rate);
  }

 private:
  const MinibatchOptions& o_;
  internal::AdamMoments adam_;
  Eigen::VectorXd velocity_;  // SGD's
};

}  // namespace

LearningRateSchedule parse_learning_rate_schedule(std::string_view name) {
  return enum_names<LearningRateSchedule>().parse(name);
}

const char* to_string(LearningRateSchedule schedule) { return enum_names<LearningRateSchedule>().name(schedule); }

MinibatchOptions MinibatchOptions::from(const MapOptions& map) {
  MinibatchOptions o;
  o.optimizer = map.optimizer;
  o.epochs = map.max_iterations;
  o.learning_rate = map.learning_rate;
  o.batch_size = map.batch_size;
  o.seed = map.seed;
  o.gradient_tolerance = map.gradient_tolerance;
  o.check_every = 1;  // a full-batch MAP run judges convergence after every epoch
  o.callback = map.callback;
  return o;
}

void MinibatchOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("MinibatchOptions", field, value, rule);
  };
  if (!is_minibatch(optimizer)) fail("optimizer", static_cast<double>(optimizer), "must be adam or sgd");
  if (epochs < 1) fail("epochs", epochs, "must be at least 1");
  if (batch_size < 1) fail("batch_size", static_cast<double>(batch_size), "must be at least 1");
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) fail("learning_rate", learning_rate, "must be positive");
  if (!(final_learning_rate >= 0.0) || final_learning_rate > learning_rate) {
    fail("final_learning_rate", final_learning_rate, "must be in [0, learning_rate]");
  }
  if (!(momentum >= 0.0 && momentum < 1.0)) fail("momentum", momentum, "must be in [0, 1)");
  if (!(adam_beta1 >= 0.0 && adam_beta1 < 1.0)) fail("adam_beta1", adam_beta1, "must be in [0, 1)");
  if (!(adam_beta2 >= 0.0 && adam_beta2 < 1.0)) fail("adam_beta2", adam_beta2, "must be in [0, 1)");
  if (!(adam_epsilon > 0.0)) fail("adam_epsilon", adam_epsilon, "must be positive");
  if (!(gradient_tolerance >= 0.0)) fail("gradient_tolerance", gradient_tolerance, "must be non-negative");
  if (check_every < 0) fail("check_every", check_every, "must be non-negative");
  if (steps_between_reports < 1) fail("steps_between_reports", steps_between_reports, "must be at least 1");
}

std::string MinibatchSummary::brief_report() const {
  std::ostringstream out;
  out << "minibatch MAP: " << to_string(termination) << " after " << epochs << " epochs (" << steps
      << " steps), S = " << objective << ", |grad S| = " << gradient_norm << " (tolerance " << gradient_tolerance
      << "), " << seconds << " s";
  if (!message.empty()) out << " — " << message;
  return out.str();
}

MapSummary MinibatchSummary::as_map_summary() const {
  MapSummary s;
  s.termination = termination;
  s.message = message;
  s.iterations = epochs;
  s.evaluations = static_cast<int>(std::min<long long>(steps, std::numeric_limits<int>::max()));
  s.objective = objective;
  s.gradient_norm = gradient_norm;
  s.seconds = seconds;
  return s;
}

MinibatchSummary find_map_minibatch(const Posterior& posterior, const MinibatchOptions& options, Eigen::VectorXd* w) {
  options.validate();
  if (w->size() != posterior.dim()) {
    throw Error(ErrorKind::kInvalidArgument, "find_map_minibatch: the start point has " + std::to_string(w->size()) +
                                                 " entries but the network has " + std::to_string(posterior.dim()));
  }
  // Spread over processes, every process runs this loop on the same batches (the same seed): the
  // sums have the same bits everywhere, and a stop asked of one process is agreed by all.
  const Communicator* processes = posterior.distributed() ? posterior.shard().communicator : nullptr;
  const auto start = Clock::now();
  const Index m = posterior.num_data();
  const Index batch = std::min<Index>(options.batch_size, m);
  const Index steps_per_epoch = (m + batch - 1) / batch;
  const double total_steps = static_cast<double>(steps_per_epoch) * options.epochs;
  Rng rng(options.seed, kShuffleStream);
  std::vector<Index> order(static_cast<std::size_t>(m));
  std::iota(order.begin(), order.end(), Index{0});
  Stepper stepper(options, w->size());
  MinibatchSummary summary;
  summary.gradient_norm = std::numeric_limits<double>::quiet_NaN();
  Eigen::VectorXd grad, last_finite = *w;
  std::vector<Index> rows;
  bool aborted = false, failed = false, converged = false;
  bool checked = false;  // the summary's S and ∇S are at the current w

  // S and ∇S over all rows at *w into the summary; false where they are not finite.
  auto full_batch_check = [&] {
    double log_p;
    const bool finite = posterior.evaluate(*w, &log_p, &grad);
    summary.objective = finite ? -log_p : std::numeric_limits<double>::quiet_NaN();
    summary.gradient_norm = finite ? grad.norm() : std::numeric_limits<double>::infinity();
    summary.gradient_tolerance = options.gradient_tolerance * std::max(1.0, w->norm());
    checked = true;
    return finite;
  };
  auto report = [&](int epoch, double fraction, double objective) {
    if (options.callback) {
      const MapIteration it{epoch, objective, summary.gradient_norm, options.epochs, fraction};
      if (options.callback(it) == CallbackReturn::kAbort) aborted = true;
    }
    aborted = internal::any_process(processes, aborted);  // every process, callback or not
  };

  for (int epoch = 1; epoch <= options.epochs && !aborted && !failed && !converged; ++epoch) {
    rng.shuffle(&order);
    double sum = 0.0;
    Index step_in_epoch = 0;
    for (Index begin = 0; begin < m && !aborted; begin += batch, ++step_in_epoch) {
      rows.assign(order.begin() + begin, order.begin() + std::min(m, begin + batch));
      double log_p;
      if (!posterior.evaluate_batch(*w, rows, &log_p, &grad)) {
        failed = true;
        break;
      }
      const double done = static_cast<double>(summary.steps) / total_steps;
      stepper.step(-grad, scheduled_rate(options, done), w);  // ∇S = −∇log p
      ++summary.steps;
      sum += -log_p;
      if (!w->allFinite()) {
        failed = true;
        break;
      }
      last_finite = *w;
      checked = false;
      if ((step_in_epoch + 1) % options.steps_between_reports == 0 && begin + batch < m) {
        report(epoch, static_cast<double>(step_in_epoch + 1) / static_cast<double>(steps_per_epoch),
               sum / static_cast<double>(step_in_epoch + 1));
      }
    }
    if (failed) break;
    const bool whole_epoch = step_in_epoch == steps_per_epoch;
    if (whole_epoch) {
      summary.epochs = epoch;
      summary.last_epoch_objective = sum / static_cast<double>(steps_per_epoch);
    }
    if (aborted) break;
    if (options.after_epoch) {
      if (options.after_epoch(epoch, *w) == CallbackReturn::kAbort) aborted = true;
      aborted = internal::any_process(processes, aborted);
      checked = false;  // S may have changed with the hyperparameters
    }
    if (aborted) break;
    if (options.check_every > 0 && epoch % options.check_every == 0 && epoch < options.epochs) {
      converged = full_batch_check() && summary.gradient_norm <= summary.gradient_tolerance;
    }
    report(epoch, 1.0, summary.last_epoch_objective);
  }
  if (failed) {
    *w = last_finite;
    checked = false;
  }
  const bool finite = checked ? std::isfinite(summary.objective) : full_batch_check();
  converged = finite && summary.gradient_norm <= summary.gradient_tolerance;
  std::ostringstream why;
  if (failed) {
    summary.termination = Termination::kFailure;
    why << "a minibatch value or gradient was not finite in epoch " << summary.epochs + 1
        << "; the last finite iterate is kept (try a smaller learning rate)";
  } else if (!finite) {
    summary.termination = Termination::kFailure;
    why << "S is not finite over the full batch at the end";
  } else if (aborted) {
    summary.termination = Termination::kAborted;
    why << "stopped by the callback after " << summary.steps << " steps";
  } else if (converged) {
    summary.termination = Termination::kConverged;
    why << "full-batch gradient norm below tolerance";
  } else {
    summary.termination = Termination::kMaxIterations;
    why << "ran the " << options.epochs << " epochs; the full-batch gradient norm is above its tolerance";
  }
  summary.message = std::string(to_string(options.optimizer)) + ": " + why.str();
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace occam

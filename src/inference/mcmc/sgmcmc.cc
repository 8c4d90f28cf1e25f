#include "occam/mcmc/sgmcmc.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <numeric>

#include "occam/mcmc/stochastic_density.h"
#include "occam/status.h"
#include "inference/mcmc/chain_parts.h"
#include "inference/mcmc/collective.h"
#include "inference/mcmc/stochastic_gradient_chain.h"

namespace occam::mcmc {

void StochasticGradientOptions::validate() const {
  const char* o = "StochasticGradientOptions";
  if (batch_size < 0)
    invalid_option(o, "batch_size", static_cast<double>(batch_size), "must be 0 (automatic) or positive");
  if (!(friction > 0.0) || !std::isfinite(friction))
    invalid_option(o, "friction", friction, "must be positive and finite");
  if (cycles < 0) invalid_option(o, "cycles", cycles, "must be 0 (a constant step size) or positive");
  if (!(exploration >= 0.0 && exploration < 1.0)) invalid_option(o, "exploration", exploration, "must be in [0, 1)");
  if (exploration > 0.0 && cycles == 0) {
    invalid_option(o, "exploration", exploration, "needs a cyclical schedule (cycles at least 1)");
  }
  if (!(rmsprop_decay > 0.0 && rmsprop_decay < 1.0))
    invalid_option(o, "rmsprop_decay", rmsprop_decay, "must be in (0, 1)");
  if (!(rmsprop_epsilon > 0.0) || !std::isfinite(rmsprop_epsilon)) {
    invalid_option(o, "rmsprop_epsilon", rmsprop_epsilon, "must be positive and finite");
  }
  if (gibbs_every < 1) invalid_option(o, "gibbs_every", gibbs_every, "must be at least 1");
}

bool minibatch_estimate(const StochasticLogDensity& density, const Eigen::Ref<const Eigen::VectorXd>& theta,
                        const std::vector<Eigen::Index>& rows, double* log_p, Eigen::VectorXd* grad) {
  if (rows.empty()) throw Error(ErrorKind::kInvalidArgument, "minibatch_estimate: an empty minibatch");
  double prior = 0.0, likelihood = 0.0;
  Eigen::VectorXd likelihood_grad;
  if (!density.log_prior(theta, &prior, grad)) return false;
  if (!density.log_likelihood(theta, rows, &likelihood, grad ? &likelihood_grad : nullptr)) return false;
  const double scale = static_cast<double>(density.num_data()) / static_cast<double>(rows.size());
  *log_p = prior + scale * likelihood;
  if (grad) *grad += scale * likelihood_grad;
  return std::isfinite(*log_p) && (grad == nullptr || grad->allFinite());
}

MinibatchStream::MinibatchStream(Eigen::Index rows, Eigen::Index batch_size)
    : rows_(rows), batch_size_(batch_size), position_(rows) {
  if (rows < 1 || batch_size < 1 || batch_size > rows) {
    throw Error(ErrorKind::kInvalidArgument, "MinibatchStream: a batch of " + std::to_string(batch_size) +
                                                 " rows from " + std::to_string(rows) +
                                                 " (must be between 1 and the number of rows)");
  }
}

// Fisher–Yates from the identity, so that the permutation depends on the stream's state alone.
void MinibatchStream::shuffle(Rng& rng) {
  permutation_.resize(static_cast<std::size_t>(rows_));
  std::iota(permutation_.begin(), permutation_.end(), Eigen::Index{0});
  rng.shuffle(&permutation_);
}

bool MinibatchStream::advance(Rng& rng) {
  const bool new_epoch = position_ + batch_size_ > rows_;
  if (new_epoch) {
    shuffle_state_ = rng.save();
    shuffle(rng);
    ++epoch_;
    position_ = 0;
  }
  batch_.assign(permutation_.begin() + position_, permutation_.begin() + position_ + batch_size_);
  position_ += batch_size_;
  return new_epoch;
}

void MinibatchStream::restore(const std::string& shuffle_state, long long epoch, Eigen::Index position) {
  if (epoch < 0 || position < batch_size_ || position > rows_ || shuffle_state.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "MinibatchStream: the saved place (epoch " + std::to_string(epoch) +
                                                 ", position " + std::to_string(position) +
                                                 ") is not one of this stream's");
  }
  // The text names its stream ("seed stream steps", Rng::save).
  unsigned long long seed = 0, stream = 0;
  if (std::sscanf(shuffle_state.c_str(), "%llu %llu", &seed, &stream) != 2) {
    throw Error(ErrorKind::kInvalidArgument, "MinibatchStream: '" + shuffle_state + "' is not a random stream's state");
  }
  Rng rng(seed, stream);
  rng.restore(shuffle_state);
  shuffle(rng);
  shuffle_state_ = shuffle_state;
  epoch_ = epoch;
  position_ = position;
  batch_.assign(permutation_.begin() + position_ - batch_size_, permutation_.begin() + position_);
}

namespace {

// Zhang et al. (2020), eq. 1: L = ⌈T/M⌉ iterations per cycle, r = (t mod L)/L.
double cycle_fraction(int iteration, int total, int cycles) {
  const int length = std::max(1, (total + cycles - 1) / cycles);
  return static_cast<double>(iteration % length) / length;
}

}  // namespace

double cyclical_step_size(double step_size, int iteration, int total_iterations, int cycles) {
  if (cycles <= 0) return step_size;
  return 0.5 * step_size * (std::cos(std::numbers::pi * cycle_fraction(iteration, total_iterations, cycles)) + 1.0);
}

bool in_exploration_stage(int iteration, int total_iterations, int cycles, double exploration) {
  return cycles > 0 && cycle_fraction(iteration, total_iterations, cycles) < exploration;
}

namespace internal {

namespace {

// The chain's minibatch density, checked against the options before anything is drawn.
const StochasticLogDensity& checked_density(const ChainModel& model, const SamplerOptions& o, Eigen::Index batch_size) {
  const StochasticLogDensity* density = model.stochastic_density();
  if (density == nullptr) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string(to_string(o.method)) +
                    " needs a model with a minibatch log density (ChainModel::stochastic_density)");
  }
  const Eigen::Index m = density->num_data();
  if (batch_size > m) {
    const std::string rule = "exceeds the " + std::to_string(m) + " rows of the data";
    invalid_option("StochasticGradientOptions", "batch_size", static_cast<double>(batch_size), rule.c_str());
  }
  if (o.method == SamplerKind::kSghmc && !(o.initial_step_size * o.stochastic_gradient.friction < 1.0)) {
    invalid_option("StochasticGradientOptions", "friction", o.stochastic_gradient.friction,
                   "times the step size must be below 1 (the velocity would not decay)");
  }
  return *density;
}

Eigen::Index batch_size_of(const SamplerOptions& o, const ChainModel& model) {
  const StochasticLogDensity* density = model.stochastic_density();
  const Eigen::Index m = density ? density->num_data() : 0;
  return o.stochastic_gradient.batch_size > 0 ? o.stochastic_gradient.batch_size : std::min<Eigen::Index>(m, 128);
}

// One chain of SGLD or SGHMC as named steps: start fresh or from a checkpoint; per iteration the
// step size of the schedule, the move (Welling & Teh 2011; Chen, Fox & Guestrin 2014, with
// Li et al. 2016's RMSprop preconditioner), the next minibatch's estimate (a move to a non-finite
// estimate undone and counted as divergent), the counts, the row and the checkpoint; finish.
class StochasticGradientChain {
 public:
  StochasticGradientChain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                          const std::vector<std::string>& columns, Eigen::MatrixXd* kept)
      : chain_(chain),
        name_("chain " + std::to_string(chain + 1)),
        model_(model),
        o_(o),
        sg_(o.stochastic_gradient),
        sink_(sink),
        columns_(columns),
        kept_(kept),
        density_(checked_density(model, o, batch_size_of(o, model))),
        sghmc_(o.method == SamplerKind::kSghmc),
        d_(density_.dim()),
        m_(density_.num_data()),
        resume_(resume_state(o, chain)),
        clock_(resume_),
        rng_(o.seed, static_cast<std::uint64_t>(chain)),
        batches_(m_, batch_size_of(o, model)),
        total_(o.num_warmup + o.num_draws),
        planned_(o.keep_draws ? (static_cast<Eigen::Index>(o.num_draws) + o.thin - 1) / o.thin : 0),
        ncols_(static_cast<Eigen::Index>(columns.size())),
        velocity_(Eigen::VectorXd::Zero(d_)),
        mean_square_(Eigen::VectorXd::Zero(d_)),
        preconditioner_(Eigen::VectorXd::Ones(d_)),
        row_(ncols_),
        step_(o.initial_step_size) {
    summary_.chain = chain;
  }

  ChainSummary run() { return run_chain_loop(*this, resume_, model_, o_, &summary_); }

  // --- The steps of run_chain_loop (chain_parts.h). ---
  // The chain from its checkpoint; returns the iteration to go on from.
  int restore(const ChainState& r) {
    if (r.chain != chain_ || r.iteration < 0 || r.iteration > total_ || r.position.size() != d_ || r.draws < 0 ||
        r.velocity.size() != d_ || r.preconditioner.size() != d_) {
      throw Error(ErrorKind::kInvalidArgument,
                  name_ + ": the saved state is not one of this chain's (chain, iteration or dimension)");
    }
    rng_.restore(r.rng);
    model_.restore_state(r.model_state);
    theta_ = r.position;
    velocity_ = r.velocity;
    mean_square_ = r.preconditioner;
    batches_.restore(r.shuffle_state, r.epoch, static_cast<Eigen::Index>(r.batch_position));
    if (!evaluate()) {
      // A chain only ever saves a point where the density is finite: the checkpoint was damaged.
      throw Error(ErrorKind::kInvalidInput,
                  name_ + ": the log density is not finite at the saved point (its checkpoint is damaged)");
    }
    step_ = r.step_size;
    summary_.draws = r.draws;
    summary_.divergences = r.divergences;
    summary_.warmup_divergences = r.warmup_divergences;
    summary_.iterations = r.iteration;
    summary_.gradient_evaluations = r.gradient_evaluations;
    sampling_iterations_ = r.sampling_iterations;
    if (r.iteration >= o_.num_warmup) summary_.warmup_seconds = r.warmup_seconds;
    if (kept_) {
      if (o_.keep_draws && (r.kept_draws.rows() != r.draws || r.kept_draws.cols() != ncols_)) {
        throw Error(ErrorKind::kInvalidArgument, name_ + ": ChainState.kept_draws does not hold the " +
                                                     std::to_string(r.draws) + " draws made before the checkpoint");
      }
      *kept_ = o_.keep_draws ? r.kept_draws : Eigen::MatrixXd(0, ncols_);
    }
    return r.iteration;
  }

  // The model's initial point and its first estimate; false when a stop was asked for first
  // (the sink has begun: stopped_at_start ends it).
  bool start_fresh() {
    theta_ = model_.initial_point(rng_);
    if (theta_.size() != d_) throw Error(ErrorKind::kInvalidArgument, "ChainModel::initial_point has the wrong size");
    if (kept_) kept_->resize(0, ncols_);
    if (sink_) sink_->begin(columns_);
    if (internal::stop_requested(model_, o_)) return false;
    next_batch();
    if (!evaluate()) throw Error(ErrorKind::kNumerical, name_ + ": the log density is not finite at the initial point");
    ++summary_.gradient_evaluations;
    if (o_.num_warmup == 0) {
      summary_.warmup_seconds = clock_.end_warmup();
      if (sink_) sink_->adaptation_done(step_, Metric::unit(d_));
    }
    return true;
  }

  ChainSummary stopped_at_start() {
    summary_.interrupted = true;
    summary_.warmup_seconds = clock_.session();
    if (sink_) sink_->end(summary_);
    return summary_;
  }

  // Iteration `it` (0-based, warm-up included).
  void iterate(int it) {
    step_ = cyclical_step_size(o_.initial_step_size, it, total_, sg_.cycles);
    const bool exploring = in_exploration_stage(it, total_, sg_.cycles, sg_.exploration);
    move(exploring);
    next_batch();
    const bool divergent = !evaluate();
    if (divergent) undo_move(it);
    ++summary_.gradient_evaluations;
    const bool warmup = it < o_.num_warmup;
    if (warmup) {
      if (divergent) ++summary_.warmup_divergences;
      if (it == o_.num_warmup - 1) {
        summary_.warmup_seconds = clock_.end_warmup();
        if (sink_) sink_->adaptation_done(step_, Metric::unit(d_));
      }
    } else {
      ++sampling_iterations_;
      if (divergent) ++summary_.divergences;
    }
    summary_.iterations = it + 1;
    const int index = warmup ? it : it - o_.num_warmup;
    if (!exploring && index % o_.thin == 0 && (!warmup || o_.save_warmup)) write_row(warmup, divergent);
    if (sink_) sink_->iteration(it, total_);
    if (o_.checkpoint_every > 0 && (summary_.iterations % o_.checkpoint_every == 0 || summary_.iterations == total_)) {
      checkpoint();
    }
  }

 private:
  // One SGLD or SGHMC step from θ along the current batch's gradient (no noise while exploring).
  void move(bool exploring) {
    if (sg_.rmsprop) {
      // Li et al. (2016), Algorithm 1, with the per-row mean gradient ḡ = ∇̂/m.
      const Eigen::ArrayXd mean_grad = grad_.array() / static_cast<double>(m_);
      mean_square_ = sg_.rmsprop_decay * mean_square_.array() + (1.0 - sg_.rmsprop_decay) * mean_grad.square();
      preconditioner_ = (sg_.rmsprop_epsilon + mean_square_.array().sqrt()).inverse().matrix();
    }
    noise_ = exploring ? Eigen::VectorXd::Zero(d_)
                       : Eigen::VectorXd(rng_.normal_vector(d_).cwiseProduct(preconditioner_.cwiseSqrt()));
    previous_ = theta_;
    if (sghmc_) {
      velocity_ = (1.0 - step_ * sg_.friction) * velocity_ + step_ * preconditioner_.cwiseProduct(grad_) +
                  std::sqrt(2.0 * sg_.friction * step_) * noise_;
      theta_ += step_ * velocity_;
    } else {
      theta_ += 0.5 * step_ * preconditioner_.cwiseProduct(grad_) + std::sqrt(step_) * noise_;
    }
  }

  // Too large a step: the move is undone (and SGHMC's velocity dropped), the chain goes on from
  // where it was with the new batch, and the iteration is counted as divergent.
  void undo_move(int it) {
    theta_ = previous_;
    velocity_.setZero();
    if (!evaluate()) {
      throw Error(ErrorKind::kNumerical, name_ + ": the minibatch log density is not finite at iteration " +
                                             std::to_string(it + 1) + "; try a smaller step size");
    }
    ++summary_.gradient_evaluations;
  }

  // lp__ is the minibatch estimate at the row's θ; every step is taken (there is no Metropolis
  // test), and there is no tree or Hamiltonian.
  void write_row(bool warmup, bool divergent) {
    row_[0] = log_p_;
    row_[1] = 1.0;  // accept_stat__
    row_[2] = step_;
    row_[3] = 0.0;  // treedepth__
    row_[4] = 1.0;  // n_leapfrog__: one minibatch gradient
    row_[5] = divergent ? 1.0 : 0.0;
    row_[6] = std::numeric_limits<double>::quiet_NaN();  // energy__
    write_model_columns(model_, theta_, &row_);
    if (sink_) sink_->draw(row_, warmup);
    if (!warmup) {
      if (kept_ && o_.keep_draws) keep_row(row_, summary_.draws, planned_, kept_);
      ++summary_.draws;
    }
  }

 public:
  // The chain's state after summary_.iterations iterations, for the sink to keep.
  void checkpoint() {
    if (!sink_ || o_.checkpoint_every <= 0) return;
    ChainState state = common_chain_state(summary_, theta_, model_, rng_, sampling_iterations_);
    state.step_size = step_;
    state.metric = MetricKind::kUnit;
    state.gradient_evaluations = summary_.gradient_evaluations;
    state.velocity = velocity_;
    state.preconditioner = mean_square_;
    state.shuffle_state = batches_.shuffle_state();
    state.epoch = batches_.epoch();
    state.batch_position = batches_.position();
    internal::hand_checkpoint(state, summary_, clock_, o_, *sink_);
  }

  ChainSummary finish() {
    ChainSummary& s = summary_;
    s.mean_accept_stat = 1.0;
    s.mean_tree_depth = 0.0;
    s.step_size = step_;
    s.inverse_metric_diagonal = preconditioner_;
    return internal::end_chain(s, clock_, o_, sink_, kept_);
  }

 private:
  // The estimate at θ on the current batch.
  bool evaluate() { return minibatch_estimate(density_, theta_, batches_.batch(), &log_p_, &grad_); }

  // The next batch, after a Gibbs update where a new epoch asks for one.
  void next_batch() {
    if (batches_.advance(rng_) && batches_.epoch() % sg_.gibbs_every == 0) model_.gibbs_step(&theta_, rng_);
  }

  const int chain_;
  const std::string name_;
  ChainModel& model_;
  const SamplerOptions& o_;
  const StochasticGradientOptions& sg_;
  DrawSink* sink_;
  const std::vector<std::string>& columns_;
  Eigen::MatrixXd* kept_;
  const StochasticLogDensity& density_;
  const bool sghmc_;
  const Eigen::Index d_, m_;
  const ChainState* resume_;
  ChainClock clock_;
  Rng rng_;
  MinibatchStream batches_;
  const int total_;
  const Eigen::Index planned_, ncols_;
  ChainSummary summary_;
  Eigen::VectorXd theta_, velocity_, mean_square_, grad_, preconditioner_, previous_, noise_, row_;
  double log_p_ = 0.0, step_;
  int sampling_iterations_ = 0;
};

}  // namespace

ChainSummary run_stochastic_gradient_chain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                                           const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  StochasticGradientChain run(chain, model, o, sink, columns, kept);
  return run.run();
}

}  // namespace internal
}  // namespace occam::mcmc

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
#include "chain_parts.h"
#include "collective.h"
#include "stochastic_gradient_chain.h"

namespace occam::mcmc {

void StochasticGradientOptions::validate() const {
  const char* o = "StochasticGradientOptions";
  if (batch_size < 0) invalid_option(o, "batch_size", static_cast<double>(batch_size), "must be 0 (automatic) or positive");
  if (!(friction > 0.0) || !std::isfinite(friction)) invalid_option(o, "friction", friction, "must be positive and finite");
  if (cycles < 0) invalid_option(o, "cycles", cycles, "must be 0 (a constant step size) or positive");
  if (!(exploration >= 0.0 && exploration < 1.0)) invalid_option(o, "exploration", exploration, "must be in [0, 1)");
  if (exploration > 0.0 && cycles == 0) {
    invalid_option(o, "exploration", exploration, "needs a cyclical schedule (cycles at least 1)");
  }
  if (!(rmsprop_decay > 0.0 && rmsprop_decay < 1.0)) invalid_option(o, "rmsprop_decay", rmsprop_decay, "must be in (0, 1)");
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
    throw Error(ErrorKind::kInvalidArgument, "MinibatchStream: a batch of " + std::to_string(batch_size) + " rows from " +
                                                 std::to_string(rows) + " (must be between 1 and the number of rows)");
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
                                                 ", position " + std::to_string(position) + ") is not one of this stream's");
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

ChainSummary run_stochastic_gradient_chain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                                           const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  const std::string name = "chain " + std::to_string(chain + 1);
  const StochasticLogDensity* density = model.stochastic_density();
  if (density == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, std::string(to_string(o.method)) +
                                                 " needs a model with a minibatch log density (ChainModel::stochastic_density)");
  }
  const StochasticGradientOptions& sg = o.stochastic_gradient;
  const bool sghmc = o.method == SamplerKind::kSghmc;
  const Eigen::Index d = density->dim(), m = density->num_data();
  const Eigen::Index batch_size = sg.batch_size > 0 ? sg.batch_size : std::min<Eigen::Index>(m, 128);
  if (batch_size > m) {
    const std::string rule = "exceeds the " + std::to_string(m) + " rows of the data";
    invalid_option("StochasticGradientOptions", "batch_size", static_cast<double>(batch_size), rule.c_str());
  }
  if (sghmc && !(o.initial_step_size * sg.friction < 1.0)) {
    invalid_option("StochasticGradientOptions", "friction", sg.friction,
                   "times the step size must be below 1 (the velocity would not decay)");
  }
  const ChainState* resume = resume_state(o, chain);
  ChainClock clock(resume);
  const auto stop_requested = [&] { return internal::stop_requested(model, o); };
  Rng rng(o.seed, static_cast<std::uint64_t>(chain));
  MinibatchStream batches(m, batch_size);
  const int total = o.num_warmup + o.num_draws;
  const Eigen::Index planned = o.keep_draws ? (static_cast<Eigen::Index>(o.num_draws) + o.thin - 1) / o.thin : 0;
  const auto ncols = static_cast<Eigen::Index>(columns.size());

  ChainSummary s;
  s.chain = chain;
  Eigen::VectorXd theta, velocity = Eigen::VectorXd::Zero(d), mean_square = Eigen::VectorXd::Zero(d), grad;
  double log_p = 0.0, step = o.initial_step_size;
  int sampling_iterations = 0;
  int first = 0;

  // The estimate at θ on the current batch, after a Gibbs update where a new epoch asks for one.
  const auto next_batch = [&] {
    if (batches.advance(rng) && batches.epoch() % sg.gibbs_every == 0) model.gibbs_step(&theta, rng);
  };
  const auto evaluate = [&] { return minibatch_estimate(*density, theta, batches.batch(), &log_p, &grad); };

  if (resume != nullptr) {
    const ChainState& r = *resume;
    if (r.chain != chain || r.iteration < 0 || r.iteration > total || r.position.size() != d || r.draws < 0 ||
        r.velocity.size() != d || r.preconditioner.size() != d) {
      throw Error(ErrorKind::kInvalidArgument, name + ": the saved state is not one of this chain's (chain, iteration or dimension)");
    }
    rng.restore(r.rng);
    model.restore_state(r.model_state);
    theta = r.position;
    velocity = r.velocity;
    mean_square = r.preconditioner;
    batches.restore(r.shuffle_state, r.epoch, static_cast<Eigen::Index>(r.batch_position));
    if (!evaluate()) {
      // A chain only ever saves a point where the density is finite: the checkpoint was damaged.
      throw Error(ErrorKind::kInvalidInput, name + ": the log density is not finite at the saved point (its checkpoint is damaged)");
    }
    step = r.step_size;
    s.draws = r.draws;
    s.divergences = r.divergences;
    s.warmup_divergences = r.warmup_divergences;
    s.iterations = r.iteration;
    s.gradient_evaluations = r.gradient_evaluations;
    sampling_iterations = r.sampling_iterations;
    if (r.iteration >= o.num_warmup) s.warmup_seconds = r.warmup_seconds;
    first = r.iteration;
    if (kept) {
      if (o.keep_draws && (r.kept_draws.rows() != r.draws || r.kept_draws.cols() != ncols)) {
        throw Error(ErrorKind::kInvalidArgument, name + ": ChainState.kept_draws does not hold the " + std::to_string(r.draws) +
                                                     " draws made before the checkpoint");
      }
      *kept = o.keep_draws ? r.kept_draws : Eigen::MatrixXd(0, ncols);
    }
  } else {
    theta = model.initial_point(rng);
    if (theta.size() != d) throw Error(ErrorKind::kInvalidArgument, "ChainModel::initial_point has the wrong size");
    if (kept) kept->resize(0, ncols);
    if (sink) sink->begin(columns);
    if (stop_requested()) {
      s.interrupted = true;
      s.warmup_seconds = clock.session();
      if (sink) sink->end(s);
      return s;
    }
    next_batch();
    if (!evaluate()) throw Error(ErrorKind::kNumerical, name + ": the log density is not finite at the initial point");
    ++s.gradient_evaluations;
    if (o.num_warmup == 0) {
      s.warmup_seconds = clock.end_warmup();
      if (sink) sink->adaptation_done(step, Metric::unit(d));
    }
  }

  const auto checkpoint = [&] {
    if (!sink || o.checkpoint_every <= 0) return;
    ChainState state = common_chain_state(s, theta, model, rng, sampling_iterations);
    state.step_size = step;
    state.metric = MetricKind::kUnit;
    state.gradient_evaluations = s.gradient_evaluations;
    state.velocity = velocity;
    state.preconditioner = mean_square;
    state.shuffle_state = batches.shuffle_state();
    state.epoch = batches.epoch();
    state.batch_position = batches.position();
    clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &state.warmup_seconds, &state.sampling_seconds);
    sink->checkpoint(state);
  };
  if (resume == nullptr) checkpoint();

  const double nan = std::numeric_limits<double>::quiet_NaN();
  Eigen::VectorXd row(ncols), preconditioner = Eigen::VectorXd::Ones(d), previous, noise;
  for (int it = first; it < total; ++it) {
    if (stop_requested()) {
      s.interrupted = true;
      break;
    }
    step = cyclical_step_size(o.initial_step_size, it, total, sg.cycles);
    const bool exploring = in_exploration_stage(it, total, sg.cycles, sg.exploration);
    if (sg.rmsprop) {
      // Li et al. (2016), Algorithm 1, with the per-row mean gradient ḡ = ∇̂/m.
      const Eigen::ArrayXd mean_grad = grad.array() / static_cast<double>(m);
      mean_square = sg.rmsprop_decay * mean_square.array() + (1.0 - sg.rmsprop_decay) * mean_grad.square();
      preconditioner = (sg.rmsprop_epsilon + mean_square.array().sqrt()).inverse().matrix();
    }
    noise = exploring ? Eigen::VectorXd::Zero(d) : Eigen::VectorXd(rng.normal_vector(d).cwiseProduct(preconditioner.cwiseSqrt()));
    previous = theta;
    if (sghmc) {
      velocity = (1.0 - step * sg.friction) * velocity + step * preconditioner.cwiseProduct(grad) +
                 std::sqrt(2.0 * sg.friction * step) * noise;
      theta += step * velocity;
    } else {
      theta += 0.5 * step * preconditioner.cwiseProduct(grad) + std::sqrt(step) * noise;
    }
    next_batch();
    bool divergent = false;
    if (!evaluate()) {
      // Too large a step: the move is undone (and SGHMC's velocity dropped), the chain goes on
      // from where it was with the new batch, and the iteration is counted as divergent.
      divergent = true;
      theta = previous;
      velocity.setZero();
      if (!evaluate()) {
        throw Error(ErrorKind::kNumerical, name + ": the minibatch log density is not finite at iteration " +
                                               std::to_string(it + 1) + "; try a smaller step size");
      }
      ++s.gradient_evaluations;
    }
    ++s.gradient_evaluations;
    const bool warmup = it < o.num_warmup;
    if (warmup) {
      if (divergent) ++s.warmup_divergences;
      if (it == o.num_warmup - 1) {
        s.warmup_seconds = clock.end_warmup();
        if (sink) sink->adaptation_done(step, Metric::unit(d));
      }
    } else {
      ++sampling_iterations;
      if (divergent) ++s.divergences;
    }
    s.iterations = it + 1;

    const int index = warmup ? it : it - o.num_warmup;
    if (!exploring && index % o.thin == 0 && (!warmup || o.save_warmup)) {
      // lp__ is the minibatch estimate at the row's θ; every step is taken (there is no
      // Metropolis test), and there is no tree or Hamiltonian.
      row[0] = log_p;
      row[1] = 1.0;  // accept_stat__
      row[2] = step;
      row[3] = 0.0;  // treedepth__
      row[4] = 1.0;  // n_leapfrog__: one minibatch gradient
      row[5] = divergent ? 1.0 : 0.0;
      row[6] = nan;  // energy__
      write_model_columns(model, theta, &row);
      if (sink) sink->draw(row, warmup);
      if (!warmup) {
        if (kept && o.keep_draws) keep_row(row, s.draws, planned, kept);
        ++s.draws;
      }
    }
    if (sink) sink->iteration(it, total);
    if (o.checkpoint_every > 0 && (s.iterations % o.checkpoint_every == 0 || s.iterations == total)) checkpoint();
  }
  if (s.interrupted) checkpoint();
  if (kept && o.keep_draws) kept->conservativeResize(s.draws, ncols);
  s.mean_accept_stat = 1.0;
  s.mean_tree_depth = 0.0;
  s.step_size = step;
  s.inverse_metric_diagonal = preconditioner;
  clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &s.warmup_seconds, &s.sampling_seconds);
  if (sink) sink->end(s);
  return s;
}

}  // namespace internal
}  // namespace occam::mcmc

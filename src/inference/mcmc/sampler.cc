#include "occam/mcmc/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <sstream>
#include <thread>

#include "occam/mcmc/adaptation.h"
#include "occam/mcmc/hamiltonian.h"
#include "occam/mcmc/metropolis.h"
#include "occam/status.h"
#include "occam/types.h"
#include "inference/mcmc/chain_parts.h"
#include "inference/mcmc/collective.h"
#include "inference/mcmc/microcanonical_chain.h"
#include "inference/mcmc/stochastic_gradient_chain.h"

namespace occam::mcmc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Stan's base_hmc::init_stepsize: double or halve ε until the acceptance of one leapfrog step
// from a fresh momentum crosses 0.8. Bounded, so that an improper target cannot loop forever.
double find_reasonable_step_size(const Hamiltonian& h, const PhasePoint& z0, double step, Rng& rng) {
  const auto delta_H = [&](double eps) {
    PhasePoint z = z0;
    h.sample_momentum(&z, rng);
    const double H0 = h.energy(z);
    h.leapfrog(&z, eps);
    double e = h.energy(z);
    if (std::isnan(e)) e = std::numeric_limits<double>::infinity();
    return H0 - e;
  };
  return internal::search_step_size(step, std::log(0.8), delta_H);
}

bool evaluate_point(const Hamiltonian& h, const LogDensity& density, bool gradient, PhasePoint* z) {
  if (gradient) return h.init(z);
  double lp = 0.0;
  const bool ok = density.evaluate(z->q, &lp, nullptr) && std::isfinite(lp);
  z->V = ok ? -lp : std::numeric_limits<double>::infinity();
  return ok;
}

// The kernel for one of the samplers whose chain loop is run_chain's.
std::unique_ptr<Kernel> make_kernel(const SamplerOptions& o, const LogDensity& density, const Metric& metric,
                                    const Hamiltonian& hamiltonian) {
  switch (o.method) {
    case SamplerKind::kNuts:
      return std::make_unique<NutsKernel>(hamiltonian, o.nuts);
    case SamplerKind::kHmc:
      return std::make_unique<HmcKernel>(hamiltonian, o.hmc);
    case SamplerKind::kMetropolis:
      return std::make_unique<MetropolisKernel>(density, metric);
    case SamplerKind::kSgld:
    case SamplerKind::kSghmc:
    case SamplerKind::kMclmc:
    case SamplerKind::kMams:
      break;
  }
  throw Error(ErrorKind::kInvalidArgument, "run_chain: a sampler with its own chain loop");
}

// One chain of NUTS, HMC or random-walk Metropolis (Stan's run_adaptive_sampler as named steps):
// start fresh or from a checkpoint; per iteration a Gibbs update of the model's own variables,
// the kernel's transition, then warm-up's adaptation (dual averaging of ε, Stan's windowed metric)
// or sampling's statistics, the row and the checkpoint; finish with the chain's summary. The
// kernel sees only the log density; the sink owns the output.
class KernelChain {
 public:
  KernelChain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
              const std::vector<std::string>& columns, Eigen::MatrixXd* kept)
      : chain_(chain),
        model_(model),
        o_(o),
        sink_(sink),
        columns_(columns),
        kept_(kept),
        resume_(internal::resume_state(o, chain)),
        clock_(resume_),
        rng_(o.seed, static_cast<std::uint64_t>(chain)),
        density_(model.density()),
        d_(density_.dim()),
        metric_(internal::initial_metric(o, d_)),
        hamiltonian_(density_, metric_),
        kernel_(make_kernel(o, density_, metric_, hamiltonian_)),
        gradient_(kernel_->uses_gradient()),
        default_step_(gradient_ ? 1.0 : 2.38 / std::sqrt(static_cast<double>(d_))),
        adapt_step_(o.adapt_step_size && o.num_warmup > 0),
        dual_({.target = o.target_accept > 0.0 ? o.target_accept : kernel_->default_target_accept()}),
        // Random-walk Metropolis learns its scale far more slowly than HMC its step size (each
        // iteration says less): give dual averaging a longer terminal buffer after the last metric
        // update, a tenth of warm-up instead of Stan's 50 iterations.
        windows_(o.num_warmup, o.adapt_metric ? o.metric : MetricKind::kUnit, d_, /*init_buffer=*/75,
                 gradient_ ? 50 : std::max(50, o.num_warmup / 10)),
        total_(o.num_warmup + o.num_draws),
        ncols_(static_cast<Eigen::Index>(columns.size())),
        rows_(o, model, sink, kept, ncols_) {
    summary_.chain = chain;
  }

  ChainSummary run() { return internal::run_chain_loop(*this, resume_, model_, o_, &summary_); }

  // --- The steps of run_chain_loop (chain_parts.h). ---
  // The chain from its checkpoint: counters, streams, metric, step size and adaptation as saved;
  // returns the iteration to go on from.
  int restore(const ChainState& r) {
    internal::restore_counters(r, chain_, total_, o_.num_warmup, d_, &summary_, &sampling_iterations_);
    rng_.restore(r.rng);
    model_.restore_state(r.model_state);
    metric_ = internal::saved_metric(r.metric, r.inverse_metric, d_);
    z_.q = r.position;
    if (!evaluate_point(hamiltonian_, density_, gradient_, &z_)) {
      // A chain only ever saves a point where the density is finite: the checkpoint was damaged.
      throw Error(ErrorKind::kInvalidInput,
                  "chain " + std::to_string(chain_ + 1) +
                      ": the log density is not finite at the saved point (its checkpoint is damaged)");
    }
    kernel_->set_step_size(r.step_size);
    dual_.restore(r.dual_averaging);
    windows_.restore(r.windows);
    sum_accept_ = r.sum_accept_stat;
    sum_depth_ = r.sum_tree_depth;
    // The evaluation at the saved point above is not one the uninterrupted chain made.
    gradient_base_ = r.gradient_evaluations - (gradient_ ? hamiltonian_.gradient_evaluations() : 0);
    value_evaluations_ = r.gradient_evaluations;
    if (kept_) internal::restore_kept_draws(r, o_.keep_draws, ncols_, rows_.planned(), kept_);
    return r.iteration;
  }

  // The model's initial point, the first step size (Stan's init_stepsize when ε adapts); false
  // when a stop was asked for before the first evaluation.
  bool start_fresh() {
    z_.q = model_.initial_point(rng_);
    if (z_.q.size() != d_) throw Error(ErrorKind::kInvalidArgument, "ChainModel::initial_point has the wrong size");
    if (internal::stop_requested(model_, o_)) return false;
    if (!evaluate_point(hamiltonian_, density_, gradient_, &z_)) {
      throw Error(ErrorKind::kNumerical,
                  "chain " + std::to_string(chain_ + 1) + ": the log density is not finite at the initial point");
    }
    double step = o_.initial_step_size > 0.0 ? o_.initial_step_size : default_step_;
    if (adapt_step_ && gradient_) step = find_reasonable_step_size(hamiltonian_, z_, step, rng_);
    kernel_->set_step_size(step);
    dual_.restart(step);
    if (sink_) sink_->begin(columns_);
    // The kept rows grow with the draws made, doubling up to the planned number: an indefinite
    // run (stopped by a signal) holds only what it has drawn, a completed one ends at its size.
    if (kept_) kept_->resize(std::min<Eigen::Index>(rows_.planned(), 64), ncols_);
    if (o_.num_warmup == 0) {
      summary_.warmup_seconds = clock_.end_warmup();
      if (sink_) sink_->adaptation_done(kernel_->step_size(), metric_);
    }
    return true;
  }

  ChainSummary stopped_at_start() { return internal::stopped_at_start(summary_, clock_, sink_, columns_, kept_); }

  // Iteration `it` (0-based, warm-up included).
  void iterate(int it) {
    if (model_.gibbs_step(&z_.q, rng_)) {
      if (!evaluate_point(hamiltonian_, density_, gradient_, &z_)) {
        throw Error(ErrorKind::kNumerical,
                    "chain " + std::to_string(chain_ + 1) + ": the log density is not finite after the Gibbs update");
      }
    }
    const TransitionInfo info = kernel_->transition(&z_, rng_);
    if (!gradient_) ++value_evaluations_;
    if (it < o_.num_warmup) {
      adapt(it, info);
    } else {
      tally(info);
    }
    summary_.iterations = it + 1;
    rows_(it, -z_.V, info, z_.q, &summary_);
    if (sink_) sink_->iteration(it, total_);
    if (o_.checkpoint_every > 0 && (summary_.iterations % o_.checkpoint_every == 0 || summary_.iterations == total_)) {
      checkpoint();
    }
  }

 private:
  // Warm-up: ε by dual averaging; at the end of each metric window the new metric and a fresh ε;
  // at the last warm-up iteration the final ε (Stan's windowed adaptation).
  void adapt(int it, const TransitionInfo& info) {
    if (info.divergent) ++summary_.warmup_divergences;
    if (adapt_step_) kernel_->set_step_size(dual_.update(info.accept_stat));
    if (windows_.observe(it, z_.q, &metric_)) {
      double restart = gradient_ ? kernel_->step_size() : default_step_;
      if (adapt_step_ && gradient_) restart = find_reasonable_step_size(hamiltonian_, z_, restart, rng_);
      kernel_->set_step_size(restart);
      dual_.restart(restart);
    }
    if (it == o_.num_warmup - 1) {
      if (adapt_step_) kernel_->set_step_size(dual_.final_step_size());
      summary_.warmup_seconds = clock_.end_warmup();
      if (sink_) sink_->adaptation_done(kernel_->step_size(), metric_);
    }
  }

  // Sampling: the summary's counts and sums.
  void tally(const TransitionInfo& info) {
    ++sampling_iterations_;
    if (info.divergent) ++summary_.divergences;
    if (o_.method == SamplerKind::kNuts && info.tree_depth >= o_.nuts.max_depth) ++summary_.max_depth_hits;
    sum_accept_ += info.accept_stat;
    sum_depth_ += info.tree_depth;
  }

  long long gradient_evaluations() const {
    return gradient_ ? gradient_base_ + hamiltonian_.gradient_evaluations() : value_evaluations_;
  }

 public:
  // The chain's state after summary_.iterations iterations, for the sink to keep.
  void checkpoint() {
    if (!sink_ || o_.checkpoint_every <= 0) return;
    ChainState state = internal::common_chain_state(summary_, z_.q, model_, rng_, sampling_iterations_);
    state.step_size = kernel_->step_size();
    state.dual_averaging = dual_.state();
    state.windows = windows_.state();
    state.metric = metric_.kind();
    if (metric_.kind() == MetricKind::kDense) {
      state.inverse_metric = metric_.inverse_mass_matrix();
    } else if (metric_.kind() == MetricKind::kDiagonal) {
      state.inverse_metric = metric_.inverse_mass_diagonal();
    }
    state.sum_accept_stat = sum_accept_;
    state.sum_tree_depth = sum_depth_;
    state.gradient_evaluations = gradient_evaluations();
    internal::hand_checkpoint(state, summary_, clock_, o_, *sink_);
  }

  ChainSummary finish() {
    ChainSummary& s = summary_;
    s.mean_accept_stat = sampling_iterations_ > 0 ? sum_accept_ / sampling_iterations_ : 0.0;
    s.mean_tree_depth = sampling_iterations_ > 0 ? sum_depth_ / sampling_iterations_ : 0.0;
    s.step_size = kernel_->step_size();
    s.inverse_metric_diagonal = metric_.inverse_mass_diagonal();
    s.gradient_evaluations = gradient_evaluations();
    return internal::end_chain(s, clock_, o_, sink_, kept_);
  }

 private:
  const int chain_;
  ChainModel& model_;
  const SamplerOptions& o_;
  DrawSink* sink_;
  const std::vector<std::string>& columns_;
  Eigen::MatrixXd* kept_;
  const ChainState* resume_;
  internal::ChainClock clock_;
  Rng rng_;
  const LogDensity& density_;
  const Eigen::Index d_;
  Metric metric_;  // referenced by the Hamiltonian and the Metropolis kernel
  EuclideanHamiltonian hamiltonian_;
  std::unique_ptr<Kernel> kernel_;
  const bool gradient_;
  const double default_step_;
  const bool adapt_step_;
  DualAveraging dual_;
  WindowedAdaptation windows_;
  const int total_;
  const Eigen::Index ncols_;
  internal::RowOutput rows_;
  ChainSummary summary_;
  PhasePoint z_;
  double sum_accept_ = 0.0, sum_depth_ = 0.0;
  int sampling_iterations_ = 0;
  long long value_evaluations_ = 0, gradient_base_ = 0;
};

ChainSummary run_chain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                       const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  KernelChain run(chain, model, o, sink, columns, kept);
  return run.run();
}

}  // namespace

SamplerKind parse_sampler_kind(std::string_view name) { return enum_names<SamplerKind>().parse(name); }

bool is_stochastic_gradient(SamplerKind kind) { return kind == SamplerKind::kSgld || kind == SamplerKind::kSghmc; }

bool is_microcanonical(SamplerKind kind) { return kind == SamplerKind::kMclmc || kind == SamplerKind::kMams; }

const char* to_string(SamplerKind kind) { return enum_names<SamplerKind>().name(kind); }

std::vector<std::string> ChainModel::parameter_names() const {
  std::vector<std::string> names;
  for (Eigen::Index i = 0; i < density().dim(); ++i) names.push_back("theta." + std::to_string(i + 1));
  return names;
}

void SamplerOptions::validate() const {
  if (chains < 1) invalid_option("SamplerOptions", "chains", chains, "must be at least 1");
  if (threads < 0) invalid_option("SamplerOptions", "threads", threads, "must be 0 (automatic) or positive");
  if (num_warmup < 0) invalid_option("SamplerOptions", "num_warmup", num_warmup, "must be non-negative");
  if (num_draws < 0) invalid_option("SamplerOptions", "num_draws", num_draws, "must be non-negative");
  if (thin < 1) invalid_option("SamplerOptions", "thin", thin, "must be at least 1");
  if (!(initial_step_size >= 0.0) || !std::isfinite(initial_step_size)) {
    invalid_option("SamplerOptions", "initial_step_size", initial_step_size, "must be finite and non-negative");
  }
  if (method != SamplerKind::kMetropolis && !(initial_step_size > 0.0)) {
    invalid_option("SamplerOptions", "initial_step_size", initial_step_size,
                   "must be positive for HMC, NUTS, MCLMC, MAMS, SGLD and SGHMC");
  }
  if (is_stochastic_gradient(method)) stochastic_gradient.validate();
  if (is_microcanonical(method)) {
    microcanonical.validate();
    if (metric == MetricKind::kDense || initial_inverse_metric.cols() > 1) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string("SamplerOptions.metric: ") + to_string(method) +
                      " takes a unit or diagonal metric (its preconditioner is diagonal), not a dense one");
    }
  }
  if (checkpoint_every < 0)
    invalid_option("SamplerOptions", "checkpoint_every", checkpoint_every, "must be 0 (never) or positive");
  if (resume.size() > static_cast<std::size_t>(std::max(chains, 0))) {
    invalid_option("SamplerOptions", "resume", static_cast<int>(resume.size()),
                   "must hold at most one state per chain");
  }
  if (!(target_accept >= 0.0 && target_accept < 1.0)) {
    invalid_option("SamplerOptions", "target_accept", target_accept, "must be in (0, 1), or 0 for the default");
  }
  nuts.validate();
  hmc.validate();
}

std::string SamplerSummary::brief_report() const {
  std::ostringstream out;
  int divergences = 0, draws = 0;
  for (const ChainSummary& c : chains) {
    divergences += c.divergences;
    draws += c.draws;
  }
  out << chains.size() << " chains, " << draws << " draws in " << seconds << " s, " << divergences
      << " divergent transitions after warm-up" << (interrupted ? " (interrupted)" : "") << '\n';
  return out.str();
}

Eigen::MatrixXd SamplerSummary::column(const std::string& name) const {
  const auto found = std::find(columns.begin(), columns.end(), name);
  if (found == columns.end()) throw Error(ErrorKind::kInvalidArgument, "no column '" + name + "' in the draws");
  const Eigen::Index j = found - columns.begin();
  Eigen::Index n = draws.empty() ? 0 : draws.front().rows();
  for (const auto& d : draws) n = std::min(n, d.rows());
  Eigen::MatrixXd out(n, static_cast<Eigen::Index>(draws.size()));
  for (std::size_t c = 0; c < draws.size(); ++c) out.col(static_cast<Eigen::Index>(c)) = draws[c].col(j).head(n);
  return out;
}

SamplerSummary sample(const std::function<std::unique_ptr<ChainModel>(int chain)>& make_model,
                      const SamplerOptions& options,
                      const std::function<std::unique_ptr<DrawSink>(int chain)>& make_sink) {
  options.validate();
  const auto start = Clock::now();
  std::vector<std::unique_ptr<ChainModel>> models;
  std::vector<std::unique_ptr<DrawSink>> sinks;
  for (int c = 0; c < options.chains; ++c) {
    models.push_back(make_model(c));
    sinks.push_back(make_sink ? make_sink(c) : nullptr);
  }
  SamplerSummary summary;
  summary.columns = sampler_columns();
  for (const std::string& n : models.front()->parameter_names()) summary.columns.push_back(n);
  for (const std::string& n : models.front()->extra_names()) summary.columns.push_back(n);
  if (static_cast<Eigen::Index>(models.front()->parameter_names().size()) != models.front()->density().dim()) {
    throw Error(ErrorKind::kInvalidArgument, "ChainModel::parameter_names has the wrong size");
  }

  const int chains = options.chains;
  summary.draws.resize(static_cast<std::size_t>(chains));
  summary.chains.resize(static_cast<std::size_t>(chains));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(chains));
  std::atomic<int> next{0};
  const auto worker = [&] {
    for (int c = next++; c < chains; c = next++) {
      const auto i = static_cast<std::size_t>(c);
      try {
        const auto run = is_stochastic_gradient(options.method) ? internal::run_stochastic_gradient_chain
                         : is_microcanonical(options.method)    ? internal::run_microcanonical_chain
                                                                : run_chain;
        summary.chains[i] = run(c, *models[i], options, sinks[i].get(), summary.columns, &summary.draws[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, chains);
  // A spread model's evaluations are collectives: one chain at a time, in chain order, on every
  // process (its rows may still be summed on several threads, DataShard::threads).
  for (const auto& model : models) {
    const Communicator* comm = model->communicator();
    if (comm != nullptr && comm->size() > 1) threads = 1;
  }
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (std::thread& t : pool) t.join();
  }
  sinks.clear();  // closes files before an error is reported
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (const ChainSummary& c : summary.chains) summary.interrupted = summary.interrupted || c.interrupted;
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace occam::mcmc

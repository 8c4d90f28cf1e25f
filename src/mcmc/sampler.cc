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
#include "chain_parts.h"
#include "collective.h"
#include "microcanonical_chain.h"
#include "stochastic_gradient_chain.h"

namespace occam::mcmc {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

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

ChainSummary run_chain(int chain, ChainModel& model, const SamplerOptions& o, DrawSink* sink,
                       const std::vector<std::string>& columns, Eigen::MatrixXd* kept) {
  const ChainState* resume = internal::resume_state(o, chain);
  internal::ChainClock clock(resume);
  const auto stop_requested = [&] { return internal::stop_requested(model, o); };
  Rng rng(o.seed, static_cast<std::uint64_t>(chain));
  const LogDensity& density = model.density();
  const Eigen::Index d = density.dim();
  Metric metric = internal::initial_metric(o, d);
  EuclideanHamiltonian hamiltonian(density, metric);
  std::unique_ptr<Kernel> kernel;
  switch (o.method) {
    case SamplerKind::kNuts: kernel = std::make_unique<NutsKernel>(hamiltonian, o.nuts); break;
    case SamplerKind::kHmc: kernel = std::make_unique<HmcKernel>(hamiltonian, o.hmc); break;
    case SamplerKind::kMetropolis: kernel = std::make_unique<MetropolisKernel>(density, metric); break;
    case SamplerKind::kSgld:
    case SamplerKind::kSghmc:
    case SamplerKind::kMclmc:
    case SamplerKind::kMams: throw Error(ErrorKind::kInvalidArgument, "run_chain: a sampler with its own chain loop");
  }
  const bool gradient = kernel->uses_gradient();
  const double default_step = gradient ? 1.0 : 2.38 / std::sqrt(static_cast<double>(d));
  const bool adapt_step = o.adapt_step_size && o.num_warmup > 0;
  DualAveraging dual({.target = o.target_accept > 0.0 ? o.target_accept : kernel->default_target_accept()});
  // Random-walk Metropolis learns its scale far more slowly than HMC its step size (each
  // iteration says less): give dual averaging a longer terminal buffer after the last metric
  // update, a tenth of warm-up instead of Stan's 50 iterations.
  const int term_buffer = gradient ? 50 : std::max(50, o.num_warmup / 10);
  WindowedAdaptation windows(o.num_warmup, o.adapt_metric ? o.metric : MetricKind::kUnit, d, /*init_buffer=*/75,
                             term_buffer);
  const int total = o.num_warmup + o.num_draws;
  ChainSummary s;
  s.chain = chain;
  // The kept rows grow with the draws made, doubling up to the planned number: an indefinite run
  // (stopped by a signal) holds only what it has drawn, and a completed one ends at its exact size.
  const auto ncols = static_cast<Eigen::Index>(columns.size());
  internal::RowOutput rows(o, model, sink, kept, ncols);
  const Eigen::Index planned = rows.planned();
  double sum_accept = 0.0, sum_depth = 0.0;
  int sampling_iterations = 0;
  long long value_evaluations = 0, gradient_base = 0;
  int first = 0;
  PhasePoint z;

  if (resume != nullptr) {
    const ChainState& r = *resume;
    internal::restore_counters(r, chain, total, o.num_warmup, d, &s, &sampling_iterations);
    rng.restore(r.rng);
    model.restore_state(r.model_state);
    metric = internal::saved_metric(r.metric, r.inverse_metric, d);
    z.q = r.position;
    if (!evaluate_point(hamiltonian, density, gradient, &z)) {
      // A chain only ever saves a point where the density is finite: the checkpoint was damaged.
      throw Error(ErrorKind::kInvalidInput, "chain " + std::to_string(chain + 1) +
                                                ": the log density is not finite at the saved point (its checkpoint is damaged)");
    }
    kernel->set_step_size(r.step_size);
    dual.restore(r.dual_averaging);
    windows.restore(r.windows);
    sum_accept = r.sum_accept_stat;
    sum_depth = r.sum_tree_depth;
    // The evaluation at the saved point above is not one the uninterrupted chain made.
    gradient_base = r.gradient_evaluations - (gradient ? hamiltonian.gradient_evaluations() : 0);
    value_evaluations = r.gradient_evaluations;
    first = r.iteration;
    if (kept) internal::restore_kept_draws(r, o.keep_draws, ncols, rows.planned(), kept);
  } else {
    z.q = model.initial_point(rng);
    if (z.q.size() != d) throw Error(ErrorKind::kInvalidArgument, "ChainModel::initial_point has the wrong size");
    if (stop_requested()) return internal::stopped_at_start(s, clock, sink, columns, kept);
    if (!evaluate_point(hamiltonian, density, gradient, &z)) {
      throw Error(ErrorKind::kNumerical, "chain " + std::to_string(chain + 1) +
                                             ": the log density is not finite at the initial point");
    }
    double step = o.initial_step_size > 0.0 ? o.initial_step_size : default_step;
    if (adapt_step && gradient) step = find_reasonable_step_size(hamiltonian, z, step, rng);
    kernel->set_step_size(step);
    dual.restart(step);
    if (sink) sink->begin(columns);
    if (kept) kept->resize(std::min<Eigen::Index>(planned, 64), ncols);
    if (o.num_warmup == 0) {
      s.warmup_seconds = clock.end_warmup();
      if (sink) sink->adaptation_done(kernel->step_size(), metric);
    }
  }

  // The chain's state after s.iterations iterations, for the sink to keep.
  const auto checkpoint = [&] {
    if (!sink || o.checkpoint_every <= 0) return;
    ChainState state = internal::common_chain_state(s, z.q, model, rng, sampling_iterations);
    state.step_size = kernel->step_size();
    state.dual_averaging = dual.state();
    state.windows = windows.state();
    state.metric = metric.kind();
    if (metric.kind() == MetricKind::kDense) {
      state.inverse_metric = metric.inverse_mass_matrix();
    } else if (metric.kind() == MetricKind::kDiagonal) {
      state.inverse_metric = metric.inverse_mass_diagonal();
    }
    state.sum_accept_stat = sum_accept;
    state.sum_tree_depth = sum_depth;
    state.gradient_evaluations = gradient ? gradient_base + hamiltonian.gradient_evaluations() : value_evaluations;
    clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &state.warmup_seconds, &state.sampling_seconds);
    sink->checkpoint(state);
  };
  if (resume == nullptr) checkpoint();  // the starting point (a MAP fit's worth) is kept too

  for (int it = first; it < total; ++it) {
    if (stop_requested()) {
      s.interrupted = true;
      break;
    }
    if (model.gibbs_step(&z.q, rng)) {
      if (!evaluate_point(hamiltonian, density, gradient, &z)) {
        throw Error(ErrorKind::kNumerical, "chain " + std::to_string(chain + 1) +
                                               ": the log density is not finite after the Gibbs update");
      }
    }
    const TransitionInfo info = kernel->transition(&z, rng);
    if (!gradient) ++value_evaluations;
    const bool warmup = it < o.num_warmup;
    if (warmup) {
      if (info.divergent) ++s.warmup_divergences;
      if (adapt_step) kernel->set_step_size(dual.update(info.accept_stat));
      if (windows.observe(it, z.q, &metric)) {
        double restart = gradient ? kernel->step_size() : default_step;
        if (adapt_step && gradient) restart = find_reasonable_step_size(hamiltonian, z, restart, rng);
        kernel->set_step_size(restart);
        dual.restart(restart);
      }
      if (it == o.num_warmup - 1) {
        if (adapt_step) kernel->set_step_size(dual.final_step_size());
        s.warmup_seconds = clock.end_warmup();
        if (sink) sink->adaptation_done(kernel->step_size(), metric);
      }
    } else {
      ++sampling_iterations;
      if (info.divergent) ++s.divergences;
      if (o.method == SamplerKind::kNuts && info.tree_depth >= o.nuts.max_depth) ++s.max_depth_hits;
      sum_accept += info.accept_stat;
      sum_depth += info.tree_depth;
    }
    s.iterations = it + 1;

    rows(it, -z.V, info, z.q, &s);
    if (sink) sink->iteration(it, total);
    if (o.checkpoint_every > 0 && (s.iterations % o.checkpoint_every == 0 || s.iterations == total)) checkpoint();
  }
  if (s.interrupted) checkpoint();
  if (kept && o.keep_draws) kept->conservativeResize(s.draws, kept->cols());
  s.mean_accept_stat = sampling_iterations > 0 ? sum_accept / sampling_iterations : 0.0;
  s.mean_tree_depth = sampling_iterations > 0 ? sum_depth / sampling_iterations : 0.0;
  s.step_size = kernel->step_size();
  s.inverse_metric_diagonal = metric.inverse_mass_diagonal();
  s.gradient_evaluations = gradient ? gradient_base + hamiltonian.gradient_evaluations() : value_evaluations;
  clock.elapsed(s.iterations, o.num_warmup, s.warmup_seconds, &s.warmup_seconds, &s.sampling_seconds);
  if (sink) sink->end(s);
  return s;
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
      throw Error(ErrorKind::kInvalidArgument, std::string("SamplerOptions.metric: ") + to_string(method) +
                                                   " takes a unit or diagonal metric (its preconditioner is diagonal), not a dense one");
    }
  }
  if (checkpoint_every < 0) invalid_option("SamplerOptions", "checkpoint_every", checkpoint_every, "must be 0 (never) or positive");
  if (resume.size() > static_cast<std::size_t>(std::max(chains, 0))) {
    invalid_option("SamplerOptions", "resume", static_cast<int>(resume.size()), "must hold at most one state per chain");
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
                         : is_microcanonical(options.method)   ? internal::run_microcanonical_chain
                                                               : run_chain;
        summary.chains[i] = run(c, *models[i], options, sinks[i].get(), summary.columns, &summary.draws[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  int threads = options.threads > 0 ? options.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
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

// sampling_run.cc — the sampling job of fit(): the chains of a SamplingMethod over a network
// posterior, their progress forwarded to the fit's callback and their draws handed to the run
// folder's writers (run_resume.h) as they are made.
//
// The shape is Stan's services (services/sample/hmc_nuts_diag_e_adapt.hpp): one short function
// that checks the request, wires a chain model, a sampler and the writers together, runs the
// sampler and records how the run ended.

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>

#include "service/fit_job.h"
#include "occam/laplace.h"
#include "occam/rng.h"
#include "service/run_resume.h"

namespace occam::internal {
namespace {

// The combinations a sampling job refuses before it does anything.
void check_sampling_method(const SamplingMethod& method, const Posterior& posterior) {
  const Communicator* comm = posterior.distributed() ? posterior.shard().communicator : nullptr;
  if (comm != nullptr && method.laplace_metric) {
    posterior.require_one_process(
        "SamplingMethod.laplace_metric (the metric A⁻¹ needs the dense curvature; the "
        "adapted diagonal or dense metric needs none)");
  }
  const mcmc::SamplerKind kind = method.sampler.method;
  if (mcmc::is_stochastic_gradient(kind) && (method.chains.non_centered || method.laplace_metric)) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("SamplingMethod.") +
                    (method.chains.non_centered ? "chains.non_centered" : "laplace_metric") + ": " +
                    mcmc::to_string(kind) + " moves the centred weights with its own (RMSprop) preconditioning");
  }
  if (mcmc::is_microcanonical(kind) && method.laplace_metric) {
    throw Error(ErrorKind::kInvalidArgument, std::string("SamplingMethod.laplace_metric: ") + mcmc::to_string(kind) +
                                                 " takes a diagonal metric, not A⁻¹");
  }
}

// Where the chains start: chain 1 where first_chain_start says, every chain otherwise from its own stream.
void check_start(const SamplingMethod& method) {
  if (method.first_chain_start && method.first_chain_start->weights.size() > 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "SamplingMethod.first_chain_start.weights: a chain starts from a seed and stream, not given weights");
  }
  if (method.chains.start) {
    throw Error(ErrorKind::kInvalidArgument,
                "SamplingMethod.chains.start: every chain would start alike; set "
                "SamplingMethod.first_chain_start for the first chain");
  }
}

// The inputs (original units) whose network output the chains monitor: method.monitor, or five
// training rows spread over the data (each from the process that holds it).
Eigen::MatrixXd monitored_inputs(const SamplingMethod& method, const Dataset& data, const Communicator* comm) {
  if (method.monitor.size() > 0) {
    if (method.monitor.cols() != data.X.cols()) {
      throw Error(ErrorKind::kInvalidArgument, "SamplingMethod.monitor has " + std::to_string(method.monitor.cols()) +
                                                   " columns but the data have " + std::to_string(data.X.cols()) +
                                                   " inputs");
    }
    return method.monitor;
  }
  const Index m = data.num_rows(), k = std::min<Index>(5, m);
  Eigen::MatrixXd monitor(k, data.X.cols());
  std::vector<double> mine;
  for (Index i = 0; i < k; ++i) {
    const Index row = (k > 1 ? i * (m - 1) / (k - 1) : 0) - data.first_row;
    if (row < 0 || row >= data.X.rows()) continue;
    if (!data.is_shard()) {
      monitor.row(i) = data.X.row(row);
    } else {
      for (Index j = 0; j < data.X.cols(); ++j) mine.push_back(data.X(row, j));
    }
  }
  if (!data.is_shard()) return monitor;
  const std::vector<double> all = comm != nullptr ? comm->allgather(mine) : mine;
  return Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(all.data(), k,
                                                                                                  data.X.cols());
}

// The Laplace covariance A⁻¹ at one MAP fit from the network's initialisation with `rng`; none
// when the progress callback stopped the fit.
std::optional<Eigen::MatrixXd> laplace_covariance(const Posterior& posterior, Rng& rng, const Progress& progress) {
  Eigen::VectorXd w = posterior.network().initial_params(rng);
  MapOptions map;
  progress.attach(&map);
  if (find_map(posterior, map, &w).termination == Termination::kAborted) return std::nullopt;
  const LaplaceApproximation q = laplace(posterior, w, HessianKind::kGgn);
  const Eigen::MatrixXd cov = q.covariance();
  return 0.5 * (cov + cov.transpose());
}

// laplace_metric: the metric is A⁻¹ (dense) and warm-up adapts only the step size (proposal
// scale). A stop during its MAP fit stops the chains before their first iteration (run.json says
// interrupted), and the metric they would have used does not matter.
void use_laplace_metric(const Posterior& posterior, const Progress& progress, bool every_chain_resumed,
                        mcmc::SamplerOptions* options, std::atomic<bool>* stop) {
  std::optional<Eigen::MatrixXd> covariance;
  if (!every_chain_resumed) {  // else each chain's metric is in its checkpoint: no MAP fit for it
    Rng rng(options->seed, 1000);
    covariance = laplace_covariance(posterior, rng, progress);
    if (!covariance) stop->store(true);
  }
  options->initial_inverse_metric =
      covariance ? *covariance : Eigen::MatrixXd(Eigen::MatrixXd::Identity(posterior.dim(), posterior.dim()));
  options->metric = mcmc::MetricKind::kDense;
  options->adapt_metric = false;
}

// Each chain's iterations, from its own thread, one call at a time, to the fit's callback; a kAbort
// stops every chain after its current iteration. The chain's output goes on to `inner` (if any).
class ChainProgressSink final : public mcmc::DrawSink {
 public:
  ChainProgressSink(std::unique_ptr<mcmc::DrawSink> inner, const Progress& progress, std::mutex* mutex,
                    std::atomic<bool>* stop, int chain)
      : inner_(std::move(inner)), progress_(progress), mutex_(mutex), stop_(stop), chain_(chain) {}
  void begin(const std::vector<std::string>& columns) override {
    if (inner_) inner_->begin(columns);
  }
  void adaptation_done(double step, const mcmc::Metric& metric) override {
    if (inner_) inner_->adaptation_done(step, metric);
  }
  void trajectory_length_done(double length) override {
    if (inner_) inner_->trajectory_length_done(length);
  }
  void draw(const Eigen::VectorXd& row, bool warmup) override {
    if (inner_) inner_->draw(row, warmup);
  }
  void checkpoint(const mcmc::ChainState& state) override {
    if (inner_) inner_->checkpoint(state);
  }
  void iteration(int iteration, int total) override {
    FitProgress p;
    p.chain = chain_;
    p.iteration = iteration + 1;
    p.total = total;
    std::lock_guard<std::mutex> lock(*mutex_);
    if (progress_(p) == CallbackReturn::kAbort) stop_->store(true);
  }
  void end(const mcmc::ChainSummary& s) override {
    if (inner_) inner_->end(s);
  }

 private:
  std::unique_ptr<mcmc::DrawSink> inner_;
  const Progress& progress_;
  std::mutex* mutex_;
  std::atomic<bool>* stop_;
  int chain_;
};

// Every kept draw of every chain: the weight columns and, where sampled, β.
PosteriorDraws pooled_draws(const mcmc::SamplerSummary& s, Index W) {
  const auto column_of = [&](const std::string& name) {
    return static_cast<Index>(std::find(s.columns.begin(), s.columns.end(), name) - s.columns.begin());
  };
  const Index first_w = column_of("w.1"), beta_col = column_of("beta");
  const bool has_beta = beta_col < static_cast<Index>(s.columns.size());
  PosteriorDraws draws;
  Index total = 0;
  for (const Eigen::MatrixXd& d : s.draws) total += d.rows();
  draws.weights.resize(total, W);
  if (has_beta) draws.betas.resize(total);
  Index row = 0;
  for (const Eigen::MatrixXd& d : s.draws) {
    draws.weights.middleRows(row, d.rows()) = d.middleCols(first_w, W);
    if (has_beta) draws.betas.segment(row, d.rows()) = d.col(beta_col);
    draws.draws_per_chain.push_back(d.rows());
    row += d.rows();
  }
  return draws;
}

// The sampler's summary as the fit's outcome. A sampler has no convergence criterion of its own:
// it runs its planned iterations, and R-hat and ESS (the summary's draws) say whether the chains
// have converged.
Outcome sampling_outcome(mcmc::SamplerSummary s, Index W) {
  Outcome out;
  out.posterior = pooled_draws(s, W);
  out.summary.termination = s.interrupted ? Termination::kAborted : Termination::kMaxIterations;
  out.summary.message = s.interrupted ? "stopped by the callback; the draws so far are kept"
                                      : "ran the planned iterations; judge convergence by R-hat and ESS";
  out.summary.sampler = std::move(s);
  return out;
}

}  // namespace

Outcome run_sampling(const SamplingMethod& method, Posterior* posterior, const Progress& progress,
                     const ModelSpec& spec, const Dataset& data, const Standardizer& standardizer, FittedModel* model) {
  // Spread over processes, every process runs every chain in lockstep and process 0 alone writes
  // the run directory (SamplingMethod::parallel).
  const Communicator* comm = posterior->distributed() ? posterior->shard().communicator : nullptr;
  check_sampling_method(method, *posterior);
  mcmc::SamplerOptions options = method.sampler;
  std::atomic<bool> stop{false};
  options.stop = &stop;
  options.validate();
  mcmc::NetworkModelOptions chains = method.chains;
  chains.output_shift = standardizer.y_mean;
  chains.output_scale = standardizer.y_scale;
  chains.monitor_inputs = standardizer.transform_inputs(monitored_inputs(method, data, comm));
  mcmc::check_network_model(*posterior, chains);  // a clear error before any file is written
  check_start(method);

  RunFolder folder(spec, method, data, comm);
  std::vector<std::optional<mcmc::ChainState>> resumed = folder.open(options.chains);
  if (method.resume) options.resume = std::move(resumed);
  const bool every_chain_resumed = method.resume && std::all_of(options.resume.begin(), options.resume.end(),
                                                                [](const auto& state) { return state.has_value(); });
  if (method.laplace_metric) use_laplace_metric(*posterior, progress, every_chain_resumed, &options, &stop);
  folder.start(model, *posterior);

  std::mutex mutex;
  const auto make_model = [&](int chain) -> std::unique_ptr<mcmc::ChainModel> {
    // The chain's initial MAP fit reports to the callback too (as any MAP iteration: `map` set,
    // no chain): a stop request during it ends the fit at once, and the chain then stops before
    // its first iteration.
    mcmc::NetworkModelOptions options = chains;
    options.map_callback = [&progress, &mutex, &stop](const MapIteration& it) {
      std::lock_guard<std::mutex> lock(mutex);
      if (progress(Progress::of_map(it)) == CallbackReturn::kAbort) stop.store(true);
      return stop.load() ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    };
    if (chain == 0 && method.first_chain_start) {
      options.start =
          mcmc::StartStream{.seed = method.first_chain_start->seed, .stream = method.first_chain_start->stream};
    }
    return std::make_unique<mcmc::NetworkChainModel>(*posterior, options);
  };
  const auto make_sink = [&](int chain) -> std::unique_ptr<mcmc::DrawSink> {
    return std::make_unique<ChainProgressSink>(folder.chain_sink(chain), progress, &mutex, &stop, chain);
  };
  mcmc::SamplerSummary s;
  try {
    s = mcmc::sample(make_model, options, make_sink);
  } catch (const Error& e) {
    folder.seal(RunStatus::kFailed, e.what());
    throw;
  }
  const bool no_draws =
      std::all_of(s.draws.begin(), s.draws.end(), [](const Eigen::MatrixXd& d) { return d.rows() == 0; });
  if (no_draws && !s.interrupted) {
    const std::string message = "sampling: the sampler returned no draws";
    folder.seal(RunStatus::kFailed, message);
    throw Error(ErrorKind::kNumerical, message);
  }
  folder.seal(s.interrupted ? RunStatus::kInterrupted : RunStatus::kComplete,
              s.interrupted ? "stopped before the planned iterations; the draws so far are kept" : "", s.chains);
  return sampling_outcome(std::move(s), posterior->dim());
}

}  // namespace occam::internal

// sampler.h — parallel chains of NUTS, static HMC or random-walk Metropolis, with Stan's warm-up,
// of the microcanonical MCLMC and MAMS with their own tuning (microcanonical.h), or of the
// stochastic-gradient samplers SGLD and SGHMC (sgmcmc.h).
//
// Each chain gets its own model (a ChainModel: the log density and, optionally, a Gibbs step for
// hyperparameters outside θ), its own random stream Rng(seed, chain) and its own DrawSink (e.g. a
// Stan CSV file). Chains run in threads; the draws do not depend on the thread count. A model
// whose density is a sum over rows spread over processes (ChainModel::communicator) is sampled by
// all of them in lockstep, its chains one after another on the calling thread.
//
//   occam::mcmc::SamplerOptions options;        // NUTS, 4 chains, 1000 + 1000, diagonal metric
//   auto make_model = [&](int chain) { return std::make_unique<MyModel>(...); };
//   occam::mcmc::SamplerSummary s = occam::mcmc::sample(make_model, options);
#pragma once

#include <Eigen/Core>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "occam/log_density.h"
#include "occam/mcmc/adaptation.h"
#include "occam/mcmc/hmc.h"
#include "occam/mcmc/metric.h"
#include "occam/mcmc/microcanonical.h"
#include "occam/mcmc/nuts.h"
#include "occam/mcmc/sgmcmc.h"
#include "occam/mcmc/stochastic_density.h"
#include "occam/parallel.h"
#include "occam/rng.h"

namespace occam::mcmc {

enum class SamplerKind { kNuts, kHmc, kMetropolis, kSgld, kSghmc, kMclmc, kMams };
// "nuts" | "hmc" | "metropolis" | "sgld" | "sghmc" | "mclmc" | "mams"
SamplerKind parse_sampler_kind(std::string_view name);
bool is_stochastic_gradient(SamplerKind kind);  // SGLD, SGHMC
bool is_microcanonical(SamplerKind kind);       // MCLMC, MAMS
const char* to_string(SamplerKind kind);

// The seven sampler columns that open every row of a Stan CSV file.
inline const std::vector<std::string>& sampler_columns() {
  static const std::vector<std::string> columns = {"lp__",         "accept_stat__", "stepsize__", "treedepth__",
                                                   "n_leapfrog__", "divergent__",   "energy__"};
  return columns;
}
inline constexpr int kNumSamplerColumns = 7;

// What one chain samples. θ is moved by the kernel; a Gibbs step may update further parameters
// (hyperparameters) given θ, changing density(): the kernel then re-evaluates its point.
class ChainModel {
 public:
  virtual ~ChainModel() = default;
  virtual const LogDensity& density() const = 0;
  // The same log density a minibatch at a time, for SGLD and SGHMC; null when the model has none.
  virtual const StochasticLogDensity* stochastic_density() const { return nullptr; }
  // Where the chain starts, drawn with the chain's own stream.
  virtual Eigen::VectorXd initial_point(Rng& rng) = 0;
  // One Gibbs update of the parameters outside θ given θ (Neal 1996 alternates them with the
  // weight kernel). Returns true when the density changed. It may also rewrite θ when the
  // kernel's coordinates depend on those parameters (a non-centred parameterisation), as long
  // as the parameters of interest (parameter_values) stay the same.
  virtual bool gibbs_step(Eigen::VectorXd* /*theta*/, Rng& /*rng*/) { return false; }
  // Column names of the parameters (default theta.1, theta.2, ...; Stan's "name.index"
  // convention), and their values at the kernel's θ (default θ itself).
  virtual std::vector<std::string> parameter_names() const;
  virtual Eigen::VectorXd parameter_values(const Eigen::VectorXd& theta) const { return theta; }
  // Further columns written after θ: hyperparameters, generated quantities.
  virtual std::vector<std::string> extra_names() const { return {}; }
  virtual Eigen::VectorXd extra_values(const Eigen::VectorXd& /*theta*/) const { return {}; }
  // The parameters outside θ that gibbs_step changes (hyperparameters), for a checkpoint, and
  // their restoration when a chain resumes from one. Default: none.
  virtual Eigen::VectorXd state() const { return {}; }
  virtual void restore_state(const Eigen::VectorXd& /*state*/) {}
  // The processes that evaluate density() together (a posterior spread over them, DataShard), or
  // null for this process alone. Then every process must run sample() with the same options and
  // models: the chains run one after another on the calling thread (a communicator serves one
  // thread at a time), every process makes the same draws, and a stop request on any process
  // stops every process at the same iteration.
  virtual const Communicator* communicator() const { return nullptr; }
};

// Everything a chain's next iterations depend on, taken between two iterations: resuming from it
// continues the chain exactly as if it had not stopped (the same draws, bit for bit, and the same
// summary). The momentum of HMC and NUTS is not part of it (every transition draws a fresh one);
// SGHMC's velocity, RMSprop's average and the minibatch stream's place are.
struct ChainState {
  int chain = 0;
  int iteration = 0;            // iterations completed, warm-up included: the next to run
  Eigen::VectorXd position;     // θ, in the kernel's coordinates
  Eigen::VectorXd model_state;  // ChainModel::state()
  std::string rng;              // the chain's random stream, exactly (Rng::save)
  double step_size = 0.0;       // the kernel's current step size (Metropolis: proposal scale)
  DualAveraging::State dual_averaging;
  WindowedAdaptation::State windows;
  MetricKind metric = MetricKind::kUnit;
  Eigen::MatrixXd inverse_metric;  // diagonal: one column; dense: the matrix; unit: empty
  // The running totals behind ChainSummary.
  int draws = 0, divergences = 0, warmup_divergences = 0, max_depth_hits = 0, sampling_iterations = 0;
  double sum_accept_stat = 0.0, sum_tree_depth = 0.0;
  long long gradient_evaluations = 0;
  double warmup_seconds = 0.0, sampling_seconds = 0.0;  // spent so far
  // Stochastic-gradient samplers only (shuffle_state empty otherwise): SGHMC's velocity, the
  // RMSprop preconditioner's running mean of squared gradients, and the MinibatchStream's place.
  Eigen::VectorXd velocity;
  Eigen::VectorXd preconditioner;
  std::string shuffle_state;
  long long epoch = -1;
  long long batch_position = 0;
  // MCLMC and MAMS only (momentum empty otherwise): the unit velocity u (MCLMC carries it from one
  // iteration to the next), the decoherence length L and the running estimates of their tuning.
  Eigen::VectorXd momentum;
  double trajectory_length = 0.0;
  EnergyErrorAdaptation::State energy_adaptation;
  StreamingMoments::State moments;
  // The rows kept so far (SamplerSummary::draws). Not in a checkpoint (they are in the chain's
  // output): a caller resuming a chain puts them back, e.g. from its Stan CSV file.
  Eigen::MatrixXd kept_draws;
};

// How one chain went.
struct ChainSummary {
  int chain = 0;
  int iterations = 0;   // warm-up and sampling iterations completed
  int draws = 0;        // post-warm-up draws kept (after thinning)
  int divergences = 0;  // after warm-up
  int warmup_divergences = 0;
  int max_depth_hits = 0;         // NUTS transitions that stopped at the maximum tree depth (after warm-up)
  double mean_accept_stat = 0.0;  // after warm-up
  double mean_tree_depth = 0.0;   // after warm-up (NUTS)
  double step_size = 0.0;         // after adaptation
  Eigen::VectorXd inverse_metric_diagonal;
  double trajectory_length = 0.0;      // MCLMC, MAMS: L after tuning (in the metric's coordinates)
  long long gradient_evaluations = 0;  // leapfrog steps, warm-up included (Metropolis: density evaluations)
  double warmup_seconds = 0.0;
  double sampling_seconds = 0.0;
  bool interrupted = false;
};

// Receives one chain's output as it is made; called from that chain's thread only.
class DrawSink {
 public:
  virtual ~DrawSink() = default;
  virtual void begin(const std::vector<std::string>& /*columns*/) {}
  // After the last warm-up iteration: the step size and metric that sampling will use.
  virtual void adaptation_done(double /*step_size*/, const Metric& /*metric*/) {}
  // MCLMC and MAMS, right after adaptation_done: the decoherence length L sampling will use.
  virtual void trajectory_length_done(double /*trajectory_length*/) {}
  // One row: the seven sampler columns, θ, then the extra columns.
  virtual void draw(const Eigen::VectorXd& row, bool warmup) = 0;
  // Called every iteration (0-based) with the total number of iterations (progress displays).
  virtual void iteration(int /*iteration*/, int /*total*/) {}
  // Every SamplerOptions::checkpoint_every iterations, once the chain has its starting point, at
  // its last iteration and where it stops early: the chain's state after state.iteration
  // iterations (kept_draws empty), for the sink to store with its own position in its output.
  virtual void checkpoint(const ChainState& /*state*/) {}
  virtual void end(const ChainSummary& /*summary*/) {}
};

struct SamplerOptions {
  SamplerKind method = SamplerKind::kNuts;
  int chains = 4;
  int threads = 0;           // 0: one per chain, at most the hardware's concurrency (1 for a spread model)
  int num_warmup = 1000;     // warm-up (burn-in) iterations: adapted, then discarded
  int num_draws = 1000;      // iterations after warm-up
  int thin = 1;              // keep every thin-th of them
  bool save_warmup = false;  // also pass warm-up rows to the sinks (never kept in the summary)
  std::uint64_t seed = 1;

  MetricKind metric = MetricKind::kDiagonal;
  bool adapt_metric = true;
  // The starting M⁻¹: empty for the identity, one column for a diagonal, square for dense.
  Eigen::MatrixXd initial_inverse_metric;
  double initial_step_size = 1.0;  // Metropolis: ≤ 0 means 2.38/√d
  bool adapt_step_size = true;
  double target_accept = 0.0;  // 0: the kernel's (0.8 for HMC/NUTS, 0.9 for MAMS, 0.234 for Metropolis)
  NutsOptions nuts;
  HmcOptions hmc;
  // MCLMC and MAMS: the metric is unit or diagonal (σ = √M⁻¹ is their preconditioner), the step
  // size ε is tuned in warm-up as microcanonical.h says, and initial_step_size is where that starts.
  MicrocanonicalOptions microcanonical;
  // SGLD and SGHMC: initial_step_size is their time step h (the peak of a cyclical schedule),
  // never adapted; warm-up iterations are burn-in; the metric is not used.
  StochasticGradientOptions stochastic_gradient;

  bool keep_draws = true;  // keep the post-warm-up rows in SamplerSummary::draws
  // When set to true, every chain stops after its current iteration (a spread model: on any process).
  const std::atomic<bool>* stop = nullptr;

  // DrawSink::checkpoint every this many iterations (0: never).
  int checkpoint_every = 0;
  // Chain c continues from resume[c] where it holds a state (its model's state restored, no
  // initial_point, and its sink gets no begin(): it continues the output the state describes);
  // the other chains start afresh. The options must be those of the run the states come from.
  std::vector<std::optional<ChainState>> resume;

  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

struct SamplerSummary {
  std::vector<std::string> columns;    // sampler columns, θ names, extra names
  std::vector<Eigen::MatrixXd> draws;  // per chain: kept rows × columns
  std::vector<ChainSummary> chains;
  bool interrupted = false;
  double seconds = 0.0;
  std::string brief_report() const;
  // The draws of one column as iterations × chains (chains truncated to the shortest).
  Eigen::MatrixXd column(const std::string& name) const;
};

// Runs options.chains chains. make_model(chain) and make_sink(chain) (which may be empty) are
// called once per chain, from the caller's thread. A chain whose density cannot be evaluated at
// its initial point throws Error(kNumerical); divergences are counted, never thrown.
SamplerSummary sample(const std::function<std::unique_ptr<ChainModel>(int chain)>& make_model,
                      const SamplerOptions& options,
                      const std::function<std::unique_ptr<DrawSink>(int chain)>& make_sink = {});

}  // namespace occam::mcmc

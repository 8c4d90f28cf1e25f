// fit.h — the fit service: this model, on these data, by this method, once for every front end.
//
// fit() standardises the data (ModelSpec::standardization), builds the network, likelihood and
// prior from the spec, runs the method's engine and returns a FittedModel whose predictions are
// in the original units. Methods are typed options with their defaults in one place:
//   LaplaceMethod       MAP + Laplace, α and β by the evidence framework (or fixed, quick,
//                       periodic, integrated out: EvidenceOptions::strategy); with noise_model,
//                       a noise level σ(x) by a second network (heteroscedastic.h); with
//                       committee, K such fits from independent starts, mixed (committee.h);
//   VariationalMethod   q(w) by the ELBO from the Laplace start, α and β with it;
//   SamplingMethod      MCMC draws of the weights (NUTS, HMC, Metropolis), α and β by Gibbs;
//   MapMethod           the MAP weights at the spec's α and β, no posterior spread;
//   CrossValidatedMethod  α (or λ_s) by k-fold cross-validation over a grid, then Laplace at it.
// Before it builds anything of the size, fit() estimates the fit's peak memory and refuses one
// that would exceed the method's MemoryLimit (by default, the memory available; memory.h).
// One callback reports progress from whichever engine runs and can stop the fit (callback.h):
// the FittedModel then holds the best state so far and summary.termination is kAborted.
//
//   occam::ModelSpec spec;  spec.network.hidden = {50};
//   occam::FittedModel m = occam::fit(spec, occam::read_training_data("train.csv", "y", spec));
//   std::cout << occam::brief_report(m);
//   occam::Prediction p = m.predict(X_test);
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "occam/callback.h"
#include "occam/cv.h"
#include "occam/data.h"
#include "occam/evidence.h"
#include "occam/fitted_model.h"
#include "occam/map.h"
#include "occam/parallel.h"
#include "occam/mcmc/network_model.h"
#include "occam/memory.h"
#include "occam/mcmc/sampler.h"
#include "occam/model_spec.h"
#include "occam/vi.h"

namespace occam {

// Where the weights start: Network::initial_params(Rng(seed, stream)), unless `weights` is given
// (a warm start, e.g. along a regularisation path).
struct StartOptions {
  std::uint64_t seed = 1;
  std::uint64_t stream = 0;
  Eigen::VectorXd weights;  // empty: the random initialisation
};

// The training rows spread over processes and threads (occam/parallel.h, DataShard in
// occam/posterior.h): each process keeps the rows RowBlocks deals it, every sum over the rows has
// the same bits however they are spread, and every process ends with the same model. Every process
// calls fit() with the whole data set, or with its own share of the rows (Dataset::is_shard, read by
// read_training_data with the communicator and block_rows: no process then holds every row; the
// standardisation and the model are the same bits as from the whole data). For MapMethod (by L-BFGS, the full-batch optimiser that needs
// only values and gradients, or Adam and SGD, whose batches the processes gather and sum by chunks:
// Posterior::batch_log_likelihood), LaplaceMethod with a structured curvature (EvidenceOptions::structure
// diag, kron, last-layer or lowrank:K, whose factors are sums over the rows; the full W × W
// curvature needs all rows in one process) or the online loop (which EvidenceLoop::kAuto takes there
// with kron), and SamplingMethod (NUTS, HMC, Metropolis: every process
// runs every chain in lockstep, and process 0 alone writes the run directory).
struct DataParallel {
  const Communicator* communicator = nullptr;  // the processes (null: this one alone)
  Index block_rows = 4096;                     // rows per block of every sum
  int threads = 1;                             // threads per process
};

// The MAP weights at the spec's α and β (docs/evidence.md): a point estimate.
struct MapMethod {
  MapOptions map;
  StartOptions start;
  MemoryLimit memory;  // the fit is refused before it allocates more (memory.h)
  DataParallel parallel;
};

// A noise level σ(x) that depends on the inputs, for a Gaussian likelihood (heteroscedastic.h,
// docs/heteroscedastic.md): a log-variance network fitted by its own evidence to the mean's
// leverage-corrected residuals, then the mean refitted with weights 1/σ²(x).
struct HeteroscedasticOptions {
  // The noise network's evidence fit (α by the evidence, its MAP optimiser and budget). Its
  // strategy must be kEvidence or kFixed; kFixed keeps `noise_alpha`.
  EvidenceOptions noise;
  // The noise network's hidden layers; empty: the same as the mean network's (spec.network).
  std::vector<Index> noise_hidden;
  double noise_alpha = 1.0;  // the noise network's α, every group: the start (kEvidence) or the value (kFixed)
  // Refits of the mean by weighted least squares, ω_n ∝ 1/σ²(x_n), each followed by the noise
  // network's refit on its residuals (stage 3); 0: the two stages only.
  int weighted_refits = 1;
  void validate() const;  // throws Error(kInvalidArgument) naming the bad field
};

// A committee of Laplace fits from independent starts (committee.h, MacKay 1992b §6): the
// members' predictives mixed with weights by their evidence, or equal.
enum class CommitteeWeighting {
  kEvidence,  // π_k ∝ Z_k S_k: the members' Laplace evidence with the symmetry count
  kEqual,     // π_k = 1/K over the members that fitted
};
CommitteeWeighting parse_committee_weighting(std::string_view name);  // "evidence" | "equal"
const char* to_string(CommitteeWeighting weighting);

struct CommitteeOptions {
  int members = 5;
  CommitteeWeighting weighting = CommitteeWeighting::kEvidence;
  // Members fitted at once, each on a thread of its own (0: one per core, at most `members`).
  // The committee does not depend on it.
  int threads = 1;
  // When set, the committee's folder (created if need be): each member's fit is kept there in
  // member_<k>.json (k from 1) as soon as it ends, written atomically, so that a committee stopped or
  // killed loses at most the members under way; a member whose fit was stopped is not kept. A
  // member whose file is already there is read back instead of fitted, when it was fitted from the
  // same spec, data, method and start (a checksum of the data's values; otherwise
  // Error(kInvalidArgument) naming what differs): a committee run again into its folder continues
  // where it stopped and returns what one uninterrupted run returns, bit for bit, its seconds
  // counting each member read back at the time its fit took. Two processes fitting into one folder
  // at once each fit the members they find missing. The committee does not depend on it.
  std::string directory;
  void validate() const;  // throws Error(kInvalidArgument) naming the bad field
};

// MAP + Laplace with α and β set by evidence.strategy (docs/evidence.md).
struct LaplaceMethod {
  EvidenceOptions evidence;
  StartOptions start;
  MemoryLimit memory;
  DataParallel parallel;
  // When set, fit() fits the mean by this method and then the noise model (fit_heteroscedastic):
  // the spec's likelihood must be gaussian, its network an mlp, the data one process's whole.
  // heteroscedastic_options_like(method) sets its evidence fit like the mean's.
  std::optional<HeteroscedasticOptions> noise_model;
  // When set, fit() fits `committee->members` members by this method from independent starts
  // (member 0 from `start` itself) and returns them as one FittedModel whose posterior is their
  // mixture (LaplaceMixture, committee.h): the spec's likelihood must be gaussian or hetero, the
  // data one process's, and noise_model unset.
  std::optional<CommitteeOptions> committee;
  // When set, the joint evidence ascent's state (EvidenceCheckpoint) is written to this file after
  // its start and after every step, and a fit that finds the file (written by a fit of the same
  // spec, method, start and data) goes on from it: a fit stopped or killed ends as the
  // uninterrupted one does, bit for bit. Needs evidence.loop kJoint and evidence.strategy kEvidence,
  // one process's whole data, and neither committee (CommitteeOptions::directory keeps each
  // member's checkpoint) nor noise_model. A run setting: no number depends on it.
  std::string checkpoint;
};

// q(w) by the ELBO (docs/vi.md). It starts from the Laplace approximation at the spec's α and β
// (`start_map`: the MAP run; its strategy is ignored), the nearest member of the family; with
// laplace_at_end, the Laplace approximation at the α, β the ELBO chose follows, so that its
// log-evidence can be reported beside the ELBO of the same model.
struct VariationalMethod {
  VariationalOptions variational;
  EvidenceOptions start_map;
  bool laplace_at_end = true;
  StartOptions start;
  MemoryLimit memory;
};

// MCMC over the weights with α and β by Gibbs or fixed (docs/mcmc.md).
struct SamplingMethod {
  mcmc::SamplerOptions sampler;  // kernel, chains, warm-up, draws, thinning, seed, metric
  // Gibbs, hyperpriors, initialisation, parameterisation. Its monitor_inputs, output_shift and
  // output_scale are set by fit() from `monitor` and the standardisation.
  mcmc::NetworkModelOptions chains;
  // Inputs (original units) at which the network output f is monitored; empty: five training
  // rows spread over the data.
  Eigen::MatrixXd monitor;
  // The metric (for Metropolis, the proposal covariance) is A⁻¹ of the Laplace approximation at
  // one MAP fit, dense and not adapted; warm-up adapts the step size only.
  bool laplace_metric = false;
  // Chain 1 starts from these initial weights (then chains.init's MAP fit or Laplace draw), the
  // others from their own streams: the same start as other methods on the same data.
  std::optional<StartOptions> first_chain_start;
  // When set, the run directory (docs/mcmc.md): model.json written before sampling and each
  // chain's draws streamed to chain_<k>.csv (Stan CSV) as they are made, so that an interrupted
  // run leaves valid files. load_model() reads it back.
  std::string run_directory;
  // With a run directory and sampler.checkpoint_every > 0, each chain's state (ChainState, with
  // its file's length) is kept in checkpoint_<k>.json every that many iterations and where it
  // stops. resume = true continues the run the directory holds, interrupted or killed, from its
  // checkpoints instead of starting afresh: each chain file is cut back to its checkpoint and the
  // run ends exactly as the uninterrupted run would (docs/mcmc.md, "Resuming a run"). The spec,
  // the data and every option that shapes the draws must be the run's (Error(kInvalidArgument)
  // names those that differ); a complete or failed run, or a folder without checkpoints, is
  // refused with Error(kInvalidInput).
  bool resume = false;
  // The front end's own record of what was asked (e.g. a command line's options, as JSON), kept
  // in model.json as "request" so that it can resume the run from the folder alone.
  std::string request;
  MemoryLimit memory;
  // The rows spread over processes (docs/mcmc.md, "Sampling with the rows spread over
  // processes"): every process calls fit() with the same arguments and makes the same draws, as
  // one process with the same block_rows does; the chains run one after another (a process's rows
  // may be summed on parallel.threads threads). Only process 0 writes the run directory, which
  // must be on a file system every process sees for a resume (they all read its checkpoints).
  // The stochastic-gradient samplers run so too: every process draws the same minibatches, whose
  // rows the processes all-gather, and sums its share of each batch's chunks (of
  // mcmc::kMinibatchChunkRows rows) along a fixed-order tree. Refused with more than one process:
  // laplace_metric, chains.init laplace and a chains.map_optimizer other than auto or lbfgs (they
  // need every row in one process).
  DataParallel parallel;
};

// Every setting of a sampling run that its draws depend on — the spec and the method's options,
// but not threads, checkpoint_every, the memory limit or callbacks — as JSON, equal for two runs
// that make the same draws from the same data.
nlohmann::json sampling_settings(const ModelSpec& spec, const SamplingMethod& method);

// The "request" a run directory's model.json keeps (SamplingMethod::request), or an empty
// string when it has none. Throws Error(kInvalidInput) when the folder holds no run.
std::string run_request(const std::string& run_directory);

// α of every group (or λ_s of a laplacian prior) by k-fold cross-validation over a grid
// (docs/cv.md), then the Laplace fit with the prior held at the chosen value (β, for a Gaussian
// likelihood, by the evidence).
struct CrossValidatedMethod {
  CvOptions cv;               // its `memory` limits every fit, the final one too
  EvidenceOptions final_fit;  // its strategy is ignored: the prior is held, β re-estimated
  StartOptions start;
};

using MethodOptions = std::variant<LaplaceMethod, VariationalMethod, SamplingMethod, MapMethod, CrossValidatedMethod>;
// "laplace", "vi", "mcmc", "map" or "cv".
const char* method_name(const MethodOptions& method);
// The options as JSON, and back: method_to_json and method_from_json (method_options.h).

// The sizes fit() estimates its peak memory from (memory.h): the spec's weights and graph, the
// data's rows, the method's engine. Throws Error(kInvalidArgument) as fit() does for a spec whose
// network cannot be built.
FitMemoryRequest fit_memory_request(const ModelSpec& spec, const Dataset& data, const MethodOptions& method);
// The method's memory limit (CrossValidatedMethod: cv.memory).
const MemoryLimit& memory_limit(const MethodOptions& method);

// What a fit reports while it runs: the engine's own iteration record, one at a time.
struct FitProgress {
  const MapIteration* map = nullptr;                  // an optimiser iteration
  const EvidenceIteration* evidence = nullptr;        // a re-estimation round
  const VariationalIteration* variational = nullptr;  // an ELBO evaluation
  // Sampling: chain (0-based), iteration, total. The MAP fits before sampling (the chains'
  // starting points, the Laplace metric) report as MAP iterations, with `map` set and no chain.
  int chain = -1;
  int grid_point = -1;       // cross-validation: grid points done, total
  int member = -1;           // a committee (LaplaceMethod::committee): the member (0-based)
  bool noise_model = false;  // fit_heteroscedastic (heteroscedastic.h): the noise network's fit
  int iteration = 0;
  int total = 0;
  // One line for a person, e.g. "round 3: log-evidence -41.2, gamma 7.31, beta 98.2".
  std::string describe() const;
};
// Called from the thread that runs the fit, except for sampling: there from each chain's thread,
// one call at a time.
using FitCallback = IterationCallback<FitProgress>;

// Fits `spec` to `data` by `method`. Throws Error(kInvalidArgument) for a spec or options that
// cannot work together (naming the field), Error(kInvalidInput) for data the model cannot take,
// Error(kNumerical) for a fit that produced nothing usable; a fit that ends early but usable is
// reported in summary.termination.
FittedModel fit(const ModelSpec& spec, const Dataset& data, const MethodOptions& method = LaplaceMethod{},
                const FitCallback& callback = {});

// Scores the model family `spec` over options.alphas by k-fold cross-validation (cv.h,
// docs/cv.md): for each grid value every training fold is fitted through fit() with the prior
// held at that value, and the held-out fold scored; beside it, the log-evidence of the whole data
// at that value. The callback sees each grid point (and every fit's iterations); kAbort stops
// after the current fit with the points done so far. Throws Error(kInvalidArgument) on bad options.
CvSummary cross_validate(const ModelSpec& spec, const Dataset& data, const CvOptions& options,
                         const FitCallback& callback = {});

// The fit's report as JSON: termination, log-evidence, α and γ per group, β, E_W, E_D, train
// RMSE, timings, the network, the likelihood, the spec and options, the engines' traces
// (docs/cli.md, "The report"). fit() stores it in FittedModel::report.
nlohmann::json fit_report(const FittedModel& model);
// A few lines for a person: termination, log-evidence, α per group, β, γ, train RMSE, time.
std::string brief_report(const FittedModel& model);

}  // namespace occam

// fit.cc — the fit service: one pipeline from a ModelSpec and a data set to a FittedModel.
//
// Every front end used to repeat these steps (standardise, build the pieces, run the engine, map
// the results back to the target's units); they live here once. The engines stay as they are:
// this file only prepares their inputs, forwards their progress to one callback and collects
// their results.

#include "occam/fit.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "occam/io.h"
#include "occam/laplace.h"
#include "occam/mcmc/checkpoint.h"
#include "occam/mcmc/hyper_gibbs.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/memory.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "parallel/agreement.h"
#include "run_directory.h"

namespace occam {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The data a model can take: shapes, finiteness and what the spec needs of them. Messages name
// the Dataset field.
void check_data(const ModelSpec& spec, const Dataset& data) {
  const Index m = data.X.rows();
  if (data.num_rows() == 0) throw Error(ErrorKind::kInvalidInput, "fit: the data set has no rows");
  if (data.Y.rows() != m || data.Y.cols() != 1) {
    throw Error(ErrorKind::kInvalidArgument, "fit: Dataset.Y must be one column with one row per row of X (X has " +
                                                 std::to_string(m) + " rows, Y is " + std::to_string(data.Y.rows()) +
                                                 " x " + std::to_string(data.Y.cols()) + ")");
  }
  if (!data.feature_names.empty() && static_cast<Index>(data.feature_names.size()) != data.X.cols()) {
    throw Error(ErrorKind::kInvalidArgument, "fit: Dataset.feature_names has " + std::to_string(data.feature_names.size()) +
                                                 " names for " + std::to_string(data.X.cols()) + " input columns");
  }
  for (Index j = 0; j < data.X.cols(); ++j) {
    for (Index i = 0; i < m; ++i) {
      if (!std::isfinite(data.X(i, j))) {
        throw Error(ErrorKind::kInvalidInput, "fit: input column " + std::to_string(j + 1) + " has a non-finite value in row " +
                                                  std::to_string(i + 1));
      }
    }
  }
  const bool wants_offset = !spec.likelihood.offset_column.empty();
  if (wants_offset && data.offset.size() != m) {
    throw Error(ErrorKind::kInvalidArgument, "fit: ModelSpec.likelihood.offset_column is '" + spec.likelihood.offset_column +
                                                 "' but Dataset.offset has " + std::to_string(data.offset.size()) +
                                                 " entries for " + std::to_string(m) + " rows");
  }
  if (!wants_offset && data.offset.size() > 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "fit: Dataset.offset is set but ModelSpec.likelihood.offset_column is empty (no offset in the model)");
  }
  if (spec.likelihood.kind == LikelihoodKind::kCategorical && data.class_labels.size() < 2) {
    throw Error(ErrorKind::kInvalidArgument, "fit: a categorical likelihood needs Dataset.class_labels (at least 2)");
  }
  check_value_scales(data, spec.standardization(), spec.likelihood.real_valued_targets());
}

// The model as the engines see it: standardised data and the pieces the spec asks for.
struct Problem {
  Standardizer standardizer;
  Posterior posterior;
};

// A Dataset holding one process's rows (Dataset::is_shard) must be the share RowBlocks deals this
// process of `parallel`'s processes.
void check_shard(const Dataset& data, const DataParallel& parallel) {
  if (!data.is_shard()) return;
  const Communicator* comm = parallel.communicator;
  const int rank = comm != nullptr ? comm->rank() : 0, size = comm != nullptr ? comm->size() : 1;
  const auto [first, last] = RowBlocks{.num_rows = data.total_rows, .block_rows = parallel.block_rows}.rows_of(rank, size);
  if (data.first_row != first || data.first_row + data.X.rows() != last) {
    throw Error(ErrorKind::kInvalidArgument,
                "fit: the Dataset holds rows [" + std::to_string(data.first_row) + ", " +
                    std::to_string(data.first_row + data.X.rows()) + ") of " + std::to_string(data.total_rows) +
                    ", but process " + std::to_string(rank) + " of " + std::to_string(size) + " is dealt rows [" +
                    std::to_string(first) + ", " + std::to_string(last) + ") with " + std::to_string(parallel.block_rows) +
                    "-row blocks (read it with read_training_data and the method's DataParallel)");
  }
}

Problem build_problem(const ModelSpec& spec, const Dataset& data, const DataParallel& parallel = {}) {
  check_shard(data, parallel);
  Dataset targets;
  targets.X = data.X;
  targets.Y = data.Y;
  targets.total_rows = data.total_rows;
  targets.first_row = data.first_row;
  static const SerialCommunicator kAlone;
  const Communicator& processes = parallel.communicator != nullptr ? *parallel.communicator : kAlone;
  const Standardizer standardizer = data.is_shard() ? Standardizer::fit(targets, spec.standardization(), processes)
                                                    : Standardizer::fit(targets, spec.standardization());
  std::unique_ptr<Likelihood> likelihood = make_likelihood(spec.likelihood, data.class_labels);
  std::unique_ptr<Network> network = make_network(spec.network, data.X.cols(), likelihood->num_outputs());
  PriorSpec prior_spec = spec.prior;
  if (prior_spec.input_names.empty()) prior_spec.input_names = data.feature_names;
  Prior prior = make_prior(*network, prior_spec);
  Eigen::MatrixXd Y = standardizer.standardizes_targets() ? standardizer.transform_targets(data.Y) : data.Y;
  if (data.offset.size() > 0 || (data.is_shard() && !spec.likelihood.offset_column.empty())) {
    // The Poisson likelihood reads its offset as the second target column.
    Eigen::MatrixXd with_offset(Y.rows(), 2);
    with_offset << Y, data.offset;
    Y = std::move(with_offset);
  }
  Eigen::MatrixXd X = standardizer.transform_inputs(data.X);
  DataShard shard{.communicator = parallel.communicator, .num_rows = data.num_rows(), .first_row = data.first_row,
                  .block_rows = parallel.block_rows, .threads = parallel.threads};
  if (!data.is_shard() && parallel.communicator != nullptr && parallel.communicator->size() > 1) {
    // Every process was given the whole data: each standardises it alike, then keeps its rows.
    const auto [first, last] = RowBlocks{.num_rows = X.rows(), .block_rows = parallel.block_rows}.rows_of(
        parallel.communicator->rank(), parallel.communicator->size());
    shard.first_row = first;
    X = X.middleRows(first, last - first).eval();
    Y = Y.middleRows(first, last - first).eval();
  }
  return {standardizer, Posterior(std::move(network), std::move(likelihood), std::move(prior), std::move(X),
                                  std::move(Y), shard)};
}

// How the method spreads the rows: MapMethod, LaplaceMethod and SamplingMethod do.
DataParallel data_parallel(const MethodOptions& method) {
  if (const auto* m = std::get_if<MapMethod>(&method)) return m->parallel;
  if (const auto* m = std::get_if<LaplaceMethod>(&method)) return m->parallel;
  if (const auto* m = std::get_if<SamplingMethod>(&method)) return m->parallel;
  return {};
}

Eigen::VectorXd initial_weights(const Network& network, const StartOptions& start, const char* field) {
  if (start.weights.size() > 0) {
    if (start.weights.size() != network.num_params()) {
      throw Error(ErrorKind::kInvalidArgument, std::string(field) + ".weights has " +
                                                   std::to_string(start.weights.size()) + " entries but the network has " +
                                                   std::to_string(network.num_params()) + " parameters");
    }
    return start.weights;
  }
  Rng rng(start.seed, start.stream);
  return network.initial_params(rng);
}

// Forwards every engine's iterations to the one callback.
class Progress {
 public:
  explicit Progress(const FitCallback& callback) : callback_(callback) {}
  CallbackReturn operator()(const FitProgress& p) const { return callback_ ? callback_(p) : CallbackReturn::kContinue; }
  void attach(MapOptions* options) const {
    options->callback = [this](const MapIteration& it) {
      FitProgress p;
      p.map = &it;
      p.iteration = it.iteration;
      return (*this)(p);
    };
  }
  void attach(EvidenceOptions* options) const {
    attach(&options->map);
    options->callback = [this](const EvidenceIteration& it) {
      FitProgress p;
      p.evidence = &it;
      p.iteration = it.iteration;
      return (*this)(p);
    };
  }
  void attach(VariationalOptions* options) const {
    options->callback = [this](const VariationalIteration& it) {
      FitProgress p;
      p.variational = &it;
      p.iteration = it.iteration;
      return (*this)(p);
    };
  }

 private:
  const FitCallback& callback_;
};

// Sampling: each chain's iterations, from its own thread, one call at a time; a kAbort stops every
// chain after its current iteration.
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

// A chain model whose chain starts from given initial weights (before its MAP fit).
class FixedStartModel final : public mcmc::ChainModel {
 public:
  FixedStartModel(const Posterior& posterior, const mcmc::NetworkModelOptions& options, StartOptions start)
      : inner_(posterior, options), start_(std::move(start)) {}
  const LogDensity& density() const override { return inner_.density(); }
  const mcmc::StochasticLogDensity* stochastic_density() const override { return inner_.stochastic_density(); }
  Eigen::VectorXd initial_point(Rng&) override {
    Rng rng(start_.seed, start_.stream);
    return inner_.initial_point(rng);
  }
  bool gibbs_step(Eigen::VectorXd* theta, Rng& rng) override { return inner_.gibbs_step(theta, rng); }
  std::vector<std::string> parameter_names() const override { return inner_.parameter_names(); }
  Eigen::VectorXd parameter_values(const Eigen::VectorXd& theta) const override { return inner_.parameter_values(theta); }
  std::vector<std::string> extra_names() const override { return inner_.extra_names(); }
  Eigen::VectorXd extra_values(const Eigen::VectorXd& theta) const override { return inner_.extra_values(theta); }
  Eigen::VectorXd state() const override { return inner_.state(); }
  void restore_state(const Eigen::VectorXd& state) override { inner_.restore_state(state); }
  const Communicator* communicator() const override { return inner_.communicator(); }

 private:
  mcmc::NetworkChainModel inner_;
  StartOptions start_;
};

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

// The header comment lines of the chain files (CmdStan's layout, read by R and ArviZ).
std::vector<std::string> chain_file_config(const ModelSpec& spec, const SamplingMethod& method, const Posterior& posterior,
                                           const Dataset& data) {
  const mcmc::SamplerOptions& o = method.sampler;
  const auto& hyper = method.chains.hyper.alpha;
  std::vector<std::string> config = {
      "occam sample (Stan CSV format)",
      "model = " + posterior.network().describe() + ", " + to_string(spec.likelihood.kind) + " likelihood",
      "method = sample (Default)",
      "  sample",
      "    num_samples = " + std::to_string(o.num_draws),
      "    num_warmup = " + std::to_string(o.num_warmup),
      "    save_warmup = " + std::to_string(o.save_warmup ? 1 : 0),
      "    thin = " + std::to_string(o.thin),
      "    algorithm = " + std::string(o.method == mcmc::SamplerKind::kNuts || o.method == mcmc::SamplerKind::kHmc
                                             ? "hmc"
                                             : mcmc::to_string(o.method)),
      "      engine = " + std::string(o.method == mcmc::SamplerKind::kNuts ? "nuts" : "static"),
      "        max_depth = " + std::to_string(o.nuts.max_depth),
      "      metric = " + std::string(mcmc::to_string(method.laplace_metric ? mcmc::MetricKind::kDense : o.metric)),
      "hyper = " + std::string(method.chains.gibbs ? "gibbs" : "fixed") +
          (method.chains.gibbs ? " (Gamma(" + internal::short_number(hyper.shape) + ", " +
                                     internal::short_number(hyper.rate) + ") priors on alpha and beta)"
                               : ""),
      "init = " + std::string(mcmc::to_string(method.chains.init)),
      "parameterization = " + std::string(method.chains.non_centered ? "noncentered" : "centered"),
      "data = " + data.source,
      "random",
      "  seed = " + std::to_string(o.seed),
  };
  return config;
}

// The numbers every fit reports about itself: train RMSE or accuracy at the posterior's centre,
// the evidence in the target's units, the sizes.
void describe_fit(const Posterior& posterior, const Dataset& data, const Standardizer& standardizer, FittedModel* model) {
  FitSummary& s = model->summary;
  s.num_data = data.num_rows();
  s.num_params = posterior.dim();
  // Over the well-determined hidden units where the evidence framework counted them (evidence.h).
  s.symmetry_log_factor = s.evidence ? s.evidence->symmetry_log_factor : posterior.network().symmetry_log_factor();
  s.train_rmse = s.train_accuracy = kNaN;
  if (std::holds_alternative<PosteriorDraws>(model->posterior)) return;  // the weights' mean means nothing
  // A block of rows at a time (a network's activations over 10⁶ rows would be gigabytes). The
  // rows of `data`: every row, or this process's share (then the others' are gathered below);
  // spread over processes from the whole data, the posterior holds only this process's rows.
  constexpr Index kRowsAtOnce = 4096;
  const bool rows_of_posterior = posterior.X().rows() == data.X.rows();
  const Eigen::VectorXd& w = posterior_mean(model->posterior);
  Eigen::MatrixXd F(data.X.rows(), posterior.network().num_outputs()), Fb;
  for (Index start = 0; start < data.X.rows(); start += kRowsAtOnce) {
    const Index rows = std::min(kRowsAtOnce, data.X.rows() - start);
    const Eigen::MatrixXd Xb = rows_of_posterior ? Eigen::MatrixXd(posterior.X().middleRows(start, rows))
                                                 : standardizer.transform_inputs(data.X.middleRows(start, rows));
    posterior.network().forward(w, Xb, &Fb);
    F.middleRows(start, rows) = Fb;
  }
  const Communicator* others = data.is_shard() && posterior.distributed() ? posterior.shard().communicator : nullptr;
  const Likelihood& likelihood = posterior.likelihood();
  if (likelihood.num_classes() > 0) {
    const Eigen::MatrixXd P = likelihood.class_probabilities(F);
    double correct = 0.0;
    for (Index n = 0; n < P.rows(); ++n) {
      Index best;
      P.row(n).maxCoeff(&best);
      correct += static_cast<double>(best) == data.Y(n, 0) ? 1.0 : 0.0;
    }
    if (others != nullptr) {  // counts: exact in any order
      const std::vector<double> counts = others->allgather({correct});
      correct = std::accumulate(counts.begin(), counts.end(), 0.0);
    }
    s.train_accuracy = correct / static_cast<double>(data.num_rows());
    return;
  }
  if (model->spec.likelihood.kind == LikelihoodKind::kPoisson) {
    // The fitted mean count e^{f + offset}.
    if (data.offset.size() > 0) F.col(0) += data.offset;
    F = F.array().exp().matrix();
  }
  Eigen::ArrayXd residuals = data.Y.col(0).array() - standardizer.targets_to_original(F.col(0)).array();
  if (others != nullptr) {
    // Every row's residual, in row order, reduced as one process reduces its own.
    const std::vector<double> all = others->allgather(std::vector<double>(residuals.begin(), residuals.end()));
    residuals = Eigen::Map<const Eigen::ArrayXd>(all.data(), static_cast<Index>(all.size()));
  }
  s.train_rmse = std::sqrt(residuals.square().mean());
}

// The evidence is a density of the standardised targets t = (y − ȳ)/s; as a density of y it
// carries the Jacobian 1/s per example. Reported in y's units, it is comparable across
// standardisations and with a test log-likelihood.
double in_target_units(double log_density, const Standardizer& standardizer, Index rows) {
  return log_density - static_cast<double>(rows) * std::log(standardizer.y_scale);
}

struct Outcome {
  WeightPosterior posterior;
  FitSummary summary;
};

Outcome run(const MapMethod& method, Posterior* posterior, const Progress& progress) {
  MapOptions options = method.map;
  progress.attach(&options);
  Eigen::VectorXd w = initial_weights(posterior->network(), method.start, "MapMethod.start");
  Outcome out;
  const MapSummary s = find_map(*posterior, options, &w);
  out.summary.termination = s.termination;
  out.summary.message = s.message;
  out.summary.map = s;
  out.posterior = PointEstimate{std::move(w)};
  return out;
}

Outcome run(const LaplaceMethod& method, Posterior* posterior, const Progress& progress) {
  EvidenceOptions options = method.evidence;
  progress.attach(&options);
  Eigen::VectorXd w = initial_weights(posterior->network(), method.start, "LaplaceMethod.start");
  EvidenceResult r = fit_evidence(posterior, options, &w);
  Outcome out;
  out.summary.termination = r.summary.termination;
  out.summary.message = r.summary.message;
  out.summary.evidence = std::move(r.summary);
  out.posterior = std::move(r.laplace);
  return out;
}

Outcome run(const VariationalMethod& method, Posterior* posterior, const Progress& progress) {
  // VI starts from the MAP at the spec's α, β and its Laplace approximation N(w_MAP, A⁻¹) (the
  // family's nearest member), then fits q and α, β by the ELBO. The Laplace fit at the end is
  // made at the α, β the ELBO chose: the same model, so that its log-evidence and the ELBO (a
  // lower bound on that same log-evidence) can be compared.
  if (!method.start_map.structure.full()) {
    throw Error(ErrorKind::kInvalidArgument, "VariationalMethod: start_map.structure must be full (the variational "
                                             "fit starts from the full Laplace approximation); structured Hessians "
                                             "are for the Laplace method");
  }
  EvidenceOptions map_options = method.start_map;
  map_options.strategy = HyperStrategy::kFixed;
  progress.attach(&map_options);
  VariationalOptions options = method.variational;
  progress.attach(&options);
  Eigen::VectorXd w = initial_weights(posterior->network(), method.start, "VariationalMethod.start");
  Outcome out;
  EvidenceResult start = fit_evidence(posterior, map_options, &w);
  if (start.summary.termination == Termination::kAborted) {
    out.summary.termination = Termination::kAborted;
    out.summary.message = start.summary.message;
    out.summary.evidence = std::move(start.summary);
    out.posterior = std::move(start.laplace);
    return out;
  }
  Rng init_rng(options.seed, /*stream=*/4);
  VariationalResult v =
      fit_variational(posterior, options, GaussianVariational::from_laplace(options.family, start.laplace, &init_rng));
  out.summary.termination = v.summary.termination;
  out.summary.message = v.summary.message;
  out.summary.evidence = std::move(start.summary);
  if (method.laplace_at_end && v.summary.termination != Termination::kAborted) {
    w = v.q.mean();
    out.summary.evidence = fit_evidence(posterior, map_options, &w).summary;
  }
  out.summary.variational = std::move(v.summary);
  out.posterior = std::move(v.q);
  return out;
}

// A chain's Stan CSV file that keeps a checkpoint of the chain beside it (checkpoint_<k>.json):
// the chain's state with the file's length at that point, both durable before the checkpoint
// replaces the previous one (temporary file, fsync, rename), so that a run killed at any moment
// has a checkpoint whose file prefix is on disk.
class CheckpointedCsvSink final : public mcmc::DrawSink {
 public:
  CheckpointedCsvSink(std::unique_ptr<mcmc::StanCsvWriter> file, std::string checkpoint_path, const nlohmann::json& run,
                      int resumed)
      : file_(std::move(file)), checkpoint_path_(std::move(checkpoint_path)), run_(run), resumed_(resumed) {}
  void begin(const std::vector<std::string>& columns) override { file_->begin(columns); }
  void adaptation_done(double step, const mcmc::Metric& metric) override { file_->adaptation_done(step, metric); }
  void trajectory_length_done(double length) override { file_->trajectory_length_done(length); }
  void draw(const Eigen::VectorXd& row, bool warmup) override { file_->draw(row, warmup); }
  void checkpoint(const mcmc::ChainState& state) override {
    file_->sync();
    const nlohmann::json j = {{"format", "occam-checkpoint"},
                              {"version", 1},
                              {"run", run_},
                              {"resumed", resumed_},
                              {"bytes", file_->bytes()},
                              {"rows", file_->rows()},
                              {"state", mcmc::chain_state_to_json(state)}};
    write_file_atomic(checkpoint_path_, j.dump() + "\n");
  }
  void end(const mcmc::ChainSummary& s) override { file_->end(s); }

 private:
  std::unique_ptr<mcmc::StanCsvWriter> file_;
  std::string checkpoint_path_;
  const nlohmann::json& run_;
  int resumed_;
};

std::string hex64(std::uint64_t v) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

std::uint64_t matrix_checksum(std::uint64_t hash, const Eigen::MatrixXd& m) {
  const Index shape[2] = {m.rows(), m.cols()};
  hash = internal::fnv1a64(hash, shape, sizeof shape);
  return internal::fnv1a64(hash, m.data(), static_cast<std::size_t>(m.size()) * sizeof(double));
}

// matrix_checksum of the whole data's matrix when each process holds some of its rows (in rank
// order): the shape, then each column in row order, every process continuing the hash from where
// the process before it left it (FNV-1a reads the bytes one after another).
std::uint64_t shard_checksum(std::uint64_t hash, const Eigen::MatrixXd& mine, Index total_rows,
                             const Communicator& processes) {
  const Index shape[2] = {total_rows, mine.cols()};
  hash = internal::fnv1a64(hash, shape, sizeof shape);
  for (Index c = 0; c < mine.cols(); ++c) {
    for (int r = 0; r < processes.size(); ++r) {
      std::vector<double> state;  // the 64-bit state as two exact 32-bit halves
      if (processes.rank() == r) {
        hash = internal::fnv1a64(hash, mine.col(c).data(), static_cast<std::size_t>(mine.rows()) * sizeof(double));
        state = {static_cast<double>(hash >> 32), static_cast<double>(hash & 0xFFFFFFFFu)};
      }
      const std::vector<double> passed = processes.allgather(state);
      hash = (static_cast<std::uint64_t>(passed.at(0)) << 32) | static_cast<std::uint64_t>(passed.at(1));
    }
  }
  return hash;
}

// What a run's draws depend on: sampling_settings() and the data (a checksum of every value, the
// same whether one process holds every row or each holds its share).
nlohmann::json sampling_fingerprint(const ModelSpec& spec, const SamplingMethod& method, const Dataset& data) {
  std::uint64_t hash = internal::kFnvOffset;
  if (data.is_shard() && method.parallel.communicator != nullptr) {
    const Communicator& processes = *method.parallel.communicator;
    hash = shard_checksum(hash, data.X, data.total_rows, processes);
    hash = shard_checksum(hash, data.Y, data.total_rows, processes);
    const bool offset = !spec.likelihood.offset_column.empty();
    hash = shard_checksum(hash, offset ? Eigen::MatrixXd(data.offset) : Eigen::MatrixXd(0, 1),
                          offset ? data.total_rows : 0, processes);
  } else {
    hash = matrix_checksum(matrix_checksum(matrix_checksum(hash, data.X), data.Y), data.offset);
  }
  for (const std::string& label : data.class_labels) hash = internal::fnv1a64(hash, label.c_str(), label.size() + 1);
  for (const std::string& name : data.feature_names) hash = internal::fnv1a64(hash, name.c_str(), name.size() + 1);
  nlohmann::json j = sampling_settings(spec, method);
  j["data"] = {{"rows", data.num_rows()}, {"columns", data.X.cols()}, {"target", data.target_name}, {"fnv1a64", hex64(hash)}};
  return j;
}

// The fields in which two fingerprints differ, as "sampler.num_warmup (1000 in the run, 500 now)".
void fingerprint_differences(const nlohmann::json& run, const nlohmann::json& now, const std::string& path,
                             std::vector<std::string>* out) {
  if (run.is_object() && now.is_object()) {
    for (const auto& [key, value] : run.items()) {
      fingerprint_differences(value, now.contains(key) ? now.at(key) : nlohmann::json(), path.empty() ? key : path + "." + key, out);
    }
    for (const auto& [key, value] : now.items()) {
      if (!run.contains(key)) fingerprint_differences(nlohmann::json(), value, path.empty() ? key : path + "." + key, out);
    }
    return;
  }
  if (run != now) out->push_back(path + " (" + run.dump() + " in the run, " + now.dump() + " now)");
}

struct ResumePoint {
  std::vector<std::optional<mcmc::ChainState>> states;  // per chain; empty: the chain starts afresh
  std::vector<std::pair<std::uintmax_t, long long>> positions;  // per resumed chain: bytes and rows of its file
  int resumed = 0;  // resumptions before this one
};

// The checkpoints of the run in `dir`, checked against what is asked now; with `cut_back` (the
// process that writes the folder) each chain file is cut back to its checkpoint, and then its kept
// draws are read back from it (written with 17 significant digits, they read back exactly).
ResumePoint resume_point(const std::filesystem::path& dir, const nlohmann::json& fingerprint, int chains, bool cut_back) {
  namespace fs = std::filesystem;
  const std::string folder = dir.string();
  std::error_code ec;
  if (fs::exists(dir / internal::kRunIndex, ec)) {
    const nlohmann::json index = nlohmann::json::parse(read_file((dir / internal::kRunIndex).string()), nullptr, false);
    const std::string status = index.is_object() ? index.value("status", std::string()) : std::string();
    if (status == "complete") {
      throw Error(ErrorKind::kInvalidInput, folder + ": the run is complete (run.json: status complete); there is nothing to resume");
    }
    if (status == "failed") {
      throw Error(ErrorKind::kInvalidInput, folder + ": the run failed (" + index.value("message", std::string("no reason recorded")) +
                                                "); resuming it would fail again: sample again into " + folder);
    }
  }
  ResumePoint point;
  point.states.resize(static_cast<std::size_t>(chains));
  point.positions.resize(static_cast<std::size_t>(chains));
  std::vector<std::string> differences;
  int found = 0;
  for (int c = 0; c < chains; ++c) {
    const fs::path path = dir / internal::checkpoint_file_name(c);
    if (!fs::exists(path, ec)) continue;
    const std::string name = path.string();
    const nlohmann::json j = nlohmann::json::parse(read_file(name), nullptr, false);
    if (!j.is_object() || j.value("format", std::string()) != "occam-checkpoint" || !j.contains("run") ||
        !j.contains("state") || !j.contains("bytes") || !j.at("bytes").is_number_unsigned() || !j.contains("rows") ||
        !j.at("rows").is_number_integer()) {
      throw Error(ErrorKind::kInvalidInput, name + ": not a checkpoint of occam (damaged?); sample again into " + folder);
    }
    if (j.value("version", 0) > 1) throw Error(ErrorKind::kInvalidInput, name + ": written by a newer occam");
    if (differences.empty()) fingerprint_differences(j.at("run"), fingerprint, "", &differences);
    if (!differences.empty()) {
      std::string message = folder + " was sampled with other settings; a run resumes only with its own. Differing: ";
      for (std::size_t i = 0; i < differences.size(); ++i) message += (i ? "; " : "") + differences[i];
      throw Error(ErrorKind::kInvalidArgument, message);
    }
    mcmc::ChainState state;
    try {
      state = mcmc::chain_state_from_json(j.at("state"));
    } catch (const Error& e) {
      throw Error(ErrorKind::kInvalidInput, name + ": " + e.what());
    }
    if (state.chain != c) throw Error(ErrorKind::kInvalidInput, name + ": holds chain " + std::to_string(state.chain + 1) + "'s state");
    const auto bytes = j.at("bytes").get<std::uintmax_t>();
    const auto rows = j.at("rows").get<long long>();
    const fs::path chain_path = dir / internal::chain_file_name(c);
    const std::uintmax_t size = fs::file_size(chain_path, ec);
    if (ec || size < bytes || state.draws > rows) {
      throw Error(ErrorKind::kInvalidInput, chain_path.string() + ": missing or shorter than its checkpoint records (" +
                                                std::to_string(bytes) + " bytes); sample again into " + folder);
    }
    point.resumed = std::max(point.resumed, j.value("resumed", 0));
    point.positions[static_cast<std::size_t>(c)] = {bytes, rows};
    point.states[static_cast<std::size_t>(c)] = std::move(state);
    ++found;
  }
  if (found == 0) {
    throw Error(ErrorKind::kInvalidInput,
                folder + ": no checkpoint to resume from (checkpoint_<k>.json): the run stopped before its chains had "
                         "their starting points, was sampled without checkpoints, or is not a run folder; sample again into " +
                    folder);
  }
  // The folder is a run in progress again: no manifest (readers refuse it) and no tables of the
  // draws so far. Only then are the chain files cut back.
  if (cut_back) {
    for (const char* name : {internal::kRunIndex, "summary.csv", "chains.csv"}) fs::remove(dir / name, ec);
  }
  for (int c = 0; c < chains; ++c) {
    std::optional<mcmc::ChainState>& state = point.states[static_cast<std::size_t>(c)];
    if (!state) continue;
    const auto [bytes, rows] = point.positions[static_cast<std::size_t>(c)];
    const fs::path chain_path = dir / internal::chain_file_name(c);
    if (cut_back) fs::resize_file(chain_path, bytes, ec);
    if (ec) throw Error(ErrorKind::kIo, "cannot cut '" + chain_path.string() + "' back to its checkpoint: " + ec.message());
    const mcmc::StanCsv csv = mcmc::read_stan_csv(chain_path.string());
    if (csv.draws.rows() != rows) {
      throw Error(ErrorKind::kInvalidInput, chain_path.string() + ": " + std::to_string(csv.draws.rows()) +
                                                " rows where its checkpoint records " + std::to_string(rows) +
                                                "; sample again into " + folder);
    }
    state->kept_draws = csv.draws.bottomRows(state->draws);
  }
  return point;
}

// Runs `step` on the processes of comm (null: this one) for which `here` holds, then agrees on
// whether it failed anywhere (internal::agree_on_failure): every process throws the first failure,
// prefixed with `what` and naming its process, so that none goes on to wait for the failed one in
// a collective sum.
void on_processes(const Communicator* comm, bool here, const std::string& what, const std::function<void()>& step) {
  const bool spread = comm != nullptr && comm->size() > 1;
  std::exception_ptr failed;
  if (here) {
    try {
      step();
    } catch (const Error& e) {
      if (!spread) throw;
      failed = std::make_exception_ptr(Error(e.kind(), what + ": " + e.what()));
    } catch (...) {
      if (!spread) throw;
      failed = std::current_exception();
    }
  }
  if (spread) internal::agree_on_failure(*comm, failed);
}

Outcome run(const SamplingMethod& method, Posterior* posterior, const Progress& progress, const ModelSpec& spec,
            const Dataset& data, const Standardizer& standardizer, FittedModel* model) {
  namespace fs = std::filesystem;
  // Spread over processes, every process runs every chain in lockstep and process 0 alone writes
  // the run directory (SamplingMethod::parallel).
  const Communicator* comm = posterior->distributed() ? posterior->shard().communicator : nullptr;
  const bool writer = comm == nullptr || comm->rank() == 0;
  if (comm != nullptr && method.laplace_metric) {
    posterior->require_one_process("SamplingMethod.laplace_metric (the metric A⁻¹ needs the dense curvature; the "
                                   "adapted diagonal or dense metric needs none)");
  }
  if (mcmc::is_stochastic_gradient(method.sampler.method) && (method.chains.non_centered || method.laplace_metric)) {
    throw Error(ErrorKind::kInvalidArgument, std::string("SamplingMethod.") +
                                                 (method.chains.non_centered ? "chains.non_centered" : "laplace_metric") +
                                                 ": " + mcmc::to_string(method.sampler.method) +
                                                 " moves the centred weights with its own (RMSprop) preconditioning");
  }
  if (mcmc::is_microcanonical(method.sampler.method) && method.laplace_metric) {
    throw Error(ErrorKind::kInvalidArgument, std::string("SamplingMethod.laplace_metric: ") +
                                                 mcmc::to_string(method.sampler.method) + " takes a diagonal metric, not A⁻¹");
  }
  mcmc::SamplerOptions options = method.sampler;
  std::atomic<bool> stop{false};
  options.stop = &stop;
  options.validate();
  mcmc::NetworkModelOptions chains = method.chains;
  chains.output_shift = standardizer.y_mean;
  chains.output_scale = standardizer.y_scale;
  Eigen::MatrixXd monitor = method.monitor;
  if (monitor.size() == 0) {
    // Five training rows spread over the data (each from the process that holds it).
    const Index m = data.num_rows(), k = std::min<Index>(5, m);
    monitor.resize(k, data.X.cols());
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
    if (data.is_shard()) {
      const std::vector<double> all = comm != nullptr ? comm->allgather(mine) : mine;
      monitor = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(all.data(), k,
                                                                                                       data.X.cols());
    }
  } else if (monitor.cols() != data.X.cols()) {
    throw Error(ErrorKind::kInvalidArgument, "SamplingMethod.monitor has " + std::to_string(monitor.cols()) +
                                                 " columns but the data have " + std::to_string(data.X.cols()) + " inputs");
  }
  chains.monitor_inputs = standardizer.transform_inputs(monitor);
  mcmc::check_network_model(*posterior, chains);  // a clear error before any file is written
  if (method.first_chain_start && method.first_chain_start->weights.size() > 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "SamplingMethod.first_chain_start.weights: a chain starts from a seed and stream, not given weights");
  }
  const bool checkpoints = !method.run_directory.empty() && options.checkpoint_every > 0;
  if (method.resume && method.run_directory.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "SamplingMethod.resume: a run resumes from its run_directory, which is not set");
  }
  nlohmann::json fingerprint;
  if (!method.run_directory.empty()) fingerprint = sampling_fingerprint(spec, method, data);
  // The folder is this run's alone until run.json is written (a second run into it, or a second
  // resume, is refused): two runs appending to the same chain files would interleave their rows.
  std::optional<RunDirectoryLock> folder_lock;
  if (!method.run_directory.empty()) {
    on_processes(comm, writer, "locking the run directory " + method.run_directory,
                 [&] { folder_lock.emplace(method.run_directory, RunDirectoryLock::Access::kWrite); });
  }
  ResumePoint resume;
  if (method.resume) {
    // Process 0 cuts the chain files back to their checkpoints; then every other process reads them.
    const auto read = [&](bool cut_back) { resume = resume_point(method.run_directory, fingerprint, options.chains, cut_back); };
    on_processes(comm, writer, "resuming " + method.run_directory, [&] { read(true); });
    on_processes(comm, !writer, "reading the checkpoints of " + method.run_directory + " (is the folder on a file system every process sees?)",
                 [&] { read(false); });
    options.resume = resume.states;
    ++resume.resumed;
  }
  const bool every_chain_resumed =
      method.resume && std::all_of(options.resume.begin(), options.resume.end(), [](const auto& state) { return state.has_value(); });
  if (method.laplace_metric && every_chain_resumed) {
    // Each chain's metric is in its checkpoint: no MAP fit for it.
    options.initial_inverse_metric = Eigen::MatrixXd::Identity(posterior->dim(), posterior->dim());
    options.metric = mcmc::MetricKind::kDense;
    options.adapt_metric = false;
  } else if (method.laplace_metric) {
    // The metric stays A⁻¹ (dense); warm-up adapts only the step size (proposal scale).
    Rng rng(options.seed, 1000);
    const std::optional<Eigen::MatrixXd> covariance = laplace_covariance(*posterior, rng, progress);
    // Stopped during its MAP fit: the chains stop before their first iteration (run.json says
    // interrupted), and the metric they would have used does not matter.
    if (!covariance) stop.store(true);
    options.initial_inverse_metric =
        covariance ? *covariance : Eigen::MatrixXd(Eigen::MatrixXd::Identity(posterior->dim(), posterior->dim()));
    options.metric = mcmc::MetricKind::kDense;
    options.adapt_metric = false;
  }

  std::vector<std::string> chain_files;
  std::vector<std::string> config;
  if (!method.run_directory.empty()) {
    for (int c = 0; c < options.chains; ++c) chain_files.push_back(internal::chain_file_name(c));
    config = chain_file_config(spec, method, *posterior, data);
    // What load_model needs, before the first draw: an interrupted run is readable too.
    model->network = posterior->network().clone();
    model->likelihood = posterior->likelihood().clone();
    model->prior = posterior->prior();
    on_processes(comm, writer, "preparing the run directory " + method.run_directory, [&] {
      const fs::path dir(method.run_directory);
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec || !fs::is_directory(dir)) {
        throw Error(ErrorKind::kIo, "cannot create the directory '" + method.run_directory + "'");
      }
      // An earlier run's manifest, then its files: the folder never mixes runs (run_directory.h).
      // A resumed run keeps its folder, model.json included.
      if (method.resume) return;
      internal::clear_run_directory(dir);
      internal::write_run_manifest((dir / internal::kRunManifest).string(), *model, method_to_json(method), chain_files,
                                   method.request);
    });
  }

  std::mutex mutex;
  const auto make_model = [&](int chain) -> std::unique_ptr<mcmc::ChainModel> {
    // The chain's initial MAP fit reports to the callback too (as any MAP iteration: `map` set,
    // no chain): a stop request during it ends the fit at once, and the chain then stops before
    // its first iteration.
    mcmc::NetworkModelOptions options = chains;
    options.map_callback = [&progress, &mutex, &stop](const MapIteration& it) {
      FitProgress p;
      p.map = &it;
      p.iteration = it.iteration;
      std::lock_guard<std::mutex> lock(mutex);
      if (progress(p) == CallbackReturn::kAbort) stop.store(true);
      return stop.load() ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    };
    if (chain == 0 && method.first_chain_start) {
      return std::make_unique<FixedStartModel>(*posterior, options, *method.first_chain_start);
    }
    return std::make_unique<mcmc::NetworkChainModel>(*posterior, options);
  };
  const auto make_sink = [&](int chain) -> std::unique_ptr<mcmc::DrawSink> {
    std::unique_ptr<mcmc::DrawSink> file;
    if (!chain_files.empty() && writer) {
      const auto c = static_cast<std::size_t>(chain);
      const fs::path dir(method.run_directory);
      std::unique_ptr<mcmc::StanCsvWriter> writer;
      if (c < options.resume.size() && options.resume[c]) {
        writer = std::make_unique<mcmc::StanCsvWriter>((dir / chain_files[c]).string(), resume.positions[c].first,
                                                       resume.positions[c].second);
      } else {
        std::vector<std::string> lines = config;
        lines.push_back("id = " + std::to_string(chain + 1));
        writer = std::make_unique<mcmc::StanCsvWriter>((dir / chain_files[c]).string(), lines);
      }
      if (checkpoints) {
        file = std::make_unique<CheckpointedCsvSink>(std::move(writer), (dir / internal::checkpoint_file_name(chain)).string(),
                                                     fingerprint, resume.resumed);
      } else {
        file = std::move(writer);
      }
    }
    return std::make_unique<ChainProgressSink>(std::move(file), progress, &mutex, &stop, chain);
  };
  // run.json, written last: how the run ended and the files it made.
  internal::RunRecord record;
  record.chains = options.chains;
  record.seed = options.seed;
  for (int c = 0; c < options.chains; ++c) record.checkpoints.push_back(internal::checkpoint_file_name(c));
  record.resumed = resume.resumed;
  const auto seal = [&](internal::RunStatus status, const std::string& message) {
    if (method.run_directory.empty() || !writer) return;
    record.status = status;
    record.message = message;
    internal::write_run_index(method.run_directory, record);
  };
  Outcome out;
  mcmc::SamplerSummary s;
  try {
    s = mcmc::sample(make_model, options, make_sink);
  } catch (const Error& e) {
    seal(internal::RunStatus::kFailed, e.what());
    throw;
  }
  Index total = 0;
  for (const auto& d : s.draws) total += d.rows();
  if (total == 0 && !s.interrupted) {
    const std::string message = "sampling: the sampler returned no draws";
    seal(internal::RunStatus::kFailed, message);
    throw Error(ErrorKind::kNumerical, message);
  }
  record.summaries = s.chains;
  seal(s.interrupted ? internal::RunStatus::kInterrupted : internal::RunStatus::kComplete,
       s.interrupted ? "stopped before the planned iterations; the draws so far are kept" : "");
  out.posterior = pooled_draws(s, posterior->dim());
  // A sampler has no convergence criterion of its own: it runs its planned iterations, and R-hat
  // and ESS (the summary's draws) say whether the chains have converged.
  out.summary.termination = s.interrupted ? Termination::kAborted : Termination::kMaxIterations;
  out.summary.message = s.interrupted ? "stopped by the callback; the draws so far are kept"
                                      : "ran the planned iterations; judge convergence by R-hat and ESS";
  out.summary.sampler = std::move(s);
  return out;
}

// The columns of a kept draw (NetworkChainModel's): the sampler's seven, the weights, at most one
// per hyperparameter (α per group, λ_s, β), the monitored outputs and the pointwise log-likelihoods.
Index sampling_draw_columns(const ModelSpec& spec, const Dataset& data, const SamplingMethod& method, Index W,
                            Index outputs) {
  Index hyper = 0;
  if (method.chains.gibbs) {
    // ARD's groups are the inputs beside the network's other groups: a bound, not built here.
    hyper = static_cast<Index>(make_network(spec.network, data.X.cols(), outputs)->default_groups().size()) +
            data.X.cols() + 2;
  }
  const Index monitored = method.monitor.size() > 0 ? method.monitor.rows() : std::min<Index>(5, data.num_rows());
  const Index per_input = spec.likelihood.kind == LikelihoodKind::kCategorical ? outputs : 1;
  return mcmc::kNumSamplerColumns + W + hyper + monitored * per_input + (method.chains.log_lik ? data.num_rows() : 0);
}

// The spec at the grid value cross-validation prefers (the spec itself when a callback stopped
// the search before any value was scored).
ModelSpec cross_validated_spec(const CrossValidatedMethod& method, const ModelSpec& spec, const CvSummary& cv) {
  ModelSpec chosen = spec;
  if (cv.best_cv >= 0) {
    const double value = cv.points[static_cast<std::size_t>(cv.best_cv)].alpha;
    (method.cv.target == CvTarget::kSmoothing ? chosen.prior.smoothing : chosen.prior.alpha) = value;
  }
  return chosen;
}

}  // namespace

FitMemoryRequest fit_memory_request(const ModelSpec& spec, const Dataset& data, const MethodOptions& method) {
  FitMemoryRequest r;
  const Index outputs = make_likelihood(spec.likelihood, data.class_labels)->num_outputs();
  // The network holds its sizes, not its weights: building it costs nothing of the size of W.
  r.params = make_network(spec.network, data.X.cols(), outputs)->num_params();
  r.rows = data.X.rows();
  r.inputs = data.X.cols();
  r.outputs = outputs;
  if (spec.prior.graph) r.graph_nodes = spec.prior.graph->nodes;
  // A MAP by Levenberg–Marquardt or Newton holds the W × W system as the Laplace approximation does.
  const auto squared_map = [&](const MapOptions& map) {
    return map.optimizer == Optimizer::kLevenbergMarquardt || map.optimizer == Optimizer::kNewton ||
           (map.optimizer == Optimizer::kAuto && r.params <= map.lm_max_params);
  };
  if (const auto* m = std::get_if<MapMethod>(&method)) {
    r.kind = squared_map(m->map) ? FitMemoryKind::kLaplace : FitMemoryKind::kPoint;
  } else if (const auto* v = std::get_if<VariationalMethod>(&method)) {
    r.kind = FitMemoryKind::kVariational;
    r.family = v->variational.family;
    // A rank above W is refused by the engine, naming the field; it is not a size to estimate.
    r.family.rank = std::min(r.family.rank, r.params);
  } else if (const auto* s = std::get_if<SamplingMethod>(&method)) {
    r.kind = FitMemoryKind::kSampling;
    r.dense_metric = s->sampler.metric == mcmc::MetricKind::kDense || s->laplace_metric;
    r.chains = s->sampler.chains;
    r.draws = (static_cast<Index>(s->sampler.num_draws) + s->sampler.thin - 1) / std::max(1, s->sampler.thin);
    r.draw_columns = sampling_draw_columns(spec, data, *s, r.params, outputs);
  } else if (const auto* l = std::get_if<LaplaceMethod>(&method); l != nullptr && !l->evidence.structure.full()) {
    // A structured Laplace approximation holds vectors of W and blocks far smaller than W × W; only a
    // Levenberg–Marquardt or Newton MAP holds the W × W system.
    r.kind = squared_map(l->evidence.map) ? FitMemoryKind::kLaplace : FitMemoryKind::kPoint;
    const HessianStructure& structure = l->evidence.structure;
    if (structure.kind == HessianStructureKind::kLowRank) r.curvature_vectors = std::min(r.params, 2 * structure.rank + 100);
  } else {
    r.kind = FitMemoryKind::kLaplace;
  }
  return r;
}

const MemoryLimit& memory_limit(const MethodOptions& method) {
  if (const auto* cv = std::get_if<CrossValidatedMethod>(&method)) return cv->cv.memory;
  return std::visit([](const auto& m) -> const MemoryLimit& {
    if constexpr (requires { m.memory; }) {
      return m.memory;
    } else {
      static const MemoryLimit kNone;
      return kNone;
    }
  }, method);
}

const char* method_name(const MethodOptions& method) {
  static constexpr const char* kNames[] = {"laplace", "vi", "mcmc", "map", "cv"};
  return kNames[method.index()];
}

std::string FitProgress::describe() const {
  if (member >= 0) {
    FitProgress inner = *this;
    inner.member = -1;
    const std::string line = inner.describe();
    return line.empty() ? line : "member " + std::to_string(member + 1) + ": " + line;
  }
  if (noise_model) {
    FitProgress inner = *this;
    inner.noise_model = false;
    const std::string line = inner.describe();
    return line.empty() ? line : "noise: " + line;
  }
  char line[200];
  if (evidence != nullptr) {
    std::snprintf(line, sizeof line, "round %d: log-evidence %.6g, gamma %.4g, beta %.4g%s", evidence->iteration,
                  evidence->log_evidence, evidence->gamma.sum(), evidence->beta,
                  evidence->accepted ? "" : " (lower: undone, step halved)");
  } else if (map != nullptr) {
    std::snprintf(line, sizeof line, "MAP %d: S %.6g, |grad| %.1e", map->iteration, map->objective, map->gradient_norm);
  } else if (variational != nullptr) {
    std::snprintf(line, sizeof line, "VI %d: ELBO %.6g, relative change %.2e", variational->iteration,
                  variational->elbo, variational->relative_change);
  } else if (chain >= 0) {
    std::snprintf(line, sizeof line, "chain %d: iteration %d of %d", chain + 1, iteration, total);
  } else if (grid_point >= 0) {
    std::snprintf(line, sizeof line, "grid point %d of %d", iteration, total);
  } else {
    return {};
  }
  return line;
}

namespace {

// SGLD's and SGHMC's options.
nlohmann::json sg_settings(const mcmc::SamplerOptions& o) {
  const mcmc::StochasticGradientOptions& g = o.stochastic_gradient;
  return {{"batch_size", g.batch_size}, {"friction", g.friction},   {"cycles", g.cycles},
          {"exploration", g.exploration}, {"rmsprop", g.rmsprop}, {"rmsprop_decay", g.rmsprop_decay},
          {"rmsprop_epsilon", g.rmsprop_epsilon}, {"gibbs_every", g.gibbs_every}};
}

}  // namespace

nlohmann::json sampling_settings(const ModelSpec& spec, const SamplingMethod& method) {
  const mcmc::SamplerOptions& o = method.sampler;
  const mcmc::NetworkModelOptions& c = method.chains;
  nlohmann::json start = nullptr;
  if (method.first_chain_start) start = {{"seed", method.first_chain_start->seed}, {"stream", method.first_chain_start->stream}};
  nlohmann::json settings = {{"spec", spec.to_json()},
          {"sampler",
           {{"method", mcmc::to_string(o.method)}, {"chains", o.chains}, {"num_warmup", o.num_warmup},
            {"num_draws", o.num_draws}, {"thin", o.thin}, {"save_warmup", o.save_warmup}, {"seed", o.seed},
            {"metric", mcmc::to_string(o.metric)}, {"adapt_metric", o.adapt_metric},
            {"initial_inverse_metric", hex64(matrix_checksum(internal::kFnvOffset, o.initial_inverse_metric))},
            {"initial_step_size", o.initial_step_size}, {"adapt_step_size", o.adapt_step_size},
            {"target_accept", o.target_accept}, {"max_depth", o.nuts.max_depth}, {"num_steps", o.hmc.num_steps},
            {"jitter", o.hmc.jitter}, {"keep_draws", o.keep_draws}}},
          {"chains",
           {{"gibbs", c.gibbs}, {"alpha_shape", c.hyper.alpha.shape}, {"alpha_rate", c.hyper.alpha.rate},
            {"beta_shape", c.hyper.beta.shape}, {"beta_rate", c.hyper.beta.rate}, {"sample_beta", c.hyper.sample_beta},
            {"init", mcmc::to_string(c.init)}, {"map_max_iterations", c.map_max_iterations},
            {"non_centered", c.non_centered}, {"log_lik", c.log_lik}}},
          {"monitor", hex64(matrix_checksum(internal::kFnvOffset, method.monitor))},
          {"laplace_metric", method.laplace_metric},
          {"first_chain_start", start}};
  // Only where used, so that the settings of the exact samplers' runs read as before.
  if (mcmc::is_stochastic_gradient(o.method)) settings["sampler"]["stochastic_gradient"] = sg_settings(o);
  if (mcmc::is_microcanonical(o.method)) {
    const mcmc::MicrocanonicalOptions& mc = o.microcanonical;
    settings["sampler"]["microcanonical"] = {{"integrator", mcmc::to_string(mc.integrator)},
                                             {"trajectory_length", mc.trajectory_length},
                                             {"energy_variance", mc.energy_variance},
                                             {"decoherence_factor", mc.decoherence_factor},
                                             {"warmup_steps", mc.warmup_steps},
                                             {"max_steps", mc.max_steps}};
  }
  if (c.map_optimizer != Optimizer::kAuto) settings["chains"]["map_optimizer"] = to_string(c.map_optimizer);
  // The blocks the sums over the rows are rounded by (not how they are spread: that changes no bit).
  if (method.parallel.block_rows != DataParallel{}.block_rows) settings["block_rows"] = method.parallel.block_rows;
  return settings;
}

std::string run_request(const std::string& run_directory) {
  const std::string path = (std::filesystem::path(run_directory) / internal::kRunManifest).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw Error(ErrorKind::kInvalidInput, run_directory + ": not a run folder written by occam sample (it has no " +
                                              std::string(internal::kRunManifest) + ")");
  }
  const nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (!j.is_object() || j.value("format", std::string()) != internal::kRunFormat) {
    throw Error(ErrorKind::kInvalidInput, path + ": not the model file of a run folder");
  }
  return j.contains("request") ? j.at("request").dump() : std::string();
}

FittedModel fit(const ModelSpec& spec, const Dataset& data, const MethodOptions& method, const FitCallback& callback) {
  const auto start = std::chrono::steady_clock::now();
  spec.validate();
  check_data(spec, data);
  check_shard(data, data_parallel(method));
  // Refused before anything of the size is allocated (the Laplacian's eigendecomposition is made
  // with the prior, W × W matrices by the engines).
  const MemoryLimit& limit = memory_limit(method);
  check_fit_memory(estimate_fit_memory(fit_memory_request(spec, data, method)), limit.resolve(), limit.name());

  // Cross-validation chooses the prior's value first; the fit itself is then Laplace at it.
  ModelSpec fitted_spec = spec;
  std::optional<CvSummary> cv;
  if (const auto* m = std::get_if<CrossValidatedMethod>(&method)) {
    cv = cross_validate(spec, data, m->cv, callback);
    fitted_spec = cross_validated_spec(*m, spec, *cv);
  }

  Problem problem = build_problem(fitted_spec, data, data_parallel(method));
  Posterior& posterior = problem.posterior;
  FittedModel model;
  model.spec = fitted_spec;
  model.standardizer = problem.standardizer;
  model.feature_names = data.feature_names;
  if (model.feature_names.empty()) {
    for (Index d = 0; d < data.X.cols(); ++d) model.feature_names.push_back("x" + std::to_string(d + 1));
  }
  model.target_name = data.target_name.empty() ? "y" : data.target_name;
  model.summary.data_source = data.source;  // a run directory's model.json names it before sampling

  const Progress progress(callback);
  Outcome outcome;
  if (const auto* m = std::get_if<MapMethod>(&method)) {
    outcome = run(*m, &posterior, progress);
  } else if (const auto* m = std::get_if<LaplaceMethod>(&method)) {
    outcome = run(*m, &posterior, progress);
  } else if (const auto* m = std::get_if<VariationalMethod>(&method)) {
    outcome = run(*m, &posterior, progress);
  } else if (const auto* m = std::get_if<SamplingMethod>(&method)) {
    outcome = run(*m, &posterior, progress, fitted_spec, data, problem.standardizer, &model);
  } else {
    const auto& cv_method = std::get<CrossValidatedMethod>(method);
    LaplaceMethod final_fit;
    final_fit.evidence = cv_method.final_fit;
    final_fit.evidence.fix_prior = true;
    if (fitted_spec.likelihood.kind != LikelihoodKind::kGaussian) final_fit.evidence.strategy = HyperStrategy::kFixed;
    final_fit.start = cv_method.start;
    outcome = run(final_fit, &posterior, progress);
    if (cv->interrupted) {
      outcome.summary.termination = Termination::kAborted;
      outcome.summary.message = "stopped by the callback during cross-validation";
    }
    outcome.summary.cv = std::move(*cv);
  }

  model.network = posterior.network().clone();
  model.likelihood = posterior.likelihood().clone();
  model.prior = posterior.prior();
  model.posterior = std::move(outcome.posterior);
  model.summary = std::move(outcome.summary);
  FitSummary& s = model.summary;
  s.log_evidence = s.evidence ? in_target_units(s.evidence->log_evidence, model.standardizer, data.num_rows()) : kNaN;
  s.elbo = s.variational ? in_target_units(s.variational->elbo, model.standardizer, data.num_rows()) : kNaN;
  describe_fit(posterior, data, model.standardizer, &model);
  s.options = method_to_json(method);
  s.data_source = data.source;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  model.report = fit_report(model);
  return model;
}

}  // namespace occam

// fit.cc — the fit service: one pipeline from a ModelSpec and a data set to a FittedModel.
//
// Every front end used to repeat these steps (standardise, build the pieces, run the engine, map
// the results back to the target's units); they live here once. The engines stay as they are:
// this file only prepares their inputs, forwards their progress to one callback and collects
// their results. The sampling job, with its chains and run folder, is sampling_run.cc; the run
// folder's fingerprint, checkpoints and resume point are run_resume.cc; the progress line a front end
// prints is fit_progress.cc.

#include "occam/fit.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "core/nan.h"
#include "service/evidence_checkpoint.h"
#include "service/fit_job.h"
#include "service/run_resume.h"
#include "inference/laplace/structured/structured.h"
#include "occam/committee.h"
#include "occam/heteroscedastic.h"
#include "occam/io.h"
#include "occam/laplace.h"
#include "occam/mcmc/network_model.h"
#include "occam/memory.h"
#include "occam/method_options.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {
namespace {

using internal::Outcome;
using internal::Progress;

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
    throw Error(ErrorKind::kInvalidArgument, "fit: Dataset.feature_names has " +
                                                 std::to_string(data.feature_names.size()) + " names for " +
                                                 std::to_string(data.X.cols()) + " input columns");
  }
  for (Index j = 0; j < data.X.cols(); ++j) {
    for (Index i = 0; i < m; ++i) {
      if (!std::isfinite(data.X(i, j))) {
        throw Error(ErrorKind::kInvalidInput, "fit: input column " + std::to_string(j + 1) +
                                                  " has a non-finite value in row " + std::to_string(i + 1));
      }
    }
  }
  const bool wants_offset = !spec.likelihood.offset_column.empty();
  if (wants_offset && data.offset.size() != m) {
    throw Error(ErrorKind::kInvalidArgument, "fit: ModelSpec.likelihood.offset_column is '" +
                                                 spec.likelihood.offset_column + "' but Dataset.offset has " +
                                                 std::to_string(data.offset.size()) + " entries for " +
                                                 std::to_string(m) + " rows");
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
  const auto [first, last] =
      RowBlocks{.num_rows = data.total_rows, .block_rows = parallel.block_rows}.rows_of(rank, size);
  if (data.first_row != first || data.first_row + data.X.rows() != last) {
    throw Error(ErrorKind::kInvalidArgument,
                "fit: the Dataset holds rows [" + std::to_string(data.first_row) + ", " +
                    std::to_string(data.first_row + data.X.rows()) + ") of " + std::to_string(data.total_rows) +
                    ", but process " + std::to_string(rank) + " of " + std::to_string(size) + " is dealt rows [" +
                    std::to_string(first) + ", " + std::to_string(last) + ") with " +
                    std::to_string(parallel.block_rows) +
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
  DataShard shard{.communicator = parallel.communicator,
                  .num_rows = data.num_rows(),
                  .first_row = data.first_row,
                  .block_rows = parallel.block_rows,
                  .threads = parallel.threads};
  if (!data.is_shard() && parallel.communicator != nullptr && parallel.communicator->size() > 1) {
    // Every process was given the whole data: each standardises it alike, then keeps its rows.
    const auto [first, last] = RowBlocks{.num_rows = X.rows(), .block_rows = parallel.block_rows}.rows_of(
        parallel.communicator->rank(), parallel.communicator->size());
    shard.first_row = first;
    X = X.middleRows(first, last - first).eval();
    Y = Y.middleRows(first, last - first).eval();
  }
  return {standardizer,
          Posterior(std::move(network), std::move(likelihood), std::move(prior), std::move(X), std::move(Y), shard)};
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
      throw Error(ErrorKind::kInvalidArgument,
                  std::string(field) + ".weights has " + std::to_string(start.weights.size()) +
                      " entries but the network has " + std::to_string(network.num_params()) + " parameters");
    }
    return start.weights;
  }
  Rng rng(start.seed, start.stream);
  return network.initial_params(rng);
}

// The numbers every fit reports about itself: train RMSE or accuracy at the posterior's centre,
// the evidence in the target's units, the sizes.
void describe_fit(const Posterior& posterior, const Dataset& data, const Standardizer& standardizer,
                  FittedModel* model) {
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
  out.seconds_before = options.resume ? options.resume->summary.seconds : 0.0;
  out.summary.termination = r.summary.termination;
  out.summary.message = r.summary.message;
  out.summary.evidence = std::move(r.summary);
  out.posterior = std::move(r.laplace);
  return out;
}

// LaplaceMethod::checkpoint: the ascent resumed from the file when it is there, and its state
// written there after every step.
LaplaceMethod with_checkpoint(const LaplaceMethod& method, const ModelSpec& spec, const Dataset& data) {
  LaplaceMethod out = method;
  if (method.checkpoint.empty()) return out;
  const DataParallel& parallel = method.parallel;
  if (parallel.communicator != nullptr && parallel.communicator->size() > 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "LaplaceMethod.checkpoint: the joint evidence ascent it keeps runs on one process's whole data");
  }
  const std::string path = method.checkpoint;
  const nlohmann::json fingerprint = internal::laplace_fingerprint(spec, method, internal::data_fingerprint(data));
  out.evidence.resume = internal::read_evidence_checkpoint(path, fingerprint);
  out.evidence.checkpoint = [path, fingerprint](const EvidenceCheckpoint& c) {
    internal::write_evidence_checkpoint(path, fingerprint, c);
  };
  return out;
}

Outcome run(const VariationalMethod& method, Posterior* posterior, const Progress& progress) {
  // VI starts from the MAP at the spec's α, β and its Laplace approximation N(w_MAP, A⁻¹) (the
  // family's nearest member), then fits q and α, β by the ELBO. The Laplace fit at the end is
  // made at the α, β the ELBO chose: the same model, so that its log-evidence and the ELBO (a
  // lower bound on that same log-evidence) can be compared.
  if (!method.start_map.structure.full()) {
    throw Error(ErrorKind::kInvalidArgument,
                "VariationalMethod: start_map.structure must be full (the variational "
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

// The columns of a kept draw (the chain model's DrawLayout) before the prior is built: a bound,
// with ARD's groups (the inputs) beside the network's other groups, and λ_s and β counted.
mcmc::DrawLayout sampling_draw_bound(const SamplingMethod& method, const Dataset& data, const Network& network,
                                     const Likelihood& likelihood) {
  mcmc::DrawLayout layout;
  layout.weights = network.num_params();
  if (method.chains.gibbs) {
    layout.alphas = static_cast<Index>(network.default_groups().size()) + data.X.cols();
    layout.smoothing = layout.beta = true;
  }
  layout.monitored = method.monitor.size() > 0 ? method.monitor.rows() : std::min<Index>(5, data.num_rows());
  layout.outputs_per_input = mcmc::NetworkChainModel::monitored_outputs(network, likelihood);
  layout.log_lik = method.chains.log_lik ? data.num_rows() : 0;
  return layout;
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

// The vectors and dense blocks a structured Laplace approximation holds (FitMemoryRequest).
void count_structure_blocks(const Network& network, const HessianStructure& structure, FitMemoryRequest* r) {
  const std::vector<DenseLayer> layers = internal::unit_major_layers(network);
  switch (structure.kind) {
    case HessianStructureKind::kLowRank:
      r->curvature_vectors = std::min(r->params, 2 * structure.rank + 100);
      break;
    case HessianStructureKind::kKronecker:
      for (const DenseLayer& layer : layers) r->curvature_block_entries += layer.in * layer.in + layer.out * layer.out;
      r->curvature_block_copies = 4.0;
      break;
    case HessianStructureKind::kLastLayer:
      if (!layers.empty()) {
        const Index p = layers.back().in * layers.back().out + (layers.back().has_biases() ? layers.back().out : 0);
        r->curvature_block_entries = p * p;
      }
      r->curvature_block_copies = 3.0;
      break;
    default:
      break;
  }
}

}  // namespace

FitMemoryRequest fit_memory_request(const ModelSpec& spec, const Dataset& data, const MethodOptions& method) {
  if (const auto* l = std::get_if<LaplaceMethod>(&method); l != nullptr && l->committee) {
    return committee_memory_request(spec, data, *l, *l->committee);
  }
  FitMemoryRequest r;
  const std::unique_ptr<Likelihood> likelihood = make_likelihood(spec.likelihood, data.class_labels);
  const Index outputs = likelihood->num_outputs();
  // The network holds its sizes, not its weights: building it costs nothing of the size of W.
  const std::unique_ptr<Network> network = make_network(spec.network, data.X.cols(), outputs);
  r.params = network->num_params();
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
    r.draw_columns = sampling_draw_bound(*s, data, *network, *likelihood).num_columns();
  } else if (const auto* l = std::get_if<LaplaceMethod>(&method)) {
    // The loop and structure an automatic loop stands for, as fit_evidence will choose them from
    // the posterior (a prior with smoothing never takes the online loop, so it is not built here).
    const bool spread = l->parallel.communicator != nullptr && l->parallel.communicator->size() > 1;
    const std::optional<Prior> prior = spec.prior.kind == PriorKind::kLaplacian
                                           ? std::nullopt
                                           : std::optional<Prior>(make_prior(*network, spec.prior));
    const EvidenceOptions evidence = choose_evidence_loop(
        l->evidence, evidence_loop_facts(*network, *likelihood, prior ? &*prior : nullptr, data.num_rows(), spread));
    if (!evidence.structure.full()) {
      // A structured Laplace approximation holds vectors of W and blocks far smaller than W × W;
      // only a Levenberg–Marquardt or Newton MAP holds the W × W system (the online loop's MAP is by
      // minibatches, and only its polish is full-batch).
      const bool minibatch_only = evidence.loop == EvidenceLoop::kOnline && !evidence.online.polish;
      r.kind = !minibatch_only && squared_map(evidence.map) ? FitMemoryKind::kLaplace : FitMemoryKind::kPoint;
      count_structure_blocks(*network, evidence.structure, &r);
    } else {
      r.kind = FitMemoryKind::kLaplace;
    }
  } else {
    r.kind = FitMemoryKind::kLaplace;
  }
  return r;
}

const MemoryLimit& memory_limit(const MethodOptions& method) {
  if (const auto* cv = std::get_if<CrossValidatedMethod>(&method)) return cv->cv.memory;
  return std::visit(
      [](const auto& m) -> const MemoryLimit& {
        if constexpr (requires { m.memory; }) {
          return m.memory;
        } else {
          static const MemoryLimit kNone;
          return kNone;
        }
      },
      method);
}

const char* method_name(const MethodOptions& method) {
  static constexpr const char* kNames[] = {"laplace", "vi", "mcmc", "map", "cv"};
  return kNames[method.index()];
}

FittedModel fit(const ModelSpec& spec, const Dataset& data, const MethodOptions& method, const FitCallback& callback) {
  if (const auto* l = std::get_if<LaplaceMethod>(&method);
      l != nullptr && !l->checkpoint.empty() && l->noise_model && !l->committee) {
    throw Error(ErrorKind::kInvalidArgument,
                "LaplaceMethod.checkpoint keeps one evidence ascent, and a heteroscedastic fit runs several");
  }
  // K fits of the method without the committee, as one model of their mixture (committee.cc).
  if (const auto* l = std::get_if<LaplaceMethod>(&method); l != nullptr && l->committee) {
    return committee_model(fit_committee(spec, data, *l, *l->committee, callback));
  }
  if (const auto* l = std::get_if<LaplaceMethod>(&method); l != nullptr && l->noise_model) {
    // The mean, then the noise model (heteroscedastic.cc), which fits the mean through fit()
    // without it; the report names the whole method.
    if (l->parallel.communicator != nullptr && l->parallel.communicator->size() > 1) {
      throw Error(ErrorKind::kInvalidArgument,
                  "LaplaceMethod.noise_model runs as one process (its leverages need every row)");
    }
    FittedModel model = fit_heteroscedastic(spec, data, *l, *l->noise_model, callback);
    model.summary.options = method_to_json(method);
    model.report["options"].update(model.summary.options);
    return model;
  }
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
    outcome = run(with_checkpoint(*m, fitted_spec, data), &posterior, progress);
  } else if (const auto* m = std::get_if<VariationalMethod>(&method)) {
    outcome = run(*m, &posterior, progress);
  } else if (const auto* m = std::get_if<SamplingMethod>(&method)) {
    outcome = internal::run_sampling(*m, &posterior, progress, fitted_spec, data, problem.standardizer, &model);
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
  // A fit resumed from a checkpoint counts the seconds before it too (as its evidence summary does).
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + outcome.seconds_before;
  model.report = fit_report(model);
  return model;
}

}  // namespace occam

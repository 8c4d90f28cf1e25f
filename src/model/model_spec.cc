// model_spec.cc — the typed model specification, the pieces built from it, and the training
// data read for it.

#include "occam/model_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "occam/linear.h"
#include "occam/status.h"
#include "occam/types.h"
#include "model/likelihoods/target_checks.h"
#include "core/parallel/agreement.h"

namespace occam {
namespace {

[[noreturn]] void invalid_spec(const std::string& field, const std::string& value, const std::string& rule) {
  throw Error(ErrorKind::kInvalidArgument, "ModelSpec." + field + " = " + value + ": " + rule);
}

constexpr const char* kBeyondMaxPrecision =
    "must be at most 1e100: a precision times a sum of squares (β·E_D, α·E_W) overflows a double beyond it, and "
    "on standardised data 1e100 already means a spread of 1e-50 of the data's";

std::string number_text(double v) {
  char buffer[32];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return ec == std::errc() ? std::string(buffer, end) : std::to_string(v);
}

// Numbers sort as numbers ("2" before "10"), anything else as text after them.
bool label_less(const std::string& a, const std::string& b) {
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a), y = std::strtod(b.c_str(), &end_b);
  const bool num_a = end_a != a.c_str() && *end_a == '\0', num_b = end_b != b.c_str() && *end_b == '\0';
  if (num_a && num_b && x != y) return x < y;
  if (num_a != num_b) return num_a;
  return a < b;
}

}  // namespace

NetworkKind parse_network_kind(std::string_view name) { return enum_names<NetworkKind>().parse(name); }

const char* to_string(NetworkKind kind) { return enum_names<NetworkKind>().name(kind); }

LikelihoodKind parse_likelihood_kind(std::string_view name) { return enum_names<LikelihoodKind>().parse(name); }

const char* to_string(LikelihoodKind kind) { return enum_names<LikelihoodKind>().name(kind); }

bool LikelihoodSpec::real_valued_targets() const {
  return kind == LikelihoodKind::kGaussian || kind == LikelihoodKind::kHetero;
}

Standardize ModelSpec::standardization() const {
  if (standardize == Standardize::kBoth && !likelihood.real_valued_targets()) return Standardize::kInputs;
  return standardize;
}

void ModelSpec::validate() const {
  if (standardize == Standardize::kCenter && !likelihood.real_valued_targets()) {
    invalid_spec("standardize", "center",
                 std::string("centring the target applies to real-valued targets (gaussian, hetero), not ") +
                     to_string(likelihood.kind));
  }
  if (network.kind == NetworkKind::kMlp) {
    for (std::size_t l = 0; l < network.hidden.size(); ++l) {
      if (network.hidden[l] < 1) {
        invalid_spec("network.hidden[" + std::to_string(l) + "]", std::to_string(network.hidden[l]),
                     "must be at least 1");
      }
    }
  }
  if (likelihood.kind == LikelihoodKind::kGaussian && !(likelihood.beta > 0.0 && std::isfinite(likelihood.beta))) {
    invalid_spec("likelihood.beta", number_text(likelihood.beta), "must be positive and finite");
  }
  if (likelihood.kind == LikelihoodKind::kGaussian && likelihood.beta > kMaxPrecision) {
    invalid_spec("likelihood.beta", number_text(likelihood.beta), kBeyondMaxPrecision);
  }
  if (likelihood.kind == LikelihoodKind::kHetero &&
      !(likelihood.variance_floor >= 0.0 && std::isfinite(likelihood.variance_floor))) {
    invalid_spec("likelihood.variance_floor", number_text(likelihood.variance_floor),
                 "must be non-negative and finite");
  }
  if (!likelihood.offset_column.empty() && likelihood.kind != LikelihoodKind::kPoisson) {
    invalid_spec("likelihood.offset_column", "'" + likelihood.offset_column + "'",
                 std::string("an offset applies to the poisson likelihood only, not ") + to_string(likelihood.kind));
  }
  if (!(prior.alpha > 0.0 && std::isfinite(prior.alpha))) {
    invalid_spec("prior.alpha", number_text(prior.alpha), "must be positive and finite");
  }
  if (prior.alpha > kMaxPrecision) invalid_spec("prior.alpha", number_text(prior.alpha), kBeyondMaxPrecision);
  if (!(prior.smoothing > 0.0 && std::isfinite(prior.smoothing))) {
    invalid_spec("prior.smoothing", number_text(prior.smoothing), "must be positive and finite");
  }
  if (prior.smoothing > kMaxPrecision)
    invalid_spec("prior.smoothing", number_text(prior.smoothing), kBeyondMaxPrecision);
  if (prior.kind == PriorKind::kLaplacian && !prior.graph) {
    invalid_spec("prior.graph", "none", "the laplacian prior needs a graph over the inputs");
  }
  if (prior.kind != PriorKind::kLaplacian && prior.graph) {
    invalid_spec("prior.graph", std::to_string(prior.graph->nodes) + " nodes",
                 std::string("a graph applies to the laplacian prior only, not ") + to_string(prior.kind));
  }
}

nlohmann::json ModelSpec::to_json() const {
  nlohmann::json net = {{"kind", to_string(network.kind)}};
  if (network.kind == NetworkKind::kMlp) {
    net["hidden"] = network.hidden;
    net["activation"] = to_string(network.activation);
  } else {
    net["intercept"] = network.intercept;
  }
  nlohmann::json lik = {{"kind", to_string(likelihood.kind)}};
  if (likelihood.kind == LikelihoodKind::kGaussian) lik["beta"] = likelihood.beta;
  if (likelihood.kind == LikelihoodKind::kHetero) lik["variance_floor"] = likelihood.variance_floor;
  if (!likelihood.offset_column.empty()) lik["offset_column"] = likelihood.offset_column;
  nlohmann::json pri = {{"kind", to_string(prior.kind)}, {"alpha", prior.alpha}};
  if (prior.kind == PriorKind::kLaplacian) pri["smoothing"] = prior.smoothing;
  if (prior.graph) {
    nlohmann::json edges = nlohmann::json::array();
    for (const auto& [a, b, weight] : prior.graph->edges) edges.push_back({a, b, weight});
    pri["graph"] = {{"nodes", prior.graph->nodes}, {"edges", edges}};
  }
  return {{"network", net}, {"likelihood", lik}, {"prior", pri}, {"standardize", occam::to_string(standardize)}};
}

ModelSpec ModelSpec::from_json(const nlohmann::json& j) {
  ModelSpec spec;
  try {
    const nlohmann::json& net = j.at("network");
    spec.network.kind = parse_network_kind(net.at("kind").get<std::string>());
    if (spec.network.kind == NetworkKind::kMlp) {
      spec.network.hidden = net.at("hidden").get<std::vector<Index>>();
      spec.network.activation = parse_activation(net.at("activation").get<std::string>());
    } else {
      spec.network.intercept = net.at("intercept").get<bool>();
    }
    const nlohmann::json& lik = j.at("likelihood");
    spec.likelihood.kind = parse_likelihood_kind(lik.at("kind").get<std::string>());
    spec.likelihood.beta = lik.value("beta", spec.likelihood.beta);
    spec.likelihood.offset_column = lik.value("offset_column", std::string());
    spec.likelihood.variance_floor = lik.value("variance_floor", spec.likelihood.variance_floor);
    const nlohmann::json& pri = j.at("prior");
    spec.prior.kind = parse_prior_kind(pri.at("kind").get<std::string>());
    spec.prior.alpha = pri.at("alpha").get<double>();
    spec.prior.smoothing = pri.value("smoothing", spec.prior.smoothing);
    if (pri.contains("graph")) {
      Graph graph;
      graph.nodes = pri.at("graph").at("nodes").get<Index>();
      for (const auto& e : pri.at("graph").at("edges")) {
        graph.edges.emplace_back(e.at(0).get<Index>(), e.at(1).get<Index>(), e.at(2).get<double>());
      }
      spec.prior.graph = std::move(graph);
    }
    spec.standardize = parse_standardize(j.at("standardize").get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("model specification: ") + e.what());
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("model specification: ") + e.what());
  }
  try {
    spec.validate();
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("model specification: ") + e.what());
  }
  return spec;
}

std::unique_ptr<Network> make_network(const NetworkSpec& spec, Index inputs, Index outputs) {
  if (spec.kind == NetworkKind::kLinear) return std::make_unique<Linear>(inputs, outputs, spec.intercept);
  return std::make_unique<Mlp>(inputs, spec.hidden, spec.activation, outputs);
}

std::unique_ptr<Likelihood> make_likelihood(const LikelihoodSpec& spec, const std::vector<std::string>& class_labels) {
  switch (spec.kind) {
    case LikelihoodKind::kGaussian:
      return std::make_unique<GaussianLikelihood>(spec.beta);
    case LikelihoodKind::kBernoulli:
      return std::make_unique<BernoulliLikelihood>();
    case LikelihoodKind::kPoisson:
      return std::make_unique<PoissonLikelihood>(!spec.offset_column.empty());
    case LikelihoodKind::kCategorical:
      return std::make_unique<CategoricalLikelihood>(class_labels);
    case LikelihoodKind::kHetero:
      return std::make_unique<HeteroscedasticLikelihood>(spec.variance_floor);
  }
  throw Error(ErrorKind::kInvalidArgument, "unknown likelihood kind");
}

namespace {

bool is_categorical(const ModelSpec& spec) { return spec.likelihood.kind == LikelihoodKind::kCategorical; }

// The target's cells as class labels: read_csv(path, target) keeps them as text; a numeric column
// gives labels in the numbers' shortest form ("1", "2.5").
std::vector<std::string> target_cells(const Table& table, const std::string& target, const Dataset& data) {
  if (table.label_column == target) return table.labels;
  std::vector<std::string> cells;
  for (Index n = 0; n < data.Y.rows(); ++n) cells.push_back(number_text(data.Y(n, 0)));
  return cells;
}

// Sorted as numbers first, then words, without repeats.
std::vector<std::string> distinct_labels(std::vector<std::string> cells) {
  std::sort(cells.begin(), cells.end(), label_less);
  cells.erase(std::unique(cells.begin(), cells.end()), cells.end());
  return cells;
}

// make_training_data with the class labels given: those of the whole data set, which a process
// holding some of its rows may not all see.
Dataset training_data(const Table& table, const std::string& target, const ModelSpec& spec,
                      const std::vector<std::string>* class_labels) {
  Dataset data = make_dataset(table, target);
  data.source = table.path;
  const std::string where = table.path.empty() ? std::string("the data") : table.path;
  if (is_categorical(spec)) {
    const std::vector<std::string> cells = target_cells(table, target, data);
    std::vector<std::string> labels = class_labels != nullptr ? *class_labels : distinct_labels(cells);
    if (labels.size() < 2) {
      throw Error(ErrorKind::kInvalidInput, where + ": the target '" + target + "' has " +
                                                std::to_string(labels.size()) +
                                                " distinct label; a categorical likelihood needs at least 2");
    }
    for (std::size_t n = 0; n < cells.size(); ++n) {
      const auto it = std::lower_bound(labels.begin(), labels.end(), cells[n], label_less);
      data.Y(static_cast<Index>(n), 0) = static_cast<double>(it - labels.begin());
    }
    data.class_labels = std::move(labels);
  }
  const std::string& offset = spec.likelihood.offset_column;
  if (!offset.empty()) {
    const auto it = std::find(data.feature_names.begin(), data.feature_names.end(), offset);
    if (it == data.feature_names.end()) {
      throw Error(ErrorKind::kInvalidInput, where + ": no column '" + offset + "' (the offset)");
    }
    data.feature_names.erase(it);
    if (data.feature_names.empty()) {
      throw Error(ErrorKind::kInvalidInput, where + ": no input columns besides the target and the offset");
    }
    data.offset = select_columns(table, {offset}).col(0);
    data.X = select_columns(table, data.feature_names);
  }
  // The targets checked here, where the rows' lines are known (row r is line r + 2 of a file):
  // a fit, or a fold of cross-validation, would only know the row's index in its own subset.
  try {
    // The likelihood sees what a Posterior gives it: the targets, then the offset where there is one.
    Eigen::MatrixXd Y(data.Y.rows(), data.Y.cols() + (data.offset.size() > 0 ? 1 : 0));
    Y.leftCols(data.Y.cols()) = data.Y;
    if (data.offset.size() > 0) Y.rightCols(1) = data.offset;
    make_likelihood(spec.likelihood, data.class_labels)->validate_targets(Y);
  } catch (const internal::InvalidTarget& e) {
    if (table.path.empty()) throw;
    const auto column = std::find(table.columns.begin(), table.columns.end(), target) - table.columns.begin();
    throw Error(ErrorKind::kInvalidInput, table.path + ":" + std::to_string(table.first_row + e.row + 2) +
                                              ": column '" + target + "' (" + std::to_string(column + 1) +
                                              "): " + e.problem);
  }
  return data;
}

}  // namespace

Dataset make_training_data(const Table& table, const std::string& target, const ModelSpec& spec) {
  return training_data(table, target, spec, nullptr);
}

Dataset read_training_data(const std::string& path, const std::string& target, const ModelSpec& spec) {
  return make_training_data(is_categorical(spec) ? read_csv(path, target) : read_csv(path), target, spec);
}

Dataset read_training_data(const std::string& path, const std::string& target, const ModelSpec& spec,
                           const Communicator& processes, Index block_rows) {
  // Each process counts the rows and reads only its own (internal::agree_on_failure: a problem in
  // one process's rows is an error on every process, with that process's message).
  Table table;
  Index total = 0;
  std::exception_ptr failure;
  try {
    if (block_rows < 1) {
      throw Error(ErrorKind::kInvalidArgument,
                  "read_training_data: block_rows must be positive, not " + std::to_string(block_rows));
    }
    total = count_csv_rows(path);
    const auto [first, last] =
        RowBlocks{.num_rows = total, .block_rows = block_rows}.rows_of(processes.rank(), processes.size());
    table = read_csv_rows(path, is_categorical(spec) ? target : std::string(), first, last);
  } catch (...) {
    failure = std::current_exception();
  }
  internal::agree_on_failure(processes, failure);
  // The class labels are those of every row: each process's distinct labels, gathered and merged.
  std::vector<std::string> labels;
  if (is_categorical(spec)) {
    std::vector<std::string> mine;
    try {
      mine = distinct_labels(target_cells(table, target, make_dataset(table, target)));
    } catch (...) {
      failure = std::current_exception();
    }
    internal::agree_on_failure(processes, failure);
    labels = distinct_labels(internal::allgather_strings(processes, mine));
  }
  Dataset data;
  try {
    data = training_data(table, target, spec, is_categorical(spec) ? &labels : nullptr);
  } catch (...) {
    failure = std::current_exception();
  }
  internal::agree_on_failure(processes, failure);
  data.total_rows = total;
  data.first_row = table.first_row;
  return data;
}

}  // namespace occam

#include "occam/plot_data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>

#include "occam/status.h"

namespace occam {
namespace {

bool is_classifier(const FittedModel& model) {
  const LikelihoodKind kind = model.spec.likelihood.kind;
  return kind == LikelihoodKind::kBernoulli || kind == LikelihoodKind::kCategorical;
}

Index column_index(const Table& data, const std::string& name, const char* what) {
  const auto it = std::find(data.columns.begin(), data.columns.end(), name);
  if (it == data.columns.end()) {
    throw Error(ErrorKind::kInvalidArgument, std::string(what) + " '" + name + "' is not a column of " +
                                                 (data.path.empty() ? "the data" : data.path));
  }
  return static_cast<Index>(it - data.columns.begin());
}

Eigen::VectorXd targets(const FittedModel& model, const Table& data) {
  if (is_classifier(model)) {
    throw Error(ErrorKind::kInvalidArgument,
                "calibration of central intervals is for regression and count models; this model is a " +
                    std::string(to_string(model.spec.likelihood.kind)) + " classifier");
  }
  return data.values.col(column_index(data, model.target_name, "the model's target"));
}

double number_or_nan(const nlohmann::json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

Eigen::MatrixXi rank_histograms(const Eigen::MatrixXd& draws, int bins) {
  if (bins < 1)
    throw Error(ErrorKind::kInvalidArgument, "rank_histograms: bins must be at least 1, not " + std::to_string(bins));
  const Index total = draws.size();
  if (total == 0) throw Error(ErrorKind::kInvalidArgument, "rank_histograms: no draws");
  // Ranks over the pooled draws, ties sharing their average rank (Vehtari et al. 2021, eq. 14's r).
  std::vector<Index> order(static_cast<std::size_t>(total));
  std::iota(order.begin(), order.end(), Index{0});
  const double* value = draws.data();
  std::stable_sort(order.begin(), order.end(), [value](Index a, Index b) { return value[a] < value[b]; });
  Eigen::VectorXd rank(total);
  for (Index i = 0; i < total;) {
    Index j = i;
    while (j + 1 < total && value[order[static_cast<std::size_t>(j + 1)]] == value[order[static_cast<std::size_t>(i)]])
      ++j;
    const double shared = 0.5 * static_cast<double>(i + j) + 1.0;  // ranks i+1 … j+1
    for (Index k = i; k <= j; ++k) rank[order[static_cast<std::size_t>(k)]] = shared;
    i = j + 1;
  }
  // Rank r ∈ [1, S·C] falls in bin ⌊(r − 1)·bins / (S·C)⌋.
  Eigen::MatrixXi counts = Eigen::MatrixXi::Zero(bins, draws.cols());
  for (Index c = 0; c < draws.cols(); ++c) {
    for (Index s = 0; s < draws.rows(); ++s) {
      const double r = rank[c * draws.rows() + s];
      const Index bin = std::min<Index>(bins - 1, static_cast<Index>((r - 1.0) * bins / static_cast<double>(total)));
      ++counts(bin, c);
    }
  }
  return counts;
}

Histogram histogram(const Eigen::VectorXd& values, int bins, double lower, double upper) {
  if (bins < 1)
    throw Error(ErrorKind::kInvalidArgument, "histogram: bins must be at least 1, not " + std::to_string(bins));
  if (!(std::isfinite(lower) && std::isfinite(upper) && lower < upper)) {
    throw Error(ErrorKind::kInvalidArgument, "histogram: the range [" + std::to_string(lower) + ", " +
                                                 std::to_string(upper) + "] is empty or not finite");
  }
  Histogram h;
  h.edges = Eigen::VectorXd::LinSpaced(bins + 1, lower, upper);
  h.counts = Eigen::VectorXi::Zero(bins);
  const double width = (upper - lower) / bins;
  for (double v : values) {
    if (!(v >= lower && v <= upper)) continue;
    ++h.counts[std::min<Index>(bins - 1, static_cast<Index>((v - lower) / width))];
  }
  return h;
}

CalibrationCurve calibration_curve(const FittedModel& model, const Table& data, std::vector<double> levels,
                                   PredictOptions options) {
  const Eigen::VectorXd y = targets(model, data);
  if (levels.empty()) {
    for (int k = 1; k <= 19; ++k) levels.push_back(0.05 * k);
  }
  std::sort(levels.begin(), levels.end());
  CalibrationCurve c;
  c.rows = y.size();
  if (c.rows == 0) throw Error(ErrorKind::kInvalidInput, "calibration_curve: the data have no rows");
  const Index n = static_cast<Index>(levels.size());
  c.nominal.resize(n);
  c.empirical.resize(n);
  c.std_error.resize(n);
  for (Index k = 0; k < n; ++k) {
    options.level = levels[static_cast<std::size_t>(k)];
    options.validate();
    const Prediction p = model.predict(data, options);
    const Index inside = ((y.array() >= p.lower.array()) && (y.array() <= p.upper.array())).count();
    c.nominal[k] = options.level;
    c.empirical[k] = static_cast<double>(inside) / static_cast<double>(c.rows);
    c.std_error[k] = std::sqrt(options.level * (1.0 - options.level) / static_cast<double>(c.rows));
  }
  return c;
}

PredictedObserved predicted_observed(const FittedModel& model, const Table& data, const PredictOptions& options) {
  PredictedObserved out;
  out.observed = targets(model, data);
  out.prediction = model.predict(data, options);
  return out;
}

PredictiveBand predictive_band(const FittedModel& model, const Table& data, const std::string& input, int points,
                               const PredictOptions& options) {
  if (points < 2)
    throw Error(ErrorKind::kInvalidArgument,
                "predictive_band: points must be at least 2, not " + std::to_string(points));
  if (std::find(model.feature_names.begin(), model.feature_names.end(), input) == model.feature_names.end()) {
    throw Error(ErrorKind::kInvalidArgument, "'" + input + "' is not an input of the model");
  }
  if (data.values.rows() == 0) throw Error(ErrorKind::kInvalidInput, "predictive_band: the data have no rows");
  PredictiveBand band;
  band.input = input;
  const Eigen::VectorXd column = data.values.col(column_index(data, input, "the input"));
  const double lo = column.minCoeff(), hi = column.maxCoeff();
  const double pad = hi > lo ? 0.05 * (hi - lo) : std::max(1.0, std::abs(lo)) * 0.05;
  band.x = Eigen::VectorXd::LinSpaced(points, lo - pad, hi + pad);
  // The model's inputs (and its offset column, if any) in its own order: `input` varies, the rest
  // sit at their means.
  std::vector<std::string> columns = model.feature_names;
  if (!model.spec.likelihood.offset_column.empty()) columns.push_back(model.spec.likelihood.offset_column);
  Table grid;
  grid.columns = columns;
  grid.values.resize(points, static_cast<Index>(columns.size()));
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const Index k = static_cast<Index>(j);
    if (columns[j] == input) {
      grid.values.col(k) = band.x;
      continue;
    }
    const double mean = data.values.col(column_index(data, columns[j], "the model's input")).mean();
    grid.values.col(k).setConstant(mean);
    band.held.push_back(columns[j]);
    band.held_at.conservativeResize(band.held_at.size() + 1);
    band.held_at[band.held_at.size() - 1] = mean;
  }
  band.prediction = model.predict(grid, options);
  return band;
}

EvidenceAscent evidence_ascent(const nlohmann::json& report) {
  const nlohmann::json* trace = nullptr;
  if (report.is_object()) {
    // A model file holds its report under "summary".
    const nlohmann::json& r = report.contains("summary") && report["summary"].is_object() ? report["summary"] : report;
    if (r.contains("trace") && r["trace"].is_array() && !r["trace"].empty() && r["trace"][0].is_object() &&
        r["trace"][0].contains("log_evidence")) {
      trace = &r["trace"];
    }
  }
  if (trace == nullptr) {
    throw Error(ErrorKind::kInvalidInput,
                "the report has no evidence trace: only fits whose α and β were re-estimated by the evidence "
                "(occam fit --method laplace --hyper evidence, the default) record one");
  }
  EvidenceAscent a;
  const Index steps = static_cast<Index>(trace->size());
  // The groups in the report's order (nlohmann's objects keep their keys sorted).
  const nlohmann::json first_alpha = (*trace)[0].value("alpha", nlohmann::json::object());
  for (const auto& [name, value] : first_alpha.items()) a.alpha_names.push_back(name);
  a.log_evidence.resize(steps);
  a.beta.resize(steps);
  a.alpha.resize(steps, static_cast<Index>(a.alpha_names.size()));
  for (Index s = 0; s < steps; ++s) {
    const nlohmann::json& it = (*trace)[static_cast<std::size_t>(s)];
    a.step.push_back(it.value("iteration", static_cast<int>(s)));
    a.log_evidence[s] = number_or_nan(it.value("log_evidence", nlohmann::json()));
    a.beta[s] = number_or_nan(it.value("beta", nlohmann::json()));
    a.accepted.push_back(it.value("accepted", true));
    const nlohmann::json alpha = it.value("alpha", nlohmann::json::object());
    for (std::size_t g = 0; g < a.alpha_names.size(); ++g) {
      a.alpha(s, static_cast<Index>(g)) = number_or_nan(alpha.value(a.alpha_names[g], nlohmann::json()));
    }
  }
  return a;
}

}  // namespace occam

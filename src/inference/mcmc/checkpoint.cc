#include "occam/mcmc/checkpoint.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "occam/status.h"

namespace occam::mcmc {
namespace {

using nlohmann::json;

std::string hex(double v) {
  char buffer[48];
  const int n = std::snprintf(buffer, sizeof buffer, "%a", v);
  return std::string(buffer, static_cast<std::size_t>(n));
}

[[noreturn]] void malformed(const std::string& field, const std::string& what) {
  throw Error(ErrorKind::kInvalidInput, "chain state: '" + field + "' " + what);
}

double parse_hex(const json& j, const std::string& field) {
  if (!j.is_string()) malformed(field, "is not a hexadecimal float string");
  const std::string text = j.get<std::string>();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) malformed(field, "is not a number: '" + text + "'");
  return v;
}

json matrix(const Eigen::MatrixXd& m) {
  json values = json::array();
  for (Eigen::Index j = 0; j < m.cols(); ++j) {
    for (Eigen::Index i = 0; i < m.rows(); ++i) values.push_back(hex(m(i, j)));
  }
  return {{"rows", m.rows()}, {"cols", m.cols()}, {"values", std::move(values)}};  // column-major
}

const json& at(const json& j, const std::string& field) {
  if (!j.is_object() || !j.contains(field)) malformed(field, "is missing");
  return j.at(field);
}

template <typename T>
T integer(const json& j, const std::string& field) {
  const json& v = at(j, field);
  if (!v.is_number_integer()) malformed(field, "is not an integer");
  return v.get<T>();
}

Eigen::MatrixXd read_matrix(const json& j, const std::string& field) {
  const json& m = at(j, field);
  const auto rows = integer<long long>(m, "rows"), cols = integer<long long>(m, "cols");
  const json& values = at(m, "values");
  if (rows < 0 || cols < 0 || !values.is_array() || static_cast<long long>(values.size()) != rows * cols) {
    malformed(field, "does not hold rows × cols values");
  }
  Eigen::MatrixXd out(rows, cols);
  std::size_t k = 0;
  for (Eigen::Index c = 0; c < cols; ++c) {
    for (Eigen::Index r = 0; r < rows; ++r) out(r, c) = parse_hex(values[k++], field);
  }
  return out;
}

Eigen::VectorXd read_vector(const json& j, const std::string& field) {
  const Eigen::MatrixXd m = read_matrix(j, field);
  if (m.cols() > 1) malformed(field, "is not a vector");
  return m.size() == 0 ? Eigen::VectorXd() : Eigen::VectorXd(m.col(0));
}

MetricKind metric_kind(const std::string& name) {
  if (name == to_string(MetricKind::kUnit)) return MetricKind::kUnit;
  if (name == to_string(MetricKind::kDiagonal)) return MetricKind::kDiagonal;
  if (name == to_string(MetricKind::kDense)) return MetricKind::kDense;
  malformed("metric", "is not unit_e, diag_e or dense_e");
}

}  // namespace

json chain_state_to_json(const ChainState& s) {
  const DualAveraging::State& da = s.dual_averaging;
  const WindowedAdaptation::State& w = s.windows;
  json j = {{"chain", s.chain},
            {"iteration", s.iteration},
            {"position", matrix(s.position)},
            {"model_state", matrix(s.model_state)},
            {"rng", s.rng},
            {"step_size", hex(s.step_size)},
            {"dual_averaging",
             {{"mu", hex(da.mu)}, {"s_bar", hex(da.s_bar)}, {"x_bar", hex(da.x_bar)}, {"counter", da.counter}}},
            {"windows",
             {{"window_size", w.window_size},
              {"window_end", w.window_end},
              {"n", w.n},
              {"mean", matrix(w.mean)},
              {"m2", matrix(w.m2)}}},
            {"metric", to_string(s.metric)},
            {"inverse_metric", matrix(s.inverse_metric)},
            {"draws", s.draws},
            {"divergences", s.divergences},
            {"warmup_divergences", s.warmup_divergences},
            {"max_depth_hits", s.max_depth_hits},
            {"sampling_iterations", s.sampling_iterations},
            {"sum_accept_stat", hex(s.sum_accept_stat)},
            {"sum_tree_depth", hex(s.sum_tree_depth)},
            {"gradient_evaluations", s.gradient_evaluations},
            {"warmup_seconds", hex(s.warmup_seconds)},
            {"sampling_seconds", hex(s.sampling_seconds)}};
  if (!s.shuffle_state.empty()) {
    j["stochastic_gradient"] = {{"velocity", matrix(s.velocity)},
                                {"preconditioner", matrix(s.preconditioner)},
                                {"shuffle_state", s.shuffle_state},
                                {"epoch", s.epoch},
                                {"batch_position", s.batch_position}};
  }
  if (s.momentum.size() > 0) {
    const EnergyErrorAdaptation::State& e = s.energy_adaptation;
    const StreamingMoments::State& m = s.moments;
    j["microcanonical"] = {
        {"momentum", matrix(s.momentum)},
        {"trajectory_length", hex(s.trajectory_length)},
        {"energy_adaptation",
         {{"weight", hex(e.weight)}, {"weighted_xi", hex(e.weighted_xi)}, {"max_step_size", hex(e.max_step_size)}}},
        {"moments",
         {{"weight", hex(m.weight)},
          {"count", m.count},
          {"mean", matrix(m.mean)},
          {"mean_square", matrix(m.mean_square)}}}};
  }
  return j;
}

ChainState chain_state_from_json(const json& j) {
  ChainState s;
  s.chain = integer<int>(j, "chain");
  s.iteration = integer<int>(j, "iteration");
  s.position = read_vector(j, "position");
  s.model_state = read_vector(j, "model_state");
  if (!at(j, "rng").is_string()) malformed("rng", "is not a string");
  s.rng = at(j, "rng").get<std::string>();
  s.step_size = parse_hex(at(j, "step_size"), "step_size");
  const json& da = at(j, "dual_averaging");
  s.dual_averaging = {parse_hex(at(da, "mu"), "dual_averaging.mu"), parse_hex(at(da, "s_bar"), "dual_averaging.s_bar"),
                      parse_hex(at(da, "x_bar"), "dual_averaging.x_bar"), integer<int>(da, "counter")};
  const json& w = at(j, "windows");
  s.windows.window_size = integer<int>(w, "window_size");
  s.windows.window_end = integer<int>(w, "window_end");
  s.windows.n = integer<long long>(w, "n");
  s.windows.mean = read_vector(w, "mean");
  s.windows.m2 = read_matrix(w, "m2");
  if (!at(j, "metric").is_string()) malformed("metric", "is not a string");
  s.metric = metric_kind(at(j, "metric").get<std::string>());
  s.inverse_metric = read_matrix(j, "inverse_metric");
  s.draws = integer<int>(j, "draws");
  s.divergences = integer<int>(j, "divergences");
  s.warmup_divergences = integer<int>(j, "warmup_divergences");
  s.max_depth_hits = integer<int>(j, "max_depth_hits");
  s.sampling_iterations = integer<int>(j, "sampling_iterations");
  s.sum_accept_stat = parse_hex(at(j, "sum_accept_stat"), "sum_accept_stat");
  s.sum_tree_depth = parse_hex(at(j, "sum_tree_depth"), "sum_tree_depth");
  s.gradient_evaluations = integer<long long>(j, "gradient_evaluations");
  s.warmup_seconds = parse_hex(at(j, "warmup_seconds"), "warmup_seconds");
  s.sampling_seconds = parse_hex(at(j, "sampling_seconds"), "sampling_seconds");
  // The point a chain stood at, and the metric and step it moved with, are finite whenever a chain
  // saves them: a NaN or an infinity there was written into the file afterwards.
  if (!s.position.allFinite()) malformed("position", "holds a value that is not finite");
  if (!s.model_state.allFinite()) malformed("model_state", "holds a value that is not finite");
  if (!s.inverse_metric.allFinite()) malformed("inverse_metric", "holds a value that is not finite");
  if (!std::isfinite(s.step_size)) malformed("step_size", "is not finite");
  if (j.contains("stochastic_gradient")) {
    const json& sg = j.at("stochastic_gradient");
    s.velocity = read_vector(sg, "velocity");
    s.preconditioner = read_vector(sg, "preconditioner");
    if (!at(sg, "shuffle_state").is_string()) malformed("shuffle_state", "is not a string");
    s.shuffle_state = at(sg, "shuffle_state").get<std::string>();
    s.epoch = integer<long long>(sg, "epoch");
    s.batch_position = integer<long long>(sg, "batch_position");
  }
  if (j.contains("microcanonical")) {
    const json& mc = j.at("microcanonical");
    s.momentum = read_vector(mc, "momentum");
    s.trajectory_length = parse_hex(at(mc, "trajectory_length"), "trajectory_length");
    const json& e = at(mc, "energy_adaptation");
    s.energy_adaptation = {parse_hex(at(e, "weight"), "energy_adaptation.weight"),
                           parse_hex(at(e, "weighted_xi"), "energy_adaptation.weighted_xi"),
                           parse_hex(at(e, "max_step_size"), "energy_adaptation.max_step_size")};
    const json& m = at(mc, "moments");
    s.moments.weight = parse_hex(at(m, "weight"), "moments.weight");
    s.moments.count = integer<long long>(m, "count");
    s.moments.mean = read_vector(m, "mean");
    s.moments.mean_square = read_vector(m, "mean_square");
  }
  return s;
}

}  // namespace occam::mcmc

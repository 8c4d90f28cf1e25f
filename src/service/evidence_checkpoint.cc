// evidence_checkpoint.cc — the joint evidence ascent's checkpoint file (evidence_checkpoint.h).

#include "service/evidence_checkpoint.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "io/model_json.h"
#include "io/run_directory.h"
#include "occam/io.h"
#include "occam/method_options.h"
#include "occam/status.h"
#include "occam/types.h"
#include "service/run_resume.h"

namespace occam::internal {
namespace {

constexpr const char* kCheckpointFormat = "occam-evidence-checkpoint";
// Version 2 added "ended" (EvidenceCheckpoint::ended); a version-1 file has none and reads as an
// ascent still under way, as version 1 read it.
constexpr int kCheckpointVersion = 2;
constexpr const char* kCheckpointFile = "evidence checkpoint file";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using nlohmann::json;

// JSON has no NaN: a number that is not finite is written as null and read back as NaN.
json number(double v) { return std::isfinite(v) ? json(v) : json(); }
double number_from(const json& j) { return j.is_null() ? kNaN : j.get<double>(); }

json vector_json(const Eigen::VectorXd& v) {
  json out = json::array();
  for (Index i = 0; i < v.size(); ++i) out.push_back(number(v[i]));
  return out;
}
Eigen::VectorXd vector_from(const json& j) {
  if (!j.is_array()) throw Error(ErrorKind::kInvalidInput, "a vector is not an array");
  Eigen::VectorXd v(static_cast<Index>(j.size()));
  for (std::size_t i = 0; i < j.size(); ++i) v[static_cast<Index>(i)] = number_from(j[i]);
  return v;
}
json matrix_json(const Eigen::MatrixXd& m) {  // column-major
  return {{"rows", m.rows()},
          {"cols", m.cols()},
          {"data", vector_json(Eigen::Map<const Eigen::VectorXd>(m.data(), m.size()))}};
}
Eigen::MatrixXd matrix_from(const json& j) {
  const Index rows = j.at("rows").get<Index>(), cols = j.at("cols").get<Index>();
  const Eigen::VectorXd data = vector_from(j.at("data"));
  if (rows < 0 || cols < 0 || data.size() != rows * cols) {
    throw Error(ErrorKind::kInvalidInput, "a matrix's data does not have rows × cols entries");
  }
  return Eigen::Map<const Eigen::MatrixXd>(data.data(), rows, cols);
}

json iteration_json(const EvidenceIteration& it) {
  return {{"iteration", it.iteration},
          {"log_evidence", number(it.log_evidence)},
          {"alpha", vector_json(it.alpha)},
          {"beta", number(it.beta)},
          {"gamma", vector_json(it.gamma)},
          {"map_iterations", it.map_iterations},
          {"accepted", it.accepted},
          {"hyper_gradient_norm", number(it.hyper_gradient_norm)},
          {"gradient_norm", number(it.gradient_norm)},
          {"sample_rows", it.sample_rows}};
}
EvidenceIteration iteration_from(const json& j) {
  EvidenceIteration it;
  it.iteration = j.at("iteration").get<int>();
  it.log_evidence = number_from(j.at("log_evidence"));
  it.alpha = vector_from(j.at("alpha"));
  it.beta = number_from(j.at("beta"));
  it.gamma = vector_from(j.at("gamma"));
  it.map_iterations = j.at("map_iterations").get<int>();
  it.accepted = j.at("accepted").get<bool>();
  it.hyper_gradient_norm = number_from(j.at("hyper_gradient_norm"));
  it.gradient_norm = number_from(j.at("gradient_norm"));
  it.sample_rows = j.at("sample_rows").get<Index>();
  return it;
}

// The parts of the summary the ascent has added to when it saves (EvidenceAscent::resume_from
// reads these back).
json summary_json(const EvidenceSummary& s) {
  json trace = json::array();
  for (const EvidenceIteration& it : s.trace) trace.push_back(iteration_json(it));
  const EvidenceSummary::SubsetStart& sub = s.subset_start;
  const MapSummary& map = s.last_map;
  return {{"message", s.message},
          {"outer_iterations", s.outer_iterations},
          {"map_iterations", s.map_iterations},
          {"abandoned_trials", s.abandoned_trials},
          {"map_steps",
           {{"interior", s.map_steps.interior},
            {"boundary", s.map_steps.boundary},
            {"negative_curvature", s.map_steps.negative_curvature},
            {"refused", s.map_steps.refused}}},
          {"subset_start",
           {{"rows", sub.rows},
            {"termination", to_string(sub.termination)},
            {"outer_iterations", sub.outer_iterations},
            {"map_iterations", sub.map_iterations},
            {"log_evidence", number(sub.log_evidence)},
            {"seconds", sub.seconds}}},
          {"last_map",
           {{"termination", to_string(map.termination)},
            {"message", map.message},
            {"iterations", map.iterations},
            {"evaluations", map.evaluations},
            {"objective", number(map.objective)},
            {"gradient_norm", number(map.gradient_norm)},
            {"seconds", map.seconds}}},
          {"trace", std::move(trace)},
          {"seconds", s.seconds}};
}
EvidenceSummary summary_from(const json& j) {
  EvidenceSummary s;
  s.message = j.at("message").get<std::string>();
  s.outer_iterations = j.at("outer_iterations").get<int>();
  s.map_iterations = j.at("map_iterations").get<int>();
  s.abandoned_trials = j.at("abandoned_trials").get<int>();
  const json& steps = j.at("map_steps");
  s.map_steps.interior = steps.at("interior").get<int>();
  s.map_steps.boundary = steps.at("boundary").get<int>();
  s.map_steps.negative_curvature = steps.at("negative_curvature").get<int>();
  s.map_steps.refused = steps.at("refused").get<int>();
  const json& sub = j.at("subset_start");
  s.subset_start.rows = sub.at("rows").get<Index>();
  s.subset_start.termination = enum_names<Termination>().parse(sub.at("termination").get<std::string>());
  s.subset_start.outer_iterations = sub.at("outer_iterations").get<int>();
  s.subset_start.map_iterations = sub.at("map_iterations").get<int>();
  s.subset_start.log_evidence = number_from(sub.at("log_evidence"));
  s.subset_start.seconds = sub.at("seconds").get<double>();
  const json& map = j.at("last_map");
  s.last_map.termination = enum_names<Termination>().parse(map.at("termination").get<std::string>());
  s.last_map.message = map.at("message").get<std::string>();
  s.last_map.iterations = map.at("iterations").get<int>();
  s.last_map.evaluations = map.at("evaluations").get<int>();
  s.last_map.objective = number_from(map.at("objective"));
  s.last_map.gradient_norm = number_from(map.at("gradient_norm"));
  s.last_map.seconds = map.at("seconds").get<double>();
  for (const json& it : j.at("trace")) s.trace.push_back(iteration_from(it));
  s.seconds = j.at("seconds").get<double>();
  return s;
}

json state_json(const EvidenceCheckpoint& c) {
  json prune = json::array();
  for (bool b : c.prune_declined) prune.push_back(b);
  json state = {{"steps", c.steps},
                {"w", vector_json(c.w)},
                {"log_hyperparameters", vector_json(c.log_hyperparameters)},
                {"log_evidence", number(c.log_evidence)},
                {"gradient", vector_json(c.gradient)},
                {"gamma", vector_json(c.gamma)},
                {"mode_derivative", matrix_json(c.mode_derivative)},
                {"definite", c.definite},
                {"w_gradient_norm", number(c.w_gradient_norm)},
                {"map_iterations", c.map_iterations},
                {"model", matrix_json(c.model)},
                {"radius", c.radius},
                {"branch_switches", c.branch_switches},
                {"prune_declined", std::move(prune)}};
  state["departed"] = c.departed ? vector_json(*c.departed) : json();
  state["fallen"] =
      c.fallen ? json{{"w", vector_json(*c.fallen)}, {"log_evidence", number(c.fallen_log_evidence)}} : json();
  state["ended"] = c.ended ? json{{"termination", to_string(c.ended->termination)},
                                  {"stopping_test", c.ended->stopping_test},
                                  {"outcome", c.ended->outcome}}
                           : json();
  return state;
}
EvidenceCheckpoint state_from(const json& j) {
  EvidenceCheckpoint c;
  c.steps = j.at("steps").get<int>();
  c.w = vector_from(j.at("w"));
  c.log_hyperparameters = vector_from(j.at("log_hyperparameters"));
  c.log_evidence = number_from(j.at("log_evidence"));
  c.gradient = vector_from(j.at("gradient"));
  c.gamma = vector_from(j.at("gamma"));
  c.mode_derivative = matrix_from(j.at("mode_derivative"));
  c.definite = j.at("definite").get<bool>();
  c.w_gradient_norm = number_from(j.at("w_gradient_norm"));
  c.map_iterations = j.at("map_iterations").get<int>();
  c.model = matrix_from(j.at("model"));
  c.radius = j.at("radius").get<double>();
  c.branch_switches = j.at("branch_switches").get<int>();
  for (const json& b : j.at("prune_declined")) c.prune_declined.push_back(b.get<bool>());
  if (!j.at("departed").is_null()) c.departed = vector_from(j.at("departed"));
  if (const json& fallen = j.at("fallen"); !fallen.is_null()) {
    c.fallen = vector_from(fallen.at("w"));
    c.fallen_log_evidence = number_from(fallen.at("log_evidence"));
  }
  if (const auto ended = j.find("ended"); ended != j.end() && !ended->is_null()) {
    c.ended = EvidenceCheckpoint::Ending{enum_names<Termination>().parse(ended->at("termination").get<std::string>()),
                                         ended->at("stopping_test").get<std::string>(),
                                         ended->at("outcome").get<std::string>()};
  }
  return c;
}

}  // namespace

nlohmann::json laplace_fingerprint(const ModelSpec& spec, const LaplaceMethod& method, const nlohmann::json& data) {
  const Eigen::VectorXd& w = method.start.weights;
  const std::uint64_t weights = fnv1a64(kFnvOffset, w.data(), static_cast<std::size_t>(w.size()) * sizeof(double));
  return {{"spec", spec.to_json()},
          {"method", method_to_json(method)},
          {"start", {{"seed", method.start.seed}, {"stream", method.start.stream}, {"weights", weights}}},
          {"data", data}};
}

void write_evidence_checkpoint(const std::string& path, const nlohmann::json& fingerprint,
                               const EvidenceCheckpoint& checkpoint) {
  const json j = {{"format", kCheckpointFormat},
                  {"version", kCheckpointVersion},
                  {"fingerprint", fingerprint},
                  {"state", state_json(checkpoint)},
                  {"summary", summary_json(checkpoint.summary)}};
  write_file_atomic(path, j.dump(1) + "\n");
}

std::shared_ptr<const EvidenceCheckpoint> read_evidence_checkpoint(const std::string& path,
                                                                   const nlohmann::json& fingerprint) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  const json j = parse_json_file(path, read_file(path), kCheckpointFile);
  if (!j.is_object() || j.value("format", std::string()) != kCheckpointFormat)
    corrupt_file(path, kCheckpointFile, "not an evidence checkpoint (no \"format\": \"occam-evidence-checkpoint\")");
  check_format_version(path, j, kCheckpointVersion, kCheckpointFile, kCheckpointFormat);
  const std::string differences =
      fingerprint_differences(required_field(path, kCheckpointFile, j, "fingerprint"), fingerprint);
  if (!differences.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                path + " is the checkpoint of a fit with other settings (differing: " + differences +
                    "); a fit continues from its checkpoint only with its own spec, data and method: "
                    "give another checkpoint file, or remove this one");
  }
  auto c = std::make_shared<EvidenceCheckpoint>();
  try {
    *c = state_from(required_field(path, kCheckpointFile, j, "state"));
    c->summary = summary_from(required_field(path, kCheckpointFile, j, "summary"));
  } catch (const nlohmann::json::exception& e) {
    corrupt_file(path, kCheckpointFile, without_json_tag(e.what()));
  } catch (const Error& e) {
    corrupt_file(path, kCheckpointFile, e.what());
  }
  if (!c->w.allFinite() || !c->log_hyperparameters.allFinite() || !std::isfinite(c->log_evidence) ||
      !c->gradient.allFinite() || !c->model.allFinite() || !(c->radius > 0.0)) {
    corrupt_file(path, kCheckpointFile, "the ascent's state holds a value that is not finite");
  }
  return c;
}

}  // namespace occam::internal

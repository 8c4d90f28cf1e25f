// committee_file.cc — a committee (committee.h) as one versioned JSON file.
//
// The members' models are model file objects (io.h, model_json.h), so a committee is read with
// every check a model file gets, and then against itself: the members that fitted must be as many
// as the models, their weights finite, non-negative and summing to 1, and every model must read
// the same inputs and predict the same target, or the mixture would mix different things.

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "io/model_json.h"
#include "io/run_directory.h"
#include "occam/committee.h"
#include "occam/data.h"
#include "occam/status.h"

namespace occam {
namespace {

using internal::kCommitteeFormat;
constexpr int kCommitteeFormatVersion = 1;
constexpr const char* kCommitteeFileKind = "occam committee file";

using internal::without_json_tag;

// The model file's messages (model_json.h), naming this kind of file.
[[noreturn]] void corrupt_committee(const std::string& path, const std::string& what) {
  internal::corrupt_file(path, kCommitteeFileKind, what);
}

const nlohmann::json& committee_field(const std::string& path, const nlohmann::json& j, const char* name) {
  return internal::required_field(path, kCommitteeFileKind, j, name);
}

CommitteeMember member_from_json(const std::string& path, const nlohmann::json& j, std::size_t i) {
  const std::string where = "members[" + std::to_string(i) + "]";
  if (!j.is_object()) corrupt_committee(path, where + " is not an object");
  CommitteeMember m;
  try {
    m.index = j.at("index").get<int>();
    m.failure = j.value("failure", std::string());
    const nlohmann::json& log_evidence = j.value("log_evidence", nlohmann::json());
    m.log_evidence = log_evidence.is_null() ? std::numeric_limits<double>::quiet_NaN() : log_evidence.get<double>();
    m.weight = j.value("weight", 0.0);
  } catch (const nlohmann::json::exception& e) {
    corrupt_committee(path, where + ": " + without_json_tag(e.what()));
  }
  if (m.index < 0) corrupt_committee(path, where + ": 'index' is negative");
  if (!(std::isfinite(m.weight) && m.weight >= 0.0 && m.weight <= 1.0))
    corrupt_committee(path, where + ": 'weight' is not in [0, 1]");
  return m;
}

}  // namespace

void save_committee(const std::string& path, const Committee& c) {
  if (c.models.empty()) throw Error(ErrorKind::kInvalidArgument, "save_committee: the committee has no members");
  nlohmann::json j;
  j["format"] = kCommitteeFormat;
  j["version"] = kCommitteeFormatVersion;
  j["spec"] = c.spec.to_json();
  j["weighting"] = to_string(c.options.weighting);
  j["members_requested"] = c.options.members;
  j["interrupted"] = c.interrupted;
  j["seconds"] = c.seconds;
  nlohmann::json members = nlohmann::json::array();
  for (const CommitteeMember& m : c.members) {
    nlohmann::json member = {{"index", m.index}, {"weight", m.weight}};
    member["log_evidence"] = std::isfinite(m.log_evidence) ? nlohmann::json(m.log_evidence) : nlohmann::json();
    if (!m.failure.empty()) member["failure"] = m.failure;
    members.push_back(std::move(member));
  }
  j["members"] = std::move(members);
  nlohmann::json models = nlohmann::json::array();
  for (const FittedModel& model : c.models) models.push_back(internal::model_to_json(model));
  j["models"] = std::move(models);
  j["summary"] = c.report();
  // Doubles are written as the shortest decimal that reads back as the same double: the loaded
  // committee predicts bit-identically.
  write_file_atomic(path, j.dump(1) + "\n");
}

bool is_committee_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && internal::json_file_format(path) == kCommitteeFormat;
}

Committee load_committee(const std::string& path) {
  const nlohmann::json j = internal::parse_json_file(path, read_file(path), kCommitteeFileKind);
  if (!j.is_object()) corrupt_committee(path, "the top level is not a JSON object");
  const nlohmann::json format = j.value("format", nlohmann::json());
  if (format == internal::kModelFormat || format == internal::kRunFormat) {
    throw Error(ErrorKind::kInvalidInput, path + " holds one model, not a committee: read it with load_model");
  }
  if (format != kCommitteeFormat) corrupt_committee(path, "no \"format\": \"occam-committee\" entry");
  internal::check_format_version(path, j, kCommitteeFormatVersion, kCommitteeFileKind, "committee format");

  Committee c;
  try {
    c.spec = ModelSpec::from_json(committee_field(path, j, "spec"));
    c.options.weighting = parse_committee_weighting(committee_field(path, j, "weighting").get<std::string>());
    c.options.members = committee_field(path, j, "members_requested").get<int>();
    c.interrupted = j.value("interrupted", false);
    c.seconds = j.value("seconds", 0.0);
  } catch (const nlohmann::json::exception& e) {
    corrupt_committee(path, without_json_tag(e.what()));
  } catch (const Error& e) {
    corrupt_committee(path, e.what());
  }

  const nlohmann::json& members = committee_field(path, j, "members");
  const nlohmann::json& models = committee_field(path, j, "models");
  if (!members.is_array()) corrupt_committee(path, "'members' is not an array");
  if (!models.is_array() || models.empty()) corrupt_committee(path, "'models' is not an array of at least one model");
  for (std::size_t i = 0; i < members.size(); ++i) c.members.push_back(member_from_json(path, members[i], i));
  if (c.options.members < static_cast<int>(c.members.size())) {
    corrupt_committee(path, "'members_requested' is fewer than the members listed");
  }
  std::size_t fitted = 0;
  for (const CommitteeMember& m : c.members) fitted += m.failure.empty() ? 1 : 0;
  if (fitted != models.size()) {
    corrupt_committee(path, std::to_string(fitted) + " members fitted but the file holds " +
                                std::to_string(models.size()) + " models");
  }

  for (std::size_t k = 0; k < models.size(); ++k) {
    c.models.push_back(internal::model_from_json(path + ", models[" + std::to_string(k) + "]", models[k]));
    const FittedModel& model = c.models.back();
    const FittedModel& first = c.models.front();
    if (model.feature_names != first.feature_names || model.target_name != first.target_name) {
      corrupt_committee(path, "models[" + std::to_string(k) + "] has other inputs or another target than models[0]");
    }
    const LikelihoodKind kind = model.spec.likelihood.kind;
    if (kind != LikelihoodKind::kGaussian && kind != LikelihoodKind::kHetero) {
      corrupt_committee(path, "models[" + std::to_string(k) + "] does not have a gaussian or hetero likelihood");
    }
  }

  c.weights.resize(static_cast<Index>(models.size()));
  Index i = 0;
  for (const CommitteeMember& m : c.members)
    if (m.failure.empty()) c.weights[i++] = m.weight;
  // The weights were normalised when fitted; a sum off by more than rounding is an edit.
  if (std::abs(c.weights.sum() - 1.0) > 1e-9) corrupt_committee(path, "the members' weights do not sum to 1");
  return c;
}

}  // namespace occam

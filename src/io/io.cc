// io.cc — the versioned JSON model file.
//
// Loading is defensive: a model file may have been edited by hand, truncated by a full disk or
// written by a newer occam, and each of those must end in a message that names the file and
// what is wrong, never in a crash or a silently wrong prediction. Every piece is parsed by its
// own from_json and then checked against the others (sizes must agree).

#include "occam/io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "io/json_error_path.h"
#include "io/model_json.h"
#include "occam/committee.h"
#include "occam/status.h"
#include "io/run_directory.h"
#include "inference/laplace/structured/precision_factors.h"

namespace occam {
namespace {

using internal::without_json_tag;

constexpr const char* kModelFileKind = "occam model file";

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  internal::corrupt_file(path, kModelFileKind, what);
}

const nlohmann::json& field(const std::string& path, const nlohmann::json& j, const char* name) {
  return internal::required_field(path, kModelFileKind, j, name);
}

// Runs one piece's from_json, turning whatever it throws into a message naming file and field.
template <typename Parse>
auto parse_field(const std::string& path, const nlohmann::json& j, const char* name, Parse parse) {
  const nlohmann::json& value = field(path, j, name);
  try {
    return parse(value);
  } catch (const nlohmann::json::exception& e) {
    corrupt(path, std::string("field '") + name + "': " + without_json_tag(e.what()));
  } catch (const Error& e) {
    corrupt(path, std::string("field '") + name + "': " + e.what());
  }
}

// The sizes the network declares are compared with the arrays the file holds before anything of
// those sizes is allocated: layers of a million units, or a prior of 2³¹ parameters, would cost
// gigabytes to build, and a file that really describes such a model holds W numbers for the
// posterior's mean.
void check_declared_sizes(const std::string& path, const nlohmann::json& j, Index W) {
  // The posterior's mean: under "posterior" (Laplace), "variational" or "point", whichever the
  // file has; which of them it should have is checked later, with the rest of the posterior.
  nlohmann::json::const_iterator posterior = j.end();
  for (const char* holder : {"posterior", "variational", "point"}) {
    if (posterior == j.end()) posterior = j.find(holder);
  }
  if (posterior == j.end()) corrupt(path, "missing field 'posterior'");
  if (!posterior->is_object() || !posterior->contains("mean") || !posterior->at("mean").is_array()) {
    corrupt(path, "field '" + posterior.key() + "': no array 'mean'");
  }
  const auto entries = static_cast<Index>(posterior->at("mean").size());
  if (entries != W) {
    corrupt(path, "'" + posterior.key() + "' mean has " + std::to_string(entries) + " entries but the network needs " +
                      std::to_string(W));
  }
  const auto prior = j.find("prior");
  if (prior != j.end() && prior->is_object() && prior->contains("dim")) {
    const nlohmann::json& dim = prior->at("dim");
    const bool equal = dim.is_number_unsigned() ? dim.get<std::uint64_t>() == static_cast<std::uint64_t>(W)
                                                : dim.is_number_integer() && dim.get<long long>() == W;
    if (!equal) {
      corrupt(path, "'prior' dim is " + dim.dump() + " but the network has " + std::to_string(W) + " parameters");
    }
  }
}

// Feature names are matched to a data file's columns by name: each must be unique.
std::vector<std::string> feature_names_from_json(const nlohmann::json& j) {
  auto names = j.get<std::vector<std::string>>();
  std::unordered_map<std::string_view, std::size_t> first;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto [it, inserted] = first.emplace(names[i], i);
    if (!inserted) {
      throw Error(ErrorKind::kInvalidInput, "'" + names[i] + "' is listed twice (entries " +
                                                std::to_string(it->second + 1) + " and " + std::to_string(i + 1) + ")");
    }
  }
  return names;
}

void check_sizes(const std::string& path, const ModelFile& m) {
  const Index W = m.network->num_params();
  const auto mismatch = [&](const std::string& what, Index got, Index want) {
    if (got != want) {
      corrupt(path, what + " has " + std::to_string(got) + " entries but the network needs " + std::to_string(want));
    }
  };
  mismatch("'prior'", m.prior.dim(), W);
  const auto* laplace = std::get_if<LaplaceApproximation>(&m.posterior);
  if (const auto* q = std::get_if<GaussianVariational>(&m.posterior)) {
    mismatch("'variational' mean", q->dim(), W);
  } else if (const auto* point = std::get_if<PointEstimate>(&m.posterior)) {
    mismatch("'point' mean", point->weights.size(), W);
    if (!point->weights.allFinite()) corrupt(path, "'point' mean has a non-finite entry");
  } else if (laplace != nullptr) {
    mismatch("'posterior' mean", laplace->mean.size(), W);
    // LaplaceApproximation::from_json sized the factor by the mean; a factor built in memory may
    // come with another network.
    if (laplace->precision != nullptr && laplace->precision->dim() != W) {
      corrupt(path, "'posterior' factor is over " + std::to_string(laplace->precision->dim()) +
                        " weights but the network has " + std::to_string(W) + " parameters");
    }
  }
  mismatch("'features'", static_cast<Index>(m.feature_names.size()), m.network->num_inputs());
  if (m.standardizer.x_mean.size() != 0)
    mismatch("'standardizer' x_mean", m.standardizer.x_mean.size(), m.network->num_inputs());
  if (m.likelihood->num_outputs() != m.network->num_outputs()) {
    corrupt(path, "the likelihood needs " + std::to_string(m.likelihood->num_outputs()) +
                      " network outputs but the network has " + std::to_string(m.network->num_outputs()));
  }
  // GaussianVariational::from_json checked finiteness and positivity.
  if (laplace == nullptr) return;
  if (!laplace->mean.allFinite()) corrupt(path, "'posterior' mean has a non-finite entry");
  // LaplaceApproximation::from_json checked the Woodbury, diagonal and Kronecker forms' sizes,
  // finiteness and signs; the dense factors' diagonal (of all W weights, or the last layer's p)
  // is checked here.
  const Eigen::MatrixXd* cholesky = nullptr;
  if (const auto* dense = laplace->precision_as<internal::DensePrecision>()) cholesky = &dense->cholesky();
  if (const auto* last = laplace->precision_as<internal::LastLayerPrecision>()) cholesky = &last->cholesky();
  if (cholesky == nullptr) return;
  // A Cholesky factor of a positive definite matrix has a positive, finite diagonal; anything
  // else would give NaN variances downstream.
  const Eigen::VectorXd diagonal = cholesky->diagonal();
  if (!diagonal.allFinite() || !(diagonal.array() > 0.0).all()) {
    corrupt(path, "'posterior' cholesky factor has a diagonal entry that is not positive and finite");
  }
}

nlohmann::json vector_json(const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

PointEstimate point_from_json(const nlohmann::json& j) {
  const std::vector<double> mean = j.at("mean").get<std::vector<double>>();
  return {Eigen::Map<const Eigen::VectorXd>(mean.data(), static_cast<Index>(mean.size()))};
}

}  // namespace

namespace internal {

namespace {

// A SAX handler that keeps the top-level "format" string and stops the parse there.
class FormatReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::string format;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (depth_ == 1 && at_format_) {
      format = value;
      return false;  // found: stop reading
    }
    return scalar();
  }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override { return open(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool key(string_t& name) override {
    at_format_ = depth_ == 1 && name == "format";
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool scalar() {
    at_format_ = false;
    return depth_ > 0;  // a document that is not an object has no format
  }
  bool open() {
    at_format_ = false;
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return depth_ > 0;  // the top level ended without a format
  }
  int depth_ = 0;
  bool at_format_ = false;
};

}  // namespace

std::string json_file_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  FormatReader reader;
  nlohmann::json::sax_parse(in, &reader);
  return reader.format;
}

std::string without_json_tag(const char* what) {
  std::string_view message(what);
  if (message.starts_with("[json.exception.")) {
    const auto close = message.find("] ");
    if (close != std::string_view::npos) message.remove_prefix(close + 2);
  }
  return std::string(message);
}

void corrupt_file(const std::string& path, const std::string& file_kind, const std::string& what) {
  throw Error(ErrorKind::kInvalidInput, path + " is not a valid " + file_kind + ": " + what);
}

const nlohmann::json& required_field(const std::string& path, const std::string& file_kind, const nlohmann::json& j,
                                     const char* name) {
  const auto it = j.find(name);
  if (it == j.end()) corrupt_file(path, file_kind, std::string("missing field '") + name + "'");
  return *it;
}

nlohmann::json parse_json_file(const std::string& path, const std::string& text, const std::string& file_kind) {
  const std::string beyond = json_limit_problem(text);
  if (!beyond.empty()) corrupt_file(path, file_kind, "JSON " + beyond);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    // A syntax error, or a number too large for a double: say in which field.
    const std::string where = json_error_path(text);
    corrupt_file(path, file_kind,
                 "JSON " + without_json_tag(e.what()) + (where.empty() ? "" : " (in field '" + where + "')"));
  }
}

void check_format_version(const std::string& path, const nlohmann::json& j, long long newest,
                          const std::string& file_kind, const std::string& format_name) {
  const nlohmann::json& version = required_field(path, file_kind, j, "version");
  if (!version.is_number_integer() || version.get<long long>() < 1) {
    corrupt_file(path, file_kind, "'version' is not a positive integer");
  }
  if (version.get<long long>() > newest) {
    throw Error(ErrorKind::kInvalidInput, path + " was written by a newer occam (" + format_name + " version " +
                                              std::to_string(version.get<long long>()) +
                                              "); this occam reads version " + std::to_string(newest));
  }
}

nlohmann::json model_to_json(const FittedModel& model) {
  if (!model.network || !model.likelihood) {
    throw Error(ErrorKind::kInvalidArgument, "save_model: the model has no network or no likelihood");
  }
  if (std::holds_alternative<PosteriorDraws>(model.posterior)) {
    throw Error(ErrorKind::kInvalidArgument,
                "MCMC draws are saved as a run directory (save_model), not as one JSON object");
  }
  if (std::holds_alternative<LaplaceMixture>(model.posterior)) {
    throw Error(ErrorKind::kInvalidArgument,
                "a committee is saved as a committee file (save_model), not as one model's JSON object");
  }
  nlohmann::json j;
  j["format"] = internal::kModelFormat;
  j["version"] = model.noise ? 2 : 1;
  j["network"] = model.network->to_json();
  j["likelihood"] = model.likelihood->to_json();
  j["prior"] = model.prior.to_json();
  j["standardizer"] = model.standardizer.to_json();
  j["features"] = model.feature_names;
  j["target"] = model.target_name;
  j["spec"] = model.spec.to_json();
  if (!model.spec.likelihood.offset_column.empty()) j["offset"] = model.spec.likelihood.offset_column;
  if (const auto* q = std::get_if<GaussianVariational>(&model.posterior)) {
    j["posterior_kind"] = "vi";
    j["variational"] = q->to_json();
  } else if (const auto* point = std::get_if<PointEstimate>(&model.posterior)) {
    j["posterior_kind"] = "map";
    j["point"] = {{"mean", vector_json(point->weights)}};
  } else {
    j["posterior"] = std::get<LaplaceApproximation>(model.posterior).to_json();
  }
  if (model.noise) j["noise_model"] = model.noise->to_json();
  j["summary"] = model.report;
  return j;
}

}  // namespace internal

void save_model(const std::string& path, const ModelFile& model) {
  if (const Committee* c = model.committee()) {  // every member's model in one file (committee_file.cc)
    save_committee(path, *c);
    return;
  }
  if (model.network && model.likelihood && std::holds_alternative<PosteriorDraws>(model.posterior)) {
    internal::save_run(path, model);
    return;
  }
  // nlohmann writes the shortest decimal that reads back as the same double, so the loaded
  // model predicts bit-identically.
  write_file_atomic(path, internal::model_to_json(model).dump(1) + "\n");
}

void add_run_files(const std::string& directory, const std::vector<std::string>& files,
                   const std::string& command_line) {
  internal::add_run_index_files(directory, files, command_line);
}

ModelFile load_model(const std::string& given_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A run directory is read through its model.json; a folder is read as nothing else.
  const bool folder = fs::is_directory(given_path, ec);
  const std::string path = folder ? (fs::path(given_path) / internal::kRunManifest).string() : given_path;
  if (folder) {
    const auto not_a_run = [&](const std::string& why) {
      return Error(ErrorKind::kInvalidInput, given_path + ": not a run folder written by occam sample (" + why + ")");
    };
    if (!fs::exists(path, ec)) throw not_a_run("it has no " + std::string(internal::kRunManifest));
    const std::string format = internal::json_file_format(path);
    if (format != internal::kRunFormat) {
      throw not_a_run("its " + std::string(internal::kRunManifest) + " is " +
                      (format.empty() ? std::string("not a run's") : "an \"" + format + "\" file, not a run's"));
    }
  }
  const nlohmann::json j = internal::parse_json_file(path, read_file(path), kModelFileKind);
  if (!j.is_object()) corrupt(path, "the top level is not a JSON object");
  if (j.value("format", nlohmann::json()) == std::string(internal::kRunFormat)) return internal::load_run(path, j);
  if (j.value("format", nlohmann::json()) == std::string(internal::kCommitteeFormat)) {
    return committee_model(load_committee(path));  // its mixture, as fit() returns it
  }
  return internal::model_from_json(path, j);
}

namespace internal {

FittedModel model_from_json(const std::string& path, const nlohmann::json& j) {
  if (!j.is_object()) corrupt(path, "the model is not a JSON object");
  if (j.value("format", nlohmann::json()) != std::string(internal::kModelFormat)) {
    corrupt(path, "no \"format\": \"occam-model\" entry");
  }
  internal::check_format_version(path, j, kModelFormatVersion, kModelFileKind, "format");

  ModelFile m;
  m.network = parse_field(path, j, "network", [](const nlohmann::json& v) { return network_from_json(v); });
  check_declared_sizes(path, j, m.network->num_params());
  m.likelihood = parse_field(path, j, "likelihood", [](const nlohmann::json& v) { return likelihood_from_json(v); });
  m.prior = parse_field(path, j, "prior", [](const nlohmann::json& v) { return Prior::from_json(v); });
  m.standardizer =
      parse_field(path, j, "standardizer", [](const nlohmann::json& v) { return Standardizer::from_json(v); });
  m.feature_names = parse_field(path, j, "features", feature_names_from_json);
  m.target_name = parse_field(path, j, "target", [](const nlohmann::json& v) { return v.get<std::string>(); });
  const nlohmann::json kind = j.value("posterior_kind", nlohmann::json("laplace"));
  if (kind == "vi") {
    m.posterior =
        parse_field(path, j, "variational", [](const nlohmann::json& v) { return GaussianVariational::from_json(v); });
  } else if (kind == "laplace") {
    m.posterior =
        parse_field(path, j, "posterior", [](const nlohmann::json& v) { return LaplaceApproximation::from_json(v); });
  } else if (kind == "map") {
    m.posterior = parse_field(path, j, "point", [](const nlohmann::json& v) { return point_from_json(v); });
  } else {
    corrupt(path, "'posterior_kind' must be \"laplace\", \"vi\" or \"map\", got " + kind.dump());
  }
  std::string offset_name;
  if (j.contains("offset")) {
    offset_name = parse_field(path, j, "offset", [](const nlohmann::json& v) { return v.get<std::string>(); });
  }
  if (j.contains("noise_model")) {
    m.noise = parse_field(path, j, "noise_model", [](const nlohmann::json& v) { return NoiseModel::from_json(v); });
    if (m.noise->network->num_inputs() != m.network->num_inputs()) {
      corrupt(path, "the noise model's network does not take the model's inputs");
    }
    if (!m.likelihood || !m.likelihood->has_precision() || !std::holds_alternative<LaplaceApproximation>(m.posterior)) {
      corrupt(path, "a noise model goes with a gaussian likelihood and a Laplace posterior");
    }
  }
  m.report = j.value("summary", nlohmann::json::object());
  if (!m.network) corrupt(path, "field 'network' describes no network");
  if (!m.likelihood) corrupt(path, "field 'likelihood' describes no likelihood");
  check_sizes(path, m);
  m.spec = j.contains("spec")
               ? parse_field(path, j, "spec", [](const nlohmann::json& v) { return ModelSpec::from_json(v); })
               : internal::implied_spec(m, offset_name);
  if (m.spec.likelihood.offset_column != offset_name)
    corrupt(path, "'offset' and 'spec' name different offset columns");
  // How the fit that wrote the file ended, as its report says.
  m.summary.termination = Termination::kConverged;
  if (m.report.is_object() && m.report.contains("termination") && m.report["termination"].is_string()) {
    const std::string ended = m.report["termination"].get<std::string>();
    for (Termination t : {Termination::kConverged, Termination::kMaxIterations, Termination::kFailure,
                          Termination::kNoProgress, Termination::kAborted}) {
      if (ended == to_string(t)) m.summary.termination = t;
    }
  }
  m.summary.num_params = m.network->num_params();
  return m;
}

}  // namespace internal

Prediction predict(const ModelFile& model, const Eigen::MatrixXd& X, const PredictOptions& options,
                   const Eigen::VectorXd* offset) {
  return model.predict(X, options, offset);
}

namespace internal {

ModelSpec implied_spec(const FittedModel& m, const std::string& offset_column) {
  ModelSpec spec;
  const nlohmann::json net = m.network->to_json();
  if (net.at("type") == "linear") {
    spec.network.kind = NetworkKind::kLinear;
    spec.network.intercept = net.at("intercept").get<bool>();
  } else {
    const std::vector<Index> layers = net.at("layers").get<std::vector<Index>>();
    spec.network.hidden.assign(layers.begin() + 1, layers.end() - 1);
    spec.network.activation = parse_activation(net.at("activation").get<std::string>());
  }
  spec.likelihood.kind = parse_likelihood_kind(m.likelihood->name());
  if (m.likelihood->has_precision()) spec.likelihood.beta = m.likelihood->precision();
  spec.likelihood.variance_floor = m.likelihood->to_json().value("variance_floor", 0.0);
  spec.likelihood.offset_column = offset_column;
  const auto& groups = m.prior.groups();
  const bool ard = std::any_of(groups.begin(), groups.end(), [](const ParamGroup& g) {
    return g.name.starts_with("input:") ||
           (g.name.starts_with("input_") && g.name.size() > 6 && std::isdigit(static_cast<unsigned char>(g.name[6])));
  });
  if (m.prior.smoothing()) {
    spec.prior.kind = PriorKind::kLaplacian;
    spec.prior.graph = m.prior.smoothing()->graph;
  } else if (ard) {
    spec.prior.kind = PriorKind::kArd;
  } else {
    spec.prior.kind = groups.size() == 1 ? PriorKind::kRidge : PriorKind::kGroups;
  }
  spec.standardize = m.standardizer.mode;
  return spec;
}

}  // namespace internal

}  // namespace occam

#include "occam/committee.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <numbers>
#include <memory>
#include <optional>
#include <thread>

#include "core/nan.h"
#include "io/model_json.h"
#include "io/run_directory.h"
#include "occam/method_options.h"
#include "occam/status.h"
#include "occam/types.h"
#include "service/evidence_checkpoint.h"
#include "service/run_resume.h"

namespace occam {
namespace {

// SplitMix64's finaliser (Steele, Lea & Flood 2014): a member's seed from (seed, k), far from the
// seeds a caller would use for other starts (seed + 1, seed + 2, ...).
std::uint64_t mix_seed(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Φ(z), the standard normal CDF.
double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The p-quantile of Σ_k π_k N(μ_k, σ_k²) by bisection on its CDF, which is increasing: the
// interval starts wide enough to hold every component's mass but 10⁻²³ and halves to the last
// representable digit.
double mixture_quantile(const Eigen::VectorXd& pi, const Eigen::VectorXd& mu, const Eigen::VectorXd& sigma, double p) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (Index k = 0; k < pi.size(); ++k) {
    lo = std::min(lo, mu[k] - 10.0 * sigma[k]);
    hi = std::max(hi, mu[k] + 10.0 * sigma[k]);
  }
  auto cdf = [&](double t) {
    double F = 0.0;
    for (Index k = 0; k < pi.size(); ++k) {
      F += pi[k] * (sigma[k] > 0.0 ? normal_cdf((t - mu[k]) / sigma[k]) : (t >= mu[k] ? 1.0 : 0.0));
    }
    return F;
  };
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (!(mid > lo && mid < hi)) break;
    (cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// The members' Gaussian predictives at X (a matrix or a table): one column per model.
template <typename Inputs>
void member_predictives(const Committee& c, const Inputs& X, const PredictOptions& options, Eigen::MatrixXd* mean,
                        Eigen::MatrixXd* sd) {
  if (c.models.empty()) throw Error(ErrorKind::kInvalidArgument, "Committee::predict: the committee has no members");
  if (options.keep_draws) {
    throw Error(ErrorKind::kInvalidArgument,
                "a committee gives its mixture's mean, std and interval, not predictive draws (keep_draws)");
  }
  for (std::size_t k = 0; k < c.models.size(); ++k) {
    const Prediction p = c.models[k].predict(X, options);
    if (k == 0) {
      mean->resize(p.mean.size(), static_cast<Index>(c.models.size()));
      sd->resizeLike(*mean);
    }
    mean->col(static_cast<Index>(k)) = p.mean;
    sd->col(static_cast<Index>(k)) = p.std;
  }
}

// The mixture Σ_k π_k N(mean_k, sd_k²) per row: its mean, standard deviation and central interval.
Prediction mix(const Eigen::VectorXd& weights, const Eigen::MatrixXd& mean, const Eigen::MatrixXd& sd, double level) {
  const Index rows = mean.rows();
  Prediction p;
  p.mean = mean * weights;
  // Var y = E[Var y | k] + Var E[y | k], summed as Σ π_k ((μ_k − μ)² + σ_k²) to avoid cancellation.
  Eigen::VectorXd var = Eigen::VectorXd::Zero(rows);
  for (Index k = 0; k < mean.cols(); ++k) {
    var += weights[k] * ((mean.col(k) - p.mean).array().square() + sd.col(k).array().square()).matrix();
  }
  p.std = var.array().sqrt();
  p.lower.resize(rows);
  p.upper.resize(rows);
  for (Index r = 0; r < rows; ++r) {
    const Eigen::VectorXd mu = mean.row(r).transpose(), sigma = sd.row(r).transpose();
    p.lower[r] = mixture_quantile(weights, mu, sigma, 0.5 * (1.0 - level));
    p.upper[r] = mixture_quantile(weights, mu, sigma, 0.5 * (1.0 + level));
  }
  return p;
}

}  // namespace

CommitteeWeighting parse_committee_weighting(std::string_view name) {
  return enum_names<CommitteeWeighting>().parse(name);
}

void check_committee_spec(const ModelSpec& spec) {
  if (spec.likelihood.kind != LikelihoodKind::kGaussian && spec.likelihood.kind != LikelihoodKind::kHetero) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("a committee's likelihood must be gaussian or hetero (it mixes Gaussian "
                            "predictives), not ") +
                    to_string(spec.likelihood.kind));
  }
}

const char* to_string(CommitteeWeighting weighting) { return enum_names<CommitteeWeighting>().name(weighting); }

void CommitteeOptions::validate() const {
  if (members < 1) invalid_option("CommitteeOptions", "members", members, "must be at least 1");
  if (threads < 0) invalid_option("CommitteeOptions", "threads", threads, "must be 0 (one per core) or more");
}

namespace {

// Member k's fit: the method without its committee (nor a noise model), from member k's start.
LaplaceMethod member_method(const LaplaceMethod& method, int k) {
  LaplaceMethod member = method;
  member.committee.reset();
  member.noise_model.reset();
  member.start = committee_member_start(method.start, k);
  member.checkpoint.clear();  // a member's own, in the committee's folder (run_member)
  return member;
}

// A member's file in the committee's folder (CommitteeOptions::directory): what its fit depended
// on, how it ended, and its model as a model file holds it (model_json.h).
constexpr const char* kMemberFormat = "occam-committee-member";
constexpr const char* kMemberFile = "committee member file";

std::string member_path(const std::string& directory, int k) {
  return (std::filesystem::path(directory) / ("member_" + std::to_string(k + 1) + ".json")).string();
}

// Member k's evidence ascent while it runs (LaplaceMethod::checkpoint), where the members run the
// joint ascent: a member stopped or killed goes on from its last step. Removed once the member's
// own file is written.
std::string member_checkpoint_path(const std::string& directory, int k) {
  return (std::filesystem::path(directory) / ("member_" + std::to_string(k + 1) + ".checkpoint.json")).string();
}
bool members_keep_checkpoints(const LaplaceMethod& method) {
  return method.evidence.loop == EvidenceLoop::kJoint && method.evidence.strategy == HyperStrategy::kEvidence;
}

// The member's file: its fit, or the numerical failure that left it without one (a failure is
// the same every time, so it is kept too).
void write_member(const std::string& path, const nlohmann::json& fingerprint, const FittedModel* model,
                  const std::string& failure) {
  nlohmann::json j = {{"format", kMemberFormat}, {"version", 1}, {"fingerprint", fingerprint}};
  if (model != nullptr) {
    const FitSummary& s = model->summary;
    const auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    j["fit"] = {{"message", s.message},
                {"log_evidence", number(s.log_evidence)},
                {"symmetry_log_factor", number(s.symmetry_log_factor)},
                {"train_rmse", number(s.train_rmse)},
                {"train_accuracy", number(s.train_accuracy)},
                {"num_data", s.num_data},
                {"seconds", s.seconds},
                {"data_source", s.data_source},
                {"options", s.options}};
    j["model"] = internal::model_to_json(*model);
  } else {
    j["failure"] = failure;
  }
  write_file_atomic(path, j.dump(1) + "\n");
}

// Member k read back from its file, when there is one: its model (with the summary's scalars it
// was fitted with; not the engines' own summaries, as for any model read from a file) or its
// failure. Throws Error(kInvalidArgument) when the file was fitted from another spec, method, start
// or data, Error(kInvalidInput) when it is damaged.
bool read_member(const std::string& path, const nlohmann::json& fingerprint, std::optional<FittedModel>* model,
                 std::string* failure) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return false;
  const nlohmann::json j = internal::parse_json_file(path, read_file(path), kMemberFile);
  if (j.value("format", std::string()) != kMemberFormat)
    internal::corrupt_file(path, kMemberFile, "not a member's file");
  internal::check_format_version(path, j, 1, kMemberFile, kMemberFormat);
  const std::string differences =
      internal::fingerprint_differences(internal::required_field(path, kMemberFile, j, "fingerprint"), fingerprint);
  if (!differences.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                path + " was fitted with other settings (differing: " + differences +
                    "); a committee continues in its folder only with its own spec, data and method: "
                    "fit into another folder, or remove this one");
  }
  if (j.contains("failure")) {
    *failure = j.at("failure").is_string() ? j.at("failure").get<std::string>() : "failed";
    return true;
  }
  FittedModel m = internal::model_from_json(path, internal::required_field(path, kMemberFile, j, "model"));
  const nlohmann::json& fit = internal::required_field(path, kMemberFile, j, "fit");
  try {
    const auto number = [&fit](const char* name) { return fit.at(name).is_null() ? kNaN : fit.at(name).get<double>(); };
    m.summary.message = fit.at("message").get<std::string>();
    m.summary.log_evidence = number("log_evidence");
    m.summary.symmetry_log_factor = number("symmetry_log_factor");
    m.summary.train_rmse = number("train_rmse");
    m.summary.train_accuracy = number("train_accuracy");
    m.summary.elbo = kNaN;
    m.summary.num_data = fit.at("num_data").get<Index>();
    m.summary.seconds = fit.at("seconds").get<double>();
    m.summary.data_source = fit.at("data_source").get<std::string>();
    m.summary.options = fit.at("options");
  } catch (const nlohmann::json::exception& e) {
    internal::corrupt_file(path, kMemberFile, "field 'fit': " + internal::without_json_tag(e.what()));
  }
  *model = std::move(m);
  return true;
}

// The members fitted at once: options.threads (0: one per core), at most the members.
int threads_at_once(const CommitteeOptions& options) {
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::min(options.members, options.threads == 0 ? hardware : options.threads);
}

}  // namespace

FitMemoryRequest committee_memory_request(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                          const CommitteeOptions& options) {
  LaplaceMethod member = method;
  member.committee.reset();  // one member's fit
  FitMemoryRequest request = fit_memory_request(spec, data, member);
  request.fits_at_once = threads_at_once(options);
  // A structured approximation keeps blocks and vectors far smaller than W × W.
  request.models_kept = method.evidence.structure.full() ? options.members : 0;
  return request;
}

StartOptions committee_member_start(const StartOptions& start, int k) {
  if (k == 0) return start;
  StartOptions member;
  member.seed = mix_seed(start.seed ^ mix_seed(static_cast<std::uint64_t>(k)));
  member.stream = start.stream;
  return member;
}

double read_back_seconds(const Committee& c) {
  double seconds = 0.0;
  std::size_t i = 0;  // models[i] is the i-th member without a failure
  for (const CommitteeMember& m : c.members) {
    if (!m.failure.empty()) continue;
    if (m.read_back && i < c.models.size()) seconds += c.models[i].summary.seconds;
    ++i;
  }
  return seconds;
}

std::optional<FittedModel> read_committee_member(const std::string& directory, int k, const ModelSpec& spec,
                                                 const Dataset& data, const LaplaceMethod& method) {
  if (k < 0) throw Error(ErrorKind::kInvalidArgument, "read_committee_member: a member's index is 0 or more");
  std::optional<FittedModel> model;
  std::string failure;
  read_member(member_path(directory, k),
              internal::laplace_fingerprint(spec, member_method(method, k), internal::data_fingerprint(data)), &model,
              &failure);
  return model;
}

Committee fit_committee(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                        const CommitteeOptions& options, const FitCallback& callback) {
  options.validate();
  check_committee_spec(spec);
  if (method.noise_model) {
    throw Error(ErrorKind::kInvalidArgument,
                "LaplaceMethod.committee and LaplaceMethod.noise_model do not go together (a committee mixes "
                "Gaussian predictives of one noise level each)");
  }
  if (method.parallel.communicator != nullptr && method.parallel.communicator->size() > 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "LaplaceMethod.committee runs as one process (CommitteeOptions::threads fits members at once)");
  }
  if (!method.checkpoint.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "LaplaceMethod.checkpoint keeps one evidence ascent, and a committee runs one a member: its folder "
                "(CommitteeOptions::directory) keeps each member's checkpoint");
  }
  const auto started = std::chrono::steady_clock::now();
  const int K = options.members;
  const int threads = threads_at_once(options);
  // The members fitted at once and every member's kept factor, refused before the first fit (each
  // fit checks only its own).
  const MemoryLimit& limit = method.memory;
  check_fit_memory(estimate_fit_memory(committee_memory_request(spec, data, method, options)), limit.resolve(),
                   limit.name());
  std::vector<std::optional<FittedModel>> fitted(static_cast<std::size_t>(K));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(K));
  std::vector<bool> read_back(static_cast<std::size_t>(K), false);  // from the folder, not fitted here
  const std::string& folder = options.directory;
  if (!folder.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec || !std::filesystem::is_directory(folder, ec)) {
      throw Error(ErrorKind::kIo, "cannot create the committee's folder " + folder);
    }
  }
  // The members the folder holds, every file checked before the first fit.
  std::vector<nlohmann::json> fingerprints(static_cast<std::size_t>(K));
  const nlohmann::json data_checked = folder.empty() ? nlohmann::json() : internal::data_fingerprint(data);
  for (int k = 0; k < K && !folder.empty(); ++k) {
    const auto ku = static_cast<std::size_t>(k);
    fingerprints[ku] = internal::laplace_fingerprint(spec, member_method(method, k), data_checked);
    std::string failure;
    if (read_member(member_path(folder, k), fingerprints[ku], &fitted[ku], &failure)) {
      read_back[ku] = true;
      if (!failure.empty()) errors[ku] = std::make_exception_ptr(Error(ErrorKind::kNumerical, failure));
    }
  }
  std::atomic<bool> aborted{false};
  std::atomic<int> next{0};
  std::mutex callback_mutex;

  // A member that finds the run aborted is skipped: it ends with neither a fit nor an error.
  auto run_member = [&](int k) {
    const auto ku = static_cast<std::size_t>(k);
    if (aborted.load() || fitted[ku] || errors[ku]) return;  // or read back from the folder
    LaplaceMethod member = member_method(method, k);
    if (!folder.empty() && members_keep_checkpoints(member)) member.checkpoint = member_checkpoint_path(folder, k);
    FitCallback watch;
    if (callback) {
      watch = [&, k](const FitProgress& p) {
        if (aborted.load()) return CallbackReturn::kAbort;
        FitProgress tagged = p;
        tagged.member = k;
        std::lock_guard<std::mutex> lock(callback_mutex);
        const CallbackReturn r = callback(tagged);
        if (r == CallbackReturn::kAbort) aborted.store(true);
        return r;
      };
    } else {
      watch = [&](const FitProgress&) { return aborted.load() ? CallbackReturn::kAbort : CallbackReturn::kContinue; };
    }
    try {
      fitted[ku] = fit(spec, data, member, watch);
    } catch (...) {
      errors[ku] = std::current_exception();
    }
    if (folder.empty()) return;
    // Kept unless the fit was stopped (a later run fits it again) or failed otherwise than
    // numerically (a bad spec or data, thrown below for every member).
    try {
      if (fitted[ku] && fitted[ku]->summary.termination != Termination::kAborted) {
        write_member(member_path(folder, k), fingerprints[ku], &*fitted[ku], "");
        std::error_code ec;
        if (!member.checkpoint.empty()) std::filesystem::remove(member.checkpoint, ec);  // the member's file holds it
      } else if (errors[ku]) {
        try {
          std::rethrow_exception(errors[ku]);
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::kNumerical)
            write_member(member_path(folder, k), fingerprints[ku], nullptr, e.what());
        } catch (...) {
        }
      }
    } catch (...) {
      if (!errors[ku]) errors[ku] = std::current_exception();
      fitted[ku].reset();
    }
  };

  if (threads <= 1) {
    for (int k = 0; k < K; ++k) run_member(k);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        for (int k = next++; k < K; k = next++) run_member(k);
      });
    }
    for (std::thread& t : pool) t.join();
  }

  Committee c;
  c.spec = spec;
  c.options = options;
  c.interrupted = aborted.load();
  std::exception_ptr first_numerical;
  for (int k = 0; k < K; ++k) {
    const auto ku = static_cast<std::size_t>(k);
    if (!fitted[ku] && !errors[ku]) continue;  // skipped after an abort
    CommitteeMember m;
    m.index = k;
    m.log_evidence = kNaN;
    m.read_back = read_back[ku];
    if (errors[ku]) {
      try {
        std::rethrow_exception(errors[ku]);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kNumerical) throw;  // the same for every member: a bad spec or data
        if (!first_numerical) first_numerical = errors[ku];
        m.failure = e.what();
      }
      c.members.push_back(m);
      continue;
    }
    const FitSummary& s = fitted[ku]->summary;
    m.log_evidence = s.log_evidence + s.symmetry_log_factor;
    c.members.push_back(m);
    c.models.push_back(std::move(*fitted[ku]));
  }
  if (c.models.empty()) {
    if (first_numerical) std::rethrow_exception(first_numerical);
    throw Error(ErrorKind::kNumerical, "fit_committee: no member was fitted (stopped before the first)");
  }

  reweight_committee(&c, options.weighting);
  // The members read back count at the seconds their own fits took.
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() + read_back_seconds(c);
  return c;
}

void reweight_committee(Committee* c, CommitteeWeighting weighting) {
  // π: the log-evidence masses normalised by log-sum-exp (members without a finite evidence get
  // none), or equal.
  if (c == nullptr) throw Error(ErrorKind::kInvalidArgument, "reweight_committee: no committee given");
  std::vector<double> log_mass;
  for (const CommitteeMember& m : c->members)
    if (m.failure.empty()) log_mass.push_back(m.log_evidence);
  const auto n = static_cast<Index>(log_mass.size());
  if (n == 0 || n != static_cast<Index>(c->models.size())) {
    throw Error(ErrorKind::kInvalidArgument, "reweight_committee: the committee has " +
                                                 std::to_string(c->models.size()) + " models for " + std::to_string(n) +
                                                 " fitted members");
  }
  Eigen::VectorXd weights = Eigen::VectorXd::Zero(n);
  if (weighting == CommitteeWeighting::kEqual) {
    weights.setConstant(1.0 / static_cast<double>(n));
  } else {
    double top = -std::numeric_limits<double>::infinity();
    for (double l : log_mass)
      if (std::isfinite(l)) top = std::max(top, l);
    if (!std::isfinite(top)) {
      throw Error(ErrorKind::kNumerical, "no member of the committee has a finite log-evidence to weight it by");
    }
    for (Index i = 0; i < n; ++i) {
      const double l = log_mass[static_cast<std::size_t>(i)];
      weights[i] = std::isfinite(l) ? std::exp(l - top) : 0.0;
    }
    weights /= weights.sum();
  }
  c->weights = weights;
  c->options.weighting = weighting;
  Index i = 0;
  for (CommitteeMember& m : c->members)
    if (m.failure.empty()) m.weight = c->weights[i++];
}

namespace {

// "committee of K Laplace fits, weighted by evidence": the committee model's message and the first
// line of its brief report.
std::string committee_heading(const Committee& c) {
  return "committee of " + std::to_string(c.members.size()) + " Laplace fits, weighted by " +
         to_string(c.options.weighting) + (c.interrupted ? " (interrupted)" : "");
}

}  // namespace

FittedModel committee_model(Committee c) {
  if (c.models.empty()) throw Error(ErrorKind::kInvalidArgument, "committee_model: the committee has no members");
  const FittedModel& first = c.models.front();  // its network, likelihood, prior, standardizer and names
  FittedModel model;
  model.spec = c.spec;
  model.network = first.network->clone();
  model.likelihood = first.likelihood->clone();
  model.prior = first.prior;
  model.standardizer = first.standardizer;
  model.feature_names = first.feature_names;
  model.target_name = first.target_name;
  FitSummary summary;
  summary.termination = c.termination();
  summary.message = committee_heading(c);
  // The members' evidences are in the committee; the mixture itself has none of its own.
  summary.log_evidence = summary.elbo = summary.train_rmse = summary.train_accuracy = kNaN;
  summary.symmetry_log_factor = kNaN;
  summary.num_data = first.summary.num_data;
  summary.num_params = first.summary.num_params;
  summary.seconds = c.seconds;
  summary.data_source = first.summary.data_source;
  model.summary = std::move(summary);
  model.report = c.report();
  model.posterior = LaplaceMixture{std::make_shared<const Committee>(std::move(c))};
  return model;
}

Prediction Committee::predict(const Eigen::MatrixXd& X, const PredictOptions& options) const {
  options.validate();
  Eigen::MatrixXd mean, sd;
  member_predictives(*this, X, options, &mean, &sd);
  return mix(weights, mean, sd, options.level);
}

Prediction Committee::predict(const Table& inputs, const PredictOptions& options) const {
  options.validate();
  Eigen::MatrixXd mean, sd;
  member_predictives(*this, inputs, options, &mean, &sd);
  return mix(weights, mean, sd, options.level);
}

Eigen::VectorXd Committee::log_predictive_density(const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
                                                  const PredictOptions& options) const {
  if (y.size() != X.rows()) {
    throw Error(ErrorKind::kInvalidArgument, "Committee::log_predictive_density: " + std::to_string(X.rows()) +
                                                 " rows of inputs but " + std::to_string(y.size()) + " targets");
  }
  options.validate();
  Eigen::MatrixXd mean, sd;
  member_predictives(*this, X, options, &mean, &sd);
  const double half_log_2pi = 0.5 * std::log(2.0 * std::numbers::pi);
  Eigen::VectorXd out(X.rows());
  for (Index r = 0; r < X.rows(); ++r) {
    // log Σ_k π_k N(y; μ_k, σ_k²) by log-sum-exp over the members with weight.
    double top = -std::numeric_limits<double>::infinity();
    Eigen::VectorXd terms(mean.cols());
    for (Index k = 0; k < mean.cols(); ++k) {
      const double z = (y[r] - mean(r, k)) / sd(r, k);
      terms[k] = weights[k] > 0.0 ? std::log(weights[k]) - half_log_2pi - std::log(sd(r, k)) - 0.5 * z * z
                                  : -std::numeric_limits<double>::infinity();
      top = std::max(top, terms[k]);
    }
    out[r] = top + std::log((terms.array() - top).exp().sum());
  }
  return out;
}

std::string Committee::brief_report() const {
  std::string out = committee_heading(*this) + "\n";
  Index i = 0;
  for (const CommitteeMember& m : members) {
    char line[240];
    if (!m.failure.empty()) {
      std::snprintf(line, sizeof line, "  member %d: failed (%s)\n", m.index + 1, m.failure.c_str());
    } else {
      const FittedModel& model = models[static_cast<std::size_t>(i++)];
      std::snprintf(line, sizeof line, "  member %d: %s, log-evidence + log symmetry %.6g, weight %.4g\n", m.index + 1,
                    to_string(model.summary.termination), m.log_evidence, m.weight);
    }
    out += line;
  }
  return out;
}

Termination Committee::termination() const {
  if (interrupted) return Termination::kAborted;
  for (const FittedModel& model : models)
    if (model.summary.termination != Termination::kConverged) return model.summary.termination;
  return Termination::kConverged;
}

nlohmann::json Committee::report() const {
  nlohmann::json r;
  r["method"] = "committee";
  r["termination"] = to_string(termination());
  r["weighting"] = to_string(options.weighting);
  r["members_requested"] = options.members;
  r["interrupted"] = interrupted;
  r["seconds"] = seconds;
  nlohmann::json list = nlohmann::json::array();
  std::size_t i = 0;
  for (const CommitteeMember& m : members) {
    nlohmann::json member;
    member["index"] = m.index;
    member["read_back"] = m.read_back;
    if (!m.failure.empty()) {
      member["termination"] = to_string(Termination::kFailure);
      member["failure"] = m.failure;
    } else {
      const FittedModel& model = models[i++];
      member["termination"] = to_string(model.summary.termination);
      member["log_evidence"] = std::isfinite(m.log_evidence) ? nlohmann::json(m.log_evidence) : nlohmann::json();
      member["weight"] = m.weight;
      member["report"] = model.report;
    }
    list.push_back(std::move(member));
  }
  r["members"] = std::move(list);
  return r;
}

}  // namespace occam

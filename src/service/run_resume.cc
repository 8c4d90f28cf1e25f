// run_resume.cc — a sampling job's run folder: the fingerprint of what its draws depend on, the
// resume point read back from its checkpoints, and the writers of its chain files, model.json and
// run.json (run_resume.h; the layout is run_directory.h's).

#include "service/run_resume.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>

#include "occam/mcmc/checkpoint.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/method_options.h"
#include "occam/status.h"
#include "core/parallel/agreement.h"

namespace occam {
namespace internal {
namespace {

// "%016llx" of a 64-bit hash.
std::string hex64(std::uint64_t v) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(v));
  return hex;
}

// FNV-1a of a matrix's shape and values, continuing `hash`.
std::uint64_t matrix_checksum(std::uint64_t hash, const Eigen::MatrixXd& m) {
  const Index shape[2] = {m.rows(), m.cols()};
  hash = internal::fnv1a64(hash, shape, sizeof shape);
  return internal::fnv1a64(hash, m.data(), static_cast<std::size_t>(m.size()) * sizeof(double));
}

// Runs `step` on the processes of comm (null: this one) for which `here` holds, then agrees on
// whether it failed anywhere (agree_on_failure): every process throws the first failure, prefixed
// with `what` and naming its process, so that none goes on to wait for the failed one in a
// collective sum.
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

// The data's entry of a fingerprint: its shape, target and the checksum `hash` of its values,
// continued by its class labels and feature names.
nlohmann::json data_entry(const Dataset& data, std::uint64_t hash) {
  for (const std::string& label : data.class_labels) hash = internal::fnv1a64(hash, label.c_str(), label.size() + 1);
  for (const std::string& name : data.feature_names) hash = internal::fnv1a64(hash, name.c_str(), name.size() + 1);
  return {
      {"rows", data.num_rows()}, {"columns", data.X.cols()}, {"target", data.target_name}, {"fnv1a64", hex64(hash)}};
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
  nlohmann::json j = sampling_settings(spec, method);
  j["data"] = data_entry(data, hash);
  return j;
}

// The fields in which two fingerprints differ, as "sampler.num_warmup (1000 in the run, 500 now)".
void fingerprint_differences(const nlohmann::json& run, const nlohmann::json& now, const std::string& path,
                             std::vector<std::string>* out) {
  if (run.is_object() && now.is_object()) {
    for (const auto& [key, value] : run.items()) {
      fingerprint_differences(value, now.contains(key) ? now.at(key) : nlohmann::json(),
                              path.empty() ? key : path + "." + key, out);
    }
    for (const auto& [key, value] : now.items()) {
      if (!run.contains(key))
        fingerprint_differences(nlohmann::json(), value, path.empty() ? key : path + "." + key, out);
    }
    return;
  }
  if (run != now) out->push_back(path + " (" + run.dump() + " in the run, " + now.dump() + " now)");
}

// The run's settings must be those the checkpoints were written with: throws Error(kInvalidArgument)
// naming every field that differs.
void check_same_settings(const nlohmann::json& run, const nlohmann::json& now, const std::string& folder) {
  const std::string differences = internal::fingerprint_differences(run, now);
  if (differences.empty()) return;
  throw Error(ErrorKind::kInvalidArgument,
              folder + " was sampled with other settings; a run resumes only with its own. Differing: " + differences);
}

// A complete or failed run is not resumed (run.json says which it is).
void check_unfinished(const std::filesystem::path& dir) {
  const std::string folder = dir.string();
  std::error_code ec;
  if (!std::filesystem::exists(dir / kRunIndex, ec)) return;
  const nlohmann::json index = nlohmann::json::parse(read_file((dir / kRunIndex).string()), nullptr, false);
  const std::string status = index.is_object() ? index.value("status", std::string()) : std::string();
  if (status == "complete") {
    throw Error(ErrorKind::kInvalidInput,
                folder + ": the run is complete (run.json: status complete); there is nothing to resume");
  }
  if (status == "failed") {
    throw Error(ErrorKind::kInvalidInput, folder + ": the run failed (" +
                                              index.value("message", std::string("no reason recorded")) +
                                              "); resuming it would fail again: sample again into " + folder);
  }
}

// The header comment lines of the chain files (CmdStan's layout, read by R and ArviZ).
std::vector<std::string> chain_file_config(const ModelSpec& spec, const SamplingMethod& method,
                                           const Posterior& posterior, const Dataset& data) {
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

// SGLD's and SGHMC's options.
nlohmann::json sg_settings(const mcmc::SamplerOptions& o) {
  const mcmc::StochasticGradientOptions& g = o.stochastic_gradient;
  return {{"batch_size", g.batch_size},           {"friction", g.friction},      {"cycles", g.cycles},
          {"exploration", g.exploration},         {"rmsprop", g.rmsprop},        {"rmsprop_decay", g.rmsprop_decay},
          {"rmsprop_epsilon", g.rmsprop_epsilon}, {"gibbs_every", g.gibbs_every}};
}

}  // namespace

nlohmann::json data_fingerprint(const Dataset& data) {
  return data_entry(data, matrix_checksum(matrix_checksum(matrix_checksum(kFnvOffset, data.X), data.Y), data.offset));
}

std::string fingerprint_differences(const nlohmann::json& then, const nlohmann::json& now) {
  std::vector<std::string> differences;
  fingerprint_differences(then, now, "", &differences);
  std::string joined;
  for (std::size_t i = 0; i < differences.size(); ++i) joined += (i ? "; " : "") + differences[i];
  return joined;
}

RunFolder::RunFolder(const ModelSpec& spec, const SamplingMethod& method, const Dataset& data, const Communicator* comm)
    : spec_(spec), method_(method), data_(data), comm_(comm), writes_(comm == nullptr || comm->rank() == 0) {
  if (method.resume && method.run_directory.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "SamplingMethod.resume: a run resumes from its run_directory, which is not set");
  }
  if (!method.run_directory.empty()) fingerprint_ = sampling_fingerprint(spec, method, data);
}

std::vector<std::optional<mcmc::ChainState>> RunFolder::open(int chains) {
  const std::string& dir = method_.run_directory;
  if (dir.empty()) return {};
  // The folder is this run's alone until run.json is written (a second run into it, or a second
  // resume, is refused): two runs appending to the same chain files would interleave their rows.
  on_processes(comm_, writes_, "locking the run directory " + dir,
               [&] { lock_.emplace(dir, RunDirectoryLock::Access::kWrite); });
  if (!method_.resume) return {};
  // Process 0 cuts the chain files back to their checkpoints; then every other process reads them.
  on_processes(comm_, writes_, "resuming " + dir, [&] { resume_ = read_resume_point(chains, true); });
  on_processes(comm_, !writes_,
               "reading the checkpoints of " + dir + " (is the folder on a file system every process sees?)",
               [&] { resume_ = read_resume_point(chains, false); });
  ++resume_.resumed;
  return resume_.states;
}

// The checkpoints of the run, checked against what is asked now; with `cut_back` (the process
// that writes the folder) each chain file is cut back to its checkpoint, and then its kept draws
// are read back from it (written with 17 significant digits, they read back exactly).
RunFolder::ResumePoint RunFolder::read_resume_point(int chains, bool cut_back) const {
  namespace fs = std::filesystem;
  const fs::path dir(method_.run_directory);
  const std::string& folder = method_.run_directory;
  check_unfinished(dir);
  ResumePoint point;
  point.states.resize(static_cast<std::size_t>(chains));
  point.positions.resize(static_cast<std::size_t>(chains));
  std::error_code ec;
  for (int c = 0; c < chains; ++c) {
    const fs::path path = dir / checkpoint_file_name(c);
    if (!fs::exists(path, ec)) continue;
    const std::string name = path.string();
    const nlohmann::json j = nlohmann::json::parse(read_file(name), nullptr, false);
    if (!j.is_object() || j.value("format", std::string()) != "occam-checkpoint" || !j.contains("run") ||
        !j.contains("state") || !j.contains("bytes") || !j.at("bytes").is_number_unsigned() || !j.contains("rows") ||
        !j.at("rows").is_number_integer()) {
      throw Error(ErrorKind::kInvalidInput,
                  name + ": not a checkpoint of occam (damaged?); sample again into " + folder);
    }
    if (j.value("version", 0) > 1) throw Error(ErrorKind::kInvalidInput, name + ": written by a newer occam");
    check_same_settings(j.at("run"), fingerprint_, folder);
    mcmc::ChainState state;
    try {
      state = mcmc::chain_state_from_json(j.at("state"));
    } catch (const Error& e) {
      throw Error(ErrorKind::kInvalidInput, name + ": " + e.what());
    }
    if (state.chain != c)
      throw Error(ErrorKind::kInvalidInput, name + ": holds chain " + std::to_string(state.chain + 1) + "'s state");
    const auto bytes = j.at("bytes").get<std::uintmax_t>();
    const auto rows = j.at("rows").get<long long>();
    const fs::path chain_path = dir / chain_file_name(c);
    const std::uintmax_t size = fs::file_size(chain_path, ec);
    if (ec || size < bytes || state.draws > rows) {
      throw Error(ErrorKind::kInvalidInput, chain_path.string() + ": missing or shorter than its checkpoint records (" +
                                                std::to_string(bytes) + " bytes); sample again into " + folder);
    }
    point.resumed = std::max(point.resumed, j.value("resumed", 0));
    point.positions[static_cast<std::size_t>(c)] = {bytes, rows};
    point.states[static_cast<std::size_t>(c)] = std::move(state);
  }
  if (std::none_of(point.states.begin(), point.states.end(), [](const auto& s) { return s.has_value(); })) {
    throw Error(
        ErrorKind::kInvalidInput,
        folder +
            ": no checkpoint to resume from (checkpoint_<k>.json): the run stopped before its chains had "
            "their starting points, was sampled without checkpoints, or is not a run folder; sample again into " +
            folder);
  }
  // The folder is a run in progress again: no manifest (readers refuse it) and no tables of the
  // draws so far. Only then are the chain files cut back.
  if (cut_back) {
    for (const char* name : {kRunIndex, "summary.csv", "chains.csv"}) fs::remove(dir / name, ec);
  }
  for (int c = 0; c < chains; ++c) {
    std::optional<mcmc::ChainState>& state = point.states[static_cast<std::size_t>(c)];
    if (!state) continue;
    const auto [bytes, rows] = point.positions[static_cast<std::size_t>(c)];
    const fs::path chain_path = dir / chain_file_name(c);
    if (cut_back) fs::resize_file(chain_path, bytes, ec);
    if (ec)
      throw Error(ErrorKind::kIo, "cannot cut '" + chain_path.string() + "' back to its checkpoint: " + ec.message());
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

void RunFolder::start(FittedModel* model, const Posterior& posterior) {
  namespace fs = std::filesystem;
  const std::string& dir = method_.run_directory;
  if (dir.empty()) return;
  config_ = chain_file_config(spec_, method_, posterior, data_);
  model->network = posterior.network().clone();
  model->likelihood = posterior.likelihood().clone();
  model->prior = posterior.prior();
  on_processes(comm_, writes_, "preparing the run directory " + dir, [&] {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) throw Error(ErrorKind::kIo, "cannot create the directory '" + dir + "'");
    // An earlier run's manifest, then its files: the folder never mixes runs (run_directory.h).
    // A resumed run keeps its folder, model.json included.
    if (method_.resume) return;
    clear_run_directory(dir);
    std::vector<std::string> chain_files;
    for (int c = 0; c < method_.sampler.chains; ++c) chain_files.push_back(chain_file_name(c));
    write_run_manifest((fs::path(dir) / kRunManifest).string(), *model, method_to_json(method_), chain_files,
                       method_.request);
  });
}

std::unique_ptr<mcmc::DrawSink> RunFolder::chain_sink(int chain) {
  const std::string& dir = method_.run_directory;
  if (dir.empty() || !writes_) return nullptr;
  const auto c = static_cast<std::size_t>(chain);
  const std::string path = (std::filesystem::path(dir) / chain_file_name(chain)).string();
  std::unique_ptr<mcmc::StanCsvWriter> file;
  if (c < resume_.states.size() && resume_.states[c]) {
    file = std::make_unique<mcmc::StanCsvWriter>(path, resume_.positions[c].first, resume_.positions[c].second);
  } else {
    std::vector<std::string> lines = config_;
    lines.push_back("id = " + std::to_string(chain + 1));
    file = std::make_unique<mcmc::StanCsvWriter>(path, lines);
  }
  if (method_.sampler.checkpoint_every <= 0) return file;
  return std::make_unique<CheckpointedCsvSink>(std::move(file),
                                               (std::filesystem::path(dir) / checkpoint_file_name(chain)).string(),
                                               fingerprint_, resume_.resumed);
}

void RunFolder::seal(RunStatus status, const std::string& message, const std::vector<mcmc::ChainSummary>& chains) {
  if (method_.run_directory.empty() || !writes_) return;
  RunRecord record;
  record.status = status;
  record.message = message;
  record.chains = method_.sampler.chains;
  record.seed = method_.sampler.seed;
  for (int c = 0; c < record.chains; ++c) record.checkpoints.push_back(checkpoint_file_name(c));
  record.resumed = resume_.resumed;
  record.summaries = chains;
  write_run_index(method_.run_directory, record);
}

}  // namespace internal

nlohmann::json sampling_settings(const ModelSpec& spec, const SamplingMethod& method) {
  const mcmc::SamplerOptions& o = method.sampler;
  const mcmc::NetworkModelOptions& c = method.chains;
  nlohmann::json start = nullptr;
  if (method.first_chain_start)
    start = {{"seed", method.first_chain_start->seed}, {"stream", method.first_chain_start->stream}};
  nlohmann::json settings = {
      {"spec", spec.to_json()},
      {"sampler",
       {{"method", mcmc::to_string(o.method)},
        {"chains", o.chains},
        {"num_warmup", o.num_warmup},
        {"num_draws", o.num_draws},
        {"thin", o.thin},
        {"save_warmup", o.save_warmup},
        {"seed", o.seed},
        {"metric", mcmc::to_string(o.metric)},
        {"adapt_metric", o.adapt_metric},
        {"initial_inverse_metric",
         internal::hex64(internal::matrix_checksum(internal::kFnvOffset, o.initial_inverse_metric))},
        {"initial_step_size", o.initial_step_size},
        {"adapt_step_size", o.adapt_step_size},
        {"target_accept", o.target_accept},
        {"max_depth", o.nuts.max_depth},
        {"num_steps", o.hmc.num_steps},
        {"jitter", o.hmc.jitter},
        {"keep_draws", o.keep_draws}}},
      {"chains",
       {{"gibbs", c.gibbs},
        {"alpha_shape", c.hyper.alpha.shape},
        {"alpha_rate", c.hyper.alpha.rate},
        {"beta_shape", c.hyper.beta.shape},
        {"beta_rate", c.hyper.beta.rate},
        {"sample_beta", c.hyper.sample_beta},
        {"init", mcmc::to_string(c.init)},
        {"map_max_iterations", c.map_max_iterations},
        {"non_centered", c.non_centered},
        {"log_lik", c.log_lik}}},
      {"monitor", internal::hex64(internal::matrix_checksum(internal::kFnvOffset, method.monitor))},
      {"laplace_metric", method.laplace_metric},
      {"first_chain_start", start}};
  // Only where used, so that the settings of the exact samplers' runs read as before.
  if (mcmc::is_stochastic_gradient(o.method)) settings["sampler"]["stochastic_gradient"] = internal::sg_settings(o);
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

}  // namespace occam

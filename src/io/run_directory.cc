// run_directory.cc — writing and reading an MCMC run directory.

#include "io/run_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "occam/io.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/status.h"
#include "io/json_error_path.h"
#include "io/model_json.h"

namespace occam::internal {
namespace {

namespace fs = std::filesystem;

// The files of the layout, removed with an earlier run even when it left no manifest.
constexpr std::array<const char*, 3> kLayoutFiles = {kRunManifest, "summary.csv", "chains.csv"};

const char* status_name(RunStatus status) {
  switch (status) {
    case RunStatus::kComplete:
      return "complete";
    case RunStatus::kInterrupted:
      return "interrupted";
    case RunStatus::kFailed:
      return "failed";
  }
  return "failed";
}

// A name run.json may list: a file of the folder itself, never a path leading out of it.
bool plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos && name != kRunIndex &&
         name != kRunLock;
}

// FNV-1a, 64 bits (Fowler, Noll and Vo): tells a file changed since the run from the one it
// wrote. It is a check against accidents (a second run, a copy, an edit), not against forgery.
std::string fnv1a64(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, "cannot read '" + path.string() + "'");
  std::uint64_t hash = kFnvOffset;
  std::array<char, 1 << 16> buffer;
  while (in) {
    in.read(buffer.data(), buffer.size());
    hash = internal::fnv1a64(hash, buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(ErrorKind::kIo, "cannot read '" + path.string() + "'");
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

// {"name", "bytes", "fnv1a64"} of a file of the folder, or null when it does not exist.
nlohmann::json file_entry(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  const fs::path path = dir / name;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  const std::uintmax_t bytes = fs::file_size(path, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot read the size of '" + path.string() + "': " + ec.message());
  return {{"name", name}, {"bytes", bytes}, {"fnv1a64", fnv1a64(path)}};
}

std::string folder_name(const fs::path& dir) { return dir.empty() ? std::string(".") : dir.string(); }

void write_index(const fs::path& dir, const nlohmann::json& index) {
  write_file_atomic((dir / kRunIndex).string(), index.dump(2) + "\n");
}

nlohmann::json read_index(const fs::path& dir) {
  const std::string path = (dir / kRunIndex).string();
  nlohmann::json j;
  const std::string text = read_file(path);
  const std::string beyond = json_limit_problem(text);
  if (!beyond.empty()) {
    throw Error(ErrorKind::kInvalidInput,
                path + ": the run's manifest is damaged (JSON " + beyond + "); sample again into " + folder_name(dir));
  }
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, path + ": the run's manifest is damaged (" + std::string(e.what()) +
                                              "); sample again into " + folder_name(dir));
  }
  return j;
}

}  // namespace

void clear_run_directory(const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> names(kLayoutFiles.begin(), kLayoutFiles.end());
  const fs::path index = dir / kRunIndex;
  if (fs::exists(index, ec)) {
    try {
      // The manifest is held in a variable: a range-for over read_index(dir).at("files") would walk a
      // member of a temporary destroyed before the loop starts.
      const nlohmann::json manifest = read_index(dir);
      for (const nlohmann::json& file : manifest.at("files")) names.push_back(file.at("name").get<std::string>());
    } catch (const std::exception&) {
      // A damaged manifest: the files of the layout are removed all the same.
    }
    // The manifest goes first: from here on no reader takes the folder for a finished run.
    if (!fs::remove(index, ec) && ec) {
      throw Error(ErrorKind::kIo, "cannot remove the earlier run's '" + index.string() + "': " + ec.message());
    }
  }
  for (int c = 0; fs::exists(dir / chain_file_name(c), ec); ++c) names.push_back(chain_file_name(c));
  for (int c = 0; fs::exists(dir / checkpoint_file_name(c), ec); ++c) names.push_back(checkpoint_file_name(c));
  for (const std::string& name : names) {
    if (!plain_file_name(name)) continue;
    if (!fs::remove(dir / name, ec) && ec) {
      throw Error(ErrorKind::kIo, "cannot remove the earlier run's '" + (dir / name).string() + "': " + ec.message());
    }
  }
}

void write_run_index(const fs::path& dir, const RunRecord& record) {
  nlohmann::json files = nlohmann::json::array(), chains = nlohmann::json::array();
  const auto add = [&](const std::string& name) {
    nlohmann::json entry = file_entry(dir, name);
    if (!entry.is_null()) files.push_back(std::move(entry));
    return !files.empty() && files.back().at("name") == name;
  };
  add(record.model_file);
  for (int c = 0; c < record.chains; ++c) {
    if (!add(chain_file_name(c))) continue;  // a chain that never started
    nlohmann::json chain = {{"file", chain_file_name(c)}};
    for (const mcmc::ChainSummary& s : record.summaries) {
      if (s.chain != c) continue;
      chain["iterations"] = s.iterations;
      chain["draws"] = s.draws;
      chain["interrupted"] = s.interrupted;
    }
    chains.push_back(std::move(chain));
  }
  for (const std::string& name : record.other_files) add(name);
  nlohmann::json checkpoints = nlohmann::json::array();
  for (const std::string& name : record.checkpoints) {
    if (add(name)) checkpoints.push_back(name);
  }
  nlohmann::json index = {{"format", kRunIndexFormat},
                          {"version", kRunIndexVersion},
                          {"status", status_name(record.status)},
                          {"model", record.model_file},
                          {"seed", record.seed},
                          {"chains", chains},
                          {"files", files}};
  if (!checkpoints.empty()) {
    index["checkpoints"] = std::move(checkpoints);
    index["resumed"] = record.resumed;
  }
  if (!record.message.empty()) index["message"] = record.message;
  write_index(dir, index);
}

void add_run_index_files(const fs::path& dir, const std::vector<std::string>& names, const std::string& command_line) {
  const RunDirectoryLock lock(dir.string(), RunDirectoryLock::Access::kWrite);
  nlohmann::json index = read_index(dir);
  if (!index.is_object() || !index.contains("files") || !index.at("files").is_array()) {
    throw Error(ErrorKind::kInvalidInput, (dir / kRunIndex).string() + ": the run's manifest lists no files");
  }
  nlohmann::json& files = index.at("files");
  for (const std::string& name : names) {
    if (!plain_file_name(name)) {
      throw Error(ErrorKind::kInvalidArgument, "a run folder's files are named without a folder, not '" + name + "'");
    }
    nlohmann::json entry = file_entry(dir, name);
    if (entry.is_null()) throw Error(ErrorKind::kIo, "'" + (dir / name).string() + "' does not exist");
    const auto same =
        std::find_if(files.begin(), files.end(), [&](const nlohmann::json& f) { return f.value("name", "") == name; });
    if (same != files.end()) {
      *same = std::move(entry);
    } else {
      files.push_back(std::move(entry));
    }
  }
  if (!command_line.empty()) index["command_line"] = command_line;
  write_index(dir, index);
}

nlohmann::json verified_run_index(const fs::path& dir, const std::string& model_file) {
  const std::string folder = folder_name(dir);
  const std::string again = "; sample again into " + folder;
  std::error_code ec;
  if (!fs::exists(dir / kRunIndex, ec)) {
    throw Error(ErrorKind::kInvalidInput,
                folder +
                    ": not a finished run: its manifest run.json is missing (the run was killed before it ended, or "
                    "the folder was written by an occam without run manifests), so its files may be partial or "
                    "belong to different runs" +
                    again);
  }
  const nlohmann::json index = read_index(dir);
  const std::string path = (dir / kRunIndex).string();
  const auto damaged = [&](const std::string& what) {
    return Error(ErrorKind::kInvalidInput, path + ": the run's manifest is damaged (" + what + ")" + again);
  };
  if (!index.is_object() || index.value("format", nlohmann::json()) != std::string(kRunIndexFormat)) {
    throw damaged("no \"format\": \"occam-run\" entry");
  }
  const nlohmann::json version = index.value("version", nlohmann::json());
  if (!version.is_number_integer()) throw damaged("no integer 'version'");
  if (version.get<long long>() > kRunIndexVersion) {
    throw Error(ErrorKind::kInvalidInput, path + ": written by a newer occam (run format version " +
                                              std::to_string(version.get<long long>()) +
                                              "); this occam reads version " + std::to_string(kRunIndexVersion));
  }
  const nlohmann::json status = index.value("status", nlohmann::json());
  if (status == "failed") {
    throw Error(ErrorKind::kInvalidInput, folder + ": the run failed (" +
                                              index.value("message", std::string("no reason recorded")) +
                                              "); its files are not a usable run" + again);
  }
  if (status != "complete" && status != "interrupted") throw damaged("'status' is not \"complete\" or \"interrupted\"");
  if (index.value("model", nlohmann::json()) != model_file) {
    throw Error(ErrorKind::kInvalidInput, path + ": the run's model file is '" +
                                              index.value("model", nlohmann::json()).dump() + "', not '" + model_file +
                                              "'");
  }
  if (!index.contains("files") || !index.at("files").is_array() || !index.contains("chains") ||
      !index.at("chains").is_array()) {
    throw damaged("no 'files' or 'chains' list");
  }
  std::vector<std::string> listed;
  for (const nlohmann::json& file : index.at("files")) {
    if (!file.is_object() || !file.contains("name") || !file.at("name").is_string() ||
        !plain_file_name(file.at("name")) || !file.contains("bytes") || !file.at("bytes").is_number_unsigned() ||
        !file.contains("fnv1a64") || !file.at("fnv1a64").is_string()) {
      throw damaged("an entry of 'files' is not {\"name\", \"bytes\", \"fnv1a64\"}");
    }
    const std::string name = file.at("name");
    const fs::path file_path = dir / name;
    const nlohmann::json found = file_entry(dir, name);
    if (found.is_null()) {
      throw Error(ErrorKind::kInvalidInput,
                  file_path.string() + ": listed in the run's manifest run.json but missing" + again);
    }
    if (found.at("bytes") != file.at("bytes") || found.at("fnv1a64") != file.at("fnv1a64")) {
      throw Error(ErrorKind::kInvalidInput,
                  file_path.string() + ": does not match the run's manifest run.json (" + found.at("bytes").dump() +
                      " bytes, checksum " + found.at("fnv1a64").get<std::string>() + "; the manifest records " +
                      file.at("bytes").dump() + " bytes, checksum " + file.at("fnv1a64").get<std::string>() +
                      "): the file changed after the run ended" + again);
    }
    listed.push_back(name);
  }
  const auto is_listed = [&](const nlohmann::json& name) {
    return name.is_string() && std::find(listed.begin(), listed.end(), name.get<std::string>()) != listed.end();
  };
  if (!is_listed(nlohmann::json(model_file))) throw damaged("'files' does not list " + model_file);
  for (const nlohmann::json& chain : index.at("chains")) {
    if (!chain.is_object() || !is_listed(chain.value("file", nlohmann::json()))) {
      throw damaged("a chain's 'file' is not one of 'files'");
    }
  }
  return index;
}

std::string chain_file_name(int chain) { return "chain_" + std::to_string(chain + 1) + ".csv"; }
std::string checkpoint_file_name(int chain) { return "checkpoint_" + std::to_string(chain + 1) + ".json"; }

std::uint64_t fnv1a64(std::uint64_t hash, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string short_number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

void write_run_manifest(const std::string& path, const FittedModel& model, const nlohmann::json& options,
                        const std::vector<std::string>& chain_files, const std::string& request) {
  nlohmann::json run_options = options;
  run_options["data"] = model.summary.data_source;
  run_options["target"] = model.target_name;
  const nlohmann::json j = {{"format", kRunFormat},
                            {"version", kRunFormatVersion},
                            {"network", model.network->to_json()},
                            {"likelihood", model.likelihood->to_json()},
                            {"prior", model.prior.to_json()},
                            {"standardizer", model.standardizer.to_json()},
                            {"features", model.feature_names},
                            {"target", model.target_name},
                            {"spec", model.spec.to_json()},
                            {"hyper", options.value("hyper", std::string("fixed"))},
                            {"chains", chain_files},
                            {"options", run_options}};
  nlohmann::json out = j;
  if (!request.empty()) {
    try {
      out["request"] = nlohmann::json::parse(request);
    } catch (const nlohmann::json::exception&) {
      throw Error(ErrorKind::kInvalidArgument, "SamplingMethod.request is not JSON text");
    }
  }
  write_file_atomic(path, out.dump(2) + "\n");
}

void save_run(const std::string& manifest_path, const FittedModel& model) {
  if (!model.summary.sampler || model.summary.sampler->draws.empty()) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "save_model: MCMC draws are saved with the sampler's rows (FitSummary::sampler), which this model lacks");
  }
  const mcmc::SamplerSummary& sampler = *model.summary.sampler;
  const fs::path dir = fs::path(manifest_path).parent_path();
  const RunDirectoryLock lock(dir.string(), RunDirectoryLock::Access::kWrite);
  clear_run_directory(dir);
  std::vector<std::string> files;
  for (std::size_t c = 0; c < sampler.draws.size(); ++c) {
    files.push_back(chain_file_name(static_cast<int>(c)));
    mcmc::StanCsvWriter writer((dir / files.back()).string(),
                               {"occam (Stan CSV format)", "id = " + std::to_string(c + 1)});
    writer.begin(sampler.columns);
    for (Index r = 0; r < sampler.draws[c].rows(); ++r) writer.draw(sampler.draws[c].row(r).transpose(), false);
    writer.end(c < sampler.chains.size() ? sampler.chains[c] : mcmc::ChainSummary{});
  }
  const nlohmann::json options = model.summary.options.is_object() ? model.summary.options : nlohmann::json::object();
  write_run_manifest(manifest_path, model, options, files);
  RunRecord record;
  record.status = model.summary.termination == Termination::kAborted ? RunStatus::kInterrupted : RunStatus::kComplete;
  record.model_file = fs::path(manifest_path).filename().string();
  record.chains = static_cast<int>(files.size());
  record.summaries = sampler.chains;
  for (std::size_t c = 0; c < record.summaries.size(); ++c) record.summaries[c].chain = static_cast<int>(c);
  record.seed = options.value("seed", std::uint64_t{0});
  write_run_index(dir, record);
}

FittedModel load_run(const std::string& manifest_path, const nlohmann::json& j) {
  const auto corrupt = [&](const std::string& what) {
    return Error(ErrorKind::kInvalidInput, manifest_path + ": corrupt: " + what);
  };
  if (!j.contains("version") || !j.at("version").is_number_integer()) throw corrupt("no integer 'version'");
  if (j.at("version").get<long long>() > kRunFormatVersion) {
    throw Error(ErrorKind::kInvalidInput, manifest_path + ": written by a newer occam (format version " +
                                              std::to_string(j.at("version").get<long long>()) + ")");
  }
  // The folder first: a run that did not finish, or whose files changed, is not read at all.
  const fs::path dir = fs::path(manifest_path).parent_path();
  // Held while the files are checked and read: no run starts writing into them meanwhile.
  const RunDirectoryLock lock(dir.string(), RunDirectoryLock::Access::kRead);
  const nlohmann::json index = verified_run_index(dir, fs::path(manifest_path).filename().string());
  FittedModel m;
  std::vector<std::string> chain_files;
  for (const nlohmann::json& chain : index.at("chains")) chain_files.push_back(chain.at("file").get<std::string>());
  try {
    m.network = network_from_json(j.at("network"));
    m.likelihood = likelihood_from_json(j.at("likelihood"));
    m.prior = Prior::from_json(j.at("prior"));
    m.standardizer = Standardizer::from_json(j.at("standardizer"));
    m.feature_names = j.at("features").get<std::vector<std::string>>();
    m.target_name = j.at("target").get<std::string>();
    j.at("hyper").get<std::string>();
    j.at("chains").get<std::vector<std::string>>();
    m.summary.options = j.value("options", nlohmann::json::object());
    m.spec = j.contains("spec") ? ModelSpec::from_json(j.at("spec")) : implied_spec(m, "");
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(e.what());
  } catch (const Error& e) {
    throw corrupt(e.what());
  }
  if (!m.network || !m.likelihood) throw corrupt("no network or no likelihood");
  if (m.likelihood->name() != std::string(to_string(m.spec.likelihood.kind))) {
    throw corrupt("its likelihood is " + m.likelihood->name() + " but its spec says " +
                  to_string(m.spec.likelihood.kind));
  }
  if (m.prior.dim() != m.network->num_params()) throw corrupt("the prior and the network disagree in size");
  if (static_cast<Index>(m.feature_names.size()) != m.network->num_inputs()) {
    throw corrupt("'features' does not match the network's inputs");
  }

  const Index W = m.network->num_params();
  const std::string model_line = m.network->describe() + ", " + to_string(m.spec.likelihood.kind) + " likelihood";
  std::vector<Eigen::MatrixXd> weights;
  std::vector<Eigen::VectorXd> betas;
  PosteriorDraws draws;
  mcmc::SamplerSummary sampler;  // the rows as read, so that the model can be saved again
  bool has_beta = true;
  for (const std::string& file : chain_files) {
    const std::string path = (dir / file).string();
    mcmc::StanCsv csv = mcmc::read_stan_csv(path);
    if (!sampler.columns.empty() && csv.columns != sampler.columns) {
      throw Error(ErrorKind::kInvalidInput, path + ": its columns differ from the other chains'");
    }
    // The chain file says which model made its draws (chain_file_config's "model = ..." line) and
    // holds exactly W weights: a model.json of another network or likelihood is not read with them.
    const std::string made_by = "model = " + model_line;
    const auto header = std::find_if(csv.comments.begin(), csv.comments.end(),
                                     [](const std::string& line) { return line.starts_with("model = "); });
    if (header != csv.comments.end() && *header != made_by) {
      throw Error(ErrorKind::kInvalidInput, manifest_path + ": does not match the run's chain files: " + path +
                                                " was drawn from '" + header->substr(8) + "', " + manifest_path +
                                                " describes '" + model_line + "'");
    }
    const Index first = csv.column("w.1");
    const auto after = static_cast<std::size_t>(first + W);
    if (first + W > static_cast<Index>(csv.columns.size()) ||
        csv.columns[static_cast<std::size_t>(first + W - 1)] != "w." + std::to_string(W) ||
        (after < csv.columns.size() && csv.columns[after] == "w." + std::to_string(W + 1))) {
      throw Error(ErrorKind::kInvalidInput,
                  path + ": the weight columns do not match model.json (it has " + std::to_string(W) + " weights)");
    }
    const auto beta_column = std::find(csv.columns.begin(), csv.columns.end(), "beta");
    has_beta = has_beta && beta_column != csv.columns.end();
    weights.push_back(csv.draws.middleCols(first, W));
    if (beta_column != csv.columns.end()) betas.push_back(csv.draws.col(beta_column - csv.columns.begin()));
    draws.draws_per_chain.push_back(csv.draws.rows());
    mcmc::ChainSummary chain;
    chain.chain = static_cast<int>(sampler.chains.size());
    chain.draws = static_cast<int>(csv.draws.rows());
    sampler.chains.push_back(chain);
    sampler.columns = std::move(csv.columns);
    sampler.draws.push_back(std::move(csv.draws));
  }
  Index total = 0;
  for (const auto& w : weights) total += w.rows();
  if (total == 0) throw Error(ErrorKind::kInvalidInput, dir.string() + ": no draws in the chain files");
  draws.weights.resize(total, W);
  if (has_beta) draws.betas.resize(total);
  Index row = 0;
  for (std::size_t c = 0; c < weights.size(); ++c) {
    draws.weights.middleRows(row, weights[c].rows()) = weights[c];
    if (has_beta) draws.betas.segment(row, weights[c].rows()) = betas[c];
    row += weights[c].rows();
  }
  m.posterior = std::move(draws);
  m.summary.sampler = std::move(sampler);
  // As fit() reports a finished run, or one a callback stopped.
  m.summary.termination = index.at("status") == "interrupted" ? Termination::kAborted : Termination::kMaxIterations;
  m.summary.num_params = W;
  return m;
}

}  // namespace occam::internal

namespace occam {
namespace {

// This process's holds on run folders, by the lock file's device and inode: flock(2) locks belong
// to an open file, so a second open of the same lock file by this process would conflict with its
// own first one; a hold taken again is counted instead. A child made by fork() inherits the table
// but is another process: a hold counts only in the process that took it.
struct Hold {
  int fd = -1;
  int count = 0;
  bool write = false;
  pid_t owner = 0;
};
std::mutex g_holds_mutex;
std::map<std::string, Hold> g_holds;

// The process that last took the folder for writing, as its lock file records it ("" if unknown).
std::string lock_holder(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  if (n <= 0) return "";
  std::string pid(text, static_cast<std::size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.find_first_not_of("0123456789") == std::string::npos ? pid : "";
}

Error folder_in_use(const std::string& folder, bool write, int fd) {
  // Taken for reading, a lock another process holds for writing blocks this one; for writing,
  // either kind does: a shared lock that succeeds says that only readers hold it.
  const bool readers_only = write && ::flock(fd, LOCK_SH | LOCK_NB) == 0;
  const std::string pid = lock_holder(fd);
  const std::string writer =
      "another process is writing it (occam sample" + (pid.empty() ? "" : ", process " + pid) + ")";
  if (!write) {
    return Error(ErrorKind::kIo,
                 "cannot read the run folder '" + folder + "': " + writer + "; read it once that run has ended");
  }
  return Error(ErrorKind::kIo, "cannot write the run folder '" + folder +
                                   "': " + (readers_only ? std::string("another process is reading it") : writer) +
                                   "; a run folder is written by one process at a time: wait for that process to end, "
                                   "or write to another folder");
}

}  // namespace

RunDirectoryLock::RunDirectoryLock(const std::string& directory, Access access) {
  namespace fs = std::filesystem;
  const bool write = access == Access::kWrite;
  const std::string folder = directory.empty() ? std::string(".") : directory;
  const fs::path path = fs::path(folder) / internal::kRunLock;
  if (write) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (!fs::is_directory(folder)) {
      throw Error(ErrorKind::kIo, "cannot create the directory '" + folder + "'" + (ec ? ": " + ec.message() : ""));
    }
  }
  const int fd = ::open(path.c_str(), (write ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0666);
  if (fd < 0) {
    // A folder no occam with run locks has written (or one this user may not lock): read as it is.
    if (!write && (errno == ENOENT || errno == EACCES || errno == ENOTDIR)) return;
    throw Error(ErrorKind::kIo,
                "cannot lock the run folder '" + folder + "' (" + path.string() + "): " + std::strerror(errno));
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int saved = errno;
    ::close(fd);
    throw Error(ErrorKind::kIo, "cannot lock the run folder '" + folder + "': " + std::strerror(saved));
  }
  const std::string key = std::to_string(status.st_dev) + ":" + std::to_string(status.st_ino);
  std::lock_guard<std::mutex> guard(g_holds_mutex);
  auto held = g_holds.find(key);
  if (held != g_holds.end() && held->second.owner != ::getpid()) {
    g_holds.erase(held);  // the parent's (its descriptor stays open here, as fork left it)
    held = g_holds.end();
  }
  if (held != g_holds.end()) {
    ::close(fd);
    Hold& hold = held->second;
    if (write && !hold.write) {
      // flock(2) converts a lock by removing it first: a failed conversion takes the shared one again.
      if (::flock(hold.fd, LOCK_EX | LOCK_NB) != 0) {
        const Error busy = folder_in_use(folder, true, hold.fd);
        ::flock(hold.fd, LOCK_SH | LOCK_NB);
        throw busy;
      }
      hold.write = true;
    }
    ++hold.count;
    key_ = key;
    return;
  }
  if (::flock(fd, (write ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
    const int saved = errno;
    const Error busy =
        saved == EWOULDBLOCK
            ? folder_in_use(folder, write, fd)
            : Error(ErrorKind::kIo, "cannot lock the run folder '" + folder + "': " + std::strerror(saved));
    ::close(fd);
    throw busy;
  }
  if (write) {
    // Who holds it, for the message another process gets; the lock does not depend on it.
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
      const int saved = errno;
      ::close(fd);
      throw Error(ErrorKind::kIo, "cannot write '" + path.string() + "': " + std::strerror(saved));
    }
  }
  g_holds.emplace(key, Hold{fd, 1, write, ::getpid()});
  key_ = key;
}

RunDirectoryLock::~RunDirectoryLock() {
  if (key_.empty()) return;
  std::lock_guard<std::mutex> guard(g_holds_mutex);
  const auto held = g_holds.find(key_);
  if (held == g_holds.end() || held->second.owner != ::getpid() || --held->second.count > 0) return;
  // The file stays: removing it while another process waits to open it would let two processes
  // lock two different files of the same name.
  ::flock(held->second.fd, LOCK_UN);
  ::close(held->second.fd);
  g_holds.erase(held);
}

bool is_run_directory(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || !fs::is_directory(path, ec)) return false;
  const fs::path dir(path);
  return fs::exists(dir / internal::kRunIndex, ec) || fs::exists(dir / internal::kRunLock, ec) ||
         internal::json_file_format((dir / internal::kRunManifest).string()) == internal::kRunFormat;
}

}  // namespace occam

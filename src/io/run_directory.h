// run_directory.h (internal) — an MCMC run directory: model.json (what prediction needs) beside
// one Stan CSV file of draws per chain, and run.json, the manifest written last (docs/mcmc.md).
//
// A run folder must never mix runs. A run first removes the previous run's manifest, then its
// files; it writes model.json and the chain files, and, last and atomically, run.json: the status
// ("complete", "interrupted" or "failed"), every file of the run with its size and checksum, the
// draws per chain and the seed. A reader accepts a folder only through a manifest whose files all
// match: a run killed before it finished (no manifest), a failed run or a file changed since is
// refused, naming the folder and what is wrong. The manifest is versioned and readers ignore keys
// they do not know, so that a later format can add what resuming a run would need.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/fitted_model.h"
#include "occam/mcmc/sampler.h"

namespace occam::internal {

inline constexpr const char* kRunManifest = "model.json";
inline constexpr const char* kRunFormat = "occam-draws";
inline constexpr int kRunFormatVersion = 1;

inline constexpr const char* kRunIndex = "run.json";
// The file a run folder is locked by (RunDirectoryLock, io.h); never removed, never listed.
inline constexpr const char* kRunLock = "run.lock";
inline constexpr const char* kRunIndexFormat = "occam-run";
inline constexpr int kRunIndexVersion = 1;

// How a run ended, as run.json records it.
enum class RunStatus { kComplete, kInterrupted, kFailed };

// What run.json says beyond its files' sizes and checksums.
struct RunRecord {
  RunStatus status = RunStatus::kComplete;
  std::string message;  // why a run failed or stopped
  std::string model_file = kRunManifest;
  int chains = 0;                             // chain_1.csv ... chain_<chains>.csv (those that exist)
  std::vector<mcmc::ChainSummary> summaries;  // iterations and draws, by ChainSummary::chain
  std::uint64_t seed = 0;
  std::vector<std::string> other_files;  // written beside the run (e.g. a diagnostics table)
  std::vector<std::string> checkpoints;  // checkpoint_<k>.json (those that exist)
  int resumed = 0;                       // how many times the run was resumed
};

// Removes an earlier run from `dir`: its run.json first (from then on no reader accepts the
// folder), then the files it listed and those of the layout (model.json, chain_<k>.csv,
// summary.csv, chains.csv, checkpoint_<k>.json), also when a killed run left no manifest.
// Throws Error(kIo).
void clear_run_directory(const std::filesystem::path& dir);
// Writes dir/run.json atomically, with the size and checksum of every file of `record` (files
// that do not exist are left out). Throws Error(kIo).
void write_run_index(const std::filesystem::path& dir, const RunRecord& record);
// Adds `files` (names in dir) to dir's run.json, rewriting it atomically; throws Error(kInvalidInput)
// when the folder has no valid run.json.
void add_run_index_files(const std::filesystem::path& dir, const std::vector<std::string>& files,
                         const std::string& command_line);
// dir/run.json checked against the files beside it: throws Error(kInvalidInput) naming the folder
// (or the file) and saying how to recover when the manifest is missing, the run failed, or a file
// it lists is missing or differs. Returns the manifest.
nlohmann::json verified_run_index(const std::filesystem::path& dir, const std::string& model_file);

// "chain_<k>.csv" and "checkpoint_<k>.json" for the 0-based chain k.
std::string chain_file_name(int chain);
std::string checkpoint_file_name(int chain);
// FNV-1a (64 bits) of `size` bytes, continuing `hash` (start from kFnvOffset).
inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
std::uint64_t fnv1a64(std::uint64_t hash, const void* data, std::size_t size);
// %g of a number, for configuration lines.
std::string short_number(double v);

// model.json of a run: {"format": "occam-draws", "version": 1, network, likelihood, prior,
// standardizer, features, target, spec, hyper, chains: [file names], options}. `options` is the
// sampling method's method_to_json(); "data" and "target" are added to it.
// `request` (SamplingMethod::request, JSON text), when not empty, is kept as "request".
void write_run_manifest(const std::string& path, const FittedModel& model, const nlohmann::json& options,
                        const std::vector<std::string>& chain_files, const std::string& request = "");

// The spec a model file written before specs were stored implies: the network's architecture,
// the likelihood, the prior's kind (α and λ_s at their defaults: the starting values are not in
// the file) and the standardisation.
ModelSpec implied_spec(const FittedModel& model, const std::string& offset_column);

// A FittedModel with MCMC draws written as a run: the folder's earlier run cleared, a chain file
// per chain from the sampler's rows (FitSummary::sampler), model.json, then run.json ("complete",
// or "interrupted" for a model whose termination is kAborted). Throws Error(kInvalidArgument)
// without those rows.
void save_run(const std::string& manifest_path, const FittedModel& model);

// The run whose model.json (already parsed) is at manifest_path: every draw of every chain file
// run.json lists, after verified_run_index(). Throws Error(kInvalidInput) naming the file.
FittedModel load_run(const std::string& manifest_path, const nlohmann::json& manifest);

}  // namespace occam::internal

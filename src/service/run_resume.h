// run_resume.h (internal) — the run folder of one sampling job, as the job writes it: the lock,
// the fingerprint of what the draws depend on, the resume point read back from the chains'
// checkpoints, a chain file (Stan CSV, with its checkpoint beside it) per chain, model.json before
// the first draw and run.json last (run_directory.h has the layout).
//
// Spread over processes, every process holds a RunFolder and process 0 alone writes; a step that
// can fail on one process is agreed on by all of them, so that none waits for a failed one.
//
//   occam::internal::RunFolder folder(spec, method, data, comm);
//   options.resume = folder.open();  folder.start(&model, posterior);
//   auto sink = folder.chain_sink(chain);  ...  folder.seal(RunStatus::kComplete, "", s.chains);
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "occam/fit.h"
#include "occam/io.h"
#include "io/run_directory.h"

namespace occam::internal {

// The data's part of a fingerprint of what a fit depends on (one process's whole data): rows,
// columns, target and an FNV-1a checksum of every value, class label and feature name.
nlohmann::json data_fingerprint(const Dataset& data);

// Every field in which two fingerprints differ, as "a.b (x in the run, y now)", joined by "; ";
// empty when they are the same.
std::string fingerprint_differences(const nlohmann::json& then, const nlohmann::json& now);

class RunFolder {
 public:
  // With an empty method.run_directory every step does nothing and chain_sink() returns null.
  // The references must outlive the folder.
  RunFolder(const ModelSpec& spec, const SamplingMethod& method, const Dataset& data, const Communicator* comm);
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  // Locks the folder (a second run into it is refused until this one ends); with method.resume,
  // reads the checkpoints (process 0 first cuts each chain file back to its checkpoint) and
  // returns each chain's state to continue from (SamplerOptions::resume); otherwise none.
  std::vector<std::optional<mcmc::ChainState>> open(int chains);
  // Before the first draw: model.json (what load_model needs: an interrupted run is readable
  // too), written into a cleared folder unless the run resumes. Sets model's network, likelihood
  // and prior from the posterior.
  void start(FittedModel* model, const Posterior& posterior);
  // Chain `chain`'s file (continued where it resumes), with its checkpoints when the method asks
  // for them; null on a process that does not write, or without a folder.
  std::unique_ptr<mcmc::DrawSink> chain_sink(int chain);
  // run.json, written last: how the run ended and the files it made.
  void seal(RunStatus status, const std::string& message, const std::vector<mcmc::ChainSummary>& chains = {});

 private:
  struct ResumePoint {
    std::vector<std::optional<mcmc::ChainState>> states;          // per chain; empty: starts afresh
    std::vector<std::pair<std::uintmax_t, long long>> positions;  // per resumed chain: bytes and rows of its file
    int resumed = 0;                                              // resumptions before this one
  };
  ResumePoint read_resume_point(int chains, bool cut_back) const;

  const ModelSpec& spec_;
  const SamplingMethod& method_;
  const Dataset& data_;
  const Communicator* comm_;
  bool writes_;  // this process writes the folder
  nlohmann::json fingerprint_;
  std::optional<RunDirectoryLock> lock_;
  ResumePoint resume_;
  std::vector<std::string> config_;  // the chain files' header lines
};

}  // namespace occam::internal

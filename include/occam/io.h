// io.h — the model file: everything needed to predict, as versioned JSON.
//
// {"format": "occam-model", "version": 1, "network": ..., "likelihood": ..., "prior": ...,
//  "standardizer": ..., "features": [...], "target": ..., "spec": ..., "posterior": {mean, cholesky},
//  "summary": ...}
// A variational fit has "posterior_kind": "vi" and "variational": {family, mean, factor} in place of
// "posterior", a point estimate "posterior_kind": "map" and "point": {mean}; a file without
// "posterior_kind" is a Laplace one, and one without "spec" (older files) gets the spec its
// network, likelihood and prior imply. Written atomically; doubles round-trip exactly, so a
// loaded model predicts bit-identically.
//
// MCMC draws are saved as a run directory (docs/mcmc.md): model.json ({"format": "occam-draws",
// "version": 1, network, likelihood, prior, standardizer, features, target, hyper, chains,
// options}) beside one Stan CSV file per chain and run.json, the run's manifest, written last:
// {"format": "occam-run", "version": 1, "status": "complete" | "interrupted" | "failed", "model",
// "seed", "chains": [{file, iterations, draws, interrupted}], "files": [{name, bytes, fnv1a64}]}.
// A committee (LaplaceMethod::committee) is saved as a committee file (committee.h: every member's
// model file object in one JSON file, "format": "occam-committee").
// load_model() reads any of these files, or a run directory given by its path; a run directory
// only through a manifest whose files all match it (a killed or failed run, or a file changed
// since, is refused naming the folder).
//
//   occam::save_model("model.json", model);
//   occam::FittedModel m = occam::load_model("model.json");
//   occam::Prediction p = m.predict(X_test);
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/fitted_model.h"

namespace occam {

// The newest model file version this occam reads. A file is written as version 1 unless it needs
// version 2: a noise model ("noise_model", FittedModel::noise), which an older occam must refuse
// rather than predict without.
inline constexpr int kModelFormatVersion = 2;

// The name the model file's contents had before the fit service; the same type.
using ModelFile = FittedModel;

// Throws Error(kIo) when the file cannot be written; nothing is left half-written. A model with
// MCMC draws writes `path` as a run directory's model.json and its chain files beside it; a
// committee writes `path` as its committee file (save_committee).
void save_model(const std::string& path, const FittedModel& model);
// Throws Error(kIo) when unreadable, Error(kInvalidInput) when corrupt or of a newer version.
FittedModel load_model(const std::string& path);

// Adds files written beside a finished run (`files`: names in `directory`, e.g. a diagnostics
// table) to its run.json, with their sizes and checksums, and `command_line` (when not empty),
// rewriting the manifest atomically. Throws Error(kInvalidInput) when the directory has no run
// manifest, Error(kIo) when a file is missing.
void add_run_files(const std::string& directory, const std::vector<std::string>& files,
                   const std::string& command_line = "");

// True when `path` is a run directory: a folder holding a run's manifest (run.json), the model file
// of a run ("format": "occam-draws") or the lock file of one (run.lock). Such a folder holds only
// what sampling writes there; the command-line tool writes nothing else into it.
bool is_run_directory(const std::string& path);

// A run directory held by this process: it is written by one process at a time, and read while no
// process writes it (an advisory lock, flock(2), on the folder's file run.lock, which the kernel
// releases when the process ends, however it ends). fit() holds it for writing while it samples
// into SamplingMethod::run_directory, save_model and add_run_files while they write, load_model
// while it reads; a program that writes more into a run (as occam sample writes its tables) holds
// it across. Taken again by the process that holds it, it is the same hold (for writing, if either
// asks for writing). A folder without run.lock (never written by this occam) is read unlocked.
//
//   occam::RunDirectoryLock lock("run", occam::RunDirectoryLock::Access::kWrite);
class RunDirectoryLock {
 public:
  enum class Access { kRead, kWrite };
  // kWrite creates the folder when it does not exist. Throws Error(kIo) naming the folder when
  // another process writes it (and, for kWrite, when another reads it), or it cannot be made.
  RunDirectoryLock(const std::string& directory, Access access);
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  std::string key_;  // the lock file's identity in this process's table of holds; empty: none
};

// model.predict(X, options, offset).
Prediction predict(const FittedModel& model, const Eigen::MatrixXd& X, const PredictOptions& options,
                   const Eigen::VectorXd* offset = nullptr);

}  // namespace occam

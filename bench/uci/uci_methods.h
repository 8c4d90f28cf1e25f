// uci_methods.h — the methods the UCI benchmark compares, in a registry keyed by name.
//
// Each method fits one split's training part and returns a Gaussian predictive distribution for
// every test input, in the target's original units. A new method is one entry in the registry
// (uci_methods.cc): a name, a one-line description and a function.
//
//   const occam::uci::UciMethod& m = occam::uci::find_method("laplace");
//   occam::uci::MethodOutput out = m.run(split, occam::uci::MethodSettings{.hidden_units = 50});
//   occam::uci::SplitMetrics s = occam::uci::score(out, split.test.Y.col(0));
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "occam/map.h"
#include "uci/uci_data.h"

namespace occam::uci {

struct MethodSettings {
  Eigen::Index hidden_units = 50;  // one tanh hidden layer of this width (the protocol fixes it)
  std::uint64_t seed = 1;          // initial weights: Rng(seed, stream = split index)
  int cv_folds = 3;                // map-cv: folds of the training split
  // Budgets: Levenberg–Marquardt iterations per MAP run (the final fit of every method; map-cv's
  // CV fits use L-BFGS, at most 1000 iterations each; laplace-integrate's L-BFGS on the integrated
  // objective gets at least 5000) and evidence re-estimation rounds (laplace).
  // The library's defaults unless set.
  int max_map_iterations = 5000;
  int max_rounds = 200;
  // The optimiser of the MAP runs inside laplace and of the final fits of map-cv and the start of
  // vi-meanfield: Levenberg–Marquardt converges in few O(mW² + W³) iterations, L-BFGS in many
  // O(mW) ones. kAuto: LM for training sets of up to lm_max_rows rows, L-BFGS above (an LM
  // iteration costs 0.3 s on naval's 10 741 rows and 2.5 s on protein's 41 157).
  Optimizer map_optimizer = Optimizer::kAuto;
  Eigen::Index lm_max_rows = 5000;
  // Called with a line of progress inside long fits (each evidence round of laplace; and, at most
  // every heartbeat_seconds, the latest MAP iteration or NUTS iteration of any row, so that a
  // row that runs for hours shows it is alive); may be empty. Never changes a row.
  std::function<void(const std::string&)> progress;
  double heartbeat_seconds = 60.0;
  // map-cv: the grid of λ = α/β (standardised units), searched from the largest down with warm starts.
  std::vector<double> cv_grid = {10.0, 1.0, 0.1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};
  // nuts: chains × (warm-up + draws) NUTS iterations, each chain started from its own MAP fit.
  // Threads: 0 for one per chain, at most the hardware's concurrency; the draws do not depend on it.
  int nuts_chains = 4;
  int nuts_warmup = 150;
  int nuts_draws = 100;
  int nuts_threads = 0;
  int nuts_max_depth = 10;  // NUTS maximum tree depth (the library's default): ≤ 2^depth − 1 gradients an iteration
  // mile: chains × (warm-up + draws) MCLMC iterations, each chain started from its own MAP fit;
  // threads as nuts_threads. An iteration is round(L/ε) integrator steps, at most mile_max_steps
  // (two gradients each): on these networks ε is small in the metric's coordinates and L/ε runs to
  // hundreds, so the bound sets the cost of a draw (the dynamics do not depend on it).
  int mile_chains = 4;
  int mile_warmup = 300;
  int mile_draws = 200;
  int mile_max_steps = 64;
  // nuts, mile: when set, each row's chains are sampled into the run folder
  // <run_directory>/<dataset>_<split>_<method> (docs/mcmc.md, "Resuming a run": the draws streamed
  // to chain files, each chain's state checkpointed every kRowCheckpointEvery iterations), and a row
  // whose folder holds an interrupted run resumes it from its checkpoints, to the same draws; its
  // seconds then count the earlier sessions too (kept beside the folder in <folder>.seconds).
  // laplace-committee and laplace-ensemble: each member's fit kept in
  // <run_directory>/<dataset>_<split>_committee as it ends (CommitteeOptions::directory) and read
  // back by a later run, the row's seconds counting the members' own fitting time.
  // Never changes a row's numbers.
  std::string run_directory;
  // laplace-committee and laplace-ensemble: members of the committee (LaplaceMethod::committee), member 1
  // the laplace fit.
  int committee_members = 5;
  // laplace-hetero-refit: weighted refits of the mean (HeteroscedasticOptions::weighted_refits).
  int hetero_refits = 1;
};

// A Gaussian predictive N(mean_i, std_i²) per test row, in the original units.
struct MethodOutput {
  Eigen::VectorXd mean;
  Eigen::VectorXd std;
  // "converged", "max_iterations" or "failure" (the fit's own report); nuts, mile: "converged" or
  // "not_converged" (max split-R̂ of lp__ and the hyperparameters above 1.01)
  std::string termination;
  std::string detail;  // a few words for the log: chosen λ, log-evidence, ...
  // Seconds of work done for an earlier row and reused by this one (laplace-ensemble reusing the
  // laplace-committee row's fits), or by earlier sessions of a resumed run (nuts, mile with
  // run_directory): the row's seconds count them, so that they are what the row costs on its own.
  double reused_seconds = 0.0;
};

struct UciMethod {
  std::string name;
  std::string description;
  std::function<MethodOutput(const UciSplit&, const MethodSettings&)> run;
};

// The MAP optimiser for a training set of `rows` rows: settings.map_optimizer, with kAuto resolved.
Optimizer map_optimizer_for(const MethodSettings& settings, Eigen::Index rows);

// Every method, in the order the results table shows them.
const std::vector<UciMethod>& method_registry();
// Throws Error(kInvalidArgument) listing the known names.
const UciMethod& find_method(const std::string& name);

struct SplitMetrics {
  double rmse = 0.0;
  double test_ll = 0.0;     // mean log N(y; mean, std²) over the test rows
  double coverage95 = 0.0;  // fraction of test targets inside the central 95% predictive interval
};
SplitMetrics score(const MethodOutput& prediction, const Eigen::VectorXd& y);

}  // namespace occam::uci

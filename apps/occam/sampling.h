// sampling.h — what `sample`, `predict --draws` and `demo mcmc` share: the run directory's
// model.json, the diagnostics table, and the Monte Carlo predictive from a run's draws.
#pragma once

#include <Eigen/Core>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/mcmc/draws_predict.h"
#include "occam/mcmc/sampler.h"
#include "occam/posterior.h"

namespace occam::cli {

inline constexpr int kDrawsFormatVersion = 1;

// run/model.json: {"format": "occam-draws", "version": 1, network, likelihood, prior,
// standardizer, features, target, hyper, chains: [file names], options}.
struct DrawsModel {
  nlohmann::json network, likelihood, prior;
  Standardizer standardizer;
  std::vector<std::string> feature_names;
  std::string target_name;
  std::string hyper;
  std::vector<std::string> chain_files;  // relative to the run directory
  nlohmann::json options;
};
void save_draws_model(const std::string& path, const DrawsModel& model);
DrawsModel load_draws_model(const std::string& path);

// The Laplace covariance A⁻¹ at a MAP fit (from the network's initialisation with `rng`).
Eigen::MatrixXd laplace_covariance(const Posterior& posterior, Rng& rng);

// The diagnostics table of lp__, alpha.*, beta and f.* (R̂, bulk/tail ESS, MCSE), per-chain
// sampler statistics and warnings; also written as CSV to `csv_path` (when not empty).
std::string diagnostics_table(const mcmc::SamplerSummary& summary, const std::string& csv_path);

// Every draw of a run directory's chains, with the predictive at X (original units) from them.
struct RunPrediction {
  Prediction prediction;    // original target units
  Eigen::MatrixXd y_draws;  // draws × rows (keep_draws only), original units
  Index num_draws = 0;
};
RunPrediction predict_from_run(const std::string& run_dir, const Table& inputs, const mcmc::DrawsPredictOptions& options);

}  // namespace occam::cli

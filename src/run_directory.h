// run_directory.h (internal) — an MCMC run directory: model.json (what prediction needs) beside
// one Stan CSV file of draws per chain (docs/mcmc.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/fitted_model.h"

namespace occam::internal {

inline constexpr const char* kRunManifest = "model.json";
inline constexpr const char* kRunFormat = "occam-draws";
inline constexpr int kRunFormatVersion = 1;

// "chain_<k>.csv" for the 0-based chain k.
std::string chain_file_name(int chain);
// %g of a number, for configuration lines.
std::string short_number(double v);

// model.json of a run: {"format": "occam-draws", "version": 1, network, likelihood, prior,
// standardizer, features, target, spec, hyper, chains: [file names], options}. `options` is the
// sampling method's method_to_json(); "data" and "target" are added to it.
void write_run_manifest(const std::string& path, const FittedModel& model, const nlohmann::json& options,
                        const std::vector<std::string>& chain_files);

// The spec a model file written before specs were stored implies: the network's architecture,
// the likelihood, the prior's kind (α and λ_s at their defaults: the starting values are not in
// the file) and the standardisation.
ModelSpec implied_spec(const FittedModel& model, const std::string& offset_column);

// A FittedModel with MCMC draws written as a run: a chain file per chain from the sampler's rows
// (FitSummary::sampler), then model.json. Throws Error(kInvalidArgument) without those rows.
void save_run(const std::string& manifest_path, const FittedModel& model);

// The run whose model.json (already parsed) is at manifest_path: every draw of every chain file
// that exists (a chain that never started has none). Throws Error(kInvalidInput) naming the file.
FittedModel load_run(const std::string& manifest_path, const nlohmann::json& manifest);

}  // namespace occam::internal

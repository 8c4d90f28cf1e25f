// run_directory.cc — writing and reading an MCMC run directory.

#include "run_directory.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "occam/mcmc/stan_csv.h"
#include "occam/status.h"

namespace occam::internal {

std::string chain_file_name(int chain) { return "chain_" + std::to_string(chain + 1) + ".csv"; }

std::string short_number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

void write_run_manifest(const std::string& path, const FittedModel& model, const nlohmann::json& options,
                        const std::vector<std::string>& chain_files) {
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
  write_file_atomic(path, j.dump(2) + "\n");
}

void save_run(const std::string& manifest_path, const FittedModel& model) {
  namespace fs = std::filesystem;
  if (!model.summary.sampler || model.summary.sampler->draws.empty()) {
    throw Error(ErrorKind::kInvalidArgument,
                "save_model: MCMC draws are saved with the sampler's rows (FitSummary::sampler), which this model lacks");
  }
  const mcmc::SamplerSummary& sampler = *model.summary.sampler;
  const fs::path dir = fs::path(manifest_path).parent_path();
  std::vector<std::string> files;
  for (std::size_t c = 0; c < sampler.draws.size(); ++c) {
    files.push_back(chain_file_name(static_cast<int>(c)));
    mcmc::StanCsvWriter writer((dir / files.back()).string(), {"occam (Stan CSV format)", "id = " + std::to_string(c + 1)});
    writer.begin(sampler.columns);
    for (Index r = 0; r < sampler.draws[c].rows(); ++r) writer.draw(sampler.draws[c].row(r).transpose(), false);
    writer.end(c < sampler.chains.size() ? sampler.chains[c] : mcmc::ChainSummary{});
  }
  write_run_manifest(manifest_path, model, model.summary.options.is_object() ? model.summary.options : nlohmann::json::object(),
                     files);
}

FittedModel load_run(const std::string& manifest_path, const nlohmann::json& j) {
  namespace fs = std::filesystem;
  const auto corrupt = [&](const std::string& what) {
    return Error(ErrorKind::kInvalidInput, manifest_path + ": corrupt: " + what);
  };
  if (!j.contains("version") || !j.at("version").is_number_integer()) throw corrupt("no integer 'version'");
  if (j.at("version").get<long long>() > kRunFormatVersion) {
    throw Error(ErrorKind::kInvalidInput, manifest_path + ": written by a newer occam (format version " +
                                              std::to_string(j.at("version").get<long long>()) + ")");
  }
  FittedModel m;
  std::vector<std::string> chain_files;
  try {
    m.network = network_from_json(j.at("network"));
    m.likelihood = likelihood_from_json(j.at("likelihood"));
    m.prior = Prior::from_json(j.at("prior"));
    m.standardizer = Standardizer::from_json(j.at("standardizer"));
    m.feature_names = j.at("features").get<std::vector<std::string>>();
    m.target_name = j.at("target").get<std::string>();
    j.at("hyper").get<std::string>();
    chain_files = j.at("chains").get<std::vector<std::string>>();
    m.summary.options = j.value("options", nlohmann::json::object());
    m.spec = j.contains("spec") ? ModelSpec::from_json(j.at("spec")) : implied_spec(m, "");
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(e.what());
  } catch (const Error& e) {
    throw corrupt(e.what());
  }
  if (!m.network || !m.likelihood) throw corrupt("no network or no likelihood");
  if (m.prior.dim() != m.network->num_params()) throw corrupt("the prior and the network disagree in size");
  if (static_cast<Index>(m.feature_names.size()) != m.network->num_inputs()) {
    throw corrupt("'features' does not match the network's inputs");
  }

  const Index W = m.network->num_params();
  const fs::path dir = fs::path(manifest_path).parent_path();
  std::vector<Eigen::MatrixXd> weights;
  std::vector<Eigen::VectorXd> betas;
  PosteriorDraws draws;
  mcmc::SamplerSummary sampler;  // the rows as read, so that the model can be saved again
  bool has_beta = true;
  for (const std::string& file : chain_files) {
    const std::string path = (dir / file).string();
    if (!fs::exists(path)) continue;  // a chain that never started
    mcmc::StanCsv csv = mcmc::read_stan_csv(path);
    if (!sampler.columns.empty() && csv.columns != sampler.columns) {
      throw Error(ErrorKind::kInvalidInput, path + ": its columns differ from the other chains'");
    }
    const Index first = csv.column("w.1");
    if (first + W > static_cast<Index>(csv.columns.size()) ||
        csv.columns[static_cast<std::size_t>(first + W - 1)] != "w." + std::to_string(W)) {
      throw Error(ErrorKind::kInvalidInput, path + ": the weight columns do not match model.json");
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
  m.summary.termination = Termination::kMaxIterations;  // as fit() reports a finished run
  m.summary.num_params = W;
  return m;
}

}  // namespace occam::internal

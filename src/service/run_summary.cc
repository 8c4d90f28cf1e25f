#include "occam/run_summary.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "occam/data.h"
#include "occam/io.h"
#include "occam/mcmc/convergence.h"
#include "occam/status.h"
#include "io/run_directory.h"

namespace occam {

namespace {

const std::vector<std::string>& statistic_columns() {
  static const std::vector<std::string> columns = {
      "chain",       "iterations", "draws",          "step_size",        "accept_stat",    "tree_depth",
      "divergences", "gradients",  "warmup_seconds", "sampling_seconds", "max_depth_hits", "warmup_divergences"};
  return columns;
}

// NUTS's maximum tree depth from the run's options (method_to_json), 0 when unknown or not NUTS.
int max_tree_depth(const nlohmann::json& options) {
  if (!options.is_object() || options.value("method", std::string()) != "nuts") return 0;
  const auto depth = options.find("max_depth");
  return depth != options.end() && depth->is_number_integer() ? depth->get<int>() : 0;
}

}  // namespace

void write_chain_statistics(const std::string& path, const mcmc::SamplerSummary& summary) {
  Eigen::MatrixXd rows(static_cast<Index>(summary.chains.size()), static_cast<Index>(statistic_columns().size()));
  for (std::size_t c = 0; c < summary.chains.size(); ++c) {
    const mcmc::ChainSummary& s = summary.chains[c];
    rows.row(static_cast<Index>(c)) << s.chain + 1, s.iterations, s.draws, s.step_size, s.mean_accept_stat,
        s.mean_tree_depth, s.divergences, static_cast<double>(s.gradient_evaluations), s.warmup_seconds,
        s.sampling_seconds, s.max_depth_hits, s.warmup_divergences;
  }
  write_file_atomic(path, format_csv(statistic_columns(), rows));
}

mcmc::SamplerSummary read_run_draws(const std::string& run, ModelSpec* spec) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::is_directory(run) ? fs::path(run) : fs::path(run).parent_path();
  // One hold over the draws and the tables read below: no run rewrites them in between.
  const RunDirectoryLock lock(dir.string(), RunDirectoryLock::Access::kRead);
  const FittedModel model = load_model(run);
  if (spec != nullptr) *spec = model.spec;
  if (!model.summary.sampler || model.summary.sampler->draws.empty()) {
    throw Error(ErrorKind::kInvalidInput, run + ": not a run of MCMC draws (a folder written by sampling)");
  }
  mcmc::SamplerSummary s = *model.summary.sampler;
  s.interrupted = model.summary.termination == Termination::kAborted;
  s.seconds = -1.0;
  const int depth = max_tree_depth(model.summary.options);
  for (std::size_t c = 0; c < s.draws.size(); ++c) {
    const int iterations = s.chains[c].iterations;
    s.chains[c] = mcmc::chain_statistics(s.columns, s.draws[c], static_cast<int>(c), depth);
    s.chains[c].iterations = iterations;
  }

  const fs::path table_path = dir / "chains.csv";
  // load_model has just checked the manifest against every file; only its list is needed here.
  const nlohmann::json index = nlohmann::json::parse(read_file((dir / internal::kRunIndex).string()));
  bool listed = false;
  for (const auto& file : index.value("files", nlohmann::json::array()))
    listed = listed || file.value("name", "") == "chains.csv";
  if (!listed) return s;  // a run whose statistics were not written: those of the draws

  const Table table = read_csv(table_path.string());
  const auto column = [&](const std::string& name) -> Index {
    const auto found = std::find(table.columns.begin(), table.columns.end(), name);
    return found == table.columns.end() ? -1 : found - table.columns.begin();
  };
  for (std::size_t j = 0; j < 10; ++j) {
    if (column(statistic_columns()[j]) < 0) {
      throw Error(ErrorKind::kInvalidInput, table_path.string() + ": no column '" + statistic_columns()[j] + "'");
    }
  }
  if (table.values.rows() != static_cast<Index>(s.draws.size())) {
    throw Error(ErrorKind::kInvalidInput, table_path.string() + ": " + std::to_string(table.values.rows()) +
                                              " rows for " + std::to_string(s.draws.size()) + " chain files");
  }
  double seconds = 0.0;
  for (Index r = 0; r < table.values.rows(); ++r) {
    const auto at = [&](const char* name) { return table.values(r, column(name)); };
    mcmc::ChainSummary& c = s.chains[static_cast<std::size_t>(r)];
    if (at("chain") != static_cast<double>(r + 1) || at("draws") != static_cast<double>(c.draws)) {
      throw Error(ErrorKind::kInvalidInput, table_path.string() + ": row " + std::to_string(r + 1) +
                                                " does not describe chain_" + std::to_string(r + 1) + ".csv");
    }
    c.iterations = static_cast<int>(at("iterations"));
    c.step_size = at("step_size");
    c.mean_accept_stat = at("accept_stat");
    c.mean_tree_depth = at("tree_depth");
    c.divergences = static_cast<int>(at("divergences"));
    c.gradient_evaluations = static_cast<long long>(at("gradients"));
    c.warmup_seconds = at("warmup_seconds");
    c.sampling_seconds = at("sampling_seconds");
    if (column("max_depth_hits") >= 0) c.max_depth_hits = static_cast<int>(at("max_depth_hits"));
    if (column("warmup_divergences") >= 0) c.warmup_divergences = static_cast<int>(at("warmup_divergences"));
    seconds += c.warmup_seconds + c.sampling_seconds;
  }
  s.seconds = seconds;
  return s;
}

}  // namespace occam

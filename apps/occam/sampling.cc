#include "sampling.h"

#include <cmath>
#include <filesystem>
#include <sstream>

#include "fitting.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/map.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/status.h"

namespace occam::cli {

void save_draws_model(const std::string& path, const DrawsModel& m) {
  nlohmann::json j = {{"format", "occam-draws"},       {"version", kDrawsFormatVersion},
                      {"network", m.network},          {"likelihood", m.likelihood},
                      {"prior", m.prior},              {"standardizer", m.standardizer.to_json()},
                      {"features", m.feature_names},   {"target", m.target_name},
                      {"hyper", m.hyper},              {"chains", m.chain_files},
                      {"options", m.options}};
  write_file_atomic(path, j.dump(2) + "\n");
}

DrawsModel load_draws_model(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, path + ": not valid JSON: " + e.what());
  }
  if (j.value("format", "") != "occam-draws") {
    throw Error(ErrorKind::kInvalidInput, path + ": not the model.json of an 'occam sample' run directory");
  }
  if (j.value("version", 0) > kDrawsFormatVersion) {
    throw Error(ErrorKind::kInvalidInput, path + ": written by a newer occam (format version " +
                                              std::to_string(j.value("version", 0)) + ")");
  }
  try {
    DrawsModel m;
    m.network = j.at("network");
    m.likelihood = j.at("likelihood");
    m.prior = j.at("prior");
    m.standardizer = Standardizer::from_json(j.at("standardizer"));
    m.feature_names = j.at("features").get<std::vector<std::string>>();
    m.target_name = j.at("target").get<std::string>();
    m.hyper = j.at("hyper").get<std::string>();
    m.chain_files = j.at("chains").get<std::vector<std::string>>();
    m.options = j.value("options", nlohmann::json::object());
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, path + ": corrupt: " + e.what());
  }
}

Eigen::MatrixXd laplace_covariance(const Posterior& posterior, Rng& rng) {
  Eigen::VectorXd w = posterior.network().initial_params(rng);
  find_map(posterior, MapOptions{}, &w);
  const LaplaceApproximation q = laplace(posterior, w, HessianKind::kGgn);
  const Eigen::MatrixXd cov = q.covariance();
  return 0.5 * (cov + cov.transpose());
}

namespace {

bool reported(const std::string& name) {
  return name == "lp__" || name.rfind("alpha.", 0) == 0 || name == "beta" || name.rfind("f.", 0) == 0;
}

}  // namespace

std::string diagnostics_table(const mcmc::SamplerSummary& s, const std::string& csv_path) {
  std::ostringstream out;
  std::vector<std::string> warnings;
  Eigen::Index draws = 0;
  for (const auto& d : s.draws) draws += d.rows();
  out << format("%zu chains, %lld draws kept, %.2f s%s\n", s.chains.size(), static_cast<long long>(draws), s.seconds,
                s.interrupted ? " (interrupted)" : "");
  out << format("%-10s %11s %10s %11s %11s %11s %7s %9s %9s %9s\n", "", "mean", "sd", "q5", "q50", "q95", "rhat",
                "ess_bulk", "ess_tail", "mcse");
  std::string csv = "variable,mean,sd,q5,q50,q95,rhat,ess_bulk,ess_tail,mcse_mean\n";
  const auto number = [](double v) { return std::isnan(v) ? std::string("NA") : format("%.10g", v); };
  for (const std::string& name : s.columns) {
    if (!reported(name)) continue;
    const Eigen::MatrixXd x = s.column(name);
    if (x.rows() < 4) continue;
    const mcmc::Diagnostics d = mcmc::diagnose(x);
    out << format("%-10s %11.4g %10.4g %11.4g %11.4g %11.4g %7.3f %9.0f %9.0f %9.2g\n", name.c_str(), d.mean, d.sd, d.q5,
                  d.median, d.q95, d.rhat, d.ess_bulk, d.ess_tail, d.mcse_mean);
    csv += name + "," + number(d.mean) + "," + number(d.sd) + "," + number(d.q5) + "," + number(d.median) + "," +
           number(d.q95) + "," + number(d.rhat) + "," + number(d.ess_bulk) + "," + number(d.ess_tail) + "," +
           number(d.mcse_mean) + "\n";
    if (d.rhat > 1.01) warnings.push_back(format("R-hat of %s is %.3f > 1.01: the chains disagree", name.c_str(), d.rhat));
    const double min_ess = 100.0 * static_cast<double>(s.chains.size());
    if (d.ess_bulk < min_ess || d.ess_tail < min_ess) {
      warnings.push_back(format("ESS of %s is low (bulk %.0f, tail %.0f < %.0f)", name.c_str(), d.ess_bulk, d.ess_tail, min_ess));
    }
  }
  out << format("\n%-6s %10s %8s %8s %10s %10s %12s %10s\n", "chain", "step size", "accept", "depth", "divergent",
                "max depth", "gradients", "seconds");
  int divergences = 0, depth_hits = 0;
  for (const auto& c : s.chains) {
    out << format("%-6d %10.3g %8.3f %8.2f %10d %10d %12lld %10.2f\n", c.chain + 1, c.step_size, c.mean_accept_stat,
                  c.mean_tree_depth, c.divergences, c.max_depth_hits, c.gradient_evaluations,
                  c.warmup_seconds + c.sampling_seconds);
    divergences += c.divergences;
    depth_hits += c.max_depth_hits;
  }
  if (divergences > 0) warnings.push_back(format("%d divergent transitions after warm-up: the draws may be biased "
                                                  "(try --target-accept 0.95)", divergences));
  if (depth_hits > 0) warnings.push_back(format("%d transitions hit the maximum tree depth (--max-depth)", depth_hits));
  for (const std::string& w : warnings) out << "warning: " << w << '\n';
  if (!csv_path.empty()) write_file_atomic(csv_path, csv);
  return out.str();
}

RunPrediction predict_from_run(const std::string& run_dir, const Table& inputs, const mcmc::DrawsPredictOptions& options) {
  namespace fs = std::filesystem;
  const DrawsModel m = load_draws_model((fs::path(run_dir) / "model.json").string());
  const std::unique_ptr<Network> network = network_from_json(m.network);
  const std::unique_ptr<Likelihood> likelihood = likelihood_from_json(m.likelihood);
  const Index W = network->num_params();
  std::vector<Eigen::VectorXd> weights;
  std::vector<double> betas;
  bool has_beta = false;
  for (const std::string& file : m.chain_files) {
    const std::string path = (fs::path(run_dir) / file).string();
    if (!fs::exists(path)) continue;  // a chain that never started
    const mcmc::StanCsv csv = mcmc::read_stan_csv(path);
    const Index first = csv.column("w.1");
    if (first + W > static_cast<Index>(csv.columns.size()) || csv.columns[static_cast<std::size_t>(first + W - 1)] != "w." + std::to_string(W)) {
      throw Error(ErrorKind::kInvalidInput, path + ": the weight columns do not match model.json");
    }
    const auto beta_column = std::find(csv.columns.begin(), csv.columns.end(), "beta");
    has_beta = beta_column != csv.columns.end();
    for (Index r = 0; r < csv.draws.rows(); ++r) {
      weights.push_back(csv.draws.row(r).segment(first, W).transpose());
      if (has_beta) betas.push_back(csv.draws(r, beta_column - csv.columns.begin()));
    }
  }
  if (weights.empty()) throw Error(ErrorKind::kInvalidInput, run_dir + ": no draws in the chain files");
  Eigen::MatrixXd Wm(static_cast<Index>(weights.size()), W);
  for (std::size_t s = 0; s < weights.size(); ++s) Wm.row(static_cast<Index>(s)) = weights[s].transpose();
  Eigen::VectorXd B;
  if (has_beta && betas.size() == weights.size()) B = Eigen::Map<Eigen::VectorXd>(betas.data(), static_cast<Index>(betas.size()));

  const Eigen::MatrixXd X = m.standardizer.transform_inputs(select_columns(inputs, m.feature_names));
  const mcmc::DrawsPrediction p = mcmc::predict_from_draws(*network, *likelihood, Wm, B, X, options);
  RunPrediction out;
  out.num_draws = Wm.rows();
  const Standardizer& s = m.standardizer;
  out.prediction.mean = (s.y_mean + s.y_scale * p.prediction.mean.array()).matrix();
  out.prediction.std = s.y_scale * p.prediction.std;
  out.prediction.lower = (s.y_mean + s.y_scale * p.prediction.lower.array()).matrix();
  out.prediction.upper = (s.y_mean + s.y_scale * p.prediction.upper.array()).matrix();
  if (options.keep_draws) out.y_draws = (s.y_mean + s.y_scale * p.y_draws.array()).matrix();
  return out;
}

}  // namespace occam::cli

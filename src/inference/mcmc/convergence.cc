#include "occam/mcmc/convergence.h"

#include <algorithm>
#include <cmath>

#include "occam/status.h"
#include "occam/text.h"

namespace occam::mcmc {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The quantities a user relies on (the header's argument): never a network's raw weights; a
// linear model's coefficients when asked (ConvergenceOptions::coefficients).
bool judged(const std::string& name, const ConvergenceOptions& options) {
  return name == "lp__" || starts_with(name, "alpha.") || name == "smoothing" || name == "beta" ||
         starts_with(name, "f.") || (options.coefficients && starts_with(name, "w."));
}

Eigen::Index shortest_chain(const SamplerSummary& s) {
  Eigen::Index n = s.draws.front().rows();
  for (const auto& d : s.draws) n = std::min(n, d.rows());
  return n;
}

}  // namespace

void ConvergenceOptions::validate() const {
  if (!(max_rhat >= 1.0) || !std::isfinite(max_rhat)) {
    throw Error(ErrorKind::kInvalidArgument, "ConvergenceOptions.max_rhat must be a finite number ≥ 1");
  }
  if (!(min_ess_per_chain >= 0.0) || !std::isfinite(min_ess_per_chain)) {
    throw Error(ErrorKind::kInvalidArgument, "ConvergenceOptions.min_ess_per_chain must be a finite number ≥ 0");
  }
  if (max_tree_depth < 0) throw Error(ErrorKind::kInvalidArgument, "ConvergenceOptions.max_tree_depth must be ≥ 0");
}

ChainSummary chain_statistics(const std::vector<std::string>& columns, const Eigen::MatrixXd& draws, int chain,
                              int max_tree_depth) {
  const auto index = [&](const std::string& name) -> Eigen::Index {
    const auto found = std::find(columns.begin(), columns.end(), name);
    if (found == columns.end()) throw Error(ErrorKind::kInvalidArgument, "chain_statistics: no column '" + name + "'");
    return found - columns.begin();
  };
  if (draws.cols() != static_cast<Eigen::Index>(columns.size())) {
    throw Error(ErrorKind::kInvalidArgument, "chain_statistics: the draws have " + std::to_string(draws.cols()) +
                                                 " columns, the names " + std::to_string(columns.size()));
  }
  ChainSummary s;
  s.chain = chain;
  s.draws = static_cast<int>(draws.rows());
  if (draws.rows() == 0) return s;
  s.mean_accept_stat = draws.col(index("accept_stat__")).mean();
  s.step_size = draws(draws.rows() - 1, index("stepsize__"));
  const Eigen::VectorXd depth = draws.col(index("treedepth__"));
  s.mean_tree_depth = depth.mean();
  s.divergences = static_cast<int>(draws.col(index("divergent__")).sum());
  s.gradient_evaluations = static_cast<long long>(draws.col(index("n_leapfrog__")).sum());
  if (max_tree_depth > 0) s.max_depth_hits = static_cast<int>((depth.array() >= max_tree_depth).count());
  return s;
}

SamplerSummary merge_runs(const std::vector<SamplerSummary>& runs, const std::vector<std::string>& names) {
  if (runs.empty()) throw Error(ErrorKind::kInvalidArgument, "merge_runs: no runs");
  const auto name = [&](std::size_t r) { return r < names.size() ? names[r] : "run " + std::to_string(r + 1); };
  SamplerSummary merged;
  merged.columns = runs.front().columns;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const SamplerSummary& run = runs[r];
    if (run.columns != merged.columns) {
      throw Error(ErrorKind::kInvalidArgument,
                  name(r) + " has other columns than " + name(0) + ": the runs are not of the same model");
    }
    if (run.draws.size() != run.chains.size()) {
      throw Error(ErrorKind::kInvalidArgument, name(r) + ": draws of " + std::to_string(run.draws.size()) +
                                                   " chains but statistics of " + std::to_string(run.chains.size()));
    }
    for (std::size_t c = 0; c < run.draws.size(); ++c) {
      ChainSummary chain = run.chains[c];
      chain.chain = static_cast<int>(merged.chains.size());
      merged.chains.push_back(chain);
      merged.draws.push_back(run.draws[c]);
    }
    merged.interrupted = merged.interrupted || run.interrupted;
    merged.seconds += run.seconds;
  }
  return merged;
}

ConvergenceReport assess_convergence(const SamplerSummary& s, const ConvergenceOptions& options) {
  options.validate();
  if (s.draws.empty()) throw Error(ErrorKind::kInvalidArgument, "assess_convergence: the run has no chains");
  for (const auto& d : s.draws) {
    if (d.cols() != static_cast<Eigen::Index>(s.columns.size())) {
      throw Error(ErrorKind::kInvalidArgument, "assess_convergence: a chain's draws do not match the column names");
    }
  }
  ConvergenceReport r;
  r.chains = s.chains;
  for (const auto& d : s.draws) r.draws += static_cast<int>(d.rows());
  const Eigen::Index n = shortest_chain(s);
  const auto chains = static_cast<Eigen::Index>(s.draws.size());
  const double min_ess = options.min_ess_per_chain * static_cast<double>(chains);

  std::vector<std::string> rhat_warnings, ess_warnings;
  PointwiseConvergence pointwise;
  for (std::size_t j = 0; j < s.columns.size(); ++j) {
    const std::string& name = s.columns[j];
    const bool is_log_lik = starts_with(name, "log_lik.");
    if ((!judged(name, options) && !is_log_lik) || n < 4) continue;
    const Eigen::MatrixXd x = s.column(name);
    if (is_log_lik) {
      const double rhat = mcmc::rhat(x), bulk = ess_bulk(x), tail = ess_tail(x);
      if (pointwise.count == 0 || rhat > pointwise.max_rhat) {
        pointwise.max_rhat = rhat;
        pointwise.max_rhat_column = name;
      }
      pointwise.min_ess_bulk = pointwise.count == 0 ? bulk : std::min(pointwise.min_ess_bulk, bulk);
      pointwise.min_ess_tail = pointwise.count == 0 ? tail : std::min(pointwise.min_ess_tail, tail);
      ++pointwise.count;
      continue;
    }
    const Diagnostics d = diagnose(x);
    r.variables.push_back({name, d});
    if (d.rhat > options.max_rhat) {
      rhat_warnings.push_back("R-hat of " + name + " is " + format("%.3f", d.rhat) + " > " +
                              format("%.3g", options.max_rhat) + ": the chains disagree");
    }
    if (d.ess_bulk < min_ess || d.ess_tail < min_ess) {
      ess_warnings.push_back("ESS of " + name + " is low (bulk " + format("%.0f", d.ess_bulk) + ", tail " +
                             format("%.0f", d.ess_tail) + " < " + format("%.0f", min_ess) + ")");
    }
    if (starts_with(name, "f.")) {
      r.predictive.push_back(name);
      const auto k = static_cast<Eigen::Index>(r.predictive.size()) - 1;
      r.chain_mean.conservativeResize(k + 1, chains);
      r.chain_sd.conservativeResize(k + 1, chains);
      for (Eigen::Index c = 0; c < chains; ++c) {
        const Eigen::VectorXd v = s.draws[static_cast<std::size_t>(c)].col(static_cast<Eigen::Index>(j));
        const double mean = v.mean();
        r.chain_mean(k, c) = mean;
        r.chain_sd(k, c) = v.size() > 1
                               ? std::sqrt((v.array() - mean).square().sum() / static_cast<double>(v.size() - 1))
                               : std::nan("");
      }
    }
  }
  if (pointwise.count > 0) {
    r.log_lik = pointwise;
    if (pointwise.max_rhat > options.max_rhat) {
      rhat_warnings.push_back("R-hat of the pointwise log-likelihood reaches " + format("%.3f", pointwise.max_rhat) +
                              " (" + pointwise.max_rhat_column + "): the chains disagree about the fit to the data");
    }
    if (pointwise.min_ess_bulk < min_ess || pointwise.min_ess_tail < min_ess) {
      ess_warnings.push_back("ESS of the pointwise log-likelihood is low (bulk " +
                             format("%.0f", pointwise.min_ess_bulk) + ", tail " +
                             format("%.0f", pointwise.min_ess_tail) + " < " + format("%.0f", min_ess) + ")");
    }
  }
  for (const ChainSummary& c : s.chains) {
    r.divergences += c.divergences;
    r.max_depth_hits += c.max_depth_hits;
  }
  r.warnings = std::move(rhat_warnings);
  r.warnings.insert(r.warnings.end(), ess_warnings.begin(), ess_warnings.end());
  return r;
}

}  // namespace occam::mcmc

#include "diagnostics_table.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "occam/data.h"
#include "occam/text.h"
#include "output.h"

namespace occam::cli {

std::string diagnostics_table(const mcmc::ConvergenceReport& r, double seconds, bool interrupted,
                              const std::string& csv_path) {
  std::ostringstream out;
  out << format("%zu chains, %d draws kept", r.chains.size(), r.draws);
  if (seconds >= 0.0) out << format(", %.2f s", seconds);
  out << (interrupted ? " (interrupted)" : "") << '\n';
  out << format("%-10s %11s %10s %11s %11s %11s %7s %9s %9s %9s\n", "", "mean", "sd", "q5", "q50", "q95", "rhat",
                "ess_bulk", "ess_tail", "mcse");
  std::string csv = "variable,mean,sd,q5,q50,q95,rhat,ess_bulk,ess_tail,mcse_mean\n";
  const auto number = [](double v) { return std::isnan(v) ? std::string("NA") : format("%.10g", v); };
  for (const mcmc::VariableConvergence& v : r.variables) {
    const mcmc::Diagnostics& d = v.diagnostics;
    out << format("%-10s %11.4g %10.4g %11.4g %11.4g %11.4g %7.3f %9.0f %9.0f %9.2g\n", v.name.c_str(), d.mean, d.sd,
                  d.q5, d.median, d.q95, d.rhat, d.ess_bulk, d.ess_tail, d.mcse_mean);
    csv += v.name + "," + number(d.mean) + "," + number(d.sd) + "," + number(d.q5) + "," + number(d.median) + "," +
           number(d.q95) + "," + number(d.rhat) + "," + number(d.ess_bulk) + "," + number(d.ess_tail) + "," +
           number(d.mcse_mean) + "\n";
  }
  if (r.log_lik) {
    out << format("log_lik (%d training rows): max rhat %.3f (%s), min ess_bulk %.0f, min ess_tail %.0f\n",
                  r.log_lik->count, r.log_lik->max_rhat, r.log_lik->max_rhat_column.c_str(), r.log_lik->min_ess_bulk,
                  r.log_lik->min_ess_tail);
  }
  // Chains in different modes of a network's posterior show here as rows that disagree.
  if (!r.predictive.empty() && r.chain_mean.cols() > 1) {
    out << format("\n%-10s", "per chain");
    for (Eigen::Index c = 0; c < r.chain_mean.cols(); ++c)
      out << format(" %21s", format("chain %lld mean (sd)", static_cast<long long>(c + 1)).c_str());
    out << '\n';
    for (std::size_t k = 0; k < r.predictive.size(); ++k) {
      out << format("%-10s", r.predictive[k].c_str());
      for (Eigen::Index c = 0; c < r.chain_mean.cols(); ++c) {
        const auto i = static_cast<Eigen::Index>(k);
        out << format(" %21s", format("%.4g (%.2g)", r.chain_mean(i, c), r.chain_sd(i, c)).c_str());
      }
      out << '\n';
    }
  }
  out << format("\n%-6s %10s %8s %8s %10s %10s %12s %10s\n", "chain", "step size", "accept", "depth", "divergent",
                "max depth", "gradients", "seconds");
  for (const auto& c : r.chains) {
    out << format("%-6d %10.3g %8.3f %8.2f %10d %10d %12lld %10.2f\n", c.chain + 1, c.step_size, c.mean_accept_stat,
                  c.mean_tree_depth, c.divergences, c.max_depth_hits, c.gradient_evaluations,
                  c.warmup_seconds + c.sampling_seconds);
  }
  for (const std::string& w : r.warnings) out << "warning: " << w << '\n';
  if (r.divergences > 0) {
    out << format(
        "warning: %d divergent transitions after warm-up: the draws may be biased (try --target-accept 0.95)\n",
        r.divergences);
  }
  if (r.max_depth_hits > 0) {
    out << format("warning: %d transitions hit the maximum tree depth (--max-depth)\n", r.max_depth_hits);
  }
  if (!csv_path.empty()) write_file_atomic(csv_path, csv);
  return out.str();
}

}  // namespace occam::cli

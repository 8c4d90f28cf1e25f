#include "diagnostics_table.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "occam/data.h"
#include "occam/mcmc/diagnostics.h"
#include "output.h"

namespace occam::cli {

namespace {

bool reported(const std::string& name, bool weights) {
  return name == "lp__" || name.rfind("alpha.", 0) == 0 || name == "smoothing" || name == "beta" ||
         name.rfind("f.", 0) == 0 || (weights && name.rfind("w.", 0) == 0);
}

}  // namespace

std::string diagnostics_table(const mcmc::SamplerSummary& s, const std::string& csv_path, bool weights) {
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
    if (!reported(name, weights)) continue;
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

}  // namespace occam::cli

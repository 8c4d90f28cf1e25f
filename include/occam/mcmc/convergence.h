// convergence.h — whether a run's chains can be trusted, judged on what a user uses.
//
// A tanh network with H hidden units has H!·2^H equivalent modes, so R̂ on raw weights cannot
// reach 1.01 even for a perfect sampler (Sommer et al., ICML 2024, "Connecting the dots: is
// mode-connectedness the key to feasible sample-based inference in Bayesian neural networks?").
// The report therefore judges lp__, the hyperparameters (alpha.*, smoothing, beta), the network
// output at the monitored inputs (f.*) and the pointwise log-likelihood of the training rows
// (log_lik.*), and a linear model's coefficients (w.*) when asked:
// rank-normalised R̂, bulk and tail ESS and the MCSE of the mean (diagnostics.h), and, per chain,
// the mean and spread of each monitored output, so that chains sitting in different modes show
// as different rows rather than as one large R̂.
//
//   occam::mcmc::ConvergenceReport r = occam::mcmc::assess_convergence(*model.summary.sampler);
//   for (const std::string& w : r.warnings) std::cerr << "warning: " << w << '\n';
#pragma once

#include <Eigen/Core>
#include <optional>
#include <string>
#include <vector>

#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/sampler.h"

namespace occam::mcmc {

struct ConvergenceOptions {
  double max_rhat = 1.01;            // Vehtari et al. 2021's threshold
  double min_ess_per_chain = 100.0;  // bulk and tail ESS below this × chains are warned about
  int max_tree_depth = 0;            // NUTS's maximum depth, to count hits from treedepth__ (0: unknown)
  // Also judge the weights w.*: a linear model's coefficients, which unlike a network's weights
  // are identifiable.
  bool coefficients = false;
  void validate() const;
};

struct VariableConvergence {
  std::string name;
  Diagnostics diagnostics;
};

// R̂ and ESS over the m columns log_lik.1 … log_lik.m, reduced to their worst values.
struct PointwiseConvergence {
  int count = 0;
  double max_rhat = 0.0;
  std::string max_rhat_column;
  double min_ess_bulk = 0.0;
  double min_ess_tail = 0.0;
};

struct ConvergenceReport {
  int draws = 0;                               // kept draws over all chains
  std::vector<VariableConvergence> variables;  // lp__, alpha.*, smoothing, beta, f.* (w.*), in column order
  // Each chain's own mean and standard deviation of every f.* column (rows: predictive, columns:
  // chains): chains in different modes of a network's posterior differ here.
  std::vector<std::string> predictive;
  Eigen::MatrixXd chain_mean;
  Eigen::MatrixXd chain_sd;
  std::optional<PointwiseConvergence> log_lik;  // when the draws have log_lik.* columns
  std::vector<ChainSummary> chains;             // the sampler's per-chain statistics, as given
  int divergences = 0;                          // after warm-up, all chains: the draws may be biased
  int max_depth_hits = 0;                       // NUTS transitions cut short: inefficient, not biased
  // Every R̂ above ConvergenceOptions::max_rhat, then every ESS below min_ess_per_chain × chains,
  // as sentences (divergences and depth hits are the counts above).
  std::vector<std::string> warnings;
  bool trustworthy() const { return warnings.empty() && divergences == 0; }
};

// Throws Error(kInvalidArgument) when the summary has no draws, or chains of different columns.
// Columns with fewer than 4 draws in the shortest chain are left out (their diagnostics are
// undefined).
ConvergenceReport assess_convergence(const SamplerSummary& summary, const ConvergenceOptions& options = {});

// Several runs of the same model as one: their chains one after the other (chain numbers
// renumbered from 0), interrupted if any was. Throws Error(kInvalidArgument) naming the run whose
// columns differ from the first's.
SamplerSummary merge_runs(const std::vector<SamplerSummary>& runs, const std::vector<std::string>& names = {});

// Per-chain statistics from the sampler columns of the kept draws (accept_stat__, stepsize__,
// treedepth__, n_leapfrog__, divergent__), for draws read back from files: the step size is the
// last draw's, gradient evaluations count the kept draws' leapfrog steps only, and the times
// and warm-up divergences are unknown (0). Depth hits need max_tree_depth (> 0).
ChainSummary chain_statistics(const std::vector<std::string>& columns, const Eigen::MatrixXd& draws, int chain,
                              int max_tree_depth = 0);

}  // namespace occam::mcmc

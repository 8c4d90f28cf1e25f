// loo.h — Pareto-smoothed importance-sampling leave-one-out cross-validation (PSIS-LOO).
//
// From the pointwise log-likelihood log p(y_i | θ_s) of S posterior draws, estimates the expected
// log pointwise predictive density of new data, elpd_loo = Σ_i log p(y_i | y_−i), without refitting
// (Vehtari, Gelman & Gabry 2017, "Practical Bayesian model evaluation using leave-one-out
// cross-validation and WAIC", Statistics and Computing 27; Vehtari, Simpson, Gelman, Yao & Gabry
// 2022, "Pareto smoothed importance sampling", arXiv:1507.02646v8). The importance ratios
// r_s ∝ 1/p(y_i | θ_s) are stabilised by replacing their largest M values with the expected order
// statistics of a generalised Pareto distribution fitted to them; the fitted shape k̂ says how far
// the estimate can be trusted (k̂ ≤ 0.5 good, ≤ 0.7 ok, above: the importance sampling estimate is
// unreliable for that observation and it should be refitted without it).
//
// The numbers are those of R's loo package 2.5.1 (`loo(log_lik, r_eff = relative_eff(exp(log_lik),
// chain_id))`), checked against it to 1e-6 in tests/inference/mcmc/loo_test.cc; with `relative_efficiency = false`
// they are those of `loo(log_lik)` (r_eff = 1). One known difference: where the draws per chain are
// not a product of 2, 3 and 5, loo 2.5.1's autocovariances are scaled by M/N (M the next such
// length), which changes its r_eff slightly; occam uses the unscaled autocovariances of
// diagnostics.h (Geyer 1992: Σ_t x_t x_{t+k} / N).
//
//   Eigen::MatrixXd log_lik = ...;  // draws × observations, chain after chain
//   occam::mcmc::LooResult loo = occam::mcmc::psis_loo(log_lik, 4);
//   if (loo.pareto_k.maxCoeff() > 0.7) { /* some observations are too influential */ }
#pragma once

#include <Eigen/Core>

namespace occam::mcmc {

struct LooOptions {
  // Scale the tail length and the Monte Carlo errors by each observation's relative efficiency
  // r_eff = ESS/S of exp(log_lik) over the chains (loo's relative_eff). Without it r_eff = 1, right
  // for independent draws.
  bool relative_efficiency = true;
};

// A generalised Pareto distribution with shape k and scale σ (location 0).
struct GeneralizedPareto {
  double k = 0.0;
  double sigma = 0.0;
};

// Zhang & Stephens' (2009, Technometrics 51) empirical Bayes estimate from exceedances sorted in
// ascending order, with the weakly informative prior of Vehtari et al. (2022, eq. 7) pulling k̂
// towards 0.5 for short tails. k is +∞ when it cannot be estimated.
GeneralizedPareto fit_generalized_pareto(const Eigen::VectorXd& sorted_exceedances);

struct ParetoSmoothedWeights {
  Eigen::VectorXd log_weights;  // unnormalised, truncated at the largest raw weight
  double pareto_k = 0.0;        // +∞ when the tail is too short or constant (nothing smoothed)
};

// Smooths the `tail_length` largest of the log importance ratios (Vehtari et al. 2022, §3).
ParetoSmoothedWeights pareto_smooth(const Eigen::VectorXd& log_ratios, Eigen::Index tail_length);

// The tail length M = ⌈min(0.2 S, 3 √(S / r_eff))⌉ (Vehtari et al. 2022, §3.1).
Eigen::Index pareto_tail_length(Eigen::Index draws, double relative_efficiency);

struct LooResult {
  // Sums over observations and their standard errors √(n · var_i) (Vehtari et al. 2017, eq. 23).
  double elpd_loo = 0.0, se_elpd_loo = 0.0;
  double p_loo = 0.0, se_p_loo = 0.0;  // effective number of parameters, lpd − elpd_loo
  double looic = 0.0, se_looic = 0.0;  // −2 elpd_loo
  // Monte Carlo standard error of elpd_loo, √Σ mcse_i²; NaN when some k̂ > 0.7, where the
  // per-observation errors are not to be trusted (as loo's mcse_loo).
  double mcse_elpd_loo = 0.0;

  // One entry per observation.
  Eigen::VectorXd pointwise_elpd_loo;
  Eigen::VectorXd pointwise_mcse_elpd_loo;
  Eigen::VectorXd pointwise_p_loo;
  Eigen::VectorXd pointwise_looic;
  Eigen::VectorXd pareto_k;
  Eigen::VectorXd n_eff;  // effective sample size of the smoothed weights, r_eff / Σ w̃²
  Eigen::VectorXd relative_efficiency;
  Eigen::VectorXi tail_length;

  // How many k̂ fall in (−∞, 0.5], (0.5, 0.7], (0.7, 1] and (1, ∞): loo's Pareto k table.
  int pareto_k_counts[4] = {0, 0, 0, 0};
};

// The row of loo's Pareto k table a k̂ falls in: 0 for (−∞, 0.5] (good), 1 for (0.5, 0.7] (ok),
// 2 for (0.7, 1] (bad), 3 above (very bad).
int pareto_k_class(double k);

// `log_lik` is draws × observations with the draws of each chain contiguous (chain 1's first, ...),
// `chains` ≥ 1 dividing the number of draws. Throws Error(kInvalidInput) naming the first draw and
// observation whose log-likelihood is not finite, and Error(kInvalidArgument) for inconsistent shapes.
LooResult psis_loo(const Eigen::MatrixXd& log_lik, Eigen::Index chains, const LooOptions& options = {});

}  // namespace occam::mcmc

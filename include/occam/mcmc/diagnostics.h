// diagnostics.h — convergence diagnostics for several chains of one quantity.
//
// Rank-normalised split-R̂, bulk and tail effective sample sizes and the Monte Carlo standard
// error of the mean, exactly as R's posterior package computes them (Vehtari, Gelman, Simpson,
// Carpenter & Bürkner 2021, "Rank-normalization, folding, and localization"). Draws are an
// iterations × chains matrix.
//
//   Eigen::MatrixXd x(1000, 4);   // one column per chain
//   occam::mcmc::Diagnostics d = occam::mcmc::diagnose(x);
//   if (d.rhat > 1.01 || d.ess_bulk < 400) { /* do not trust the chains yet */ }
#pragma once

#include <Eigen/Core>
#include <limits>

namespace occam::mcmc {

// Each is NaN when undefined (a constant quantity, fewer than 3 iterations, non-finite draws),
// as in the posterior package.
double rhat(const Eigen::MatrixXd& draws);        // max(bulk R̂, tail R̂) on split, rank-normalised chains
double rhat_basic(const Eigen::MatrixXd& draws);  // split R̂ without rank normalisation (Gelman et al. 2013)
double ess_bulk(const Eigen::MatrixXd& draws);    // ESS of the rank-normalised split chains
double ess_tail(const Eigen::MatrixXd& draws);    // min ESS of the indicators x ≤ q5% and x ≤ q95%
double ess_mean(const Eigen::MatrixXd& draws);    // ESS of the split chains themselves
double mcse_mean(const Eigen::MatrixXd& draws);   // sd / √ess_mean
// Geyer's initial-monotone-sequence ESS of the columns as given (no splitting).
double ess_geyer(const Eigen::MatrixXd& chains);
// The sample quantile of type 7 (R's default).
double quantile(const Eigen::VectorXd& values, double probability);

struct Diagnostics {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double sd = std::numeric_limits<double>::quiet_NaN();
  double q5 = std::numeric_limits<double>::quiet_NaN();
  double median = std::numeric_limits<double>::quiet_NaN();
  double q95 = std::numeric_limits<double>::quiet_NaN();
  double rhat = std::numeric_limits<double>::quiet_NaN();
  double ess_bulk = std::numeric_limits<double>::quiet_NaN();
  double ess_tail = std::numeric_limits<double>::quiet_NaN();
  double mcse_mean = std::numeric_limits<double>::quiet_NaN();
};
Diagnostics diagnose(const Eigen::MatrixXd& draws);

}  // namespace occam::mcmc

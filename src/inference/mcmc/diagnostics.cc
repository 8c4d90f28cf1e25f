// Ports of the posterior package's (version 1.4) rhat, ess_bulk, ess_tail, ess_mean and
// mcse_mean; tests/inference/mcmc/mcmc_diagnostics_test.cc checks them against its output.
#include "occam/mcmc/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <numeric>
#include <unsupported/Eigen/FFT>
#include <vector>

#include "core/nan.h"
#include "occam/likelihood.h"

namespace occam::mcmc {
namespace {

// posterior's should_return_NA: non-finite draws, or a constant quantity.
bool undefined(const Eigen::MatrixXd& x) {
  if (x.size() == 0 || !x.allFinite()) return true;
  const double first = x(0, 0);
  return (x.array() - first).abs().maxCoeff() <=
         std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(first));
}

// Every chain constant to rounding (a sampler's step size after warm-up; a quantity fixed per
// chain): there is no within-chain variance for R̂ or an ESS to compare with, so both are NaN
// rather than the ratio of rounding errors (1e15).
bool constant_within_chains(const Eigen::MatrixXd& x) {
  for (Eigen::Index c = 0; c < x.cols(); ++c) {
    const double top = x.col(c).maxCoeff(), bottom = x.col(c).minCoeff();
    const double scale = std::max({1.0, std::abs(top), std::abs(bottom)});
    if (top - bottom > 8.0 * std::numeric_limits<double>::epsilon() * scale) return false;
  }
  return true;
}

bool undefined_per_chain(const Eigen::MatrixXd& x) { return undefined(x) || constant_within_chains(x); }

// Splits each chain in two halves (the middle draw of an odd count is dropped), doubling the
// chains: R̂ then also sees trends within a chain.
Eigen::MatrixXd split_chains(const Eigen::MatrixXd& x) {
  const Eigen::Index n = x.rows();
  if (n <= 1) return x;
  const Eigen::Index half = n / 2;  // floor(n/2); the second half starts at ceil(n/2 + 1) (1-based)
  const Eigen::Index second = (n % 2 == 0) ? half : half + 1;
  Eigen::MatrixXd out(half, 2 * x.cols());
  out.leftCols(x.cols()) = x.topRows(half);
  out.rightCols(x.cols()) = x.bottomRows(n - second);
  return out;
}

// Ranks with ties averaged, over all draws of all chains, mapped to normal scores
// Φ⁻¹((r − 3/8)/(S + 1/4)) (Blom 1958; Vehtari et al. 2021, eq. 14).
Eigen::MatrixXd z_scale(const Eigen::MatrixXd& x) {
  const Eigen::Index S = x.size();
  std::vector<Eigen::Index> order(static_cast<std::size_t>(S));
  std::iota(order.begin(), order.end(), 0);
  const double* v = x.data();
  std::stable_sort(order.begin(), order.end(), [v](Eigen::Index a, Eigen::Index b) { return v[a] < v[b]; });
  Eigen::MatrixXd z(x.rows(), x.cols());
  double* out = z.data();
  for (Eigen::Index i = 0; i < S;) {
    Eigen::Index j = i;
    while (j + 1 < S && v[order[j + 1]] == v[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j) + 1.0;  // average of the 1-based ranks i+1..j+1
    const double u = (rank - 0.375) / (static_cast<double>(S) - 0.75 + 1.0);
    const double score = normal_quantile(u);
    for (Eigen::Index k = i; k <= j; ++k) out[order[k]] = score;
    i = j + 1;
  }
  return z;
}

// The biased autocovariance of one chain at lags 0..n−1, by FFT with zero padding.
Eigen::VectorXd autocovariance(const Eigen::VectorXd& x) {
  const Eigen::Index n = x.size();
  const double mean = x.mean();
  std::size_t padded = 1;
  while (padded < static_cast<std::size_t>(2 * n)) padded <<= 1;
  std::vector<double> y(padded, 0.0);
  for (Eigen::Index i = 0; i < n; ++i) y[static_cast<std::size_t>(i)] = x[i] - mean;
  Eigen::FFT<double> fft;
  std::vector<std::complex<double>> spectrum;
  fft.fwd(spectrum, y);
  for (auto& c : spectrum) c = std::norm(c);
  std::vector<double> ac;
  fft.inv(ac, spectrum);
  Eigen::VectorXd out(n);
  for (Eigen::Index k = 0; k < n; ++k) out[k] = ac[static_cast<std::size_t>(k)] / static_cast<double>(n);
  return out;
}

double variance(const Eigen::VectorXd& v) {
  const double mean = v.mean();
  return (v.array() - mean).square().sum() / static_cast<double>(v.size() - 1);
}

double rhat_of(const Eigen::MatrixXd& x) {
  const double n = static_cast<double>(x.rows());
  Eigen::VectorXd chain_mean = x.colwise().mean().transpose();
  Eigen::VectorXd chain_var(x.cols());
  for (Eigen::Index c = 0; c < x.cols(); ++c) chain_var[c] = variance(x.col(c));
  const double var_between = n * variance(chain_mean);
  const double var_within = chain_var.mean();
  return std::sqrt((var_between / var_within + n - 1.0) / n);
}

Eigen::MatrixXd fold(const Eigen::MatrixXd& x) {
  Eigen::VectorXd all = Eigen::Map<const Eigen::VectorXd>(x.data(), x.size());
  const double median = quantile(all, 0.5);
  return (x.array() - median).abs().matrix();
}

Eigen::MatrixXd indicator_below(const Eigen::MatrixXd& x, double threshold) {
  return (x.array() <= threshold).cast<double>().matrix();
}

}  // namespace

double quantile(const Eigen::VectorXd& values, double probability) {
  std::vector<double> v(values.data(), values.data() + values.size());
  std::sort(v.begin(), v.end());
  const double h = (static_cast<double>(v.size()) - 1.0) * probability;
  const std::size_t lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Geyer's initial monotone sequence estimator over chains (Vehtari et al. 2021, eqs. 10–13;
// posterior's .ess).
double ess_geyer(const Eigen::MatrixXd& x) {
  const Eigen::Index chains = x.cols(), n = x.rows();
  if (n < 3 || undefined(x)) return kNaN;
  Eigen::VectorXd acov_means = Eigen::VectorXd::Zero(n);
  for (Eigen::Index c = 0; c < chains; ++c) acov_means += autocovariance(x.col(c));
  acov_means /= static_cast<double>(chains);
  const double nd = static_cast<double>(n);
  const double mean_var = acov_means[0] * nd / (nd - 1.0);
  double var_plus = mean_var * (nd - 1.0) / nd;
  if (chains > 1) var_plus += variance(x.colwise().mean().transpose());

  Eigen::VectorXd rho = Eigen::VectorXd::Zero(n);
  Eigen::Index t = 0;
  double rho_even = 1.0;
  rho[0] = rho_even;
  double rho_odd = 1.0 - (mean_var - acov_means[1]) / var_plus;
  rho[1] = rho_odd;
  while (t < n - 5 && !std::isnan(rho_even + rho_odd) && rho_even + rho_odd > 0) {
    t += 2;
    rho_even = 1.0 - (mean_var - acov_means[t]) / var_plus;
    rho_odd = 1.0 - (mean_var - acov_means[t + 1]) / var_plus;
    if (rho_even + rho_odd >= 0) {
      rho[t] = rho_even;
      rho[t + 1] = rho_odd;
    }
  }
  const Eigen::Index max_t = t;
  if (rho_even > 0) rho[max_t] = rho_even;
  // Make the sums of pairs monotone.
  t = 0;
  while (t <= max_t - 4) {
    t += 2;
    if (rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]) {
      rho[t] = 0.5 * (rho[t - 2] + rho[t - 1]);
      rho[t + 1] = rho[t];
    }
  }
  const double total = static_cast<double>(chains) * nd;
  double tau = -1.0 + 2.0 * rho.head(max_t).sum() + rho[max_t];
  tau = std::max(tau, 1.0 / std::log10(total));  // caps the ESS for antithetic chains
  return total / tau;
}

double rhat_basic(const Eigen::MatrixXd& draws) {
  if (undefined_per_chain(draws)) return kNaN;
  return rhat_of(split_chains(draws));
}

double rhat(const Eigen::MatrixXd& draws) {
  if (undefined_per_chain(draws)) return kNaN;
  const double bulk = rhat_of(z_scale(split_chains(draws)));
  const double tail = rhat_of(z_scale(split_chains(fold(draws))));
  return std::max(bulk, tail);
}

double ess_bulk(const Eigen::MatrixXd& draws) {
  if (undefined_per_chain(draws)) return kNaN;
  return ess_geyer(z_scale(split_chains(draws)));
}

double ess_tail(const Eigen::MatrixXd& draws) {
  if (undefined_per_chain(draws)) return kNaN;
  const Eigen::VectorXd all = Eigen::Map<const Eigen::VectorXd>(draws.data(), draws.size());
  const double q05 = ess_geyer(split_chains(indicator_below(draws, quantile(all, 0.05))));
  const double q95 = ess_geyer(split_chains(indicator_below(draws, quantile(all, 0.95))));
  return std::min(q05, q95);
}

double ess_mean(const Eigen::MatrixXd& draws) {
  if (undefined_per_chain(draws)) return kNaN;
  return ess_geyer(split_chains(draws));
}

double mcse_mean(const Eigen::MatrixXd& draws) {
  if (undefined(draws)) return kNaN;
  const Eigen::VectorXd all = Eigen::Map<const Eigen::VectorXd>(draws.data(), draws.size());
  return std::sqrt(variance(all)) / std::sqrt(ess_mean(draws));
}

Diagnostics diagnose(const Eigen::MatrixXd& draws) {
  Diagnostics d;
  if (draws.size() == 0) return d;
  const Eigen::VectorXd all = Eigen::Map<const Eigen::VectorXd>(draws.data(), draws.size());
  d.mean = all.mean();
  d.sd = all.size() > 1 ? std::sqrt(variance(all)) : kNaN;
  if (!all.allFinite()) return d;
  d.q5 = quantile(all, 0.05);
  d.median = quantile(all, 0.5);
  d.q95 = quantile(all, 0.95);
  d.rhat = rhat(draws);
  d.ess_bulk = ess_bulk(draws);
  d.ess_tail = ess_tail(draws);
  d.mcse_mean = mcse_mean(draws);
  return d;
}

}  // namespace occam::mcmc

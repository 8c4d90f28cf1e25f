// loo.cc — PSIS-LOO (loo.h): generalised Pareto tail fit, smoothing, pointwise estimates and their
// Monte Carlo errors.
#include "occam/mcmc/loo.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "occam/likelihood.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/status.h"

namespace occam::mcmc {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

double log_sum_exp(const Eigen::VectorXd& v) {
  const double top = v.maxCoeff();
  if (!std::isfinite(top)) return top;
  return top + std::log((v.array() - top).exp().sum());
}

double sample_variance(const Eigen::VectorXd& v) {
  if (v.size() < 2) return kUndefined;
  return (v.array() - v.mean()).square().sum() / static_cast<double>(v.size() - 1);
}

// Relative efficiency of the importance weights' numerator: ESS/S of exp(log_lik) over the chains
// (loo's relative_eff). The ESS is scale-free, so the likelihood is divided by its largest value
// first, which keeps exp from underflowing for observations with very low likelihood.
double relative_efficiency(const Eigen::VectorXd& log_lik, Eigen::Index chains) {
  const Eigen::Index iterations = log_lik.size() / chains;
  Eigen::MatrixXd likelihood(iterations, chains);
  const double top = log_lik.maxCoeff();
  for (Eigen::Index c = 0; c < chains; ++c)
    likelihood.col(c) = (log_lik.segment(c * iterations, iterations).array() - top).exp().matrix();
  const double ess = ess_geyer(likelihood);
  // A constant likelihood (or fewer than three iterations per chain) has no defined ESS; loo treats
  // an unknown r_eff as 1.
  if (!std::isfinite(ess)) return 1.0;
  return ess / static_cast<double>(log_lik.size());
}

// The Monte Carlo standard error of one elpd_loo_i (loo 2.5.1's mcse_elpd): the variance of the
// weighted mean of p(y_i | θ_s) by the delta method for ratio estimates, mapped to the log scale
// through 1000 normal quantiles. Computed relative to exp(elpd_i), which leaves the variance of the
// logarithm unchanged and cannot underflow.
double pointwise_mcse(const Eigen::VectorXd& log_lik, const Eigen::VectorXd& normalized_log_weights, double elpd,
                      double r_eff) {
  const Eigen::ArrayXd relative = (log_lik.array() - elpd).exp() - 1.0;
  const double relative_sd = std::sqrt(((2.0 * normalized_log_weights.array()).exp() * relative.square()).sum());
  constexpr int kQuantiles = 1000;
  constexpr double kBlom = 3.0 / 8.0;
  static const std::vector<double> normal_scores = [] {
    std::vector<double> z(kQuantiles);
    for (int r = 1; r <= kQuantiles; ++r)
      z[static_cast<std::size_t>(r - 1)] = normal_quantile((r - kBlom) / (kQuantiles - 2.0 * kBlom + 1.0));
    return z;
  }();
  std::vector<double> log_z;
  log_z.reserve(kQuantiles);
  for (double z : normal_scores) {
    const double scaled = 1.0 + relative_sd * z;
    if (scaled > 0.0) log_z.push_back(std::log(scaled));
  }
  const Eigen::VectorXd values =
      Eigen::Map<const Eigen::VectorXd>(log_z.data(), static_cast<Eigen::Index>(log_z.size()));
  return std::sqrt(sample_variance(values) / r_eff);
}

}  // namespace

GeneralizedPareto fit_generalized_pareto(const Eigen::VectorXd& x) {
  const Eigen::Index n = x.size();
  GeneralizedPareto fit{kInf, kUndefined};
  if (n < 2) return fit;
  // Zhang & Stephens (2009), with the grid of Vehtari et al. (2022, appendix): the profile
  // likelihood of θ = −k/σ on M points, averaged with weights ∝ likelihood.
  constexpr double kPriorStrength = 3.0;
  const Eigen::Index grid = 30 + static_cast<Eigen::Index>(std::floor(std::sqrt(static_cast<double>(n))));
  const double first_quartile = x[static_cast<Eigen::Index>(std::floor(static_cast<double>(n) / 4.0 + 0.5)) - 1];
  const double largest = x[n - 1];
  Eigen::VectorXd theta(grid), log_likelihood(grid);
  for (Eigen::Index j = 0; j < grid; ++j) {
    theta[j] = 1.0 / largest + (1.0 - std::sqrt(static_cast<double>(grid) / (static_cast<double>(j) + 0.5))) /
                                   kPriorStrength / first_quartile;
    const double k = (-theta[j] * x.array()).log1p().mean();
    log_likelihood[j] = static_cast<double>(n) * (std::log(-theta[j] / k) - k - 1.0);
  }
  const double normalizer = log_sum_exp(log_likelihood);
  const double theta_hat = (theta.array() * (log_likelihood.array() - normalizer).exp()).sum();
  double k = (-theta_hat * x.array()).log1p().mean();
  fit.sigma = -k / theta_hat;
  // The weakly informative prior: a posterior mean with 10 pseudo-observations at k = 0.5.
  constexpr double kPseudoObservations = 10.0;
  const double nd = static_cast<double>(n);
  k = k * nd / (nd + kPseudoObservations) + kPseudoObservations * 0.5 / (nd + kPseudoObservations);
  fit.k = std::isnan(k) ? kInf : k;
  return fit;
}

int pareto_k_class(double k) { return k <= 0.5 ? 0 : k <= 0.7 ? 1 : k <= 1.0 ? 2 : 3; }

Eigen::Index pareto_tail_length(Eigen::Index draws, double relative_efficiency) {
  const double s = static_cast<double>(draws);
  return static_cast<Eigen::Index>(std::ceil(std::min(0.2 * s, 3.0 * std::sqrt(s / relative_efficiency))));
}

ParetoSmoothedWeights pareto_smooth(const Eigen::VectorXd& log_ratios, Eigen::Index tail_length) {
  const Eigen::Index s = log_ratios.size();
  const double top = log_ratios.maxCoeff();
  ParetoSmoothedWeights out{log_ratios.array() - top, kInf};
  constexpr Eigen::Index kShortestTail = 5;
  if (tail_length >= kShortestTail && tail_length < s) {
    std::vector<Eigen::Index> order(static_cast<std::size_t>(s));
    std::iota(order.begin(), order.end(), Eigen::Index{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](Eigen::Index a, Eigen::Index b) { return out.log_weights[a] < out.log_weights[b]; });
    const Eigen::Index first = s - tail_length;
    Eigen::VectorXd tail(tail_length);
    for (Eigen::Index j = 0; j < tail_length; ++j)
      tail[j] = out.log_weights[order[static_cast<std::size_t>(first + j)]];
    // A constant tail has no Pareto shape to fit; the weights are then left as they are.
    if (std::abs(tail[tail_length - 1] - tail[0]) >= std::numeric_limits<double>::epsilon() / 100.0) {
      const double cutoff = out.log_weights[order[static_cast<std::size_t>(first - 1)]];
      const double exp_cutoff = std::exp(cutoff);
      const GeneralizedPareto gpd = fit_generalized_pareto((tail.array().exp() - exp_cutoff).matrix());
      out.pareto_k = gpd.k;
      if (std::isfinite(gpd.k) && gpd.sigma > 0.0) {
        // Replace the tail by the GPD's expected order statistics, quantiles at (j − ½)/M.
        for (Eigen::Index j = 0; j < tail_length; ++j) {
          const double p = (static_cast<double>(j) + 0.5) / static_cast<double>(tail_length);
          const double quantile = gpd.sigma * std::expm1(-gpd.k * std::log1p(-p)) / gpd.k;
          out.log_weights[order[static_cast<std::size_t>(first + j)]] = std::log(quantile + exp_cutoff);
        }
      }
    }
  }
  // Truncate at the largest raw ratio (Vehtari et al. 2022, §3: no smoothed weight exceeds it).
  out.log_weights = out.log_weights.cwiseMin(0.0).array() + top;
  return out;
}

LooResult psis_loo(const Eigen::MatrixXd& log_lik, Eigen::Index chains, const LooOptions& options) {
  const Eigen::Index draws = log_lik.rows(), n = log_lik.cols();
  if (draws < 2 || n < 1)
    throw Error(ErrorKind::kInvalidArgument,
                "psis_loo: needs at least 2 draws of at least 1 observation's log-likelihood, got " +
                    std::to_string(draws) + " draws of " + std::to_string(n));
  if (chains < 1 || draws % chains != 0)
    throw Error(ErrorKind::kInvalidArgument, "psis_loo: " + std::to_string(draws) + " draws cannot be split into " +
                                                 std::to_string(chains) + " chains of equal length");
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index s = 0; s < draws; ++s)
      if (!std::isfinite(log_lik(s, i)))
        throw Error(ErrorKind::kInvalidInput, "log-likelihood of observation " + std::to_string(i + 1) + " in draw " +
                                                  std::to_string(s + 1) + " is not finite (" +
                                                  std::to_string(log_lik(s, i)) + "): PSIS-LOO needs finite values");

  LooResult r;
  r.pointwise_elpd_loo.resize(n);
  r.pointwise_mcse_elpd_loo.resize(n);
  r.pointwise_p_loo.resize(n);
  r.pointwise_looic.resize(n);
  r.pareto_k.resize(n);
  r.n_eff.resize(n);
  r.relative_efficiency.resize(n);
  r.tail_length.resize(n);
  const double log_draws = std::log(static_cast<double>(draws));
  for (Eigen::Index i = 0; i < n; ++i) {
    const Eigen::VectorXd ll = log_lik.col(i);
    const double r_eff = options.relative_efficiency ? relative_efficiency(ll, chains) : 1.0;
    const Eigen::Index tail = pareto_tail_length(draws, r_eff);
    // Leaving y_i out: importance ratios 1 / p(y_i | θ_s) (Vehtari et al. 2017, eq. 7).
    const ParetoSmoothedWeights smoothed = pareto_smooth(-ll, tail);
    const Eigen::VectorXd log_w = smoothed.log_weights.array() - log_sum_exp(smoothed.log_weights);
    const double elpd = log_sum_exp(ll + log_w);     // eq. 10
    const double lpd = log_sum_exp(ll) - log_draws;  // eq. 5 (in-sample)
    r.pointwise_elpd_loo[i] = elpd;
    r.pointwise_p_loo[i] = lpd - elpd;  // eq. 11
    r.pointwise_looic[i] = -2.0 * elpd;
    r.pointwise_mcse_elpd_loo[i] = pointwise_mcse(ll, log_w, elpd, r_eff);
    r.pareto_k[i] = smoothed.pareto_k;
    r.n_eff[i] = r_eff / (2.0 * log_w.array()).exp().sum();
    r.relative_efficiency[i] = r_eff;
    r.tail_length[i] = static_cast<int>(tail);
    ++r.pareto_k_counts[pareto_k_class(smoothed.pareto_k)];
  }
  const double nd = static_cast<double>(n);
  r.elpd_loo = r.pointwise_elpd_loo.sum();
  r.se_elpd_loo = std::sqrt(nd * sample_variance(r.pointwise_elpd_loo));
  r.p_loo = r.pointwise_p_loo.sum();
  r.se_p_loo = std::sqrt(nd * sample_variance(r.pointwise_p_loo));
  r.looic = r.pointwise_looic.sum();
  r.se_looic = std::sqrt(nd * sample_variance(r.pointwise_looic));
  r.mcse_elpd_loo = r.pareto_k.maxCoeff() > 0.7 ? kUndefined : std::sqrt(r.pointwise_mcse_elpd_loo.squaredNorm());
  return r;
}

}  // namespace occam::mcmc

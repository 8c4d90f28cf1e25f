// The Poisson predictive at every rate: its interval against independent computations of the
// Poisson–log-normal mixture's quantiles, and a clear refusal, not a hang, where a count overflows.
#include <gtest/gtest.h>

#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "occam/likelihood.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {
namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// log P(Y = k) for Y ~ Poisson(λ), k ≥ 1, by Loader's (2000) saddle-point form, which keeps its
// relative accuracy for k and λ of 1e10: −λ·D(k/λ) − ½ log(2πk) − δ(k), with D(x) = x log x − x + 1
// written through log1p and δ(k) = 1/(12k) − 1/(360k³) the Stirling correction. Nothing here is
// shared with the library's incomplete-gamma code.
double log_poisson_pmf(double k, double rate) {
  const double d = (k - rate) / rate;
  const double deviance = rate * ((1.0 + d) * std::log1p(d) - d);
  return -deviance - 0.5 * std::log(2.0 * std::numbers::pi * k) - (1.0 / (12.0 * k) - 1.0 / (360.0 * k * k * k));
}

// Central quantiles of Poisson(λ) for large λ by summing the probabilities themselves: from 13
// standard deviations out (where the tail is below 1e-38) towards the middle, each term from the
// last by the ratio λ/(k+1), with compensated summation.
struct PoissonQuantiles {
  double lower, upper;
};
PoissonQuantiles poisson_quantiles_by_summation(double rate, double tail) {
  const double sd = std::sqrt(rate);
  PoissonQuantiles out{};
  // Lower: the smallest k with Σ_{j ≤ k} p_j ≥ tail.
  double k = std::floor(rate - 13.0 * sd), p = std::exp(log_poisson_pmf(k, rate)), sum = 0.0, carry = 0.0;
  while (true) {
    const double y = p - carry, t = sum + y;
    carry = (t - sum) - y;
    sum = t;
    if (sum >= tail) break;
    p *= rate / (k + 1.0);
    k += 1.0;
  }
  out.lower = k;
  // Upper: the smallest k with Σ_{j > k} p_j ≤ tail, summing the right tail downwards.
  k = std::floor(rate + 13.0 * sd);
  p = std::exp(log_poisson_pmf(k, rate));
  sum = carry = 0.0;
  while (true) {
    const double y = p - carry, t = sum + y;
    carry = (t - sum) - y;
    sum = t;  // Σ_{j ≥ k} p_j
    if (sum > tail) break;
    p *= k / rate;
    k -= 1.0;
  }
  out.upper = k;  // Σ_{j > k} ≤ tail < Σ_{j ≥ k}
  return out;
}

TEST(PoissonPredictive, RateOfTenToTheTenMatchesSummedProbabilities) {
  // A plain Poisson (no spread in f) at λ = e^23 ≈ 9.7e9: boost's incomplete gamma gives up there.
  const PoissonLikelihood lik;
  const double mu = 23.0, level = 0.95;
  Eigen::VectorXd mean, var, lower, upper;
  lik.predictive(Eigen::VectorXd::Constant(1, mu), Eigen::VectorXd::Zero(1), level, &mean, &var, &lower, &upper);
  const PoissonQuantiles ref = poisson_quantiles_by_summation(std::exp(mu), 0.5 - 0.5 * level);
  // The probability of one count at these quantiles is 5.8e-7; the library's CDF is accurate to
  // 1e-10, so its quantile can differ from the summed one only where the tail probability lies
  // within 1e-10 of a count's boundary.
  EXPECT_EQ(lower[0], ref.lower);
  EXPECT_EQ(upper[0], ref.upper);
  EXPECT_NEAR(mean[0], std::exp(mu), 1e-6 * std::exp(mu));
  EXPECT_NEAR(var[0], std::exp(mu), 1e-6 * std::exp(mu));
}

// The mixture quantile where the Poisson noise √λ is far below the log-normal spread sλ: with
// G ~ Gamma(k + 1), P(Y ≤ k) = P(log G ≥ f) = E Φ((log G − μ)/s), and log G has mean ψ(k + 1) and
// variance ψ'(k + 1) ≪ s², so the CDF is Φ(c) − ½ (ψ'/s²) c φ(c) with c = (ψ(k + 1) − μ)/s, to
// within (ψ'/s²)^{3/2} ≈ 1e-11 here. Solved for k by bisection.
double lognormal_dominated_quantile(double q, double mu, double sd) {
  const auto cdf = [&](double k) {
    const double a = k + 1.0, c = (boost::math::digamma(a) - mu) / sd;
    const double phi = std::exp(-0.5 * c * c) / std::sqrt(2.0 * std::numbers::pi);
    return normal_cdf(c) - 0.5 * boost::math::trigamma(a) / (sd * sd) * c * phi;
  };
  double lo = 0.0, hi = std::exp(mu + 10.0 * sd);
  while (hi - lo > 0.25) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) >= q ? hi : lo) = mid;
  }
  return std::ceil(hi);
}

TEST(PoissonPredictive, LogNormalDominatedIntervalIsNotAStaircase) {
  const PoissonLikelihood lik;
  const double mu = 23.0, sd = 0.05, level = 0.95;
  Eigen::VectorXd mean, var, lower, upper;
  lik.predictive(Eigen::VectorXd::Constant(1, mu), Eigen::VectorXd::Constant(1, sd * sd), level, &mean, &var, &lower,
                 &upper);
  // dk/dF = sλ/φ(1.96) ≈ 1.6e10 here: the library's CDF error of 1e-10 and the reference's of 1e-11
  // allow 2 counts. (A 24-node Gauss–Hermite mixture puts the bounds 2% of λ away, at its nodes.)
  EXPECT_NEAR(lower[0], lognormal_dominated_quantile(0.025, mu, sd), 2.0);
  EXPECT_NEAR(upper[0], lognormal_dominated_quantile(0.975, mu, sd), 2.0);
}

// P(Y ≤ k), k = 0..K, for the mixture by brute force: the Poisson CDF as a sum of its
// probabilities, integrated over f = μ + s t by the trapezoid rule on 40001 points of [−10, 10].
std::vector<double> mixture_cdf_brute_force(double mu, double sd, int K) {
  const int n = 40000;
  const double h = 20.0 / n;
  std::vector<double> cdf(static_cast<std::size_t>(K) + 1, 0.0), log_factorial(static_cast<std::size_t>(K) + 1);
  for (int j = 0; j <= K; ++j) log_factorial[static_cast<std::size_t>(j)] = std::lgamma(j + 1.0);
  for (int i = 0; i <= n; ++i) {
    const double t = -10.0 + h * i, log_rate = mu + sd * t, rate = std::exp(log_rate);
    const double weight =
        (i == 0 || i == n ? 0.5 : 1.0) * h * std::exp(-0.5 * t * t) / std::sqrt(2.0 * std::numbers::pi);
    double partial = 0.0;
    for (int j = 0; j <= K; ++j) {
      partial += std::exp(j * log_rate - rate - log_factorial[static_cast<std::size_t>(j)]);
      cdf[static_cast<std::size_t>(j)] += weight * partial;
    }
  }
  return cdf;
}

TEST(PoissonPredictive, SmallCountsMatchBruteForceMixture) {
  // Spreads on both sides of the switch between the Gauss–Hermite rule and the windowed rule, and
  // central intervals of 95% and 50%.
  const PoissonLikelihood lik;
  for (const auto& [mu, sd] : std::vector<std::pair<double, double>>{{1.0, 0.1}, {1.0, 0.6}, {3.0, 0.5}, {2.0, 1.5}}) {
    const int K = 300;
    const std::vector<double> cdf = mixture_cdf_brute_force(mu, sd, K);
    const auto quantile = [&](double q) {
      int k = 0;
      while (k < K && cdf[static_cast<std::size_t>(k)] < q) ++k;
      return k;
    };
    for (double level : {0.95, 0.5}) {
      Eigen::VectorXd mean, var, lower, upper;
      lik.predictive(Eigen::VectorXd::Constant(1, mu), Eigen::VectorXd::Constant(1, sd * sd), level, &mean, &var,
                     &lower, &upper);
      EXPECT_EQ(lower[0], quantile(0.5 - 0.5 * level)) << "mu " << mu << " sd " << sd << " level " << level;
      EXPECT_EQ(upper[0], quantile(0.5 + 0.5 * level)) << "mu " << mu << " sd " << sd << " level " << level;
    }
  }
}

TEST(PoissonPredictive, HugeRatesAreFiniteOrRefusedWithAReason) {
  const PoissonLikelihood lik;
  Eigen::VectorXd mean, var, lower, upper;
  // A count of e^700 ≈ 1e304 still fits a double, and so does e^350 with a spread (its variance is
  // about 1e-4·e^700): finite, ordered intervals around them.
  lik.predictive(Eigen::Vector2d(700.0, 350.0), Eigen::Vector2d(0.0, 1e-4), 0.95, &mean, &var, &lower, &upper);
  for (int n = 0; n < 2; ++n) {
    EXPECT_TRUE(std::isfinite(lower[n]) && std::isfinite(upper[n]) && std::isfinite(var[n]));
    // At e^700 the Poisson noise √λ ≈ 1e152 is below a double's resolution there (1e288): the
    // bounds are λ itself, to within a few ulps.
    EXPECT_LE(lower[n], mean[n] * (1.0 + 1e-15));
    EXPECT_GE(upper[n], mean[n] * (1.0 - 1e-15));
  }
  EXPECT_LT(lower[1], mean[1]);
  EXPECT_GT(upper[1], mean[1]);
  EXPECT_NEAR(std::log(lower[1]), 350.0 - 1.959964 * 0.01, 1e-6);
  EXPECT_NEAR(var[1], std::expm1(1e-4) * std::exp(700.0 + 1e-4), 1e-12 * var[1]);
  // Output biases of 710 and 800: the count's mean is beyond the largest double. A clear error
  // naming the example, at once (this used to loop for ever or print inf).
  for (double f : {710.0, 800.0, 1e6}) {
    try {
      lik.predictive(Eigen::Vector2d(1.0, f), Eigen::Vector2d(0.01, 0.01), 0.95, &mean, &var, &lower, &upper);
      ADD_FAILURE() << "no error at f = " << f;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kNumerical);
      EXPECT_NE(std::string(e.what()).find("example 2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("largest double"), std::string::npos) << e.what();
    }
  }
  // A finite mean whose variance overflows (e^{2μ + 2s²} > 1.8e308) is refused too.
  EXPECT_THROW(lik.predictive(Eigen::VectorXd::Constant(1, 300.0), Eigen::VectorXd::Constant(1, 60.0), 0.95, &mean,
                              &var, &lower, &upper),
               Error);
  // A non-finite latent mean is an error, not a NaN interval.
  EXPECT_THROW(lik.predictive(Eigen::VectorXd::Constant(1, std::nan("")), Eigen::VectorXd::Zero(1), 0.95, &mean, &var,
                              &lower, &upper),
               Error);
}

TEST(PoissonPredictive, DrawsAtHugeRatesAreFiniteOrRefused) {
  const PoissonLikelihood lik;
  Rng rng(3);
  // Exact draws up to 1e12, the rounded N(λ, λ) above: finite, within a few √λ of λ.
  for (double f : {20.0, 30.0, 40.0, 700.0}) {
    const double y = lik.sample(f, rng), rate = std::exp(f);
    EXPECT_TRUE(std::isfinite(y));
    EXPECT_LT(std::abs(y - rate), 6.0 * std::sqrt(rate) + 1e-12 * rate) << f;
  }
  EXPECT_THROW(lik.sample(710.0, rng), Error);
  EXPECT_THROW(lik.sample(std::nan(""), rng), Error);
}

}  // namespace
}  // namespace occam

// The Poisson–log-normal mixture's CDF (likelihoods/poisson_mixture.h) against brute force, and
// the Poisson CDF across the switch from boost's incomplete gamma to Temme's expansion.
#include <gtest/gtest.h>

#include <boost/math/special_functions/gamma.hpp>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "model/likelihoods/poisson_mixture.h"

namespace occam {
namespace {

TEST(PoissonMixture, CdfMatchesTrapezoidIntegralOfExactPoissonCdf) {
  for (const auto& [mu, sd] : std::vector<std::pair<double, double>>{{1.0, 0.1}, {1.0, 0.6}, {3.0, 0.5}, {2.0, 1.5}}) {
    for (int k : {0, 1, 3, 10, 40}) {
      // ∫ P(Poisson(e^{μ+st}) ≤ k) φ(t) dt by the trapezoid rule on 40001 points of [−10, 10].
      const int n = 40000;
      const double h = 20.0 / n;
      double reference = 0.0;
      for (int i = 0; i <= n; ++i) {
        const double t = -10.0 + h * i, log_rate = mu + sd * t, rate = std::exp(log_rate);
        double cdf = 0.0;
        for (int j = 0; j <= k; ++j) cdf += std::exp(j * log_rate - rate - std::lgamma(j + 1.0));
        reference +=
            (i == 0 || i == n ? 0.5 : 1.0) * h * cdf * std::exp(-0.5 * t * t) / std::sqrt(2.0 * std::numbers::pi);
      }
      EXPECT_NEAR(internal::poisson_lognormal_cdf(k, mu, sd), reference, 1e-9) << mu << " " << sd << " " << k;
    }
  }
}

TEST(PoissonMixture, PoissonCdfIsContinuousAcrossTheTemmeSwitch) {
  // k + 1 = 1000 is where Temme's expansion takes over; boost's value just below agrees with it.
  for (double z : {-3.0, -1.0, 0.0, 1.0, 3.0}) {
    const double rate = 1000.0 + z * std::sqrt(1000.0);
    EXPECT_NEAR(internal::poisson_cdf(999.0, rate), boost::math::gamma_q(1000.0, rate), 1e-10) << z;
    EXPECT_NEAR(internal::poisson_cdf(998.9999, rate), boost::math::gamma_q(999.9999, rate), 1e-10) << z;
  }
  // Counts far beyond boost's reach: for an integer λ, P(Y ≤ λ) = 1/2 + (2/3)/√(2πλ) + O(1/λ)
  // (Ramanujan's θ_n → 1/3).
  const double rate = 1e14;
  EXPECT_NEAR(internal::poisson_cdf(rate, rate), 0.5 + (2.0 / 3.0) / std::sqrt(2.0 * std::numbers::pi * rate), 1e-12);
  EXPECT_EQ(internal::poisson_cdf(5.0, std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_EQ(internal::poisson_cdf(5.0, 0.0), 1.0);
  EXPECT_EQ(internal::poisson_cdf(-1.0, 3.0), 0.0);
}

}  // namespace
}  // namespace occam

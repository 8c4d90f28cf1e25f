// poisson_mixture.h — the Poisson–log-normal mixture y | f ~ Poisson(e^f), f ~ N(μ, s²) (internal).
//
// The linearised predictive of a Poisson model is this mixture. Its CDF and quantiles must stay
// finite, accurate and cheap for every rate a model can predict, from 1e-300 to 1e300, and for
// every spread s; boost's incomplete gamma alone cannot do that (its series give up beyond a
// rate of about 1e11), and a fixed Gauss–Hermite rule in f turns the CDF into a staircase once
// the Poisson noise √λ is small beside the log-normal spread sλ.
#pragma once

namespace occam::internal {

// P(Y ≤ k) for Y ~ Poisson(rate), as the regularised upper incomplete gamma Q(k + 1, rate),
// which is also defined (and increasing) for real k > −1. rate = +inf gives 0, rate = 0 gives 1.
double poisson_cdf(double k, double rate);

// P(Y ≤ k) for the mixture, k real > −1 (continuous and increasing in k). sd ≥ 0.
double poisson_lognormal_cdf(double k, double mu, double sd);

// The smallest integer k ≥ 0 with P(Y ≤ k) ≥ q, for q in (0, 1): exact up to the quadrature
// error of the CDF (below 1e-9), found in a bounded number of CDF evaluations. Throws
// Error(kNumerical) when that count is beyond the largest double.
double poisson_lognormal_quantile(double q, double mu, double sd);

}  // namespace occam::internal

// poisson_mixture.cc — CDF and quantiles of the Poisson–log-normal mixture.
//
// F(k) = P(Y ≤ k) = ∫ Q(k + 1, e^{μ + s t}) φ(t) dt, with Q the regularised upper incomplete gamma
// (Q(k + 1, λ) = P(Poisson(λ) ≤ k)). As a function of f = μ + s t, Q(k + 1, e^f) is a smooth step
// at f ≈ log(k + 1) whose width is the spread of log G for G ~ Gamma(k + 1), about 1/√(k + 1).
// When that width is at least the normal's s, the integrand is smooth on the scale of φ and a
// Gauss–Hermite rule is exact to many digits; when it is narrower (large counts with a spread in
// f, the usual case beyond a few thousand), a Gauss–Hermite rule samples the step at a handful of
// nodes and the CDF becomes a staircase, so the integral is taken by composite Gauss–Legendre on
// panels that resolve both the normal and the step, over the window where the step is not flat.
// Q itself is a sum of Poisson probabilities at integer counts below 1000, boost's incomplete gamma
// at other counts below 1000, and Temme's uniform expansion above.

#include "model/likelihoods/poisson_mixture.h"

#include <boost/math/special_functions/gamma.hpp>
#include <boost/math/tools/toms748_solve.hpp>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <sstream>

#include "model/likelihoods/gauss_hermite.h"
#include "occam/likelihood.h"
#include "occam/status.h"

namespace occam::internal {
namespace {

// From this shape a on, the incomplete gamma comes from Temme's uniform expansion, whose error is
// below 6e-11 there (and falls as a grows); below it, from boost's series and continued fractions.
// Boost's own evaluation does not serve large a: above a ≈ 1755 it throws for x ≪ a (Γ(a)
// overflows), and it slows down and gives up beyond a ≈ 1e11.
constexpr double kTemmeShape = 1000.0;

// Boost's special functions report every failure as an error value (NaN) rather than an exception.
using QuietPolicy =
    boost::math::policies::policy<boost::math::policies::domain_error<boost::math::policies::errno_on_error>,
                                  boost::math::policies::overflow_error<boost::math::policies::errno_on_error>,
                                  boost::math::policies::evaluation_error<boost::math::policies::errno_on_error>,
                                  boost::math::policies::pole_error<boost::math::policies::errno_on_error>>;

// Where the normal's mass is negligible: Φ(−10) ≈ 7.6e-24.
constexpr double kNormalRange = 10.0;

// x − log(1 + x) for x > −1 without the cancellation of the direct form near 0.
double log1p_residual(double x) {
  if (std::abs(x) > 0.1) return x - std::log1p(x);
  // Σ_{n≥2} (−1)ⁿ xⁿ/n: each term at least ten times smaller than the last.
  double power = x * x, sum = 0.0;
  for (int n = 2; n < 40; ++n) {
    sum += (n % 2 == 0 ? power : -power) / n;
    power *= x;
    if (std::abs(power) < 1e-18 * std::abs(sum)) break;
  }
  return sum;
}

// Q(a, x) for large a by Temme's uniform asymptotic expansion (DLMF §8.12; Temme 1979):
// Q = ½ erfc(η√(a/2)) + e^{−aη²/2}/√(2πa) (c₀(η) + c₁(η)/a + O(a⁻²)), with λ = x/a and
// ½η² = λ − 1 − ln λ, η of the sign of λ − 1. Uniform in x; its error is the next term, about
// 5e-11 at a = 1000, 9e-12 at a = 2000 and 1e-6 at a = 20 (measured against boost).
double temme_q(double a, double x) {
  const double m = (x - a) / a;  // λ − 1
  const double eta = std::copysign(std::sqrt(2.0 * log1p_residual(m)), m);
  double c0, c1;
  if (std::abs(eta) < 1e-3) {
    // The closed forms cancel as η → 0; their Taylor series there (checked against the closed
    // forms in long double: the truncation error is below 2e-12 for c₀ and 1e-7 for c₁ at |η| < 1e-3).
    c0 = -1.0 / 3.0 + eta / 12.0 - 2.0 * eta * eta / 135.0;
    c1 = -1.0 / 540.0 - eta / 288.0;
  } else {
    c0 = 1.0 / m - 1.0 / eta;
    c1 = 1.0 / (eta * eta * eta) - 1.0 / (m * m * m) - 1.0 / (m * m) - 1.0 / (12.0 * m);
  }
  const double lead = 0.5 * std::erfc(eta * std::sqrt(0.5 * a));
  return lead + std::exp(-0.5 * a * eta * eta) / std::sqrt(2.0 * std::numbers::pi * a) * (c0 + c1 / a);
}

// Nodes and weights of the n-point Gauss–Legendre rule on [−1, 1] (Golub & Welsch 1969: the
// Jacobi matrix of the Legendre polynomials has off-diagonal k/√(4k² − 1); weights 2·v₀²).
struct GaussLegendre {
  Eigen::VectorXd nodes, weights;
  explicit GaussLegendre(int n) {
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, n);
    for (int k = 1; k < n; ++k) {
      const double kd = k;
      J(k, k - 1) = J(k - 1, k) = kd / std::sqrt(4.0 * kd * kd - 1.0);
    }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(J);
    nodes = eig.eigenvalues();
    weights = 2.0 * eig.eigenvectors().row(0).transpose().array().square();
  }
};

double normal_density(double t) { return std::exp(-0.5 * t * t) / std::sqrt(2.0 * std::numbers::pi); }

// Below Temme's range the CDF at an integer count is summed term by term: a few hundred
// multiplications at most (the terms fall like a normal of width √λ), faster than boost's
// incomplete gamma and as accurate (the first term's exponent carries a relative error of 1e-12).
constexpr double kSummedCount = kTemmeShape - 1.0;

// P(Y ≤ k) for integer k ≤ kSummedCount as a sum of Poisson probabilities, each from the last by
// the ratio j/λ or λ/(j+1). All terms are positive (no cancellation) and are summed from the largest
// outwards, where they only fall: below λ the lower tail Σ_{j≤k} downwards from j = k, above it
// 1 − the upper tail Σ_{j>k} upwards from j = k + 1 (which is at most about a half).
double poisson_cdf_by_sum(int k, double rate) {
  const bool lower = k < rate;
  const int start = lower ? k : k + 1;
  double term = std::exp(start * std::log(rate) - rate - std::lgamma(start + 1.0));
  double sum = term;
  for (int j = start; term > 1e-17 * sum;) {
    if (lower) {
      if (j == 0) break;
      term *= j / rate;
      --j;
    } else {
      ++j;
      term *= rate / j;
    }
    sum += term;
  }
  return lower ? std::min(sum, 1.0) : std::max(1.0 - sum, 0.0);
}

// The mixture CDF by Gauss–Hermite in t: for a step at least as wide as the normal.
double cdf_gauss_hermite(double k, double mu, double sd) {
  static const GaussHermite rule(32);
  double c = 0.0;
  for (Eigen::Index j = 0; j < rule.nodes.size(); ++j)
    c += rule.weights[j] * poisson_cdf(k, std::exp(mu + sd * rule.nodes[j]));
  return c;
}

// The mixture CDF where the step is narrower than the normal. Outside a window around the step
// Q(k + 1, e^f) is 1 (left of it) or 0 (right of it) to within 1e-13, so F = Φ(t_left) + ∫ Q φ over
// the window, by composite Gauss–Legendre on panels no wider than one unit of t (for φ) nor two
// widths of the step (for Q). The window spans 12 widths either side, and on the left at least 30/(k + 1)
// in f, where 1 − Q decays only like e^{(k+1)(f − f₀)} for small counts.
double cdf_windowed(double k, double mu, double sd) {
  static const GaussLegendre rule(8);
  const double a = k + 1.0, width = 1.0 / std::sqrt(a), centre = std::log(a);
  const double t_left = std::clamp((centre - std::max(12.0 * width, 30.0 / a) - mu) / sd, -kNormalRange, kNormalRange);
  const double t_right = std::clamp((centre + 12.0 * width - mu) / sd, -kNormalRange, kNormalRange);
  double c = 0.5 * std::erfc(-t_left / std::numbers::sqrt2);
  const double panel = std::min(1.0, 2.0 * width / sd);
  const double panels = std::max(1.0, std::ceil((t_right - t_left) / panel));
  const double half = 0.5 * (t_right - t_left) / panels;
  if (!(half > 0.0)) return c;
  for (int p = 0; p < static_cast<int>(panels); ++p) {
    const double middle = t_left + (2 * p + 1) * half;
    for (Eigen::Index j = 0; j < rule.nodes.size(); ++j) {
      const double t = middle + half * rule.nodes[j];
      c += half * rule.weights[j] * normal_density(t) * poisson_cdf(k, std::exp(mu + sd * t));
    }
  }
  return std::min(c, 1.0);
}

}  // namespace

double poisson_cdf(double k, double rate) {
  if (!(k > -1.0)) return 0.0;
  if (!(rate > 0.0)) return 1.0;
  if (!(rate < std::numeric_limits<double>::infinity())) return 0.0;
  if (k <= kSummedCount && k == std::floor(k)) return poisson_cdf_by_sum(static_cast<int>(k), rate);
  const double a = k + 1.0;
  if (a >= kTemmeShape) return temme_q(a, rate);
  const double q = boost::math::gamma_q(a, rate, QuietPolicy());
  return q >= 0.0 && q <= 1.0 ? q : temme_q(a, rate);  // boost failed: the expansion is still within 1e-6
}

double poisson_lognormal_cdf(double k, double mu, double sd) {
  if (!(k > -1.0)) return 0.0;
  if (!(sd > 0.0)) return poisson_cdf(k, std::exp(mu));
  // The step of Q(k + 1, e^f) in f: centred near log(k + 1), of width about 1/√(k + 1); in t units:
  const double step_width = 1.0 / (std::sqrt(k + 1.0) * sd);
  if (step_width >= 2.0) return cdf_gauss_hermite(k, mu, sd);
  return cdf_windowed(k, mu, sd);
}

double poisson_lognormal_quantile(double q, double mu, double sd) {
  const auto below = [&](double k) { return poisson_lognormal_cdf(k, mu, sd) < q; };
  if (!below(0.0)) return 0.0;
  const auto overflow = [&] {
    std::ostringstream msg;
    msg << "poisson predictive: the " << q << " quantile of the count exceeds the largest double (the log rate is "
        << mu << " with standard deviation " << sd << ")";
    return Error(ErrorKind::kNumerical, msg.str());
  };
  // A first guess from the log-normal quantile of the rate, widened by the Poisson noise around it.
  const double z = normal_quantile(q);
  const double rate = std::exp(mu + sd * z);
  if (!std::isfinite(rate)) throw overflow();
  const double guess = std::floor(std::max(0.0, rate + z * std::sqrt(rate)));
  const double spread = std::ceil(std::max(1.0, std::sqrt(rate) + sd * rate));
  // Bracket [lo, hi] with F(lo) < q ≤ F(hi) by steps that double: at most a few hundred tries
  // reach either end of the double range.
  double lo = guess, hi = guess, step = spread;
  if (below(guess)) {
    do {
      lo = hi;
      hi = lo + step;
      step *= 2.0;
      if (!std::isfinite(hi)) throw overflow();
    } while (below(hi));
  } else {
    do {
      hi = lo;
      lo = std::max(0.0, hi - step);
      step *= 2.0;
    } while (!below(lo));  // ends by lo = 0 at the latest, where F < q (checked above)
  }
  // A wide bracket of large counts is narrowed by solving F(x) = q on the continuous extension (F
  // increases in real x; Temme's expansion is as cheap there as at integers) by TOMS 748 (Alefeld,
  // Potra & Shi 1995), in x/hi so that its interpolation never overflows, to less than a count or a
  // few ulps where counts are coarser than that.
  if (hi - lo > 64.0 && lo + 1.0 >= kTemmeShape) {
    const double scale = hi;
    const auto f = [&](double u) { return poisson_lognormal_cdf(u * scale, mu, sd) - q; };
    const auto narrow = [scale](double a, double b) {
      return (b - a) * scale <= std::max(0.5, 4.0 * std::numeric_limits<double>::epsilon() * b * scale);
    };
    std::uintmax_t iterations = 100;
    const auto [a, b] =
        boost::math::tools::toms748_solve(f, lo / scale, 1.0, f(lo / scale), f(1.0), narrow, iterations);
    // The integers around that bracket, where they still bracket the quantile.
    const double new_lo = std::floor(a * scale) - 1.0, new_hi = std::ceil(b * scale) + 1.0;
    if (new_lo > lo && new_lo < hi && below(new_lo)) lo = new_lo;
    if (new_hi < hi && new_hi > lo && !below(new_hi)) hi = new_hi;
  }
  // Bisection on the integers, where the CDF is wanted: F(lo) < q ≤ F(hi) throughout. It stops
  // when the bracket is one count wide, or where doubles are coarser than counts and no integer
  // lies strictly between lo and hi any more.
  while (hi - lo > 1.0) {
    const double middle = std::floor(lo + 0.5 * (hi - lo));
    if (middle <= lo || middle >= hi) break;
    (below(middle) ? lo : hi) = middle;
  }
  return hi;
}

}  // namespace occam::internal

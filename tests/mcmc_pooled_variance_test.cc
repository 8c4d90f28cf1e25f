// The transition kernels themselves — fixed step size, fixed metric, no adaptation — leave a
// Gaussian target's covariance unchanged to within 1%. Many independent chains, each started at an
// exact draw from the target (so stationary from the start, no warm-up), pool their estimates of
// E[(x − μ)(x − μ)ᵀ]; the spread of those estimates across chains gives the Monte Carlo standard
// error (MCSE) of the pooled one whatever the autocorrelation inside a chain.
//
// Targets: a 10-d diagonal Gaussian whose standard deviations spread 10:1 (log-spaced from 1 to
// 10), and a 4-d correlated one, Σ_ij = 0.8^|i−j|, whose covariance is checked in the frame of its
// principal axes (the variance along each axis, and zero covariance between them). NUTS and HMC run
// with the unit metric. Random-walk Metropolis runs with the target's covariance as its fixed
// proposal shape (M⁻¹ = Σ, what `--precondition laplace` gives on a Gaussian): with the unit metric
// it needs about (10/s)² ≈ 200 iterations per independent draw of the widest axis here, and the
// pooling below would take minutes.
//
// Tolerance and power. Every entry must lie within k = 4.5 MCSE of the truth: 55 entries per test
// for the diagonal target and 10 for the correlated one, 195 in all; were every sampler exact, the
// chance that any entry strays beyond 4.5 MCSE is about 195 × 6.8·10⁻⁶ = 0.13%. The MCSE of each
// variance, relative to the true variance, must be at most 0.0015 (asserted, so that the test cannot
// quietly lose its power): a 1% bias is then at least 6.7 MCSE and fails the test with probability
// at least P(Z > 4.5 − 6.7) = 98.5%. A variance estimated from n effectively independent draws has
// relative MCSE √(2/n), so this asks for about 9·10⁵ effective draws of every coordinate; the chain
// counts and lengths below give relative MCSEs of 0.0009–0.00145 (effective draws per draw of the
// worst coordinate: NUTS 0.2–0.36, HMC 0.2–0.35, Metropolis 0.05–0.09).
//
// The NUTS of the commit before this test, whose U-turn check across subtrees read the wrong
// momenta, fails both NUTS tests: on the diagonal target the three widest variances came out
// 1.7–3.5% too large (up to 26 MCSE) and a narrow one 1.4% too small, on the correlated one the
// widest principal variance 2.6% too large (19 MCSE). The step sizes are chosen so that trees are
// deep enough for that error to show (it needs subtrees joined from both directions).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <iostream>

#include "occam/mcmc/sampler.h"
#include "testing/gaussian_target.h"
#include "testing/pooled_moments.h"

namespace occam::mcmc {
namespace {

using testing::GaussianTarget;

constexpr testing::MomentCheck kCheck{.k = 4.5, .max_relative_se = 0.0015};

// 10-d, standard deviations log-spaced over [1, 10], means spread over [−1, 1].
GaussianTarget spread_diagonal_gaussian() {
  const Eigen::Index d = 10;
  Eigen::VectorXd sd(d);
  for (Eigen::Index i = 0; i < d; ++i) sd[i] = std::pow(10.0, static_cast<double>(i) / static_cast<double>(d - 1));
  return GaussianTarget(Eigen::VectorXd::LinSpaced(d, -1.0, 1.0), sd.cwiseAbs2().asDiagonal());
}

// 4-d, unit variances, Σ_ij = 0.8^|i−j| (an AR(1) covariance; principal variances 2.9 down to 0.12).
GaussianTarget correlated_ar1_gaussian() {
  const Eigen::Index d = 4;
  Eigen::MatrixXd S(d, d);
  for (Eigen::Index i = 0; i < d; ++i)
    for (Eigen::Index j = 0; j < d; ++j) S(i, j) = std::pow(0.8, static_cast<double>(std::abs(i - j)));
  return GaussianTarget(Eigen::Vector4d(0.5, -0.5, 1.0, 0.0), S);
}

// A fixed kernel: no warm-up, so neither step size nor metric is adapted.
SamplerOptions fixed_kernel(SamplerKind method, double step_size, int chains, int draws, std::uint64_t seed) {
  SamplerOptions o;
  o.method = method;
  o.chains = chains;
  o.threads = 2;
  o.num_warmup = 0;
  o.num_draws = draws;
  o.seed = seed;
  o.metric = MetricKind::kUnit;
  o.adapt_metric = false;
  o.adapt_step_size = false;
  o.initial_step_size = step_size;
  return o;
}

// The pooled covariance in the frame U against UᵀΣU, with the figures printed for the record.
void check(const char* name, const GaussianTarget& target, const Eigen::MatrixXd& frame, const SamplerOptions& o) {
  const testing::PooledMoments m = testing::pooled_second_moments(target, frame, o);
  const Eigen::MatrixXd truth = frame.transpose() * target.covariance() * frame;
  std::cout << name << ": " << m.chains << " chains, " << m.draws << " draws, " << m.mean_leapfrog_steps
            << " leapfrog steps per transition\n  variance / truth (± MCSE):";
  for (Eigen::Index i = 0; i < truth.rows(); ++i) {
    std::cout << ' ' << m.mean(i, i) / truth(i, i) << " ± " << m.std_error(i, i) / truth(i, i);
  }
  std::cout << '\n';
  testing::expect_second_moments(m, truth, kCheck);
}

Eigen::MatrixXd coordinates(const GaussianTarget& target) { return Eigen::MatrixXd::Identity(target.dim(), target.dim()); }

// The principal axes of Σ, as columns.
Eigen::MatrixXd principal_axes(const GaussianTarget& target) {
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(target.covariance()).eigenvectors();
}

// Random-walk Metropolis with the target's covariance as its (fixed) proposal shape.
SamplerOptions fixed_metropolis(const GaussianTarget& target, double scale, int chains, int draws, std::uint64_t seed) {
  SamplerOptions o = fixed_kernel(SamplerKind::kMetropolis, scale, chains, draws, seed);
  o.metric = MetricKind::kDense;
  o.initial_inverse_metric = target.covariance();
  return o;
}

// The step sizes are below the leapfrog's stability limit 2σ_min (σ_min = 1 and 0.35).

TEST(McmcPooledVariance, NutsOnSpreadDiagonalGaussian) {
  const GaussianTarget target = spread_diagonal_gaussian();
  check("nuts, diagonal", target, coordinates(target), fixed_kernel(SamplerKind::kNuts, 1.5, 500, 6000, 101));
}

TEST(McmcPooledVariance, NutsOnCorrelatedGaussian) {
  const GaussianTarget target = correlated_ar1_gaussian();
  check("nuts, correlated", target, principal_axes(target), fixed_kernel(SamplerKind::kNuts, 0.3, 500, 10000, 102));
}

// HMC's trajectory length is jittered widely (ε·L times 0.1 to 1.9) so that no axis sees a fixed
// half period, which would map x to about −x and leave x² nearly unchanged.
TEST(McmcPooledVariance, HmcOnSpreadDiagonalGaussian) {
  const GaussianTarget target = spread_diagonal_gaussian();
  SamplerOptions o = fixed_kernel(SamplerKind::kHmc, 1.2, 500, 9000, 103);
  o.hmc = {.num_steps = 10, .jitter = 0.9};
  check("hmc, diagonal", target, coordinates(target), o);
}

TEST(McmcPooledVariance, HmcOnCorrelatedGaussian) {
  const GaussianTarget target = correlated_ar1_gaussian();
  SamplerOptions o = fixed_kernel(SamplerKind::kHmc, 0.3, 500, 6000, 104);
  o.hmc = {.num_steps = 8, .jitter = 0.9};
  check("hmc, correlated", target, principal_axes(target), o);
}

TEST(McmcPooledVariance, MetropolisOnSpreadDiagonalGaussian) {
  const GaussianTarget target = spread_diagonal_gaussian();
  check("metropolis, diagonal", target, coordinates(target), fixed_metropolis(target, 0.75, 500, 44000, 105));
}

TEST(McmcPooledVariance, MetropolisOnCorrelatedGaussian) {
  const GaussianTarget target = correlated_ar1_gaussian();
  check("metropolis, correlated", target, principal_axes(target), fixed_metropolis(target, 1.2, 500, 25000, 106));
}

}  // namespace
}  // namespace occam::mcmc

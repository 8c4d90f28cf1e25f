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
// MAMS (tests at the end) passes the same checks, on a third target too: a Bayesian linear
// regression, whose chains move on the library's own Posterior and are checked against its closed
// form. MCLMC, which has no Metropolis test, is checked for what it is: a variance bias that falls
// with the step size, and one within the bound docs/mcmc.md states at its default tuning.
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
#include "occam/posterior.h"
#include "testing/gaussian_target.h"
#include "testing/linear_gaussian.h"
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

// The pooled covariance in the frame U against UᵀΣU, with the figures printed for the record: of
// chains on `density`, whose distribution is the Gaussian `target`.
void check(const char* name, const LogDensity& density, const GaussianTarget& target, const Eigen::MatrixXd& frame,
           const SamplerOptions& o) {
  const testing::PooledMoments m = testing::pooled_second_moments(density, target, frame, o);
  const Eigen::MatrixXd truth = frame.transpose() * target.covariance() * frame;
  std::cout << name << ": " << m.chains << " chains, " << m.draws << " draws, " << m.mean_leapfrog_steps
            << " leapfrog steps per transition\n  variance / truth (± MCSE):";
  for (Eigen::Index i = 0; i < truth.rows(); ++i) {
    std::cout << ' ' << m.mean(i, i) / truth(i, i) << " ± " << m.std_error(i, i) / truth(i, i);
  }
  std::cout << '\n';
  testing::expect_second_moments(m, truth, kCheck);
}

void check(const char* name, const GaussianTarget& target, const Eigen::MatrixXd& frame, const SamplerOptions& o) {
  check(name, target, target, frame, o);
}

Eigen::MatrixXd coordinates(const GaussianTarget& target) {
  return Eigen::MatrixXd::Identity(target.dim(), target.dim());
}

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

// ---- MAMS and MCLMC ---------------------------------------------------------------------------
//
// MAMS runs with a fixed step size and decoherence length L (its trajectories 1..2L/ε − 1 steps of
// the minimal-norm integrator, uniformly) and the unit metric, as the other kernels do. The third
// target is a Bayesian linear regression: the chains move on the library's Posterior (a Linear
// network, a Gaussian likelihood, the ridge prior at fixed α, β), checked against the closed-form
// posterior N(A⁻¹βΦᵀy, A⁻¹) in the frame of its principal axes.

SamplerOptions fixed_microcanonical(SamplerKind method, double step_size, double length, int chains, int draws,
                                    std::uint64_t seed) {
  SamplerOptions o = fixed_kernel(method, step_size, chains, draws, seed);
  o.microcanonical.trajectory_length = length;
  return o;
}

// 40 rows, y = 0.8·x1 − 0.5·x2 + 0.3 + noise, x ~ N(0, I); α = 2 on (w, b), β = 3.
struct LinearRegression {
  Posterior posterior;
  GaussianTarget exact;
};
LinearRegression linear_regression() {
  testing::ToyData d;
  Rng rng(31);
  d.X.resize(40, 2);
  d.Y.resize(40, 1);
  for (Eigen::Index i = 0; i < 40; ++i) {
    d.X.row(i) << rng.normal(), rng.normal();
    d.Y(i, 0) = 0.8 * d.X(i, 0) - 0.5 * d.X(i, 1) + 0.3 + 0.6 * rng.normal();
  }
  const testing::ExactPosterior e =
      testing::exact_posterior(testing::design(d.X), d.Y.col(0), Eigen::VectorXd::Constant(3, 2.0), 3.0);
  return {testing::linear_posterior(d, 2.0, 2.0, 3.0), GaussianTarget(e.mean, e.covariance)};
}

TEST(McmcPooledVariance, MamsOnSpreadDiagonalGaussian) {
  const GaussianTarget target = spread_diagonal_gaussian();
  check("mams, diagonal", target, coordinates(target),
        fixed_microcanonical(SamplerKind::kMams, 2.5, 25.0, 500, 6000, 107));
}

TEST(McmcPooledVariance, MamsOnCorrelatedGaussian) {
  const GaussianTarget target = correlated_ar1_gaussian();
  check("mams, correlated", target, principal_axes(target),
        fixed_microcanonical(SamplerKind::kMams, 0.5, 4.0, 500, 5500, 108));
}

TEST(McmcPooledVariance, MamsOnBayesianLinearRegression) {
  const LinearRegression r = linear_regression();
  check("mams, linear regression", r.posterior, r.exact, principal_axes(r.exact),
        fixed_microcanonical(SamplerKind::kMams, 0.1, 0.6, 500, 4000, 109));
}

// MCLMC has no Metropolis test: its variances are off by a bias that falls as ε². On the 10-d
// standard normal (what the spread target is in the coordinates of its exact diagonal metric),
// the relative bias of the variances, averaged over the coordinates, at ε = 4 and at ε = 2 (L = 3):
// the first must be clearly non-zero (beyond 5 standard errors), the second at most half of it
// (ε² says a quarter).
TEST(McmcPooledVariance, MclmcBiasFallsWithTheStepSize) {
  const GaussianTarget target(Eigen::VectorXd::Zero(10), Eigen::MatrixXd::Identity(10, 10));
  const auto mean_bias = [&](double step_size, std::uint64_t seed) {
    const testing::PooledMoments m = testing::pooled_second_moments(
        target, coordinates(target), fixed_microcanonical(SamplerKind::kMclmc, step_size, 3.0, 100, 2000, seed));
    // The coordinates are independent: the standard error of the mean bias is the root mean square
    // of theirs over √10.
    const double bias = (m.mean.diagonal().array() - 1.0).mean();
    const double se = std::sqrt(m.std_error.diagonal().squaredNorm() / 10.0) / std::sqrt(10.0);
    std::cout << "mclmc, iid 10-d, ε = " << step_size << ": mean relative variance bias " << bias << " ± " << se
              << '\n';
    return std::pair{bias, se};
  };
  const auto [coarse, coarse_se] = mean_bias(4.0, 110);
  const auto [fine, fine_se] = mean_bias(2.0, 111);
  EXPECT_GT(std::abs(coarse), 5.0 * coarse_se);
  EXPECT_LT(std::abs(fine), 0.5 * std::abs(coarse));
}

// At the default tuning — a warm-up of 1000 iterations of one chain sets ε (Var[ΔE]/d = 5·10⁻⁴),
// L and the diagonal metric — the kernel so tuned, pooled over 100 chains of 2000 draws from
// stationarity, has every variance within 4% of the truth (docs/mcmc.md states it), beyond
// 4.5 standard errors: on the three targets of the MAMS tests.
void check_tuned_mclmc(const char* name, const LogDensity& density, const GaussianTarget& target,
                       const Eigen::MatrixXd& frame, std::uint64_t seed) {
  SamplerOptions tune;
  tune.method = SamplerKind::kMclmc;
  tune.chains = 1;
  tune.num_warmup = 1000;
  tune.num_draws = 0;
  tune.seed = seed;
  const SamplerSummary t = sample([&](int) { return std::make_unique<testing::TargetModel>(density); }, tune);
  const ChainSummary& c = t.chains[0];
  SamplerOptions o = fixed_microcanonical(SamplerKind::kMclmc, c.step_size, c.trajectory_length, 100, 2000, seed + 1);
  o.metric = MetricKind::kDiagonal;
  o.initial_inverse_metric = c.inverse_metric_diagonal;
  const testing::PooledMoments m = testing::pooled_second_moments(density, target, frame, o);
  const Eigen::MatrixXd truth = frame.transpose() * target.covariance() * frame;
  std::cout << name << " (tuned ε = " << c.step_size << ", L = " << c.trajectory_length << "): variance / truth:";
  for (Eigen::Index i = 0; i < truth.rows(); ++i) {
    std::cout << ' ' << m.mean(i, i) / truth(i, i) << " ± " << m.std_error(i, i) / truth(i, i);
    EXPECT_LE(std::abs(m.mean(i, i) - truth(i, i)), 0.04 * truth(i, i) + kCheck.k * m.std_error(i, i))
        << name << ", variance " << i;
  }
  std::cout << '\n';
}

TEST(McmcPooledVariance, MclmcBiasAtTheDefaultTuning) {
  const GaussianTarget diagonal = spread_diagonal_gaussian();
  check_tuned_mclmc("mclmc, diagonal", diagonal, diagonal, coordinates(diagonal), 112);
  const GaussianTarget correlated = correlated_ar1_gaussian();
  check_tuned_mclmc("mclmc, correlated", correlated, correlated, principal_axes(correlated), 114);
  const LinearRegression r = linear_regression();
  check_tuned_mclmc("mclmc, linear regression", r.posterior, r.exact, principal_axes(r.exact), 116);
}

}  // namespace
}  // namespace occam::mcmc

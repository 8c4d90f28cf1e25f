// The samplers on analytic targets (means and variances within 4 Monte Carlo standard errors of
// the truth, fixed seeds), Bayesian linear regression against its exact posterior, the same
// draws whatever the thread count, and Stan CSV files that read back exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/sampler.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/status.h"
#include "testing/gaussian_target.h"
#include "testing/linear_gaussian.h"
#include "testing/temp_dir.h"

namespace occam::mcmc {
namespace {

using testing::GaussianTarget;
using testing::TargetModel;

SamplerSummary run(const LogDensity& target, SamplerOptions options) {
  return sample([&](int) { return std::make_unique<TargetModel>(target); }, options);
}

SamplerOptions options_for(SamplerKind method, int warmup, int draws, std::uint64_t seed) {
  SamplerOptions o;
  o.method = method;
  o.num_warmup = warmup;
  o.num_draws = draws;
  o.seed = seed;
  o.threads = 2;
  if (method == SamplerKind::kHmc) o.hmc = {.num_steps = 20, .jitter = 0.2};
  return o;
}

int total_divergences(const SamplerSummary& s) {
  int n = 0;
  for (const auto& c : s.chains) n += c.divergences;
  return n;
}

// --- 100-d iid N(0, I) ---------------------------------------------------------------------

TEST(McmcSampler, NutsOnIidGaussian) {
  const GaussianTarget target = testing::iid_gaussian(100);
  const SamplerSummary s = run(target, options_for(SamplerKind::kNuts, 500, 500, 11));
  EXPECT_EQ(total_divergences(s), 0);
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, HmcOnIidGaussian) {
  const GaussianTarget target = testing::iid_gaussian(100);
  const SamplerSummary s = run(target, options_for(SamplerKind::kHmc, 500, 500, 12));
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, MetropolisOnIidGaussian) {
  const GaussianTarget target = testing::iid_gaussian(100);
  const SamplerSummary s = run(target, options_for(SamplerKind::kMetropolis, 10000, 40000, 13));
  double accept = 0.0;
  for (const auto& c : s.chains) accept += c.mean_accept_stat / 4.0;
  EXPECT_NEAR(accept, 0.234, 0.05);  // the scale adaptation reached its target
  testing::expect_moments_within_mcse(s, target);
}

// --- 2-d, correlation 0.99 ---------------------------------------------------------------

TEST(McmcSampler, NutsOnCorrelatedGaussian) {
  const GaussianTarget target = testing::correlated_gaussian(0.99);
  const SamplerSummary s = run(target, options_for(SamplerKind::kNuts, 1000, 1000, 21));
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, NutsDenseMetricOnCorrelatedGaussian) {
  const GaussianTarget target = testing::correlated_gaussian(0.99);
  SamplerOptions o = options_for(SamplerKind::kNuts, 1000, 1000, 22);
  o.metric = MetricKind::kDense;
  const SamplerSummary s = run(target, o);
  testing::expect_moments_within_mcse(s, target);
  // The adapted metric is close to the covariance, so trajectories are short.
  for (const auto& c : s.chains) EXPECT_LT(c.mean_tree_depth, 3.0);
}

TEST(McmcSampler, HmcOnCorrelatedGaussian) {
  const GaussianTarget target = testing::correlated_gaussian(0.99);
  const SamplerSummary s = run(target, options_for(SamplerKind::kHmc, 1000, 1000, 23));
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, MetropolisDenseOnCorrelatedGaussian) {
  const GaussianTarget target = testing::correlated_gaussian(0.99);
  SamplerOptions o = options_for(SamplerKind::kMetropolis, 5000, 20000, 24);
  o.metric = MetricKind::kDense;
  const SamplerSummary s = run(target, o);
  testing::expect_moments_within_mcse(s, target);
}

// --- 50-d, condition number 10⁴ ----------------------------------------------------------

TEST(McmcSampler, NutsOnIllConditionedGaussian) {
  const GaussianTarget target = testing::ill_conditioned_gaussian(50);
  const SamplerSummary s = run(target, options_for(SamplerKind::kNuts, 1000, 1000, 31));
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, NutsDenseOnRotatedIllConditionedGaussian) {
  const GaussianTarget target = testing::ill_conditioned_gaussian(50, /*rotated=*/true);
  SamplerOptions o = options_for(SamplerKind::kNuts, 1000, 1000, 32);
  o.metric = MetricKind::kDense;
  const SamplerSummary s = run(target, o);
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, HmcOnIllConditionedGaussian) {
  const GaussianTarget target = testing::ill_conditioned_gaussian(50);
  const SamplerSummary s = run(target, options_for(SamplerKind::kHmc, 1000, 1000, 33));
  testing::expect_moments_within_mcse(s, target);
}

TEST(McmcSampler, MetropolisOnIllConditionedGaussian) {
  const GaussianTarget target = testing::ill_conditioned_gaussian(50);
  const SamplerSummary s = run(target, options_for(SamplerKind::kMetropolis, 20000, 40000, 34));
  testing::expect_moments_within_mcse(s, target);
}

// --- Bayesian linear regression with fixed α, β -------------------------------------------

TEST(McmcSampler, NutsMatchesTheExactLinearRegressionPosterior) {
  const Index m = 30, D = 3;
  Rng data_rng(5);
  Eigen::MatrixXd X(m, D);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = data_rng.normal();
  const Eigen::Vector3d w_true(0.5, -1.0, 2.0);
  Eigen::MatrixXd Y = X * w_true;
  for (Index i = 0; i < m; ++i) Y(i, 0) += 0.7 + 0.3 * data_rng.normal();
  const double beta = 1.0 / 0.09;
  auto net = std::make_unique<Mlp>(D, std::vector<Index>{}, Activation::kIdentity);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
  Eigen::VectorXd alpha(2);
  alpha << 2.0, 0.1;  // weights, bias
  prior.set_alpha(alpha);
  const Posterior posterior(std::move(net), std::make_unique<GaussianLikelihood>(beta), prior, X, Y);
  // θ = (w_1..w_D, b): the design matrix is [X 1].
  Eigen::MatrixXd Phi(m, D + 1);
  Phi << X, Eigen::VectorXd::Ones(m);
  const auto exact = testing::exact_posterior(Phi, Y.col(0), posterior.prior().precision_diagonal(), beta);

  SamplerOptions o = options_for(SamplerKind::kNuts, 1000, 1000, 41);
  const SamplerSummary s = run(posterior, o);
  EXPECT_EQ(total_divergences(s), 0);
  const GaussianTarget truth(exact.mean, exact.covariance);
  testing::expect_moments_within_mcse(s, truth);
  // Off-diagonal covariances: E[(w_i − μ_i)(w_j − μ_j)] within 4 MCSE.
  for (Index i = 0; i < D + 1; ++i) {
    for (Index j = i + 1; j < D + 1; ++j) {
      const Eigen::MatrixXd xi = s.column(s.columns[static_cast<std::size_t>(kNumSamplerColumns + i)]);
      const Eigen::MatrixXd xj = s.column(s.columns[static_cast<std::size_t>(kNumSamplerColumns + j)]);
      const Eigen::MatrixXd product = ((xi.array() - exact.mean[i]) * (xj.array() - exact.mean[j])).matrix();
      EXPECT_LE(std::abs(product.mean() - exact.covariance(i, j)), 4.0 * mcse_mean(product)) << i << "," << j;
    }
  }
}

// --- reproducibility and output -------------------------------------------------------------

TEST(McmcSampler, DrawsDoNotDependOnTheThreadCount) {
  const GaussianTarget target = testing::correlated_gaussian(0.9);
  for (SamplerKind method : {SamplerKind::kNuts, SamplerKind::kHmc, SamplerKind::kMetropolis}) {
    SamplerOptions o = options_for(method, 200, 100, 7);
    o.chains = 3;
    o.threads = 1;
    const SamplerSummary one = run(target, o);
    o.threads = 2;
    const SamplerSummary two = run(target, o);
    ASSERT_EQ(one.draws.size(), two.draws.size());
    for (std::size_t c = 0; c < one.draws.size(); ++c) {
      ASSERT_EQ(one.draws[c].rows(), 100);
      EXPECT_TRUE(one.draws[c] == two.draws[c]) << to_string(method) << " chain " << c;
    }
    // Different chains use different streams.
    EXPECT_FALSE(one.draws[0] == one.draws[1]);
  }
}

TEST(McmcSampler, StanCsvFilesReadBackExactly) {
  testing::TempDir dir;
  const GaussianTarget target = testing::correlated_gaussian(0.5);
  SamplerOptions o = options_for(SamplerKind::kNuts, 100, 50, 3);
  o.chains = 2;
  o.thin = 2;
  const SamplerSummary s =
      sample([&](int) { return std::make_unique<TargetModel>(target); }, o,
             [&](int c) {
               return std::make_unique<StanCsvWriter>(dir.file("chain_" + std::to_string(c + 1) + ".csv"),
                                                      std::vector<std::string>{"model = test", "num_warmup = 100"});
             });
  for (int c = 0; c < 2; ++c) {
    const StanCsv csv = read_stan_csv(dir.file("chain_" + std::to_string(c + 1) + ".csv"));
    EXPECT_EQ(csv.columns, s.columns);
    ASSERT_EQ(csv.draws.rows(), 25);
    EXPECT_TRUE(csv.draws == s.draws[static_cast<std::size_t>(c)]);
    EXPECT_EQ(csv.column("lp__"), 0);
    EXPECT_EQ(csv.columns[7], "theta.1");
    bool adaptation = false, timing = false;
    for (const std::string& line : csv.comments) {
      adaptation = adaptation || line == "Adaptation terminated";
      timing = timing || line.find("Elapsed Time") != std::string::npos;
    }
    EXPECT_TRUE(adaptation);
    // Elapsed times would make two runs with the same seed differ: they are the summary's.
    EXPECT_FALSE(timing);
  }
}

TEST(McmcSampler, StopFlagEndsEveryChainEarly) {
  const GaussianTarget target = testing::iid_gaussian(10);
  std::atomic<bool> stop{true};
  SamplerOptions o = options_for(SamplerKind::kNuts, 100, 100, 1);
  o.stop = &stop;
  const SamplerSummary s = run(target, o);
  EXPECT_TRUE(s.interrupted);
  for (const auto& c : s.chains) EXPECT_EQ(c.iterations, 0);
}

TEST(McmcSampler, OptionsAreValidated) {
  SamplerOptions o;
  o.thin = 0;
  EXPECT_THROW(o.validate(), Error);
  o = SamplerOptions{};
  o.nuts.max_depth = 0;
  EXPECT_THROW(o.validate(), Error);
  o = SamplerOptions{};
  o.hmc.jitter = 1.0;
  EXPECT_THROW(o.validate(), Error);
}

}  // namespace
}  // namespace occam::mcmc

// The Gibbs update of α and β, checked by Geweke's (2004) joint-distribution test on a small
// Bayesian linear model: the marginal-conditional simulator (α, β from their priors, w | α,
// y | w, β) and the successive-conditional one (y | w, β, then the Gibbs step for α, β | w, y and
// a NUTS step for w | α, β, y) must agree on the means of test functions of (α, β, w, y).
#include <gtest/gtest.h>

#include <boost/random/gamma_distribution.hpp>
#include <cmath>
#include <memory>
#include <numbers>

#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/hamiltonian.h"
#include "occam/mcmc/hyper_gibbs.h"
#include "occam/mcmc/network_model.h"
#include "occam/mcmc/nuts.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/status.h"

namespace occam::mcmc {
namespace {

constexpr Index kRows = 4, kInputs = 2;

Eigen::MatrixXd design() {
  Eigen::MatrixXd X(kRows, kInputs);
  X << 0.5, -1.0, 1.2, 0.3, -0.7, 0.8, 0.1, -0.4;
  return X;
}

double gamma_draw(const GammaPrior& g, Rng& rng) {
  return boost::random::gamma_distribution<double>(g.shape, 1.0 / g.rate)(rng.engine());
}

// Test functions g(α_w, α_b, β, w, y): first and second moments.
Eigen::VectorXd test_functions(const Eigen::VectorXd& alpha, double beta, const Eigen::VectorXd& w,
                               const Eigen::MatrixXd& Y) {
  Eigen::VectorXd g(8);
  g << alpha[0], alpha[1], beta, w[0], w[0] * w[0], w[2] * w[2], Y(0, 0) * Y(0, 0), Y(1, 0) * w[1];
  return g;
}

class McmcGibbsGeweke : public ::testing::TestWithParam<bool> {};

// The successive-conditional chain runs through NetworkChainModel, centred or non-centred (whose
// Gibbs step rewrites the kernel's coordinates u = √α·w).
TEST_P(McmcGibbsGeweke, JointDistributionTest) {
  const bool non_centered = GetParam();
  HyperGibbsOptions hyper;
  hyper.alpha = {.shape = 3.0, .rate = 2.0};
  hyper.beta = {.shape = 4.0, .rate = 1.0};
  const Eigen::MatrixXd X = design();
  const Mlp net(kInputs, {}, Activation::kIdentity);
  const Prior prior0 = Prior::from_network(net, AlphaGroups::kDefault, 1.0);  // weights, bias
  const auto make_y = [&](const Eigen::VectorXd& w, double beta, Rng& rng) {
    Eigen::MatrixXd F;
    net.forward(w, X, &F);
    for (Index i = 0; i < kRows; ++i) F(i, 0) += rng.normal() / std::sqrt(beta);
    return F;
  };

  // Marginal-conditional: independent draws from the joint.
  const int n_mc = 40000;
  Eigen::MatrixXd g_mc(n_mc, 8);
  Rng rng_mc(101);
  for (int i = 0; i < n_mc; ++i) {
    Eigen::VectorXd alpha(2);
    alpha << gamma_draw(hyper.alpha, rng_mc), gamma_draw(hyper.alpha, rng_mc);
    const double beta = gamma_draw(hyper.beta, rng_mc);
    Prior prior = prior0;
    prior.set_alpha(alpha);
    const Eigen::VectorXd w = rng_mc.normal_vector(3).cwiseQuotient(prior.precision_diagonal().cwiseSqrt());
    g_mc.row(i) = test_functions(alpha, beta, w, make_y(w, beta, rng_mc)).transpose();
  }

  // Successive-conditional: y | θ, then the sampler's kernels for θ | y.
  const int n_sc = 40000;
  Eigen::MatrixXd g_sc(n_sc, 8);
  Rng rng(202);
  Eigen::VectorXd alpha = Eigen::Vector2d(1.5, 1.5);
  double beta = 4.0;
  Eigen::VectorXd w = Eigen::Vector3d(0.1, -0.2, 0.3);
  for (int i = 0; i < n_sc; ++i) {
    const Eigen::MatrixXd Y = make_y(w, beta, rng);
    Prior prior = prior0;
    prior.set_alpha(alpha);
    const Posterior posterior(net.clone(), std::make_unique<GaussianLikelihood>(beta), prior, X, Y);
    NetworkModelOptions options;
    options.gibbs = true;
    options.hyper = hyper;
    options.non_centered = non_centered;
    NetworkChainModel model(posterior, options);
    // The kernel's coordinates for the current weights, then the Gibbs step and a NUTS step.
    Eigen::VectorXd theta = non_centered ? Eigen::VectorXd(w.cwiseProduct(prior.precision_diagonal().cwiseSqrt())) : w;
    ASSERT_TRUE(model.parameter_values(theta).isApprox(w, 1e-12));
    model.gibbs_step(&theta, rng);
    ASSERT_TRUE(model.parameter_values(theta).isApprox(w, 1e-12));
    alpha = model.posterior().prior().alpha();
    beta = model.posterior().likelihood().precision();
    // A step size small enough for every (α, β) the chain visits.
    const Metric metric = Metric::unit(3);
    EuclideanHamiltonian h(model.density(), metric);
    NutsKernel nuts(h, {.max_depth = 8});
    nuts.set_step_size(0.05);
    PhasePoint z;
    z.q = theta;
    ASSERT_TRUE(h.init(&z));
    nuts.transition(&z, rng);
    w = model.parameter_values(z.q);
    g_sc.row(i) = test_functions(alpha, beta, w, Y).transpose();
  }

  for (Index k = 0; k < g_mc.cols(); ++k) {
    const double mean_mc = g_mc.col(k).mean();
    const double se_mc = std::sqrt((g_mc.col(k).array() - mean_mc).square().sum() / (n_mc - 1.0) / n_mc);
    const Eigen::MatrixXd sc = g_sc.col(k);
    const double mean_sc = sc.mean();
    const double se_sc = mcse_mean(sc);
    EXPECT_LE(std::abs(mean_mc - mean_sc), 4.0 * std::hypot(se_mc, se_sc))
        << "test function " << k << ": marginal-conditional " << mean_mc << " ± " << se_mc
        << ", successive-conditional " << mean_sc << " ± " << se_sc;
  }
}

INSTANTIATE_TEST_SUITE_P(Parameterizations, McmcGibbsGeweke, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "NonCentered" : "Centered";
                         });

TEST(McmcGibbs, ConditionalMeansMatchTheGammaFormulas) {
  // With many weights, the α draw concentrates at (a + W/2)/(b + ‖w‖²/2).
  const Mlp net(1, {}, Activation::kIdentity);
  Eigen::MatrixXd X(3, 1), Y(3, 1);
  X << 1, 2, 3;
  Y << 1, 2, 2;
  Posterior posterior(net.clone(), std::make_unique<GaussianLikelihood>(1.0),
                      Prior::from_network(net, AlphaGroups::kSingle, 1.0), X, Y);
  HyperGibbsOptions hyper;
  hyper.alpha = {.shape = 2.0, .rate = 1.0};
  hyper.beta = {.shape = 1.0, .rate = 0.5};
  const Eigen::Vector2d w(0.8, 0.3);
  Rng rng(9);
  double sum_alpha = 0.0, sum_beta = 0.0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    gibbs_hyperparameters(&posterior, w, hyper, rng);
    sum_alpha += posterior.prior().alpha()[0];
    sum_beta += posterior.likelihood().precision();
  }
  // E[α] = (2 + 1)/(1 + (0.64 + 0.09)/2); E_D = ½ Σ (y − 0.8x − 0.3)² = ½(0.01 + 0.01 + 0.49).
  const double shape_a = 3.0, rate_a = 1.0 + 0.365;
  const double shape_b = 1.0 + 1.5, rate_b = 0.5 + 0.255;
  EXPECT_NEAR(sum_alpha / n, shape_a / rate_a, 4.0 * std::sqrt(shape_a / n) / rate_a);
  EXPECT_NEAR(sum_beta / n, shape_b / rate_b, 4.0 * std::sqrt(shape_b / n) / rate_b);
}

TEST(McmcGibbs, GroupDiagonalPriorIsAccepted) {
  const Mlp net(2, {3}, Activation::kTanh);
  Eigen::MatrixXd X = Eigen::MatrixXd::Ones(4, 2), Y = Eigen::MatrixXd::Zero(4, 1);
  const Posterior posterior(net.clone(), std::make_unique<GaussianLikelihood>(1.0),
                            Prior::from_network(net, AlphaGroups::kDefault, 0.7), X, Y);
  EXPECT_NO_THROW(check_gibbs_supported(posterior));
}

// A graph-Laplacian prior's smoothed group has no conjugate update: its α_g and λ_s are slice-
// sampled. At fixed weights the updates must leave p(α_g, λ_s | w) ∝ |λ_s L + α_g I|^½
// exp(−α_g E_g − λ_s E_s) p(α_g) p(λ_s) invariant; its moments come from a quadrature on a grid in
// (log α_g, log λ_s) here, and the chain's must agree within 4.5 MCSE. The unsmoothed bias group
// keeps its Gamma draw, checked against its closed form.
TEST(McmcGibbs, SmoothingHyperparametersAreSliceSampledFromTheirConditional) {
  const Index D = 8;
  const Linear net(D, 1, true);
  PriorSpec spec;
  spec.kind = PriorKind::kLaplacian;
  spec.graph = chain_graph(D);
  Eigen::MatrixXd X = Eigen::MatrixXd::Ones(4, D), Y = Eigen::MatrixXd::Zero(4, 1);
  Posterior posterior(net.clone(), std::make_unique<GaussianLikelihood>(1.0), make_prior(net, spec), X, Y);
  EXPECT_NO_THROW(check_gibbs_supported(posterior));
  Eigen::VectorXd w(D + 1);
  w << 0.3, 0.5, 0.4, 0.9, 1.1, 0.7, 0.2, -0.1, 0.6;
  HyperGibbsOptions hyper;
  hyper.alpha = {.shape = 2.0, .rate = 1.0};
  hyper.sample_beta = false;

  // The conditional by quadrature: L's eigenvalues are 2 − 2cos(πk/D), k = 0..D−1.
  const Prior& prior = posterior.prior();
  const int smoothed = prior.smoothing()->group;
  const Eigen::VectorXd energies = prior.hyperparameter_energies(w);
  const double E_g = energies[smoothed], E_s = energies[energies.size() - 1];
  double z = 0, sum_a = 0, sum_l = 0, sum_log_a = 0, sum_log_l = 0;
  const int n = 800;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double x = -8.0 + 14.0 * (i + 0.5) / n, y = -8.0 + 14.0 * (j + 0.5) / n;
      const double a = std::exp(x), l = std::exp(y);
      double log_det = 0;
      for (int k = 0; k < D; ++k) log_det += std::log(l * (2.0 - 2.0 * std::cos(std::numbers::pi * k / D)) + a);
      // Gamma(2, 1) on each, and the Jacobian a·l of the log scale.
      const double log_f = 0.5 * log_det - a * E_g - l * E_s + std::log(a) - a + std::log(l) - l + x + y;
      const double p = std::exp(log_f);
      z += p;
      sum_a += p * a;
      sum_l += p * l;
      sum_log_a += p * x;
      sum_log_l += p * y;
    }
  }
  const double reference[] = {sum_a / z, sum_l / z, sum_log_a / z, sum_log_l / z};

  Rng rng(5);
  const int draws = 20000;
  Eigen::MatrixXd chain(draws, 4);
  double sum_bias_alpha = 0;
  for (int t = 0; t < draws; ++t) {
    gibbs_hyperparameters(&posterior, w, hyper, rng);
    const double a = posterior.prior().alpha()[smoothed], l = posterior.prior().smoothing()->lambda;
    chain.row(t) << a, l, std::log(a), std::log(l);
    sum_bias_alpha += posterior.prior().alpha()[1 - smoothed];
  }
  const char* names[] = {"alpha", "lambda", "log alpha", "log lambda"};
  for (int k = 0; k < 4; ++k) {
    const Eigen::MatrixXd x = chain.col(k);
    const double se = mcse_mean(x);
    EXPECT_LE(std::abs(x.mean() - reference[k]), 4.5 * se)
        << names[k] << ": chain " << x.mean() << " ± " << se << ", quadrature " << reference[k];
  }
  // The bias: Gamma(2 + 1/2, 1 + w_b²/2).
  const double shape = 2.5, rate = 1.0 + 0.5 * 0.6 * 0.6;
  EXPECT_NEAR(sum_bias_alpha / draws, shape / rate, 4.5 * std::sqrt(shape / draws) / rate);
}

}  // namespace
}  // namespace occam::mcmc

// GLM likelihoods and structured priors against references written here: the GLM Hessian
// −XᵀΓX − C⁻¹ and finite differences, the marginal likelihood by numerical quadrature, an
// independent Newton/IRLS solve, dense Gaussian densities, and the simulated receptive field.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <numbers>

#include "occam/bayesian_ridge.h"
#include "occam/cv.h"
#include "occam/fit.h"
#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/map.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/receptive_field.h"
#include "inference/laplace/structured/precision_factors.h"
#include "testing/finite_difference.h"

namespace occam {
namespace {

using testing::relative_error;

// x_n ~ N(0, I), y_n from the GLM with weights w_true and intercept b (Bernoulli or Poisson).
struct GlmData {
  Eigen::MatrixXd X, Y;
};

GlmData simulate(const std::string& family, Index m, const Eigen::VectorXd& w_true, double b, std::uint64_t seed) {
  Rng rng(seed);
  GlmData d{Eigen::MatrixXd(m, w_true.size()), Eigen::MatrixXd(m, 1)};
  const BernoulliLikelihood bernoulli;
  const PoissonLikelihood poisson;
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < w_true.size(); ++j) d.X(n, j) = rng.normal();
    const double f = d.X.row(n).dot(w_true) + b;
    d.Y(n, 0) = family == "bernoulli" ? bernoulli.sample(f, rng) : poisson.sample(f, rng);
  }
  return d;
}

std::unique_ptr<Likelihood> family_likelihood(const std::string& family) {
  if (family == "bernoulli") return std::make_unique<BernoulliLikelihood>();
  return std::make_unique<PoissonLikelihood>();
}

Eigen::MatrixXd with_ones(const Eigen::MatrixXd& X) {
  Eigen::MatrixXd Phi(X.rows(), X.cols() + 1);
  Phi << X, Eigen::VectorXd::Ones(X.rows());
  return Phi;
}

Eigen::MatrixXd dense_precision(const Prior& prior) {
  Eigen::MatrixXd P = Eigen::MatrixXd::Zero(prior.dim(), prior.dim());
  prior.add_precision_to(&P);
  return P;
}

// --- Hessians -------------------------------------------------------------------------------

class GlmHessianTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GlmHessianTest, EqualsMinusXtGammaXMinusPriorPrecisionAndFiniteDifferences) {
  const std::string family = GetParam();
  const Eigen::Vector4d w_true(0.5, -0.3, 0.2, 0.4);
  const GlmData d = simulate(family, 60, w_true, 0.1, 7);
  auto net = std::make_unique<Linear>(4, 1, true);
  // A chain-smoothing prior makes C⁻¹ non-diagonal, so the test covers that term too.
  PriorSpec spec;
  spec.kind = PriorKind::kLaplacian;
  spec.alpha = 0.7;
  spec.smoothing = 2.0;
  spec.graph = chain_graph(4);
  Prior prior = make_prior(*net, spec);
  Posterior post(std::move(net), family_likelihood(family), prior, d.X, d.Y);

  const Eigen::VectorXd w = (Eigen::VectorXd(5) << 0.3, -0.1, 0.25, 0.2, -0.2).finished();
  const Eigen::MatrixXd Phi = with_ones(d.X);
  const Eigen::VectorXd f = Phi * w;
  Eigen::VectorXd gamma(f.size());
  for (Index n = 0; n < f.size(); ++n) {
    gamma[n] = family == "bernoulli" ? logistic(f[n]) * (1.0 - logistic(f[n])) : std::exp(f[n]);
  }
  const Eigen::MatrixXd C_inv = dense_precision(post.prior());
  const Eigen::MatrixXd expected = Phi.transpose() * gamma.asDiagonal() * Phi + C_inv;  // −H

  for (HessianKind kind : {HessianKind::kGgn, HessianKind::kExact}) {
    const LaplaceApproximation q = laplace(post, w, kind);
    const Eigen::MatrixXd& L = q.precision_as<internal::DensePrecision>()->cholesky();
    const Eigen::MatrixXd A = L * L.transpose();
    EXPECT_LT(relative_error(A, expected), 1e-12);
  }
  auto gradient = [&](const Eigen::VectorXd& v) {
    double lp;
    Eigen::VectorXd g;
    EXPECT_TRUE(post.evaluate(v, &lp, &g));
    return g;
  };
  auto value = [&](const Eigen::VectorXd& v) {
    double lp;
    EXPECT_TRUE(post.evaluate(v, &lp, nullptr));
    return lp;
  };
  EXPECT_LT(relative_error(-testing::fd_hessian_from_gradient(gradient, w), expected), 1e-6);
  EXPECT_LT(relative_error(gradient(w), testing::fd_gradient(value, w)), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Families, GlmHessianTest, ::testing::Values("bernoulli", "poisson"));

TEST(CategoricalLikelihood, DerivativesMatchFiniteDifferences) {
  const CategoricalLikelihood lik({"a", "b", "c"});
  Eigen::MatrixXd F(2, 3);
  F << 0.3, -1.2, 2.0, 5.0, 4.0, -3.0;
  Eigen::MatrixXd Y(2, 1);
  Y << 2, 0;
  OutputDerivatives d;
  lik.neg_log_derivatives(F, Y, &d);
  for (Index n = 0; n < 2; ++n) {
    auto nll = [&](const Eigen::VectorXd& f) {
      return -lik.log_likelihood(Eigen::MatrixXd(f.transpose()), Eigen::MatrixXd(Y.row(n)), nullptr);
    };
    auto grad = [&](const Eigen::VectorXd& f) {
      Eigen::MatrixXd dF;
      lik.log_likelihood(Eigen::MatrixXd(f.transpose()), Eigen::MatrixXd(Y.row(n)), &dF);
      return Eigen::VectorXd(-dF.transpose());
    };
    const Eigen::VectorXd f = F.row(n).transpose();
    EXPECT_LT(relative_error(Eigen::VectorXd(d.gradient.row(n).transpose()), testing::fd_gradient(nll, f)), 1e-7);
    const Eigen::MatrixXd H = Eigen::Map<const Eigen::MatrixXd>(Eigen::RowVectorXd(d.hessian.row(n)).data(), 3, 3);
    EXPECT_LT(relative_error(H, testing::fd_hessian_from_gradient(grad, f)), 1e-6);
  }
  const Eigen::MatrixXd P = lik.class_probabilities(F);
  EXPECT_NEAR(P.row(0).sum(), 1.0, 1e-15);
  EXPECT_NEAR(P.row(1).sum(), 1.0, 1e-15);
}

TEST(HeteroscedasticLikelihood, GradientMatchesFiniteDifferencesAndWeightIsFisher) {
  const HeteroscedasticLikelihood lik;
  Eigen::MatrixXd F(1, 2);
  F << 0.4, -0.7;
  const Eigen::MatrixXd Y = Eigen::MatrixXd::Constant(1, 1, 1.3);
  auto ll = [&](const Eigen::VectorXd& f) { return lik.log_likelihood(Eigen::MatrixXd(f.transpose()), Y, nullptr); };
  Eigen::MatrixXd dF;
  const double value = lik.log_likelihood(F, Y, &dF);
  EXPECT_NEAR(value, -0.5 * std::log(2 * std::numbers::pi * std::exp(-0.7)) - 0.5 * 0.81 / std::exp(-0.7), 1e-14);
  EXPECT_LT(relative_error(Eigen::VectorXd(dF.transpose()), testing::fd_gradient(ll, Eigen::Vector2d(0.4, -0.7))),
            1e-7);
  OutputDerivatives d;
  lik.neg_log_derivatives(F, Y, &d);
  EXPECT_DOUBLE_EQ(d.hessian(0, 0), std::exp(0.7));
  EXPECT_DOUBLE_EQ(d.hessian(0, 3), 0.5);
}

TEST(HeteroscedasticLikelihood, VarianceFloorBoundsTheLikelihoodAndItsCurvature) {
  // σ² = e^s + v: the floor v keeps log p ≤ −½ log 2πv and the Fisher weight ≤ 1/v however far the
  // log-variance output s falls (without it both grow without bound as s → −∞).
  const double floor = 1e-3;
  const HeteroscedasticLikelihood lik(floor);
  const Eigen::MatrixXd Y = Eigen::MatrixXd::Constant(1, 1, 1.3);
  for (const double s : {-0.7, 2.0, -30.0}) {
    Eigen::MatrixXd F(1, 2);
    F << 0.4, s;
    auto ll = [&](const Eigen::VectorXd& f) { return lik.log_likelihood(Eigen::MatrixXd(f.transpose()), Y, nullptr); };
    Eigen::MatrixXd dF;
    const double variance = std::exp(s) + floor;
    EXPECT_NEAR(lik.log_likelihood(F, Y, &dF), -0.5 * std::log(2 * std::numbers::pi * variance) - 0.5 * 0.81 / variance,
                1e-12);
    EXPECT_LT(relative_error(Eigen::VectorXd(dF.transpose()), testing::fd_gradient(ll, Eigen::Vector2d(0.4, s))), 1e-6)
        << "s = " << s;
    OutputDerivatives d;
    lik.neg_log_derivatives(F, Y, &d);
    EXPECT_NEAR(d.hessian(0, 0), 1.0 / variance, 1e-12 / variance);
    EXPECT_NEAR(d.hessian(0, 3), 0.5 * std::pow(std::exp(s) / variance, 2), 1e-15);
  }
  Eigen::MatrixXd exact(1, 2);
  exact << 1.3, -700.0;  // the mean fits exactly and the log-variance runs off
  EXPECT_LE(lik.log_likelihood(exact, Y, nullptr), -0.5 * std::log(2 * std::numbers::pi * floor) + 1e-12);
  OutputDerivatives d;
  lik.neg_log_derivatives(exact, Y, &d);
  EXPECT_LE(d.hessian(0, 0), 1.0 / floor);
  EXPECT_THROW(HeteroscedasticLikelihood(-1.0), Error);
  // A floor travels with the model file; a file without one (older) has none.
  EXPECT_EQ(likelihood_from_json(lik.to_json())->to_json(), lik.to_json());
  EXPECT_EQ(likelihood_from_json(nlohmann::json{{"type", "hetero"}})->to_json(), HeteroscedasticLikelihood().to_json());
}

// --- The evidence against quadrature ------------------------------------------------------------

// |log Z_Laplace − log Z_quadrature| for a GLM with one (no intercept) or two (with intercept)
// parameters, Z computed on a grid of ±9 posterior standard deviations by the trapezoid rule
// with log-sum-exp.
double laplace_evidence_error(const std::string& family, Index m, bool intercept) {
  const GlmData d = simulate(family, m, Eigen::VectorXd::Constant(1, 0.8), intercept ? 0.3 : 0.0, 11 + m);
  auto net = std::make_unique<Linear>(1, 1, intercept);
  Prior prior = Prior::from_network(*net, AlphaGroups::kSingle, 1.0);
  Posterior post(std::move(net), family_likelihood(family), prior, d.X, d.Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  MapOptions map;
  map.gradient_tolerance = 1e-12;
  EXPECT_EQ(find_map(post, map, &w).termination, Termination::kConverged);
  const LaplaceApproximation q = laplace(post, w, HessianKind::kGgn);
  const double log_z_laplace = log_evidence(post, q);

  const Eigen::VectorXd sd = q.covariance_diagonal().cwiseSqrt();
  const int points = intercept ? 301 : 4001;
  std::vector<double> terms;
  double top = -std::numeric_limits<double>::infinity();
  Eigen::VectorXd h = 18.0 * sd / (points - 1);
  Eigen::VectorXd v(post.dim());
  for (int i = 0; i < points; ++i) {
    for (int j = 0; j < (intercept ? points : 1); ++j) {
      v[0] = w[0] - 9.0 * sd[0] + i * h[0];
      double weight = (i == 0 || i == points - 1) ? 0.5 : 1.0;
      if (intercept) {
        v[1] = w[1] - 9.0 * sd[1] + j * h[1];
        weight *= (j == 0 || j == points - 1) ? 0.5 : 1.0;
      }
      double lp;
      post.evaluate(v, &lp, nullptr);
      terms.push_back(lp + std::log(weight));
      top = std::max(top, terms.back());
    }
  }
  double sum = 0.0;
  for (double t : terms) sum += std::exp(t - top);
  const double log_z_quadrature = top + std::log(sum) + std::log(h.prod());
  return std::abs(log_z_laplace - log_z_quadrature);
}

class EvidenceQuadratureTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(EvidenceQuadratureTest, LaplaceErrorIsSmallAndShrinksWithData) {
  const auto [family, intercept] = GetParam();
  // The Laplace error in log Z is O(1/m) (Tierney & Kadane 1986): ten times the data, a clearly
  // smaller error.
  const double small = laplace_evidence_error(family, 30, intercept);
  const double large = laplace_evidence_error(family, 300, intercept);
  RecordProperty("log_z_error_m30", std::to_string(small));
  RecordProperty("log_z_error_m300", std::to_string(large));
  EXPECT_LT(small, 0.1) << family;
  EXPECT_LT(large, 0.5 * small) << family << ": " << small << " -> " << large;
  EXPECT_LT(large, 0.02) << family;
}

INSTANTIATE_TEST_SUITE_P(Glms, EvidenceQuadratureTest,
                         ::testing::Combine(::testing::Values("bernoulli", "poisson"), ::testing::Bool()));

// --- MAP against an independent IRLS ----------------------------------------------------------------

TEST(LogisticRegression, MapAgreesWithNewtonIrls) {
  const Eigen::Vector3d w_true(1.0, -2.0, 0.5);
  const GlmData d = simulate("bernoulli", 300, w_true, -0.4, 5);
  const double alpha = 0.5;
  auto net = std::make_unique<Linear>(3, 1, true);
  Posterior post(std::move(net), std::make_unique<BernoulliLikelihood>(),
                 Prior::from_network(Linear(3, 1, true), AlphaGroups::kSingle, alpha), d.X, d.Y);
  for (Optimizer optimizer : {Optimizer::kLevenbergMarquardt, Optimizer::kLbfgs}) {
    Eigen::VectorXd w = Eigen::VectorXd::Zero(4);
    MapOptions options;
    options.optimizer = optimizer;
    options.gradient_tolerance = 1e-10;
    find_map(post, options, &w);

    // Newton's method on the penalised log-likelihood, i.e. IRLS: (ΦᵀΓΦ + αI) Δ = Φᵀ(y − p) − αv.
    const Eigen::MatrixXd Phi = with_ones(d.X);
    Eigen::VectorXd v = Eigen::VectorXd::Zero(4);
    for (int it = 0; it < 50; ++it) {
      const Eigen::VectorXd p = (1.0 + (-(Phi * v).array()).exp()).inverse().matrix();
      const Eigen::VectorXd g = Phi.transpose() * (d.Y.col(0) - p) - alpha * v;
      Eigen::MatrixXd H = Phi.transpose() * (p.array() * (1.0 - p.array())).matrix().asDiagonal() * Phi;
      H.diagonal().array() += alpha;
      v += H.llt().solve(g);
    }
    EXPECT_LT((w - v).norm(), 1e-7 * v.norm()) << to_string(optimizer);
  }
}

// --- Bad targets ------------------------------------------------------------------------------------

std::string target_error(const Likelihood& lik, const Eigen::MatrixXd& Y) {
  try {
    lik.validate_targets(Y);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    return e.what();
  }
  return "";
}

TEST(LikelihoodTargets, EachBadTargetNamesItsRow) {
  Eigen::MatrixXd y(4, 1);
  y << 0, 1, 2, 1;
  EXPECT_EQ(target_error(BernoulliLikelihood(), y), "bernoulli likelihood: target in row 3 is 2; expected 0 or 1");
  y << 0, 1, 1, -1;
  EXPECT_EQ(target_error(PoissonLikelihood(), y),
            "poisson likelihood: target in row 4 is -1; expected a non-negative integer count");
  y << 0, 2.5, 1, 1;
  EXPECT_EQ(target_error(PoissonLikelihood(), y),
            "poisson likelihood: target in row 2 is 2.5; expected a non-negative integer count");
  EXPECT_EQ(target_error(PoissonLikelihood(true), y),
            "poisson likelihood: expected 2 target columns (the count and the offset), got 1");
  y << 0, 1, 3, 2;
  EXPECT_EQ(target_error(CategoricalLikelihood({"a", "b", "c"}), y),
            "categorical likelihood: target in row 3 is 3; expected a class index in 0..2");
  y << 0, 1, 0, 1;
  EXPECT_EQ(target_error(BernoulliLikelihood(), y), "");
  EXPECT_EQ(target_error(HeteroscedasticLikelihood(), Eigen::MatrixXd::Constant(2, 2, 0.0)),
            "hetero likelihood: expected 1 target column (the target), got 2");
}

TEST(LikelihoodJson, EveryFamilyRoundTrips) {
  const std::vector<std::shared_ptr<Likelihood>> all = {
      std::make_shared<GaussianLikelihood>(3.0), std::make_shared<BernoulliLikelihood>(),
      std::make_shared<PoissonLikelihood>(true),
      std::make_shared<CategoricalLikelihood>(std::vector<std::string>{"x", "7"}),
      std::make_shared<HeteroscedasticLikelihood>()};
  for (const auto& lik : all) EXPECT_EQ(likelihood_from_json(lik->to_json())->to_json(), lik->to_json());
}

TEST(BernoulliPredictive, ModeratedOutputIsCloseToTheIntegral) {
  // ∫ σ(f) N(f; μ, s²) df by dense quadrature against MacKay's σ(κμ): the approximation is good
  // to about 0.02 over this range (MacKay 1992c, fig. 1) and exact at μ = 0.
  const BernoulliLikelihood lik;
  for (double mu : {-3.0, -1.0, 0.0, 0.5, 2.0}) {
    for (double s2 : {0.0, 1.0, 9.0}) {
      double integral = 0.0;
      const int n = 20001;
      for (int i = 0; i < n; ++i) {
        const double z = -10.0 + 20.0 * i / (n - 1);
        integral += logistic(mu + std::sqrt(s2) * z) * std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi) *
                    (20.0 / (n - 1));
      }
      const Eigen::MatrixXd P =
          lik.predictive_probabilities(Eigen::MatrixXd::Constant(1, 1, mu), Eigen::MatrixXd::Constant(1, 1, s2));
      EXPECT_NEAR(P(0, 1), integral, 0.02) << mu << " " << s2;
      if (mu == 0.0 || s2 == 0.0) {
        EXPECT_NEAR(P(0, 1), integral, 1e-6);
      }
    }
  }
}

TEST(PoissonPredictive, LogNormalMomentsAndIntervalCoverTheMixture) {
  const PoissonLikelihood lik;
  const Eigen::VectorXd mu = Eigen::Vector2d(1.0, 3.0), s2 = Eigen::Vector2d(0.25, 0.0);
  Eigen::VectorXd mean, var, lower, upper;
  lik.predictive(mu, s2, 0.9, &mean, &var, &lower, &upper);
  EXPECT_NEAR(mean[0], std::exp(1.125), 1e-12);
  EXPECT_NEAR(var[0], std::exp(1.125) + std::expm1(0.25) * std::exp(2.25), 1e-10);
  // s² = 0: a plain Poisson(e³ ≈ 20.09), whose 5% and 95% quantiles are 13 and 28.
  EXPECT_EQ(lower[1], 13.0);
  EXPECT_EQ(upper[1], 28.0);
}

// --- Priors -----------------------------------------------------------------------------------------

TEST(LaplacianPrior, DensityAndLogDeterminantMatchADenseGaussian) {
  Mlp net(6, {3}, Activation::kTanh, 1);
  PriorSpec spec;
  spec.kind = PriorKind::kLaplacian;
  spec.alpha = 0.3;
  spec.smoothing = 5.0;
  spec.graph = grid_graph(2, 3);
  const Prior prior = make_prior(net, spec);
  EXPECT_FALSE(prior.is_group_diagonal());
  const Eigen::MatrixXd P = dense_precision(prior);
  const Eigen::LLT<Eigen::MatrixXd> llt(P);
  ASSERT_EQ(llt.info(), Eigen::Success);
  EXPECT_NEAR(prior.log_det_precision(), 2.0 * Eigen::MatrixXd(llt.matrixL()).diagonal().array().log().sum(), 1e-10);
  Rng rng(3);
  const Eigen::VectorXd w = rng.normal_vector(prior.dim());
  Eigen::VectorXd grad;
  const double lp = prior.log_density(w, &grad);
  const double expected =
      prior.log_det_precision() / 2 - prior.dim() / 2.0 * std::log(2 * std::numbers::pi) - 0.5 * w.dot(P * w);
  EXPECT_NEAR(lp, expected, 1e-10);
  EXPECT_LT(relative_error(grad, Eigen::VectorXd(-P * w)), 1e-14);
  // The smoothing acts within each hidden unit's input weights: W_1 (3 × 6) column-major.
  EXPECT_DOUBLE_EQ(P(0, 3), -5.0);  // inputs 0 and 1 of hidden unit 0 are grid neighbours
  EXPECT_DOUBLE_EQ(P(0, 1), 0.0);   // different hidden units
  const Prior back = Prior::from_json(prior.to_json());
  EXPECT_EQ(back.to_json(), prior.to_json());
  EXPECT_LT(relative_error(dense_precision(back), P), 1e-15);
}

TEST(ArdPrior, OneAlphaPerInputAndIrrelevantInputsGetLargeAlpha) {
  // y depends on inputs 1 and 2 of 5.
  Rng rng(9);
  const Index m = 200;
  Eigen::MatrixXd X(m, 5), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < 5; ++j) X(n, j) = rng.normal();
    Y(n, 0) = 1.5 * X(n, 0) - 1.0 * X(n, 1) + 0.3 * rng.normal();
  }
  Linear net(5, 1, true);
  PriorSpec spec;
  spec.kind = PriorKind::kArd;
  const Prior prior = make_prior(net, spec);
  ASSERT_EQ(prior.num_groups(), 6);
  EXPECT_EQ(prior.groups()[0].name, "input_1");
  EXPECT_EQ(prior.groups()[5].name, "intercept");
  Posterior post(net.clone(), std::make_unique<GaussianLikelihood>(1.0), prior, X, Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(6);
  const EvidenceResult r = fit_evidence(&post, EvidenceOptions{}, &w);
  ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
  const Eigen::VectorXd& a = r.summary.alpha;
  for (int j = 2; j < 5; ++j) {
    EXPECT_GT(a[j], 100.0 * std::max(a[0], a[1])) << j;
  }
  // The relevant inputs are well determined (γ → 1). The irrelevant ones' α climb towards
  // infinity ever more slowly as the evidence flattens, so their γ is not asserted.
  EXPECT_GT(r.summary.gamma[0], 0.99);
  EXPECT_GT(r.summary.gamma[1], 0.99);
}

// log-evidence of a linear-Gaussian model as a function of the prior hyperparameters: the MAP is
// re-solved at each θ (LM is exact in one step on a quadratic), β held fixed.
double linear_log_evidence(Posterior* post, const Eigen::VectorXd& theta) {
  post->prior().set_hyperparameters(theta);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post->dim());
  MapOptions map;
  map.gradient_tolerance = 1e-12;
  find_map(*post, map, &w);
  return log_evidence(*post, laplace(*post, w, HessianKind::kGgn));
}

TEST(LaplacianPrior, EvidenceGradientMatchesFiniteDifferencesAndVanishesAtTheFixedPoint) {
  Rng rng(4);
  const Index m = 80, D = 12;
  Eigen::MatrixXd X(m, D), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    double f = 0.0;
    for (Index j = 0; j < D; ++j) f += std::sin(0.5 * j) * X(n, j);
    Y(n, 0) = f + 0.5 * rng.normal();
  }
  Linear net(D, 1, false);
  PriorSpec spec;
  spec.kind = PriorKind::kLaplacian;
  spec.graph = chain_graph(D);
  Posterior post(net.clone(), std::make_unique<GaussianLikelihood>(4.0), make_prior(net, spec), X, Y);
  const Eigen::Vector2d theta(0.2, 3.0);
  linear_log_evidence(&post, theta);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(D);
  MapOptions map;
  map.gradient_tolerance = 1e-12;
  find_map(post, map, &w);
  const Eigen::VectorXd analytic = log_evidence_gradient(post, laplace(post, w, HessianKind::kGgn));
  auto of_log_theta = [&](const Eigen::VectorXd& log_theta) {
    return linear_log_evidence(&post, log_theta.array().exp().matrix());
  };
  const Eigen::VectorXd numeric = testing::fd_gradient(of_log_theta, Eigen::VectorXd(theta.array().log()), 1e-4);
  EXPECT_LT(relative_error(analytic, numeric), 1e-5);

  // The evidence loop ends where the gradient vanishes (and β's own update holds).
  post.prior().set_hyperparameters(theta);
  Eigen::VectorXd w_fit = Eigen::VectorXd::Zero(D);
  EvidenceOptions options;
  options.tolerance = 1e-12;
  options.map.gradient_tolerance = 1e-12;
  const EvidenceResult r = fit_evidence(&post, options, &w_fit);
  ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
  const Eigen::VectorXd g = log_evidence_gradient(post, r.laplace);
  EXPECT_LT(g.cwiseAbs().maxCoeff(), 1e-3) << g.transpose();
  EXPECT_EQ(r.summary.group_names.back(), "smoothing");
}

// --- Cross-validation folds ---------------------------------------------------------------------

TEST(Folds, SameSeedSameFoldsAndEveryRowTestedOnce) {
  KFoldOptions options;
  options.folds = 7;
  options.seed = 42;
  const auto a = kfold(100, options), b = kfold(100, options);
  options.seed = 43;
  const auto c = kfold(100, options);
  std::vector<int> tested(100, 0);
  bool differs = false;
  for (std::size_t f = 0; f < a.size(); ++f) {
    EXPECT_EQ(a[f].test, b[f].test);
    EXPECT_EQ(a[f].train.size() + a[f].test.size(), 100u);
    EXPECT_TRUE(a[f].test.size() == 14 || a[f].test.size() == 15);
    for (Index i : a[f].test) ++tested[static_cast<std::size_t>(i)];
    differs = differs || a[f].test != c[f].test;
  }
  EXPECT_TRUE(differs);
  for (int t : tested) EXPECT_EQ(t, 1);
}

TEST(Folds, StratificationKeepsClassProportions) {
  Eigen::VectorXd labels(103);
  for (Index i = 0; i < 103; ++i) labels[i] = i < 80 ? 0 : (i < 97 ? 1 : 2);  // 80 / 17 / 6
  KFoldOptions options;
  options.folds = 5;
  const auto folds = stratified_kfold(labels, options);
  for (const Fold& f : folds) {
    int counts[3] = {0, 0, 0};
    for (Index i : f.test) ++counts[static_cast<int>(labels[i])];
    EXPECT_TRUE(counts[0] == 16) << counts[0];
    EXPECT_TRUE(counts[1] == 3 || counts[1] == 4) << counts[1];
    EXPECT_TRUE(counts[2] == 1 || counts[2] == 2) << counts[2];
  }
  const Fold h = holdout_split(103, 0.2, 1, &labels);
  int held[3] = {0, 0, 0};
  for (Index i : h.test) ++held[static_cast<int>(labels[i])];
  EXPECT_EQ(held[0], 16);
  EXPECT_EQ(held[1], 3);
  EXPECT_EQ(held[2], 1);
  const ThreeWaySplit s = train_validation_test_split(103, 0.2, 0.2, 1);
  EXPECT_EQ(s.train.size() + s.validation.size() + s.test.size(), 103u);
  EXPECT_EQ(s.test.size(), 21u);
}

TEST(Folds, BadOptionsAreRefused) {
  KFoldOptions options;
  options.folds = 1;
  EXPECT_THROW(kfold(10, options), Error);
  options.folds = 11;
  EXPECT_THROW(kfold(10, options), Error);
  EXPECT_THROW(parse_log_grid("1e-3:1e3"), Error);
  EXPECT_EQ(parse_log_grid("1e-2:1e2:5").size(), 5u);
  EXPECT_NEAR(parse_log_grid("1e-2:1e2:5")[1], 0.1, 1e-15);
}

}  // namespace
}  // namespace occam

namespace occam {
namespace {

// --- The simulated receptive field ----------------------------------------------------------------

struct RfFit {
  double error = 0.0;  // ‖k̂ − k‖ / ‖k‖
  EvidenceSummary summary;
};

RfFit fit_receptive_field(const ReceptiveField& rf, PriorKind kind) {
  const Linear net(rf.X.cols(), 1, true);
  PriorSpec spec;
  spec.kind = kind;
  spec.graph = rf.graph;
  Posterior post(net.clone(), std::make_unique<PoissonLikelihood>(), make_prior(net, spec), rf.X, rf.Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  const EvidenceResult r = fit_evidence(&post, EvidenceOptions{}, &w);
  EXPECT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
  return {(w.head(rf.X.cols()) - rf.filter).norm() / rf.filter.norm(), r.summary};
}

TEST(ReceptiveField, SmoothingPriorBeatsRidgeAndEvidenceAgreesWithCv) {
  ReceptiveFieldOptions options;
  options.cols = 40;
  options.samples = 300;
  const ReceptiveField rf = simulate_receptive_field(options);
  const RfFit ridge = fit_receptive_field(rf, PriorKind::kRidge);
  const RfFit smooth = fit_receptive_field(rf, PriorKind::kLaplacian);
  EXPECT_LT(smooth.error, 0.8 * ridge.error) << smooth.error << " vs " << ridge.error;
  RecordProperty("ridge_error", std::to_string(ridge.error));
  RecordProperty("smoothing_error", std::to_string(smooth.error));

  // CV over the ridge α on a half-decade grid, and the evidence over the same grid.
  CvOptions cv;
  cv.alphas = log_grid(1e-1, 1e4, 11);
  cv.folds.folds = 5;
  ModelSpec spec;
  spec.network.kind = NetworkKind::kLinear;
  spec.likelihood.kind = LikelihoodKind::kPoisson;
  spec.prior.kind = PriorKind::kRidge;
  spec.standardize = Standardize::kNone;
  Dataset data;
  data.X = rf.X;
  data.Y = rf.Y;
  const CvSummary s = cross_validate(spec, data, cv);
  RecordProperty("alpha_cv", std::to_string(cv.alphas[s.best_cv]));
  RecordProperty("alpha_evidence_grid", std::to_string(cv.alphas[s.best_evidence]));
  RecordProperty("alpha_evidence_loop", std::to_string(ridge.summary.alpha[0]));
  EXPECT_LE(std::abs(s.best_cv - s.best_evidence), 1)
      << "CV " << cv.alphas[s.best_cv] << ", evidence " << cv.alphas[s.best_evidence];
  // The evidence loop's own α lies within a grid step of the grid's evidence maximum.
  const double step = std::log(cv.alphas[1] / cv.alphas[0]);
  EXPECT_LT(std::abs(std::log(ridge.summary.alpha[0] / cv.alphas[s.best_evidence])), step);
}

}  // namespace
}  // namespace occam

namespace occam {
namespace {

TEST(BayesianRidge, EigenbasisFastPathEqualsTheGeneralEvidenceLoop) {
  Rng rng(21);
  const Index m = 200, D = 6;
  Eigen::MatrixXd X(m, D);
  Eigen::VectorXd y(m);
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    y[n] = X.row(n).dot(Eigen::VectorXd::LinSpaced(D, -1, 1)) + 0.7 * rng.normal();
  }
  BayesianRidgeOptions options;
  options.fit_intercept = false;
  const BayesianRidgeResult fast = fit_bayesian_ridge(X, y, options);
  ASSERT_EQ(fast.termination, Termination::kConverged) << fast.message;

  const Linear net(D, 1, false);
  PriorSpec spec;
  spec.kind = PriorKind::kRidge;
  Posterior post(net.clone(), std::make_unique<GaussianLikelihood>(1.0), make_prior(net, spec), X, y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(D);
  EvidenceOptions evidence;
  evidence.tolerance = 1e-14;
  evidence.map.gradient_tolerance = 1e-13;
  const EvidenceResult slow = fit_evidence(&post, evidence, &w);
  EXPECT_NEAR(fast.alpha / slow.summary.alpha[0], 1.0, 1e-6);
  EXPECT_NEAR(fast.beta / slow.summary.beta, 1.0, 1e-6);
  EXPECT_NEAR(fast.log_evidence, slow.summary.log_evidence, 1e-6 * std::abs(fast.log_evidence));
  EXPECT_LT((fast.weights - w).norm(), 1e-6 * w.norm());
}

}  // namespace
}  // namespace occam

namespace occam {
namespace {

TEST(CategoricalPredictive, ExtendedProbitOnCentredLogitsAgreesWithMonteCarlo) {
  // A softmax is unchanged when every logit moves together; under a weak prior that direction
  // has a large posterior variance, which must not flatten the probit-moderated probabilities.
  Rng rng(8);
  const Index m = 300;
  Eigen::MatrixXd X(m, 2), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    X(n, 0) = rng.normal();
    X(n, 1) = rng.normal();
    Eigen::Vector3d f(2 * X(n, 0), 2 * X(n, 1), -2 * (X(n, 0) + X(n, 1)));
    Eigen::Vector3d p = f.array().exp();
    p /= p.sum();
    const double u = rng.uniform();
    Y(n, 0) = u < p[0] ? 0 : (u < p[0] + p[1] ? 1 : 2);
  }
  const Linear net(2, 3, true);
  Posterior post(net.clone(), std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"}),
                 Prior::from_network(net, AlphaGroups::kSingle, 1e-3), X, Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  find_map(post, MapOptions{}, &w);
  const LaplaceApproximation q = laplace(post, w, HessianKind::kGgn);
  const Eigen::MatrixXd Xq = X.topRows(20);
  PredictOptions options;
  options.method = PredictiveMethod::kLinearized;  // the probit, not the default bridge
  const Prediction linear = predict(net, post.likelihood(), q, Xq, options);
  options.method = PredictiveMethod::kMonteCarlo;
  options.samples = 4000;
  const Prediction mc = predict(net, post.likelihood(), q, Xq, options);
  // 4000 draws: a probability's Monte Carlo standard error is at most 0.5/√4000 ≈ 0.008; the
  // probit approximation itself is good to about 0.02 (MacKay 1992c). Without centring, the
  // invariant direction's variance moves these probabilities by more than 0.1.
  EXPECT_LT((linear.probabilities - mc.probabilities).cwiseAbs().maxCoeff(), 0.03);
  Eigen::MatrixXd f_mean, f_var;
  latent_belief(net, q, Xq, &f_mean, &f_var);  // uncentred marginal variances
  const Eigen::MatrixXd uncentred = post.likelihood().predictive_probabilities(f_mean, f_var);
  EXPECT_GT((uncentred - mc.probabilities).cwiseAbs().maxCoeff(), 0.1);
  EXPECT_EQ(linear.labels, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace occam

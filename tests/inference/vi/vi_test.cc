// Variational inference against references no one can fudge: finite-difference ELBO gradients
// for every family, the exact posterior and evidence of Bayesian linear regression (which lies
// in the full-rank family), and the known mean-field optimum for a correlated Gaussian.
//
// Statistical checks run K independently seeded fits and compare their average with the exact
// value at a tolerance of kZ standard errors of that average (the spread across seeds), and
// separately require the spread itself to be small against the posterior's scale, so that a
// noisy-but-unbiased optimiser cannot pass by being vague.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <numbers>

#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/vi.h"
#include "testing/finite_difference.h"
#include "testing/linear_gaussian.h"
#include "testing/nelder_mead.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::design;
using testing::linear_posterior;

constexpr int kSeeds = 6;
constexpr double kZ = 5.0;  // |average − exact| ≤ kZ·SE: a false alarm has probability < 1e-3 per entry (t, 5 df)

const VariationalFamily kFamilies[] = {
    {FamilyKind::kFullRank, 0}, {FamilyKind::kMeanField, 0}, {FamilyKind::kLowRank, 2}};

// Settings under which the stochastic optimiser reaches the optimum to well below the posterior's
// scale: several draws per step, a decaying step and enough iterations for the window averages.
VariationalOptions precise_options(VariationalFamily family, VariationalHyper hyper, std::uint64_t seed) {
  VariationalOptions o;
  o.family = family;
  o.hyper = hyper;
  o.mc_samples = 8;
  o.learning_rate = 0.02;
  o.decay_iterations = 500;
  o.max_iterations = 20000;
  o.eval_every = 1000;
  o.window = 5;                // q is the average of the last 5000 iterates
  o.adapt_iterations = 0;      // the step sizes above are the ones under test
  o.relative_tolerance = 0.0;  // run every iteration: the test is about the optimum, not the stopping rule
  o.initial_std = 0.1;
  o.seed = seed;
  return o;
}

// Mean and standard error (of the mean) over seeds of a scalar per fit.
struct SeedStats {
  double mean = 0.0, se = 0.0, sd = 0.0;
};
SeedStats stats(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  double mean = 0.0, ss = 0.0;
  for (double v : x) mean += v / n;
  for (double v : x) ss += (v - mean) * (v - mean);
  const double sd = std::sqrt(ss / (n - 1.0));
  return {mean, sd / std::sqrt(n), sd};
}

// KL(N(m1, V1) ‖ N(m2, V2)) in closed form.
double gaussian_kl(const Eigen::VectorXd& m1, const Eigen::MatrixXd& V1, const Eigen::VectorXd& m2,
                   const Eigen::MatrixXd& V2) {
  const Eigen::LLT<Eigen::MatrixXd> l2(V2), l1(V1);
  const double logdet2 = 2.0 * l2.matrixLLT().diagonal().array().log().sum();
  const double logdet1 = 2.0 * l1.matrixLLT().diagonal().array().log().sum();
  const Eigen::VectorXd d = m2 - m1;
  return 0.5 * (l2.solve(V1).trace() + d.dot(l2.solve(d)) - static_cast<double>(m1.size()) + logdet2 - logdet1);
}

// ---------------------------------------------------------------------------------------------
// The families' closed forms agree with their dense covariance.

TEST(VariationalFamily, ClosedFormsMatchTheDenseCovariance) {
  Rng rng(3);
  for (const VariationalFamily& family : kFamilies) {
    GaussianVariational q(family, rng.normal_vector(5), 0.3, &rng);
    q.set_params(q.params() + 0.3 * rng.normal_vector(q.num_params()));  // off the initial structure
    const Eigen::MatrixXd V = q.covariance();
    EXPECT_LT(testing::relative_error(q.variances(), V.diagonal()), 1e-12) << family.name();
    const double log_det = 2.0 * V.llt().matrixLLT().diagonal().array().log().sum();
    const double entropy = 0.5 * 5.0 * (1.0 + std::log(2.0 * std::numbers::pi)) + 0.5 * log_det;
    EXPECT_NEAR(q.entropy(), entropy, 1e-10) << family.name();
    const Eigen::MatrixXd G = rng.normal_vector(15).reshaped(5, 3);
    EXPECT_LT(testing::relative_error(q.quadratic_form(G), (G.transpose() * V * G).diagonal()), 1e-12);
    // Draws have covariance V: w − m is linear in v, so check the map itself on unit vectors.
    Eigen::MatrixXd T(5, q.noise_dim());
    for (Index k = 0; k < q.noise_dim(); ++k)
      T.col(k) = q.transform(Eigen::VectorXd::Unit(q.noise_dim(), k)) - q.mean();
    EXPECT_LT(testing::relative_error(T * T.transpose(), V), 1e-12) << family.name();
    // Parameters and JSON round-trip exactly.
    GaussianVariational copy = GaussianVariational::from_json(q.to_json());
    EXPECT_EQ(copy.params(), q.params()) << family.name();
  }
}

TEST(VariationalFamily, ParsesNamesAndRejectsBadOnes) {
  EXPECT_EQ(parse_variational_family("fullrank").kind, FamilyKind::kFullRank);
  EXPECT_EQ(parse_variational_family("meanfield").kind, FamilyKind::kMeanField);
  EXPECT_EQ(parse_variational_family("lowrank:7").rank, 7);
  for (const char* bad : {"lowrank", "lowrank:0", "lowrank:x", "lowrank:3x", "diag"}) {
    EXPECT_THROW(parse_variational_family(bad), Error) << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// Finite-difference checks of ∂ELBO/∂λ, ∂/∂log α and ∂/∂log β with the noise v held fixed.

TEST(ElboGradient, MatchesFiniteDifferencesForEveryFamily) {
  const auto d = testing::gap_data(12, 0.1, 5);
  auto setup = testing::tanh_network(d, 3, AlphaGroups::kDefault, 0.7, 20.0, 9);
  Posterior& post = setup.posterior;
  Eigen::VectorXd log_alpha = (Eigen::VectorXd(4) << -0.5, 0.2, 0.4, -1.0).finished();
  post.prior().set_alpha(log_alpha.array().exp());
  for (const VariationalFamily& family : kFamilies) {
    Rng rng(17);
    GaussianVariational q(family, setup.w, 0.2, &rng);
    const Eigen::VectorXd lambda = q.params() + 0.2 * rng.normal_vector(q.num_params());
    q.set_params(lambda);
    Eigen::MatrixXd noise(q.noise_dim(), 3);
    for (Index s = 0; s < 3; ++s) noise.col(s) = rng.normal_vector(q.noise_dim());
    for (const std::vector<Index>& rows : {std::vector<Index>{}, std::vector<Index>{1, 4, 7, 10}}) {
      ElboTerms terms;
      Eigen::VectorXd grad, grad_alpha;
      double grad_beta = 0.0;
      ASSERT_TRUE(elbo_gradient(post, q, noise, rows, &terms, &grad, &grad_alpha, &grad_beta));

      GaussianVariational probe = q;
      const auto elbo_of_lambda = [&](const Eigen::VectorXd& x) {
        probe.set_params(x);
        ElboTerms t;
        EXPECT_TRUE(elbo_gradient(post, probe, noise, rows, &t, nullptr, nullptr, nullptr));
        return t.elbo();
      };
      EXPECT_LT(testing::relative_error(grad, testing::fd_gradient(elbo_of_lambda, lambda)), 1e-6)
          << family.name() << " rows " << rows.size();

      const auto elbo_of_hyper = [&](const Eigen::VectorXd& h) {
        post.prior().set_alpha(h.head(4).array().exp());
        post.likelihood().set_precision(std::exp(h[4]));
        ElboTerms t;
        EXPECT_TRUE(elbo_gradient(post, q, noise, rows, &t, nullptr, nullptr, nullptr));
        return t.elbo();
      };
      Eigen::VectorXd h(5);
      h << log_alpha, std::log(20.0);
      const Eigen::VectorXd fd = testing::fd_gradient(elbo_of_hyper, h);
      elbo_of_hyper(h);  // restore α, β
      Eigen::VectorXd analytic(5);
      analytic << grad_alpha, grad_beta;
      EXPECT_LT(testing::relative_error(analytic, fd), 1e-6) << family.name() << " rows " << rows.size();
    }
  }
}

TEST(ElboGradient, MinibatchEstimateIsUnbiased) {
  // Averaged over every batch of an exact partition, the scaled minibatch likelihood term equals
  // the full-data one exactly.
  const auto d = testing::gap_data(12, 0.1, 5);
  auto setup = testing::tanh_network(d, 3, AlphaGroups::kDefault, 0.7, 20.0, 9);
  Rng rng(2);
  GaussianVariational q({FamilyKind::kMeanField, 0}, setup.w, 0.2, &rng);
  const Eigen::MatrixXd noise = rng.normal_vector(q.noise_dim()).replicate(1, 1);
  ElboTerms full, part;
  ASSERT_TRUE(elbo_gradient(setup.posterior, q, noise, {}, &full, nullptr, nullptr, nullptr));
  double sum = 0.0;
  for (Index b = 0; b < 3; ++b) {
    std::vector<Index> rows;
    for (Index i = b; i < 12; i += 3) rows.push_back(i);
    ASSERT_TRUE(elbo_gradient(setup.posterior, q, noise, rows, &part, nullptr, nullptr, nullptr));
    sum += part.expected_log_likelihood / 3.0;
  }
  EXPECT_NEAR(sum, full.expected_log_likelihood, 1e-10 * std::abs(full.expected_log_likelihood));
}

TEST(Elbo, IsAnUnbiasedEstimateOfTheLogEvidenceAtTheExactPosterior) {
  // When q is the exact posterior, KL(q‖p) = 0 and E[ELBO estimate] = log p(D) exactly (Bishop
  // 2006, eq. 10.2); single-draw estimates scatter around it with their own standard error.
  const auto d = testing::linear_data(30, 2, 0.3, 4);
  Posterior post = linear_posterior(d, 0.8, 0.3, 9.0);
  const auto exact = testing::exact_posterior(design(d.X), d.Y.col(0), post.prior().precision_diagonal(), 9.0);
  const double log_z = testing::exact_log_evidence(design(d.X), d.Y.col(0), post.prior().precision_diagonal(), 9.0);
  GaussianVariational q({FamilyKind::kFullRank, 0}, exact.mean, 1.0);
  Eigen::VectorXd lambda = q.params();
  const Eigen::MatrixXd L = exact.covariance.llt().matrixL();
  Index k = 3;
  for (Index j = 0; j < 3; ++j) {
    lambda[k++] = std::log(L(j, j));
    for (Index i = j + 1; i < 3; ++i) lambda[k++] = L(i, j);
  }
  q.set_params(lambda);
  EXPECT_LT(testing::relative_error(q.covariance(), exact.covariance), 1e-12);
  Rng rng(1);
  std::vector<double> draws;
  for (int s = 0; s < 4000; ++s) {
    ElboTerms terms;
    ASSERT_TRUE(elbo_gradient(post, q, rng.normal_vector(3), {}, &terms, nullptr, nullptr, nullptr));
    draws.push_back(terms.elbo());
  }
  const SeedStats e = stats(draws);
  EXPECT_NEAR(e.mean, log_z, 4.0 * e.se);
  EXPECT_GT(e.sd, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Bayesian linear regression: the exact posterior is in the full-rank family.

TEST(VariationalLinearRegression, FullRankRecoversTheExactPosteriorAndEvidence) {
  const auto d = testing::linear_data(40, 2, 0.3, 7);
  const double alpha_w = 0.5, alpha_b = 0.2, beta = 11.0;
  Posterior reference = linear_posterior(d, alpha_w, alpha_b, beta);
  const Eigen::VectorXd precision = reference.prior().precision_diagonal();
  const auto exact = testing::exact_posterior(design(d.X), d.Y.col(0), precision, beta);
  const double log_z = testing::exact_log_evidence(design(d.X), d.Y.col(0), precision, beta);
  const Eigen::VectorXd sd = exact.covariance.diagonal().cwiseSqrt();

  std::vector<std::vector<double>> means(3), variances(3), covariances(3);
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Posterior post = linear_posterior(d, alpha_w, alpha_b, beta);
    const VariationalResult r = fit_variational(
        &post, precise_options({FamilyKind::kFullRank, 0}, VariationalHyper::kFixed, seed), Eigen::VectorXd::Zero(3));
    ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
    const Eigen::MatrixXd V = r.q.covariance();
    for (Index i = 0; i < 3; ++i) {
      means[i].push_back((r.q.mean()[i] - exact.mean[i]) / sd[i]);
      variances[i].push_back(V(i, i) / exact.covariance(i, i));
      covariances[i].push_back((V(i, (i + 1) % 3) - exact.covariance(i, (i + 1) % 3)) / (sd[i] * sd[(i + 1) % 3]));
    }
    // The reported ELBO is an unbiased estimate of log Z − KL(q‖p), with its own standard error.
    const double kl = gaussian_kl(r.q.mean(), V, exact.mean, exact.covariance);
    EXPECT_LT(kl, 1e-3) << "seed " << seed;
    EXPECT_NEAR(r.summary.elbo, log_z - kl, 4.0 * r.summary.elbo_std_error + 1e-9) << "seed " << seed;
  }
  for (Index i = 0; i < 3; ++i) {
    const SeedStats m = stats(means[i]), v = stats(variances[i]), c = stats(covariances[i]);
    EXPECT_NEAR(m.mean, 0.0, kZ * m.se) << "mean " << i << " (in posterior sds)";
    EXPECT_LT(m.sd, 0.02) << "mean " << i;
    EXPECT_NEAR(v.mean, 1.0, kZ * v.se) << "variance " << i << " (relative to exact)";
    EXPECT_LT(v.sd, 0.03) << "variance " << i;
    EXPECT_NEAR(c.mean, 0.0, kZ * c.se) << "covariance " << i << " (as a correlation)";
    EXPECT_LT(c.sd, 0.02) << "covariance " << i;
  }
}

TEST(VariationalLinearRegression, LearnedHyperparametersMatchTheEvidenceMaximiser) {
  // With the exact posterior in the family, max_q ELBO = log p(D|α, β): the ELBO's maximiser over
  // (q, α, β) is the evidence maximiser, found here by Nelder–Mead on the closed form.
  const auto d = testing::linear_data(50, 3, 0.4, 11);
  const Eigen::MatrixXd Phi = design(d.X);
  const Eigen::VectorXd y = d.Y.col(0);
  auto closed_form = [&](const Eigen::VectorXd& log_h) {
    Eigen::VectorXd precision(Phi.cols());
    precision.head(Phi.cols() - 1).setConstant(std::exp(log_h[0]));
    precision[Phi.cols() - 1] = std::exp(log_h[1]);
    return testing::exact_log_evidence(Phi, y, precision, std::exp(log_h[2]));
  };
  Eigen::VectorXd best = testing::nelder_mead_maximize(closed_form, Eigen::VectorXd::Zero(3), 1.0, 600);
  best = testing::nelder_mead_maximize(closed_form, best, 0.05, 600);

  for (VariationalHyper hyper : {VariationalHyper::kGradient, VariationalHyper::kClosedForm}) {
    std::vector<std::vector<double>> logs(3);
    for (int seed = 1; seed <= kSeeds; ++seed) {
      Posterior post = linear_posterior(d, 1.0, 1.0, 1.0);
      VariationalOptions o = precise_options({FamilyKind::kFullRank, 0}, hyper, seed);
      // The averaged iterate of a noisy stochastic optimiser is biased by O(step size) where the
      // objective is not quadratic (here in log β, log α); a small final step makes that bias
      // negligible against the spread across seeds.
      o.learning_rate = 0.002;
      o.max_iterations = 100000;
      const VariationalResult r = fit_variational(&post, o, Eigen::VectorXd::Zero(post.dim()));
      ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
      logs[0].push_back(std::log(r.summary.alpha[0]));
      logs[1].push_back(std::log(r.summary.alpha[1]));
      logs[2].push_back(std::log(r.summary.beta));
    }
    for (Index i = 0; i < 3; ++i) {
      const SeedStats s = stats(logs[i]);
      EXPECT_NEAR(s.mean, best[i], kZ * s.se) << to_string(hyper) << " log hyperparameter " << i;
      EXPECT_LT(s.sd, 0.05) << to_string(hyper) << " log hyperparameter " << i;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Mean-field on a correlated Gaussian: KL(q‖p) is minimised by the exact mean and variances
// 1/A_ii, A the precision (Bishop 2006, §10.1.2) — smaller than the marginal variances (A⁻¹)_ii.

TEST(VariationalMeanField, ConvergesToTheReciprocalPrecisionDiagonal) {
  testing::ToyData d = testing::linear_data(30, 2, 0.3, 21);
  d.X.col(1) = 0.8 * d.X.col(0) + 0.6 * d.X.col(1);  // correlated inputs: a correlated posterior
  const double alpha_w = 0.5, alpha_b = 0.5, beta = 11.0;
  Posterior reference = linear_posterior(d, alpha_w, alpha_b, beta);
  const Eigen::MatrixXd Phi = design(d.X);
  const auto exact = testing::exact_posterior(Phi, d.Y.col(0), reference.prior().precision_diagonal(), beta);
  Eigen::MatrixXd A = beta * Phi.transpose() * Phi;
  A.diagonal() += reference.prior().precision_diagonal();
  const Eigen::VectorXd target = A.diagonal().cwiseInverse();
  ASSERT_LT(target[0], 0.5 * exact.covariance(0, 0));  // the test means something: the shrinkage is large

  std::vector<std::vector<double>> means(3), variances(3);
  for (int seed = 1; seed <= kSeeds; ++seed) {
    Posterior post = linear_posterior(d, alpha_w, alpha_b, beta);
    const VariationalResult r = fit_variational(
        &post, precise_options({FamilyKind::kMeanField, 0}, VariationalHyper::kFixed, seed), Eigen::VectorXd::Zero(3));
    ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
    const Eigen::VectorXd v = r.q.variances();
    for (Index i = 0; i < 3; ++i) {
      means[i].push_back((r.q.mean()[i] - exact.mean[i]) / std::sqrt(target[i]));
      variances[i].push_back(v[i] / target[i]);
    }
  }
  for (Index i = 0; i < 3; ++i) {
    const SeedStats m = stats(means[i]), v = stats(variances[i]);
    EXPECT_NEAR(m.mean, 0.0, kZ * m.se) << "mean " << i;
    EXPECT_LT(m.sd, 0.03) << "mean " << i;
    EXPECT_NEAR(v.mean, 1.0, kZ * v.se) << "variance " << i;
    EXPECT_LT(v.sd, 0.03) << "variance " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// Engine behaviour.

TEST(FitVariational, SameSeedSameResultAndTheTerminationIsHonest) {
  const auto d = testing::gap_data(30, 0.1, 3);
  for (const VariationalFamily& family : kFamilies) {
    VariationalOptions o;
    o.family = family;
    o.max_iterations = 300;
    o.eval_every = 50;
    o.batch_size = 10;
    o.relative_tolerance = 0.0;  // cannot converge: must say it hit the limit
    auto a = testing::tanh_network(d, 4, AlphaGroups::kDefault, 1.0, 10.0, 2);
    auto b = testing::tanh_network(d, 4, AlphaGroups::kDefault, 1.0, 10.0, 2);
    const VariationalResult ra = fit_variational(&a.posterior, o, a.w);
    const VariationalResult rb = fit_variational(&b.posterior, o, b.w);
    EXPECT_EQ(ra.summary.termination, Termination::kMaxIterations) << family.name();
    EXPECT_EQ(ra.summary.iterations, 300);
    EXPECT_EQ(ra.q.params(), rb.q.params()) << family.name();
    EXPECT_EQ(ra.summary.elbo, rb.summary.elbo) << family.name();
    EXPECT_EQ(ra.summary.alpha, rb.summary.alpha) << family.name();
    o.seed = 2;
    auto c = testing::tanh_network(d, 4, AlphaGroups::kDefault, 1.0, 10.0, 2);
    EXPECT_NE(fit_variational(&c.posterior, o, c.w).q.params(), ra.q.params()) << family.name();
  }
}

TEST(FitVariational, ConvergesOnATanhNetworkAndImprovesTheElbo) {
  const auto d = testing::gap_data(40, 0.1, 3);
  auto setup = testing::tanh_network(d, 5, AlphaGroups::kDefault, 1.0, 10.0, 4);
  VariationalOptions o;
  o.family = {FamilyKind::kMeanField, 0};
  o.relative_tolerance = 1e-2;  // Stan's ADVI default
  const VariationalResult r = fit_variational(&setup.posterior, o, setup.w);
  ASSERT_EQ(r.summary.termination, Termination::kConverged) << r.summary.message;
  ASSERT_GE(r.summary.trace.size(), 2u);
  EXPECT_GT(r.summary.trace.back().elbo, r.summary.trace.front().elbo);
  EXPECT_TRUE(std::isfinite(r.summary.elbo));
  EXPECT_GT(r.summary.elbo_std_error, 0.0);
}

TEST(FitVariational, RejectsBadOptions) {
  const auto d = testing::gap_data(10, 0.1, 3);
  auto setup = testing::tanh_network(d, 2, AlphaGroups::kDefault, 1.0, 10.0, 4);
  VariationalOptions o;
  o.mc_samples = 0;
  EXPECT_THROW(fit_variational(&setup.posterior, o, setup.w), Error);
  o = VariationalOptions{};
  o.decay_power = 2.0;
  EXPECT_THROW(fit_variational(&setup.posterior, o, setup.w), Error);
  o = VariationalOptions{};
  EXPECT_THROW(fit_variational(&setup.posterior, o, Eigen::VectorXd::Zero(3)), Error);
}

TEST(VariationalPredict, LinearisedMatchesMonteCarloForALinearModel) {
  // For a linear model the linearised predictive is exact, so Monte Carlo must agree with it
  // within its error: the mean to kZ·std/√S and the std to kZ·std/√(2S).
  const auto d = testing::linear_data(30, 2, 0.3, 4);
  Posterior post = linear_posterior(d, 0.8, 0.3, 9.0);
  Rng rng(5);
  GaussianVariational q({FamilyKind::kLowRank, 1}, rng.normal_vector(3), 0.2, &rng);
  PredictOptions o;
  o.samples = 20000;
  const Prediction lin = predict(post.network(), post.likelihood(), q, d.X.topRows(5), o);
  o.method = PredictiveMethod::kMonteCarlo;
  const Prediction mc = predict(post.network(), post.likelihood(), q, d.X.topRows(5), o);
  for (Index i = 0; i < 5; ++i) {
    EXPECT_NEAR(mc.mean[i], lin.mean[i], kZ * lin.std[i] / std::sqrt(20000.0));
    EXPECT_NEAR(mc.std[i], lin.std[i], kZ * lin.std[i] / std::sqrt(40000.0));
  }
}

}  // namespace
}  // namespace occam

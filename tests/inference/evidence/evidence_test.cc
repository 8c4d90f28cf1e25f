// The evidence framework against references no one can fudge: the closed-form evidence,
// posterior and predictive of Bayesian linear regression, and an independent optimiser.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <limits>
#include <memory>

#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/predict.h"
#include "testing/linear_gaussian.h"
#include "testing/nelder_mead.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::design;
using testing::linear_posterior;

EvidenceOptions tight_options(HyperStrategy strategy) {
  EvidenceOptions options;
  options.strategy = strategy;
  options.map.gradient_tolerance = 1e-11;
  options.map.function_tolerance = 0.0;
  options.tolerance = 1e-12;
  options.max_outer_iterations = 2000;
  return options;
}

TEST(LinearGaussianEvidence, LaplaceLogEvidenceEqualsClosedForm) {
  const auto d = testing::linear_data(40, 3, 0.3, 7);
  for (const auto& [alpha_w, alpha_b, beta] : {std::tuple{0.5, 0.1, 8.0}, std::tuple{3.0, 2.0, 1.0}}) {
    Posterior post = linear_posterior(d, alpha_w, alpha_b, beta);
    Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
    const EvidenceResult r = fit_evidence(&post, tight_options(HyperStrategy::kFixed), &w);
    ASSERT_EQ(r.summary.termination, Termination::kConverged) << r.summary.message;
    const Eigen::VectorXd precision = post.prior().precision_diagonal();
    const double exact = testing::exact_log_evidence(design(d.X), d.Y.col(0), precision, beta);
    EXPECT_NEAR(r.summary.log_evidence, exact, 1e-8 * std::abs(exact));
  }
}

TEST(LinearGaussianEvidence, ExactAndGaussNewtonHessiansAgreeForLinearModels) {
  const auto d = testing::linear_data(30, 2, 0.5, 3);
  Posterior post = linear_posterior(d, 1.0, 1.0, 4.0);
  const Eigen::VectorXd w = Eigen::VectorXd::Constant(post.dim(), 0.3);
  const Eigen::MatrixXd ggn = post.data_hessian(w, HessianKind::kGgn);
  const Eigen::MatrixXd exact = post.data_hessian(w, HessianKind::kExact);
  const Eigen::MatrixXd Phi = design(d.X);
  EXPECT_LT((ggn - 4.0 * Phi.transpose() * Phi).norm(), 1e-10 * ggn.norm());
  EXPECT_LT((exact - ggn).norm(), 1e-10 * ggn.norm());
}

TEST(LinearGaussianEvidence, MacKayFixedPointMaximisesTheClosedFormEvidence) {
  const auto d = testing::linear_data(50, 3, 0.4, 11);
  Posterior post = linear_posterior(d, 1.0, 1.0, 1.0);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  const EvidenceResult r = fit_evidence(&post, tight_options(HyperStrategy::kEvidence), &w);
  ASSERT_EQ(r.summary.termination, Termination::kConverged) << r.summary.message;

  // The independent reference: Nelder–Mead over (log α_w, log α_b, log β) on the data-space
  // closed form, which shares no code with the engine.
  const Eigen::MatrixXd Phi = design(d.X);
  const Eigen::VectorXd y = d.Y.col(0);
  auto closed_form = [&](const Eigen::VectorXd& log_h) {
    Eigen::VectorXd precision(Phi.cols());
    precision.head(Phi.cols() - 1).setConstant(std::exp(log_h[0]));
    precision[Phi.cols() - 1] = std::exp(log_h[1]);
    return testing::exact_log_evidence(Phi, y, precision, std::exp(log_h[2]));
  };
  Eigen::VectorXd best = testing::nelder_mead_maximize(closed_form, Eigen::Vector3d(0.0, 0.0, 0.0), 1.0, 600);
  best = testing::nelder_mead_maximize(closed_form, best, 0.05, 600);  // restart: a fresh simplex

  EXPECT_NEAR(std::log(r.summary.alpha[0]), best[0], 1e-4);
  EXPECT_NEAR(std::log(r.summary.alpha[1]), best[1], 1e-3);  // the intercept's α is flatter
  EXPECT_NEAR(std::log(r.summary.beta), best[2], 1e-4);
  EXPECT_NEAR(r.summary.log_evidence, closed_form(best), 1e-8 * std::abs(closed_form(best)));
}

TEST(LinearGaussianEvidence, WellDeterminedParametersMatchTheEigenvalueFormula) {
  // γ = Σ λ_i / (λ_i + α) for one α (MacKay 1992a, eq. 4.9), λ the eigenvalues of β∇∇E_D.
  const auto d = testing::linear_data(25, 4, 0.5, 5);
  auto net = std::make_unique<Linear>(4, 1, true);
  Prior prior = Prior::from_network(*net, AlphaGroups::kSingle, 2.5);
  Posterior post(std::move(net), std::make_unique<GaussianLikelihood>(3.0), std::move(prior), d.X, d.Y);
  const Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  const LaplaceApproximation q = laplace(post, w, HessianKind::kGgn);
  const Eigen::VectorXd lambda =
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(post.data_hessian(w, HessianKind::kGgn)).eigenvalues();
  const double expected = (lambda.array() / (lambda.array() + 2.5)).sum();
  EXPECT_NEAR(well_determined_parameters(post.prior(), q)[0], expected, 1e-10 * expected);
}

TEST(LinearGaussianEvidence, PredictiveEqualsTheExactPosteriorPredictive) {
  const auto d = testing::linear_data(30, 2, 0.3, 13);
  Posterior post = linear_posterior(d, 0.7, 0.2, 6.0);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  const EvidenceResult r = fit_evidence(&post, tight_options(HyperStrategy::kFixed), &w);
  const auto test = testing::linear_data(9, 2, 0.3, 14);
  const testing::ExactPosterior exact =
      testing::exact_posterior(design(d.X), d.Y.col(0), post.prior().precision_diagonal(), 6.0);
  const Eigen::MatrixXd Phi_test = design(test.X);
  const Eigen::VectorXd mean = Phi_test * exact.mean;
  const Eigen::VectorXd var = (Phi_test * exact.covariance).cwiseProduct(Phi_test).rowwise().sum().array() + 1.0 / 6.0;

  PredictOptions options;
  const Prediction p = predict(post.network(), post.likelihood(), r.laplace, test.X, options);
  for (Eigen::Index i = 0; i < test.X.rows(); ++i) {
    EXPECT_NEAR(p.mean[i], mean[i], 1e-8 * (1.0 + std::abs(mean[i])));
    EXPECT_NEAR(p.std[i], std::sqrt(var[i]), 1e-8 * std::sqrt(var[i]));
    EXPECT_NEAR(p.upper[i] - p.mean[i], 1.959963984540054 * std::sqrt(var[i]), 1e-8);
  }

  // The Monte Carlo predictive estimates the same distribution: mean within 4 Monte Carlo
  // standard errors (σ/√S), standard deviation within 4 standard errors (≈ σ/√(2S)).
  options.method = PredictiveMethod::kMonteCarlo;
  options.samples = 4000;
  const Prediction mc = predict(post.network(), post.likelihood(), r.laplace, test.X, options);
  const double S = options.samples;
  for (Eigen::Index i = 0; i < test.X.rows(); ++i) {
    const double sd = std::sqrt(var[i]);
    EXPECT_NEAR(mc.mean[i], mean[i], 4.0 * sd / std::sqrt(S));
    EXPECT_NEAR(mc.std[i], sd, 4.0 * sd / std::sqrt(2.0 * S));
  }
}

TEST(IntegratedHyperparameters, OptimumIsTheMapAtTheImpliedAlphaAndBeta) {
  const auto d = testing::gap_data(40, 0.1, 21);
  // One α, as in the seeds' (W/2) log E_W + (m/2) log E_D: with a group per layer kind, a group
  // the data do not need (the biases of this odd target) collapses to w_g = 0, where the
  // integrated objective is unbounded (MacKay 1994, §3).
  auto [post, w] = testing::tanh_network(d, 6, AlphaGroups::kSingle, 1.0, 10.0, 3);
  EvidenceOptions options = tight_options(HyperStrategy::kIntegrate);
  options.map.gradient_tolerance = 1e-9;
  const EvidenceResult r = fit_evidence(&post, options, &w);
  // L-BFGS stops where S no longer resolves a decrease (below): that is converged only if ‖∇S‖
  // is within the tolerance, and otherwise reported as no progress.
  ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
  EXPECT_EQ(r.summary.termination == Termination::kConverged, r.summary.gradient_norm <= r.summary.gradient_tolerance);

  // α_g = W_g / 2E_W,g and β = m / 2E_D at the optimum ...
  const Eigen::VectorXd E_W = post.prior().energies(w);
  const Eigen::VectorXd sizes = post.prior().group_sizes();
  for (int g = 0; g < post.prior().num_groups(); ++g) {
    EXPECT_NEAR(r.summary.alpha[g], sizes[g] / (2.0 * E_W[g]), 1e-12 * r.summary.alpha[g]);
  }
  EXPECT_NEAR(r.summary.beta, d.X.rows() / (2.0 * r.summary.E_D), 1e-12 * r.summary.beta);
  // ... and w is then a stationary point of S(w) = Σ α_g E_W,g + β E_D at those α, β. How small
  // ‖∇S‖ can get is set by double precision: once the best decrease along −∇S, ‖∇S‖²/2λ_max,
  // falls below the rounding of S (ε|S|), no line search can see it. So ‖∇S‖ must be within a
  // small multiple of √(2ε|S|λ_max), and far below the size of its two parts.
  double log_p;
  Eigen::VectorXd grad, prior_grad;
  post.evaluate(w, &log_p, &grad);
  post.prior().log_density(w, &prior_grad);
  Eigen::MatrixXd A = post.data_hessian(w, HessianKind::kExact);
  A.diagonal() += post.prior().precision_diagonal();
  const double lambda_max = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(A).eigenvalues().maxCoeff();
  const double resolution = std::sqrt(2.0 * std::numeric_limits<double>::epsilon() * std::abs(log_p) * lambda_max);
  EXPECT_LT(grad.norm(), 10.0 * resolution);
  EXPECT_LT(grad.norm(), 1e-4 * prior_grad.norm());
}

TEST(IntegratedHyperparameters, CollapsedGroupIsReported) {
  // sin(3x) is odd, so the hidden biases are not needed: with a group of their own, integrating
  // α out drives them to zero, where −(W_g/2) log E_W,g is unbounded. That must be a reported
  // failure naming the group, not a silent optimum.
  const auto d = testing::gap_data(40, 0.1, 8);
  auto [post, w] = testing::tanh_network(d, 5, AlphaGroups::kDefault, 1.0, 10.0, 2);
  EvidenceOptions options;
  options.strategy = HyperStrategy::kIntegrate;
  const EvidenceResult r = fit_evidence(&post, options, &w);
  EXPECT_EQ(r.summary.termination, Termination::kFailure);
  EXPECT_NE(r.summary.message.find("'hidden_biases' collapsed to zero"), std::string::npos) << r.summary.message;
}

TEST(EvidenceOuterLoop, LogEvidenceIncreasesMonotonicallyOnToyData) {
  const auto d = testing::gap_data(60, 0.1, 5);
  auto [post, w] = testing::tanh_network(d, 8, AlphaGroups::kDefault, 1.0, 10.0, 1);
  EvidenceOptions options;
  options.loop = EvidenceLoop::kOuter;
  options.tolerance = 1e-9;
  const EvidenceResult r = fit_evidence(&post, options, &w);
  ASSERT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
  EXPECT_EQ(r.summary.loop, EvidenceLoop::kOuter);
  ASSERT_GE(r.summary.trace.size(), 3u);
  // Accepted rounds never lower the log-evidence (a round that would is undone and reported as
  // rejected), and the result is the best state seen.
  double best = -std::numeric_limits<double>::infinity();
  int accepted = 0;
  for (const EvidenceIteration& it : r.summary.trace) {
    if (!it.accepted) continue;
    ++accepted;
    EXPECT_GE(it.log_evidence, best) << "re-estimation " << it.iteration;
    best = it.log_evidence;
  }
  EXPECT_GE(accepted, 3);
  EXPECT_NEAR(r.summary.log_evidence, best, 1e-9 * std::abs(best));
  // The noise is 0.1 (β = 100): the evidence should find a β of that order, not over- or under-fit.
  EXPECT_GT(r.summary.beta, 30.0);
  EXPECT_LT(r.summary.beta, 300.0);
  EXPECT_GT(r.summary.gamma_total, 2.0);
  EXPECT_LT(r.summary.gamma_total, static_cast<double>(post.dim()));
}

TEST(EvidenceStrategies, AllStrategiesGiveFiniteResults) {
  const auto d = testing::gap_data(40, 0.1, 8);
  for (HyperStrategy s : {HyperStrategy::kFixed, HyperStrategy::kEvidence, HyperStrategy::kPeriodic,
                          HyperStrategy::kQuick, HyperStrategy::kIntegrate}) {
    for (HessianKind h : {HessianKind::kGgn, HessianKind::kExact}) {
      // integrate gets one α: see IntegratedHyperparameters.CollapsedGroupIsReported.
      auto [post, w] = testing::tanh_network(
          d, 5, s == HyperStrategy::kIntegrate ? AlphaGroups::kSingle : AlphaGroups::kDefault, 1.0, 10.0, 2);
      EvidenceOptions options;
      options.strategy = s;
      options.hessian = h;
      const EvidenceResult r = fit_evidence(&post, options, &w);
      SCOPED_TRACE(std::string(to_string(s)) + (h == HessianKind::kExact ? " exact" : " ggn"));
      EXPECT_NE(r.summary.termination, Termination::kFailure) << r.summary.message;
      EXPECT_TRUE(std::isfinite(r.summary.log_evidence));
      EXPECT_TRUE(r.summary.alpha.allFinite());
      if (h == HessianKind::kGgn) {
        EXPECT_EQ(r.summary.clipped_eigenvalues, 0);
      }
      EXPECT_FALSE(r.summary.brief_report().empty());
    }
  }
}

TEST(Laplace, ExactHessianClipsExactlyItsNegativeEigenvalues) {
  // Far from a minimum (the initial weights, a poor fit) the exact data Hessian is indefinite.
  const auto d = testing::gap_data(30, 0.1, 4);
  const auto [post, w] = testing::tanh_network(d, 6, AlphaGroups::kDefault, 1.0, 100.0, 7);
  const Eigen::MatrixXd H = post.data_hessian(w, HessianKind::kExact);
  const Eigen::VectorXd lambda = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H).eigenvalues();
  const int negative = static_cast<int>((lambda.array() < 0.0).count());
  ASSERT_GT(negative, 0) << "the test needs an indefinite Hessian";
  int clipped = -1;
  const Eigen::MatrixXd H_plus = positive_data_hessian(post, w, HessianKind::kExact, &clipped);
  EXPECT_EQ(clipped, negative);
  const Eigen::VectorXd lambda_plus = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H_plus).eigenvalues();
  EXPECT_GE(lambda_plus.minCoeff(), -1e-10 * lambda.cwiseAbs().maxCoeff());
  // The positive part is untouched.
  EXPECT_NEAR(lambda_plus.maxCoeff(), lambda.maxCoeff(), 1e-10 * lambda.maxCoeff());
  EXPECT_EQ(laplace(post, w, HessianKind::kExact).clipped_eigenvalues, negative);
}

TEST(EvidenceOptions, ValidateNamesTheBadField) {
  EvidenceOptions options;
  options.tolerance = -1.0;
  try {
    options.validate();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("tolerance = -1"), std::string::npos) << e.what();
  }
  options = EvidenceOptions{};
  options.map.max_iterations = 0;
  EXPECT_THROW(options.validate(), Error);
}

TEST(SymmetryFactor, CountsPermutationsAndSignFlips) {
  EXPECT_NEAR(symmetry_log_factor(Mlp(3, {4}, Activation::kTanh)), std::log(24.0) + 4 * std::log(2.0), 1e-12);
  EXPECT_NEAR(symmetry_log_factor(Mlp(3, {4}, Activation::kRelu)), std::log(24.0), 1e-12);
  EXPECT_NEAR(symmetry_log_factor(Mlp(3, {2, 3}, Activation::kTanh)), std::log(2.0 * 6.0) + 5 * std::log(2.0), 1e-12);
  EXPECT_EQ(symmetry_log_factor(Linear(3)), 0.0);
}

TEST(EvidenceOuterLoop, StopsWhenAHalvedStepGainsLittle) {
  // A network whose fixed-point updates overshoot (16 tanh units on 20 noisy points): a round
  // is undone and its step halved, and a later round is accepted. The rule is off here.
  const auto d = testing::gap_data(20, 0.3, 5);
  EvidenceOptions off;
  off.loop = EvidenceLoop::kOuter;
  off.tolerance = 1e-12;
  off.max_outer_iterations = 40;
  off.halved_step_gain = 0.0;
  const int seed = 1;
  auto [reference_post, reference_w] = testing::tanh_network(d, 16, AlphaGroups::kDefault, 1.0, 10.0, seed);
  const EvidenceResult reference = fit_evidence(&reference_post, off, &reference_w);
  std::size_t first_after_halving = 0;  // index in the trace of the first accepted round after a rejected one
  const auto& t = reference.summary.trace;
  for (std::size_t i = 1; i < t.size() && first_after_halving == 0; ++i) {
    if (t[i].accepted && !t[i - 1].accepted) first_after_halving = i;
  }
  ASSERT_GT(first_after_halving, 0u) << "no accepted round after a halving; the test needs another network";

  // With any gain counted as too small, the loop must stop exactly at that round, having done
  // the same rounds as the reference up to it, and keep the best state. The stop is the rule's,
  // and it is reported as converged only if the gradient conditions hold there.
  auto [post, w] = testing::tanh_network(d, 16, AlphaGroups::kDefault, 1.0, 10.0, seed);
  EvidenceOptions rule = off;
  rule.halved_step_gain = 1e300;
  const EvidenceResult r = fit_evidence(&post, rule, &w);
  EXPECT_NE(r.summary.stopping_test.find("halved step"), std::string::npos) << r.summary.stopping_test;
  const bool conditions = r.summary.gradient_norm <= r.summary.gradient_tolerance &&
                          r.summary.hyper_gradient_norm <= r.summary.hyper_gradient_tolerance;
  EXPECT_EQ(r.summary.termination, conditions ? Termination::kConverged : Termination::kNoProgress)
      << r.summary.message;
  ASSERT_EQ(r.summary.trace.size(), first_after_halving + 1);
  for (std::size_t i = 0; i <= first_after_halving; ++i) {
    EXPECT_EQ(r.summary.trace[i].accepted, reference.summary.trace[i].accepted) << "round " << i + 1;
    EXPECT_DOUBLE_EQ(r.summary.trace[i].log_evidence, reference.summary.trace[i].log_evidence) << "round " << i + 1;
  }
  double best = -std::numeric_limits<double>::infinity();
  for (const EvidenceIteration& it : r.summary.trace) {
    if (it.accepted) best = std::max(best, it.log_evidence);
  }
  EXPECT_NEAR(r.summary.log_evidence, best, 1e-9 * std::abs(best));

  EvidenceOptions bad;
  bad.halved_step_gain = -1.0;
  EXPECT_THROW(bad.validate(), Error);
}

}  // namespace
}  // namespace occam

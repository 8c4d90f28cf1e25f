#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "occam/linear.h"
#include "occam/map.h"
#include "occam/mlp.h"
#include "testing/linear_gaussian.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

Posterior ridge_posterior(const testing::ToyData& d, double alpha, double beta) {
  auto net = std::make_unique<Linear>(d.X.cols(), 1, true);
  Prior prior = Prior::from_network(*net, AlphaGroups::kSingle, alpha);
  return Posterior(std::move(net), std::make_unique<GaussianLikelihood>(beta), std::move(prior), d.X, d.Y);
}

TEST(Map, LbfgsFindsTheRidgeSolutionAndSaysConverged) {
  const auto d = testing::linear_data(60, 5, 0.2, 1);
  const Posterior post = ridge_posterior(d, 0.5, 25.0);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  MapOptions options;
  options.gradient_tolerance = 1e-10;
  const MapSummary s = find_map(post, options, &w);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  Eigen::MatrixXd Phi(d.X.rows(), 6);
  Phi << d.X, Eigen::VectorXd::Ones(d.X.rows());
  const auto exact = testing::exact_posterior(Phi, d.Y.col(0), Eigen::VectorXd::Constant(6, 0.5), 25.0);
  EXPECT_LT((w - exact.mean).norm(), 1e-8 * exact.mean.norm());
  EXPECT_GT(s.evaluations, 0);
  EXPECT_NE(s.brief_report().find("converged"), std::string::npos);
}

TEST(Map, IterationLimitIsReportedAsSuch) {
  const auto d = testing::gap_data(50, 0.1, 2);
  auto [post, w] = testing::tanh_network(d, 10, AlphaGroups::kDefault, 0.01, 100.0, 4);
  MapOptions options;
  options.max_iterations = 3;
  const MapSummary s = find_map(post, options, &w);
  EXPECT_EQ(s.termination, Termination::kMaxIterations) << s.message;
}

TEST(Map, AdamApproachesTheLbfgsOptimum) {
  const auto d = testing::linear_data(400, 3, 0.2, 9);
  const Posterior post = ridge_posterior(d, 1.0, 25.0);
  Eigen::VectorXd w_lbfgs = Eigen::VectorXd::Zero(post.dim()), w_adam = w_lbfgs;
  find_map(post, MapOptions{}, &w_lbfgs);
  MapOptions adam;
  adam.optimizer = Optimizer::kAdam;
  adam.learning_rate = 0.01;
  adam.batch_size = 50;
  adam.max_iterations = 300;
  const MapSummary s = find_map(post, adam, &w_adam);
  EXPECT_NE(s.termination, Termination::kFailure) << s.message;
  // Minibatch noise keeps Adam near, not at, the optimum: within a few posterior standard
  // deviations (here about 0.01 per weight).
  EXPECT_LT((w_adam - w_lbfgs).cwiseAbs().maxCoeff(), 0.02);
}

TEST(Map, NonFiniteStartIsAFailureNotACrash) {
  const auto d = testing::linear_data(20, 2, 0.2, 3);
  const Posterior post = ridge_posterior(d, 1.0, 1.0);
  Eigen::VectorXd w = Eigen::VectorXd::Constant(post.dim(), std::numeric_limits<double>::quiet_NaN());
  const MapSummary s = find_map(post, MapOptions{}, &w);
  EXPECT_EQ(s.termination, Termination::kFailure);
  double lp;
  EXPECT_FALSE(post.evaluate(w, &lp, nullptr));
}

TEST(Map, OptionsValidateNamesTheField) {
  MapOptions options;
  options.learning_rate = 0.0;
  try {
    options.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("learning_rate"), std::string::npos);
  }
}

TEST(Posterior, MinibatchEstimateIsUnbiasedOverAPartition) {
  // Averaging the scaled minibatch gradients over a partition of the rows gives the full gradient.
  const auto d = testing::linear_data(30, 2, 0.2, 5);
  const Posterior post = ridge_posterior(d, 1.0, 4.0);
  const Eigen::VectorXd w = Eigen::VectorXd::Constant(post.dim(), 0.2);
  double lp_full, lp_a, lp_b;
  Eigen::VectorXd g_full, g_a, g_b;
  post.evaluate(w, &lp_full, &g_full);
  std::vector<Index> a, b;
  for (Index i = 0; i < 30; ++i) (i < 15 ? a : b).push_back(i);
  post.evaluate_batch(w, a, &lp_a, &g_a);
  post.evaluate_batch(w, b, &lp_b, &g_b);
  EXPECT_NEAR(0.5 * (lp_a + lp_b), lp_full, 1e-10 * std::abs(lp_full));
  EXPECT_LT((0.5 * (g_a + g_b) - g_full).norm(), 1e-10 * g_full.norm());
}

TEST(Posterior, HessianVectorProductsMatchTheMatrices) {
  const auto d = testing::gap_data(30, 0.1, 6);
  const auto [post, w] = testing::tanh_network(d, 4, AlphaGroups::kDefault, 1.0, 10.0, 5);
  Rng rng(6);
  const Eigen::VectorXd v = rng.normal_vector(post.dim());
  for (HessianKind kind : {HessianKind::kGgn, HessianKind::kExact}) {
    const Eigen::VectorXd Hv = post.data_hessian(w, kind) * v;
    EXPECT_LT((post.data_hessian_vp(w, v, kind) - Hv).norm(), 1e-10 * Hv.norm());
  }
  // And the exact Hessian is the derivative of the gradient (central differences).
  const Eigen::MatrixXd H = post.data_hessian(w, HessianKind::kExact);
  const double h = 1e-5;
  for (Index i = 0; i < post.dim(); ++i) {
    Eigen::VectorXd wp = w, wm = w, gp, gm;
    wp[i] += h;
    wm[i] -= h;
    double lp;
    post.evaluate(wp, &lp, &gp);
    post.evaluate(wm, &lp, &gm);
    Eigen::VectorXd prior_p, prior_m;
    post.prior().log_density(wp, &prior_p);
    post.prior().log_density(wm, &prior_m);
    const Eigen::VectorXd column = -((gp - prior_p) - (gm - prior_m)) / (2 * h);
    EXPECT_LT((column - H.col(i)).norm(), 1e-6 * (1.0 + H.col(i).norm())) << "column " << i;
  }
}

// A Bernoulli or Poisson GLM (or a softmax over three classes) on m rows of D standard-normal inputs.
Posterior glm_posterior(const std::string& family, Index m, Index D, double alpha, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd X(m, D), Y(m, 1);
  Eigen::VectorXd w_true(D);
  for (Index j = 0; j < D; ++j) w_true[j] = 0.7 * rng.normal();
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    const double f = X.row(n).dot(w_true) - 0.3;
    if (family == "bernoulli") Y(n, 0) = rng.uniform() < logistic(f) ? 1.0 : 0.0;
    if (family == "poisson") Y(n, 0) = PoissonLikelihood().sample(0.5 * f, rng);
    if (family == "categorical") Y(n, 0) = f < -0.5 ? 0.0 : f < 0.5 ? 1.0 : 2.0;
  }
  std::unique_ptr<Likelihood> likelihood;
  if (family == "bernoulli") likelihood = std::make_unique<BernoulliLikelihood>();
  if (family == "poisson") likelihood = std::make_unique<PoissonLikelihood>();
  if (family == "categorical")
    likelihood = std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"0", "1", "2"});
  auto net = std::make_unique<Linear>(D, likelihood->num_outputs(), true);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, alpha);
  return Posterior(std::move(net), std::move(likelihood), std::move(prior), X, Y);
}

TEST(Map, NewtonReachesTheGradientToleranceOnEveryGlm) {
  // Newton/IRLS on a convex S with the exact Hessian: a handful of iterations, gradient at the
  // tolerance (no function-change stop), and the same w as Levenberg–Marquardt.
  for (const std::string family : {"bernoulli", "poisson", "categorical"}) {
    SCOPED_TRACE(family);
    const Posterior post = glm_posterior(family, 3000, 6, 0.5, 11);
    MapOptions options;
    options.gradient_tolerance = 1e-10;
    options.function_tolerance = 0.0;
    options.optimizer = Optimizer::kNewton;
    Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
    const MapSummary s = find_map(post, options, &w);
    EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
    double lp;
    Eigen::VectorXd g;
    post.evaluate(w, &lp, &g);
    EXPECT_LE(g.norm(), 1e-10 * std::max(1.0, w.norm()));
    EXPECT_LE(s.iterations, 12);
    options.optimizer = Optimizer::kLevenbergMarquardt;
    Eigen::VectorXd w_lm = Eigen::VectorXd::Zero(post.dim());
    const MapSummary lm = find_map(post, options, &w_lm);
    EXPECT_EQ(lm.termination, Termination::kConverged) << lm.message;
    EXPECT_LT((w - w_lm).norm(), 1e-8 * w.norm());
  }
}

TEST(Map, NewtonDescendsFromAFarStart) {
  // From a start where the full Newton step overshoots (|f| in the hundreds), the line search
  // must still make every accepted step decrease S.
  const Posterior post = glm_posterior("bernoulli", 500, 4, 0.01, 12);
  Eigen::VectorXd w = Eigen::VectorXd::Constant(post.dim(), 40.0);
  MapOptions options;
  options.optimizer = Optimizer::kNewton;
  options.gradient_tolerance = 1e-9;
  std::vector<double> objectives;
  options.callback = [&](const MapIteration& it) { objectives.push_back(it.objective); };
  const MapSummary s = find_map(post, options, &w);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  for (std::size_t i = 1; i < objectives.size(); ++i) EXPECT_LT(objectives[i], objectives[i - 1]);
}

TEST(Map, AutoUsesNewtonForAGlm) {
  // The Gaussian GLM's S is quadratic: one Newton step lands on the exact ridge solution.
  const auto d = testing::linear_data(200, 4, 0.3, 13);
  const Posterior post = ridge_posterior(d, 0.5, 25.0);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  MapOptions options;
  options.gradient_tolerance = 1e-9;
  const MapSummary s = find_map(post, options, &w);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_EQ(s.iterations, 1);
}

TEST(Map, LevenbergMarquardtTakesTheSameStepsInEitherForm) {
  // m < W: the Woodbury and the dense system give the same iterates to rounding, and both reach
  // the (default) gradient tolerance. (Much below it, S itself stops resolving the decrease of a
  // Gauss–Newton step: here ‖∇S‖ ≈ 3e-7 is where S − S(w_MAP) ≈ ½gᵀA⁻¹g is a few ulps of S.)
  const auto d = testing::gap_data(40, 0.1, 5);
  auto [post, w0] = testing::tanh_network(d, 30, AlphaGroups::kDefault, 0.5, 100.0, 6);  // W = 91 > m = 40
  std::vector<double> objectives[2];
  Eigen::VectorXd w[2] = {w0, w0};
  int k = 0;
  for (CurvatureForm form : {CurvatureForm::kDense, CurvatureForm::kWoodbury}) {
    MapOptions options;
    options.optimizer = Optimizer::kLevenbergMarquardt;
    options.curvature_form = form;
    options.function_tolerance = 0.0;
    options.callback = [&, k](const MapIteration& it) { objectives[k].push_back(it.objective); };
    const MapSummary s = find_map(post, options, &w[k]);
    EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
    EXPECT_EQ(s.message, "gradient norm below tolerance");
    EXPECT_LE(s.gradient_norm, options.gradient_tolerance * std::max(1.0, w[k].norm()));
    ++k;
  }
  ASSERT_GE(objectives[0].size(), 5u);
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_NEAR(objectives[0][i], objectives[1][i], 1e-10 * std::abs(objectives[0][i]));
  // Both stop within ‖∇S‖ ≤ tol·‖w‖ of w_MAP, where S has curvature at least α = 0.5 (the prior
  // part of A): each is within tol·‖w‖/α of it.
  EXPECT_LT((w[0] - w[1]).norm(), 2.0 * 1e-6 * w[0].norm() / 0.5);
}

TEST(Map, LevenbergMarquardtFinishesWithTheExactHessian) {
  // Gauss–Newton alone stalls far from the gradient tolerance (linear convergence): its last
  // steps change S by less than function_tolerance while ‖∇S‖ is still about 1e4 times the
  // tolerance. The exact-Hessian finish reaches the tolerance in a few more iterations.
  const auto d = testing::gap_data(200, 0.1, 5);
  auto [post, w0] = testing::tanh_network(d, 10, AlphaGroups::kDefault, 0.5, 1000.0, 6);
  MapOptions options;
  options.optimizer = Optimizer::kLevenbergMarquardt;
  options.lm_exact_hessian = false;
  Eigen::VectorXd w_gn = w0, w = w0;
  const MapSummary gn = find_map(post, options, &w_gn);
  EXPECT_GT(gn.gradient_norm, 100.0 * options.gradient_tolerance * std::max(1.0, w_gn.norm()));
  options.lm_exact_hessian = true;
  const MapSummary s = find_map(post, options, &w);
  EXPECT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_EQ(s.message, "gradient norm below tolerance");
  EXPECT_LE(s.gradient_norm, options.gradient_tolerance * std::max(1.0, w.norm()));
  EXPECT_LE(s.objective, gn.objective);
  EXPECT_LE(s.iterations, gn.iterations + 20);
}

}  // namespace
}  // namespace occam

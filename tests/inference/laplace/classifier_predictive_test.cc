// The classifiers' predictives beside references written here: the Laplace bridge against its
// closed form and its two-class identity, the sampled linearised predictive against quadrature
// of the probit integral and against the linearised moments, and the plug-in predictive against
// the likelihood at the posterior mean.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/map.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"

namespace occam {
namespace {

// A two-class data set that is not separable, and its Laplace posterior under a weak ridge prior.
struct BinaryFit {
  Linear net{2, 1, true};
  std::unique_ptr<Posterior> post;
  LaplaceApproximation q;
  Eigen::MatrixXd X;
};

BinaryFit binary_fit() {
  BinaryFit fit;
  Rng rng(11);
  const Index m = 80;
  fit.X.resize(m, 2);
  Eigen::MatrixXd Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    fit.X(n, 0) = rng.normal();
    fit.X(n, 1) = rng.normal();
    Y(n, 0) = rng.uniform() < logistic(1.5 * fit.X(n, 0) - fit.X(n, 1)) ? 1.0 : 0.0;
  }
  fit.post = std::make_unique<Posterior>(fit.net.clone(), std::make_unique<BernoulliLikelihood>(),
                                         Prior::from_network(fit.net, AlphaGroups::kSingle, 0.01), fit.X, Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(fit.post->dim());
  find_map(*fit.post, MapOptions{}, &w);
  fit.q = laplace(*fit.post, w, HessianKind::kGgn);
  return fit;
}

TEST(LaplaceBridge, TwoClassesGiveTheLogisticOfTheMeanAtAnyVariance) {
  // Logits (−f/2, f/2) with variances s²/4: a_k = (1 + e^{∓μ})/s², whose mean is σ(μ).
  const BernoulliLikelihood lik;
  for (double mu : {-30.0, -2.0, 0.0, 0.7, 5.0}) {
    for (double s2 : {0.0, 0.01, 1.0, 400.0}) {
      const Eigen::MatrixXd P =
          lik.laplace_bridge_probabilities(Eigen::MatrixXd::Constant(1, 1, mu), Eigen::MatrixXd::Constant(1, 1, s2));
      EXPECT_NEAR(P(0, 1), logistic(mu), 1e-14) << mu << " " << s2;
      EXPECT_NEAR(P(0, 0) + P(0, 1), 1.0, 1e-15);
    }
  }
}

TEST(LaplaceBridge, MatchesTheClosedFormAndStaysFiniteForHugeLogitGaps) {
  // Hobbhahn, Kristiadi & Hennig (2022), eq. 8, on centred logits, computed directly.
  const CategoricalLikelihood lik({"a", "b", "c", "d"});
  Eigen::MatrixXd mean(1, 4), var(1, 4);
  mean << 1.0, -0.5, 0.3, 2.0;
  var << 0.5, 2.0, 1.0, 0.25;
  const Eigen::RowVectorXd mu = mean.row(0).array() - mean.row(0).mean();
  const double K = 4.0;
  const double sum_exp = (-mu.array()).exp().sum();
  Eigen::RowVectorXd a(4);
  for (int k = 0; k < 4; ++k) a[k] = (1.0 - 2.0 / K + std::exp(mu[k]) * sum_exp / (K * K)) / var(0, k);
  const Eigen::MatrixXd P = lik.laplace_bridge_probabilities(mean, var);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(P(0, k), a[k] / a.sum(), 1e-14);
  // Adding a constant to every logit changes nothing (the bridge centres them).
  const Eigen::MatrixXd shifted = lik.laplace_bridge_probabilities(mean.array() + 40.0, var);
  EXPECT_LT((shifted - P).cwiseAbs().maxCoeff(), 1e-13);
  // e^{1000} overflows; the logs do not.
  Eigen::MatrixXd gap(1, 4);
  gap << 1000.0, 0.0, -1000.0, 0.0;
  const Eigen::MatrixXd far = lik.laplace_bridge_probabilities(gap, var);
  EXPECT_TRUE(far.allFinite());
  EXPECT_NEAR(far.row(0).sum(), 1.0, 1e-14);
  EXPECT_GT(far(0, 0), 1.0 - 1e-12);
}

TEST(LinearizedMonteCarlo, BernoulliProbabilitiesAgreeWithTheIntegralWithinMonteCarloError) {
  const BinaryFit fit = binary_fit();
  const Eigen::MatrixXd Xq = fit.X.topRows(10);
  Eigen::MatrixXd f_mean, f_var;
  linearized_outputs(fit.net, fit.q, Xq, false, &f_mean, &f_var);
  PredictOptions options;
  options.method = PredictiveMethod::kLinearizedMonteCarlo;
  options.samples = 20000;
  options.seed = 5;
  const Prediction p = predict(fit.net, fit.post->likelihood(), fit.q, Xq, options);
  for (Index n = 0; n < Xq.rows(); ++n) {
    // ∫ σ(f) N(f; μ, s²) df and ∫ σ(f)² N df by dense quadrature: the Monte Carlo mean of σ(f_s)
    // has standard error √(Var σ(f)/S).
    double first = 0.0, second = 0.0;
    const int nodes = 20001;
    for (int i = 0; i < nodes; ++i) {
      const double z = -10.0 + 20.0 * i / (nodes - 1);
      const double weight = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi) * (20.0 / (nodes - 1));
      const double s = logistic(f_mean(n, 0) + std::sqrt(f_var(n, 0)) * z);
      first += s * weight;
      second += s * s * weight;
    }
    const double standard_error = std::sqrt(std::max(second - first * first, 0.0) / options.samples);
    EXPECT_NEAR(p.probabilities(n, 1), first, 5.0 * standard_error + 1e-12) << n;
  }
}

TEST(LinearizedMonteCarlo, NetworkDrawsHaveTheLinearizedMomentsAndIgnoreTheBatching) {
  // A small tanh network on a Gaussian likelihood: the sampled linearised predictive has the
  // linearised predictive's mean and variance (within Monte Carlo error), and its draws are the
  // same bits whatever the rows' batching.
  Rng rng(3);
  const Index m = 40;
  Eigen::MatrixXd X(m, 1), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    X(n, 0) = -2.0 + 4.0 * rng.uniform();
    Y(n, 0) = std::sin(2.0 * X(n, 0)) + 0.1 * rng.normal();
  }
  const Mlp net(1, {6}, Activation::kTanh);
  Posterior post(net.clone(), std::make_unique<GaussianLikelihood>(100.0),
                 Prior::from_network(net, AlphaGroups::kSingle, 1.0), X, Y);
  Eigen::VectorXd w = net.initial_params(rng);
  find_map(post, MapOptions{}, &w);
  const LaplaceApproximation q = laplace(post, w, HessianKind::kGgn);
  const Eigen::MatrixXd Xq = X.topRows(7);
  PredictOptions options;
  options.method = PredictiveMethod::kLinearized;
  const Prediction linear = predict(net, post.likelihood(), q, Xq, options);
  options.method = PredictiveMethod::kLinearizedMonteCarlo;
  options.samples = 20000;
  options.keep_draws = true;
  const Prediction sampled = predict(net, post.likelihood(), q, Xq, options);
  const double S = options.samples;
  for (Index n = 0; n < Xq.rows(); ++n) {
    const double sd = linear.std[n];
    EXPECT_NEAR(sampled.mean[n], linear.mean[n], 5.0 * sd / std::sqrt(S)) << n;
    EXPECT_NEAR(sampled.std[n], sd, 5.0 * sd / std::sqrt(2.0 * S)) << n;
  }
  options.batch_rows = 2;
  const Prediction batched = predict(net, post.likelihood(), q, Xq, options);
  EXPECT_EQ(batched.draws, sampled.draws);
}

TEST(PlugInPredictive, IsTheLikelihoodAtThePosteriorMean) {
  const BinaryFit fit = binary_fit();
  PredictOptions options;
  options.method = PredictiveMethod::kPlugIn;
  const Prediction p = predict(fit.net, fit.post->likelihood(), fit.q, fit.X, options);
  Eigen::MatrixXd F;
  fit.net.forward(fit.q.mean, fit.X, &F);
  EXPECT_LT((p.probabilities - fit.post->likelihood().class_probabilities(F)).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_EQ(parse_predictive_method("plug-in"), PredictiveMethod::kPlugIn);
  EXPECT_EQ(parse_predictive_method("probit"), PredictiveMethod::kLinearized);
  for (PredictiveMethod method :
       {PredictiveMethod::kAuto, PredictiveMethod::kLinearized, PredictiveMethod::kMonteCarlo,
        PredictiveMethod::kLinearizedMonteCarlo, PredictiveMethod::kLaplaceBridge, PredictiveMethod::kPlugIn}) {
    EXPECT_EQ(parse_predictive_method(to_string(method)), method);
  }
}

TEST(LaplaceBridge, IsRefusedForARegressionLikelihood) {
  const Linear net(1, 1, true);
  const Eigen::MatrixXd X = Eigen::VectorXd::LinSpaced(10, -1, 1);
  Eigen::MatrixXd Y = 2.0 * X;
  Posterior post(net.clone(), std::make_unique<GaussianLikelihood>(10.0),
                 Prior::from_network(net, AlphaGroups::kSingle, 1.0), X, Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(2);
  find_map(post, MapOptions{}, &w);
  const LaplaceApproximation q = laplace(post, w, HessianKind::kGgn);
  PredictOptions options;
  options.method = PredictiveMethod::kLaplaceBridge;
  try {
    predict(net, post.likelihood(), q, X, options);
    FAIL() << "a Gaussian likelihood has no class probabilities";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a classifier"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace occam

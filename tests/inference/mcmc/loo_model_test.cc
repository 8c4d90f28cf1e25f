// PSIS-LOO of a fitted model against the exact leave-one-out predictive of a Bayesian linear
// regression with known hyperparameters: draws are taken from the exact posterior N(m, A⁻¹), and
// p(y_i | y_−i) = N(y_i; φ_iᵀ m_−i, 1/β + φ_iᵀ A_−i⁻¹ φ_i) is computed in closed form.
#include "occam/loo.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <random>

#include "occam/status.h"

namespace {

using occam::Index;

constexpr double kAlpha = 0.5, kBeta = 4.0;

// A linear model y = w1 x1 + w2 x2 + b + noise, with standardised inputs and targets.
struct Problem {
  occam::FittedModel model;
  occam::Dataset data;
  Eigen::MatrixXd phi;  // m × W: the network's outputs are linear in w, f = Φw (standardised units)
  Eigen::VectorXd t;    // standardised targets
};

Problem make_problem(int draws_per_chain, int chains) {
  Problem p;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(0.0, 1.0);
  const Index m = 30;
  p.data.X.resize(m, 2);
  p.data.Y.resize(m, 1);
  for (Index n = 0; n < m; ++n) {
    p.data.X(n, 0) = normal(rng);
    p.data.X(n, 1) = 2.0 + 3.0 * normal(rng);
    p.data.Y(n, 0) = 10.0 + 2.0 * p.data.X(n, 0) - 0.5 * p.data.X(n, 1) + 1.5 * normal(rng);
  }
  p.data.feature_names = {"x1", "x2"};
  p.data.target_name = "y";

  occam::FittedModel& model = p.model;
  model.spec.network.kind = occam::NetworkKind::kLinear;
  model.network = occam::make_network(model.spec.network, 2, 1);
  model.likelihood = std::make_unique<occam::GaussianLikelihood>(kBeta);
  model.standardizer = occam::Standardizer::fit(p.data, occam::Standardize::kBoth);
  model.feature_names = p.data.feature_names;
  model.target_name = "y";

  // Φ column by column: the output at the unit weight vectors.
  const Index W = model.network->num_params();
  const Eigen::MatrixXd Z = model.standardizer.transform_inputs(p.data.X);
  p.phi.resize(m, W);
  Eigen::MatrixXd F;
  for (Index j = 0; j < W; ++j) {
    model.network->forward(Eigen::VectorXd::Unit(W, j), Z, &F);
    p.phi.col(j) = F.col(0);
  }
  p.t = model.standardizer.transform_targets(p.data.Y).col(0);

  // The exact posterior under the prior N(0, α⁻¹ I), and independent draws from it.
  const Eigen::MatrixXd A = kAlpha * Eigen::MatrixXd::Identity(W, W) + kBeta * p.phi.transpose() * p.phi;
  const Eigen::LLT<Eigen::MatrixXd> llt(A);
  const Eigen::VectorXd mean = llt.solve(kBeta * p.phi.transpose() * p.t);
  const Eigen::MatrixXd L = llt.matrixL();
  occam::PosteriorDraws draws;
  draws.weights.resize(static_cast<Index>(draws_per_chain) * chains, W);
  for (Index s = 0; s < draws.weights.rows(); ++s) {
    Eigen::VectorXd z(W);
    for (Index j = 0; j < W; ++j) z[j] = normal(rng);
    // w = m + L⁻ᵀ z has covariance (L Lᵀ)⁻¹ = A⁻¹.
    draws.weights.row(s) = (mean + L.transpose().triangularView<Eigen::Upper>().solve(z)).transpose();
  }
  draws.draws_per_chain.assign(static_cast<std::size_t>(chains), draws_per_chain);
  model.posterior = std::move(draws);
  return p;
}

// log p(y_i | y_−i) in the target's original units.
Eigen::VectorXd exact_loo(const Problem& p) {
  const Index m = p.phi.rows(), W = p.phi.cols();
  const double y_scale = p.model.standardizer.y_scale;
  Eigen::VectorXd out(m);
  for (Index i = 0; i < m; ++i) {
    Eigen::MatrixXd A = kAlpha * Eigen::MatrixXd::Identity(W, W);
    Eigen::VectorXd b = Eigen::VectorXd::Zero(W);
    for (Index n = 0; n < m; ++n) {
      if (n == i) continue;
      A += kBeta * p.phi.row(n).transpose() * p.phi.row(n);
      b += kBeta * p.phi.row(n).transpose() * p.t[n];
    }
    const Eigen::LLT<Eigen::MatrixXd> llt(A);
    const Eigen::VectorXd phi_i = p.phi.row(i).transpose();
    const double mu = phi_i.dot(llt.solve(b));
    const double var = 1.0 / kBeta + phi_i.dot(llt.solve(phi_i));
    out[i] = -0.5 * std::log(2.0 * M_PI * var) - 0.5 * std::pow(p.t[i] - mu, 2) / var - std::log(y_scale);
  }
  return out;
}

TEST(FittedModelLoo, PointwiseLogLikelihoodIsTheDensityOfTheOriginalTargets) {
  const Problem p = make_problem(10, 2);
  const Eigen::MatrixXd ll = occam::pointwise_log_likelihood(p.model, p.data);
  const auto& w = std::get<occam::PosteriorDraws>(p.model.posterior).weights;
  ASSERT_EQ(ll.rows(), 20);
  ASSERT_EQ(ll.cols(), 30);
  const occam::Standardizer& s = p.model.standardizer;
  for (Index d = 0; d < ll.rows(); ++d)
    for (Index n = 0; n < ll.cols(); ++n) {
      // y ~ N(y_mean + y_scale φᵀw, y_scale²/β) in the original units.
      const double mu = s.y_mean + s.y_scale * p.phi.row(n).dot(w.row(d));
      const double var = s.y_scale * s.y_scale / kBeta;
      const double expected = -0.5 * std::log(2.0 * M_PI * var) - 0.5 * std::pow(p.data.Y(n, 0) - mu, 2) / var;
      EXPECT_NEAR(ll(d, n), expected, 1e-10);
    }
}

// With 4000 independent exact draws the PSIS estimate is within a few Monte Carlo standard errors
// of the exact leave-one-out density, observation by observation and in total.
TEST(FittedModelLoo, AgreesWithTheExactLeaveOneOutPredictive) {
  const Problem p = make_problem(1000, 4);
  const occam::mcmc::LooResult loo = occam::loo(p.model, p.data);
  const Eigen::VectorXd exact = exact_loo(p);
  ASSERT_LE(loo.pareto_k.maxCoeff(), 0.7);
  for (Index i = 0; i < exact.size(); ++i)
    EXPECT_NEAR(loo.pointwise_elpd_loo[i], exact[i], 4.0 * loo.pointwise_mcse_elpd_loo[i]) << "observation " << i + 1;
  EXPECT_NEAR(loo.elpd_loo, exact.sum(), 4.0 * loo.mcse_elpd_loo);
  // The test can tell: the in-sample lpd is higher than elpd_loo by p_loo ≈ W = 3 parameters,
  // many Monte Carlo errors away.
  EXPECT_GT(loo.p_loo, 2.0);
  EXPECT_GT(loo.p_loo, 20.0 * loo.mcse_elpd_loo);
}

TEST(FittedModelLoo, RefusesAModelWithoutDraws) {
  Problem p = make_problem(10, 2);
  p.model.posterior = occam::PointEstimate{Eigen::VectorXd::Zero(3)};
  try {
    occam::loo(p.model, p.data);
    FAIL() << "computed LOO without draws";
  } catch (const occam::Error& e) {
    EXPECT_EQ(e.kind(), occam::ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("map posterior"), std::string::npos) << e.what();
  }
}

}  // namespace

// The Gaussian likelihood with row weights, y_n ~ N(f_n, 1/(βω_n)) (likelihood.h): its value and
// derivatives are those of the rows' own normal densities, it is the plain Gaussian when every
// ω_n = 1, it survives the model file, it refuses bad weights, and the evidence's β, fitted with
// the weights, is the noise precision of the weighted rows — where the same rows without their
// weights give a β several times off.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numbers>
#include <nlohmann/json.hpp>

#include "occam/evidence.h"
#include "occam/likelihood.h"
#include "occam/model_spec.h"
#include "occam/posterior.h"
#include "occam/prior.h"

namespace occam {
namespace {

struct Rows {
  Eigen::MatrixXd F, Y;  // Y: y, ω
};

Rows three_rows() {
  Rows r;
  r.F.resize(3, 1);
  r.F << 0.2, -0.1, 0.7;
  r.Y.resize(3, 2);
  r.Y << 1.3, 0.5, -0.4, 4.0, 0.2, 1.0;
  return r;
}

TEST(WeightedGaussian, IsTheSumOfTheRowsNormalDensities) {
  const double beta = 3.0;
  const GaussianLikelihood lik(beta, true);
  const Rows r = three_rows();
  double expected = 0.0;
  for (Index n = 0; n < 3; ++n) {
    const double precision = beta * r.Y(n, 1), e = r.Y(n, 0) - r.F(n, 0);
    expected += 0.5 * std::log(precision / (2.0 * std::numbers::pi)) - 0.5 * precision * e * e;
  }
  Eigen::MatrixXd dF;
  EXPECT_NEAR(lik.log_likelihood(r.F, r.Y, &dF), expected, 1e-14 * std::abs(expected));
  EXPECT_NEAR(lik.log_likelihood(r.F, r.Y, nullptr), expected, 1e-14 * std::abs(expected));
  OutputDerivatives d;
  lik.neg_log_derivatives(r.F, r.Y, &d);
  for (Index n = 0; n < 3; ++n) {
    const double precision = beta * r.Y(n, 1);
    EXPECT_NEAR(dF(n, 0), precision * (r.Y(n, 0) - r.F(n, 0)), 1e-14);
    EXPECT_NEAR(d.gradient(n, 0), -dF(n, 0), 1e-14);
    EXPECT_NEAR(d.hessian(n, 0), precision, 1e-14);
  }
  // E_D = ½ Σ ω (y − f)²: ∂ log p/∂ log β = m/2 − β E_D.
  const double E_D = GaussianLikelihood::data_error(r.F, r.Y);
  EXPECT_NEAR(lik.log_precision_derivative(r.F, r.Y), 1.5 - beta * E_D, 1e-14);
  EXPECT_EQ(lik.num_target_columns(), 2);
}

TEST(WeightedGaussian, UnitWeightsAreThePlainGaussian) {
  const GaussianLikelihood weighted(2.5, true), plain(2.5);
  Rows r = three_rows();
  r.Y.col(1).setOnes();
  const Eigen::MatrixXd y = r.Y.col(0);
  Eigen::MatrixXd a, b;
  EXPECT_NEAR(weighted.log_likelihood(r.F, r.Y, &a), plain.log_likelihood(r.F, y, &b), 1e-14);
  EXPECT_TRUE(a.isApprox(b, 1e-15));
  EXPECT_DOUBLE_EQ(GaussianLikelihood::data_error(r.F, r.Y), GaussianLikelihood::data_error(r.F, y));
}

TEST(WeightedGaussian, TheModelFileKeepsTheWeightsAndBadWeightsAreRefused) {
  const GaussianLikelihood lik(2.0, true);
  const nlohmann::json j = lik.to_json();
  EXPECT_EQ(j.at("row_weights"), true);
  const auto back = likelihood_from_json(j);
  EXPECT_EQ(back->num_target_columns(), 2);
  EXPECT_FALSE(GaussianLikelihood(2.0).to_json().contains("row_weights"));
  Rows r = three_rows();
  EXPECT_NO_THROW(lik.validate_targets(r.Y));
  EXPECT_THROW(lik.validate_targets(r.Y.col(0)), Error);  // no weight column
  r.Y(1, 1) = 0.0;
  try {
    lik.validate_targets(r.Y);
    FAIL() << "a zero weight was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("row 2"), std::string::npos) << e.what();
  }
}

// y_n = 0.5 + 2x_n + ε_n/√(β ω_n), ω spread over two decades. MacKay's β = (m − γ)/2E_D with the
// weighted E_D is the noise precision; its relative standard error is √(2/m) ≈ 0.032 at m = 2000.
// Without the weights (the same rows, one noise level) the fit's β is the inverse mean noise
// variance, 1/mean(1/(βω_n)) ≈ β/2.15 here: the test sees the difference (3.91 against 1.77).
TEST(WeightedGaussian, TheEvidenceFindsTheNoisePrecisionOfWeightedRows) {
  const Index m = 2000;
  const double beta = 4.0;
  Rng rng(11);
  Eigen::MatrixXd X(m, 1), Y(m, 2);
  for (Index n = 0; n < m; ++n) {
    const double x = -1.0 + 2.0 * rng.uniform(), omega = std::pow(10.0, -1.0 + 2.0 * rng.uniform());
    X(n, 0) = x;
    Y(n, 0) = 0.5 + 2.0 * x + rng.normal() / std::sqrt(beta * omega);
    Y(n, 1) = omega;
  }
  NetworkSpec linear;
  linear.kind = NetworkKind::kLinear;
  auto fitted_beta = [&](bool weighted) {
    std::unique_ptr<Network> net = make_network(linear, 1, 1);
    Prior prior = make_prior(*net, PriorSpec{});
    const Eigen::MatrixXd targets = weighted ? Y : Eigen::MatrixXd(Y.col(0));
    Posterior posterior(net->clone(), std::make_unique<GaussianLikelihood>(1.0, weighted), prior, X, targets);
    Eigen::VectorXd w = Eigen::VectorXd::Zero(posterior.dim());
    const EvidenceResult r = fit_evidence(&posterior, EvidenceOptions{}, &w);
    EXPECT_EQ(r.summary.termination, Termination::kConverged) << r.summary.message;
    std::printf("beta %s weights: %.3f\n", weighted ? "with" : "without", r.summary.beta);  // docs/heteroscedastic.md
    return r.summary.beta;
  };
  const double se = beta * std::sqrt(2.0 / static_cast<double>(m));
  EXPECT_NEAR(fitted_beta(true), beta, 4.0 * se);
  EXPECT_LT(fitted_beta(false), beta - 10.0 * se);
}

}  // namespace
}  // namespace occam

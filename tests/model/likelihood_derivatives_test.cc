// The third derivatives of the likelihoods: how the Gauss–Newton weights Λ(f) move with f
// (Likelihood::gauss_newton_weight_derivative), against central differences of Λ itself, and
// hetero's exact Hessian in f (Likelihood::neg_log_hessian) against differences of its gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "occam/likelihood.h"
#include "testing/finite_difference.h"

namespace occam {
namespace {

using testing::relative_error;

std::unique_ptr<Likelihood> family(const std::string& name) {
  if (name == "gaussian") return std::make_unique<GaussianLikelihood>(3.0);
  if (name == "bernoulli") return std::make_unique<BernoulliLikelihood>();
  if (name == "poisson") return std::make_unique<PoissonLikelihood>();
  if (name == "categorical") return std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"});
  return std::make_unique<HeteroscedasticLikelihood>();
}

struct Outputs {
  Eigen::MatrixXd F, Y, V;  // outputs, targets, a direction in the outputs
};

Outputs outputs_for(const std::string& name) {
  Outputs o;
  const Index K = name == "categorical" ? 3 : (name == "hetero" ? 2 : 1);
  o.F.resize(3, K);
  o.V.resize(3, K);
  for (Index n = 0; n < 3; ++n) {
    for (Index k = 0; k < K; ++k) {
      o.F(n, k) = 0.4 * static_cast<double>(n) - 0.3 * static_cast<double>(k) + 0.2;
      o.V(n, k) = 1.0 - 0.6 * static_cast<double>(n * K + k) / static_cast<double>(3 * K);
    }
  }
  o.Y.resize(3, 1);
  if (name == "categorical")
    o.Y << 2, 0, 1;
  else if (name == "bernoulli")
    o.Y << 1, 0, 1;
  else if (name == "poisson")
    o.Y << 3, 0, 1;
  else
    o.Y << 1.3, -0.4, 0.2;
  return o;
}

class GaussNewtonWeightDerivative : public ::testing::TestWithParam<const char*> {};

TEST_P(GaussNewtonWeightDerivative, MatchesCentralDifferencesOfTheWeights) {
  const std::string name = GetParam();
  const auto lik = family(name);
  const Outputs o = outputs_for(name);
  const Eigen::MatrixXd analytic = lik->gauss_newton_weight_derivative(o.F, o.Y, o.V);
  constexpr double h = 1e-5;
  OutputDerivatives plus, minus;
  lik->neg_log_derivatives(o.F + h * o.V, o.Y, &plus);
  lik->neg_log_derivatives(o.F - h * o.V, o.Y, &minus);
  const Eigen::MatrixXd numeric = (plus.hessian - minus.hessian) / (2.0 * h);
  ASSERT_EQ(analytic.rows(), numeric.rows());
  ASSERT_EQ(analytic.cols(), numeric.cols());
  EXPECT_LT(relative_error(analytic, numeric, 1e-3), 1e-8) << analytic << "\n\n" << numeric;
}

INSTANTIATE_TEST_SUITE_P(Families, GaussNewtonWeightDerivative,
                         ::testing::Values("gaussian", "bernoulli", "poisson", "categorical", "hetero"));

// The capabilities the evidence and noise_std ask instead of the family's type.
TEST(LikelihoodCapabilities, HomoscedasticGaussianAndOutputNoise) {
  EXPECT_TRUE(GaussianLikelihood(2.0).is_homoscedastic_gaussian());
  EXPECT_FALSE(GaussianLikelihood(2.0, /*row_weights=*/true).is_homoscedastic_gaussian());
  EXPECT_FALSE(BernoulliLikelihood().is_homoscedastic_gaussian());
  EXPECT_FALSE(HeteroscedasticLikelihood().is_homoscedastic_gaussian());
  Eigen::MatrixXd F(2, 2);
  F << 0.3, -1.0, -0.2, 0.5;
  const auto variance = HeteroscedasticLikelihood(0.01).output_noise_variance(F);
  ASSERT_TRUE(variance.has_value());
  EXPECT_DOUBLE_EQ((*variance)[0], std::exp(-1.0) + 0.01);
  EXPECT_DOUBLE_EQ((*variance)[1], std::exp(0.5) + 0.01);
  EXPECT_FALSE(GaussianLikelihood(2.0).output_noise_variance(F.leftCols(1)).has_value());
  EXPECT_FALSE(PoissonLikelihood().output_noise_variance(F.leftCols(1)).has_value());
}

TEST(NegLogHessian, HeteroIsTheObservedInformationAndOthersTheirWeights) {
  // hetero: the exact Hessian of −log p in (μ, s), not its Fisher weight.
  const HeteroscedasticLikelihood hetero;
  const Outputs o = outputs_for("hetero");
  const Eigen::MatrixXd H = hetero.neg_log_hessian(o.F, o.Y);
  for (Index n = 0; n < 3; ++n) {
    auto gradient = [&](const Eigen::VectorXd& f) {
      Eigen::MatrixXd dF;
      hetero.log_likelihood(Eigen::MatrixXd(f.transpose()), Eigen::MatrixXd(o.Y.row(n)), &dF);
      return Eigen::VectorXd(-dF.transpose());
    };
    const Eigen::MatrixXd numeric =
        testing::fd_hessian_from_gradient(gradient, Eigen::VectorXd(o.F.row(n).transpose()));
    const Eigen::MatrixXd analytic = Eigen::Map<const Eigen::MatrixXd>(Eigen::RowVectorXd(H.row(n)).data(), 2, 2);
    EXPECT_LT(relative_error(analytic, numeric), 1e-6) << "row " << n;
  }
  // A canonical link's Gauss–Newton weight is its exact Hessian: the default returns it.
  const BernoulliLikelihood bernoulli;
  const Outputs b = outputs_for("bernoulli");
  OutputDerivatives d;
  bernoulli.neg_log_derivatives(b.F, b.Y, &d);
  EXPECT_EQ(bernoulli.neg_log_hessian(b.F, b.Y), d.hessian);
}

}  // namespace
}  // namespace occam

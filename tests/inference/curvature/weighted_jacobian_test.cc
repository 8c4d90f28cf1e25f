// The layered weighted Jacobian (src/inference/curvature/weighted_jacobian.h) against Z = Λ^½J formed
// in full from the network's own Jacobian: every product, the Gram matrix Z D⁻¹ Zᵀ (the structured empirical NTK),
// the per-set quadratic forms behind tr_g(A⁻¹) and the Gauss–Newton diagonal, for one and two
// hidden layers, one and several outputs, a GLM, and ridge, MacKay's groups and ARD priors; and the
// curvature built on it (log|A|, the step, γ_g, predictive variances) against the dense A.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <memory>
#include <string>
#include <vector>

#include "inference/curvature/curvature.h"
#include "inference/curvature/curvature_kernels.h"
#include "inference/evidence/engine.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "testing/gauss_newton.h"
#include "inference/curvature/weighted_jacobian.h"

namespace occam {
namespace {

double relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).norm() / std::max(b.norm(), 1e-300);
}

struct Case {
  std::string name;
  std::unique_ptr<Posterior> posterior;
  Eigen::VectorXd w;
};

// `hidden` empty: a Linear model. Families: gaussian (K = 1), categorical (K = 3, a full Λ_n),
// hetero (K = 2, a diagonal Λ_n). Distinct α per hyperparameter, so that a mix-up shows.
Case make_case(const std::string& family, const std::string& prior_kind, std::vector<Index> hidden, Index m,
               std::uint64_t seed) {
  Rng rng(seed);
  const Index D = 5;
  const Index K = family == "categorical" ? 3 : family == "hetero" ? 2 : 1;
  std::unique_ptr<Network> net;
  if (hidden.empty())
    net = std::make_unique<Linear>(D, K, true);
  else
    net = std::make_unique<Mlp>(D, hidden, Activation::kTanh, K);
  PriorSpec spec;
  spec.kind = parse_prior_kind(prior_kind);
  Prior prior = make_prior(*net, spec);
  Eigen::VectorXd theta = prior.hyperparameters();
  for (Index j = 0; j < theta.size(); ++j) theta[j] = 0.4 + 0.9 * static_cast<double>(j);
  prior.set_hyperparameters(theta);
  Eigen::MatrixXd X(m, D), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    Y(n, 0) = family == "categorical" ? static_cast<double>(rng.uniform_int(3)) : rng.normal();
  }
  std::unique_ptr<Likelihood> likelihood;
  if (family == "gaussian")
    likelihood = std::make_unique<GaussianLikelihood>(2.5);
  else if (family == "categorical")
    likelihood = std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"});
  else
    likelihood = std::make_unique<HeteroscedasticLikelihood>();
  Case c;
  c.name = family + "/" + prior_kind + "/" + net->describe() + "/m" + std::to_string(m);
  c.w = 0.7 * net->initial_params(rng);
  c.posterior = std::make_unique<Posterior>(std::move(net), std::move(likelihood), std::move(prior), X, Y);
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  std::uint64_t seed = 11;
  for (const std::string family : {"gaussian", "categorical", "hetero"}) {
    for (const std::string prior : {"ridge", "groups", "ard"}) {
      for (const std::vector<Index>& hidden : {std::vector<Index>{}, {7}, {6, 4}}) {
        out.push_back(make_case(family, prior, hidden, 9, seed++));
      }
    }
  }
  return out;
}

TEST(LayeredJacobian, EveryOperationEqualsTheFullJacobians) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Posterior& post = *c.posterior;
    ASSERT_TRUE(internal::layered_jacobian_applies(post));
    const auto layered = internal::make_weighted_jacobian(post, c.w, true);
    const auto full = internal::make_weighted_jacobian(post, c.w, false);
    ASSERT_TRUE(layered && full);
    ASSERT_TRUE(layered->layered());
    ASSERT_FALSE(full->layered());
    const Index n = full->rows(), W = full->cols();
    ASSERT_EQ(layered->rows(), n);
    ASSERT_EQ(layered->cols(), W);
    const Eigen::MatrixXd Z = full->dense();
    EXPECT_LT(relative_difference(layered->dense(), Z), 1e-14);

    Rng rng(3);
    Eigen::MatrixXd V(W, 3), T(n, 3);
    for (Index j = 0; j < 3; ++j) {
      V.col(j) = rng.normal_vector(W);
      T.col(j) = rng.normal_vector(n);
    }
    Eigen::MatrixXd ZV, ZtT;
    layered->multiply(V, &ZV);
    layered->multiply_transpose(T, &ZtT);
    EXPECT_LT(relative_difference(ZV, Z * V), 1e-13);
    EXPECT_LT(relative_difference(ZtT, Z.transpose() * T), 1e-13);
    EXPECT_LT(relative_difference(layered->column_squared_norms(), Z.colwise().squaredNorm().transpose()), 1e-13);

    // D = P + μI: constant on each of the layered form's sets. Twice, so the kept Gram of a layer
    // is reused with other α; then formed again at another w in the same storage.
    Prior prior = post.prior();
    for (double mu : {0.0, 0.61}) {
      const Eigen::VectorXd d_inverse = (prior.precision_diagonal().array() + mu).inverse().matrix();
      Eigen::MatrixXd K, K_full;
      layered->gram_lower(d_inverse, 1.7, &K);
      const Eigen::MatrixXd reference =
          Eigen::MatrixXd::Identity(n, n) + 1.7 * Z * d_inverse.asDiagonal() * Z.transpose();
      EXPECT_LT(relative_difference(Eigen::MatrixXd(K.triangularView<Eigen::Lower>()),
                                    Eigen::MatrixXd(reference.triangularView<Eigen::Lower>())),
                1e-13);
      full->gram_lower(d_inverse, 1.7, &K_full);
      EXPECT_LT(relative_difference(Eigen::MatrixXd(K_full.triangularView<Eigen::Lower>()),
                                    Eigen::MatrixXd(reference.triangularView<Eigen::Lower>())),
                1e-13);
      Eigen::VectorXd theta = prior.hyperparameters();
      prior.set_hyperparameters(1.9 * theta);
    }

    // Σ_{i∈s} z_iᵀ M z_i per set, and each set inside one prior group.
    Eigen::MatrixXd M(n, n);
    for (Index j = 0; j < n; ++j) M.col(j) = rng.normal_vector(n);
    M = (M + M.transpose()).eval();
    const Eigen::VectorXd per_weight = (Z.array() * (M * Z).array()).colwise().sum().transpose();
    Eigen::VectorXd expected = Eigen::VectorXd::Zero(layered->num_sets());
    Eigen::VectorXi group_of_set = Eigen::VectorXi::Constant(layered->num_sets(), -1);
    for (Index i = 0; i < W; ++i) {
      const int s = layered->set_of()[i];
      expected[s] += per_weight[i];
      if (group_of_set[s] < 0) group_of_set[s] = post.prior().group_of()[i];
      EXPECT_EQ(group_of_set[s], post.prior().group_of()[i]) << "weight " << i;
    }
    EXPECT_LT(relative_difference(layered->set_quadratic_sums(M), expected), 1e-12);

    // Formed again at another w in the same storage: nothing of the first w's Gram matrices stays.
    const Eigen::VectorXd w2 = c.w + 0.3 * rng.normal_vector(W);
    ASSERT_TRUE(layered->form(post, w2));
    const auto full2 = internal::make_weighted_jacobian(post, w2, false);
    const Eigen::MatrixXd Z2 = full2->dense();
    const Eigen::VectorXd d_inverse = prior.precision_diagonal().cwiseInverse();
    Eigen::MatrixXd K2;
    layered->gram_lower(d_inverse, 1.0, &K2);
    const Eigen::MatrixXd reference2 = Eigen::MatrixXd::Identity(n, n) + Z2 * d_inverse.asDiagonal() * Z2.transpose();
    EXPECT_LT(relative_difference(Eigen::MatrixXd(K2.triangularView<Eigen::Lower>()),
                                  Eigen::MatrixXd(reference2.triangularView<Eigen::Lower>())),
              1e-13);
    EXPECT_LT(relative_difference(layered->dense(), Z2), 1e-14);
  }
}

TEST(LayeredJacobian, TheCurvatureOnItEqualsTheDensePrecision) {
  // log|A|, the step, γ_g, the traces and the predictive variances to 1e-10 relative.
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Posterior& post = *c.posterior;
    const Index W = post.dim();
    internal::Curvature curvature(post, c.w, {.form = CurvatureForm::kWoodbury});
    ASSERT_TRUE(curvature.layered());
    const Eigen::MatrixXd A = testing::reference_precision(post, c.w);
    const Eigen::LLT<Eigen::MatrixXd> llt(A);
    ASSERT_EQ(llt.info(), Eigen::Success);
    const Eigen::MatrixXd A_inverse = llt.solve(Eigen::MatrixXd::Identity(W, W));
    ASSERT_TRUE(curvature.factor(0.0));
    const double log_det = 2.0 * llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
    EXPECT_NEAR(curvature.log_det(), log_det, 1e-10 * std::abs(log_det));
    Rng rng(5);
    const Eigen::VectorXd r = rng.normal_vector(W);
    Eigen::MatrixXd G(W, 4);
    for (Index j = 0; j < 4; ++j) G.col(j) = rng.normal_vector(W);
    EXPECT_LT(relative_difference(curvature.solve(r), llt.solve(r)), 1e-10);
    EXPECT_LT(relative_difference(curvature.solve_matrix(G), llt.solve(G)), 1e-10);
    EXPECT_LT(relative_difference(curvature.quadratic_forms(G), (G.transpose() * A_inverse * G).diagonal()), 1e-10);
    Prior prior = post.prior();
    EXPECT_LT(relative_difference(curvature.group_traces(), prior.group_traces(A_inverse.diagonal())), 1e-10);
    EXPECT_LT(relative_difference(curvature.well_determined(), prior.well_determined(A_inverse)), 1e-9);
    EXPECT_LT(relative_difference(curvature.hessian_diagonal(), (A.diagonal() - prior.precision_diagonal()).eval()),
              1e-12);
  }
}

TEST(GaussNewtonFromLayers, EqualsJTransposeLambdaJInEveryBlocking) {
  // H = Σ_n B_n ⊗ ã_n ã'_nᵀ per pair of layers against JᵀΛJ from the full Jacobian, for K = 1, 2
  // (diagonal Λ_n) and 3 (the softmax's full Λ_n), a GLM, one and two hidden layers; in one block
  // of rows, in blocks of 4 and 1 (9 rows), and through accumulate_gauss_newton_upper's default
  // choice. Only the upper triangle is defined.
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Posterior& post = *c.posterior;
    Eigen::MatrixXd prior_precision = Eigen::MatrixXd::Zero(post.dim(), post.dim());
    post.prior().add_precision_to(&prior_precision);
    const Eigen::MatrixXd H = testing::reference_precision(post, c.w) - prior_precision;
    const Eigen::MatrixXd upper = H.triangularView<Eigen::Upper>();
    for (const Index block_rows : {Index{2048}, Index{4}, Index{1}}) {
      Eigen::MatrixXd M = Eigen::MatrixXd::Constant(post.dim(), post.dim(), 7.0);  // stale contents
      ASSERT_TRUE(internal::accumulate_gauss_newton_from_layers(post, c.w, block_rows, &M));
      EXPECT_LT(relative_difference(Eigen::MatrixXd(M.triangularView<Eigen::Upper>()), upper), 1e-13)
          << "block_rows " << block_rows;
    }
    Eigen::MatrixXd by_default, by_rows;
    internal::accumulate_gauss_newton_upper(post, c.w, 4, &by_default);
    internal::accumulate_gauss_newton_upper(post, c.w, 4, &by_rows, /*from_layers=*/false);
    EXPECT_LT(relative_difference(Eigen::MatrixXd(by_default.triangularView<Eigen::Upper>()), upper), 1e-13);
    EXPECT_LT(relative_difference(Eigen::MatrixXd(by_rows.triangularView<Eigen::Upper>()), upper), 1e-13);
  }
}

TEST(GaussNewtonFromLayers, TheLayersDistinctValuesFillTheBlockAtSizeAsTheRankKUpdateDoes) {
  // The packed product of a layer's own block (pairs of units × pairs of inputs) in several
  // chunks of unit pairs (40 units: 820 pairs) and sub-blocks of rows (600 rows), across blocks of
  // 2048 and 100 rows, against the rank-k update of the full Jacobian.
  Rng rng(11);
  const Index m = 600, D = 9;
  Eigen::MatrixXd X(m, D), Y(m, 1);
  for (Index j = 0; j < D; ++j) X.col(j) = rng.normal_vector(m);
  Y.col(0) = rng.normal_vector(m);
  auto net = std::make_unique<Mlp>(D, std::vector<Index>{40}, Activation::kTanh);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
  const Posterior post(std::move(net), std::make_unique<GaussianLikelihood>(3.0), std::move(prior), X, Y);
  const Eigen::VectorXd w = 0.3 * rng.normal_vector(post.dim());
  Eigen::MatrixXd by_rows;
  internal::accumulate_gauss_newton_upper(post, w, 2048, &by_rows, /*from_layers=*/false);
  const Eigen::MatrixXd upper = by_rows.triangularView<Eigen::Upper>();
  for (const Index block_rows : {Index{2048}, Index{100}}) {
    Eigen::MatrixXd M;
    ASSERT_TRUE(internal::accumulate_gauss_newton_from_layers(post, w, block_rows, &M));
    EXPECT_LT(relative_difference(Eigen::MatrixXd(M.triangularView<Eigen::Upper>()), upper), 1e-13)
        << "block_rows " << block_rows;
  }
  EXPECT_TRUE(internal::gauss_newton_from_layers_pays(post));  // 9 inputs: 55 input pairs with the bias
}

TEST(GaussNewtonFromLayers, UsedWithOneOutputOnlyWhereTheLayersBlockIsLarge) {
  // With one output: a hidden layer with 8 or more inputs (45 input pairs with the bias), one hidden
  // layer; with several outputs always.
  const auto pays = [](std::unique_ptr<Network> net, std::unique_ptr<Likelihood> likelihood) {
    const Index D = net->num_inputs();
    Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
    const Posterior post(std::move(net), std::move(likelihood), std::move(prior), Eigen::MatrixXd::Zero(3, D),
                         Eigen::MatrixXd::Zero(3, 1));
    return internal::gauss_newton_from_layers_pays(post);
  };
  const auto gaussian = [] { return std::make_unique<GaussianLikelihood>(1.0); };
  EXPECT_TRUE(pays(std::make_unique<Mlp>(16, std::vector<Index>{50}, Activation::kTanh), gaussian()));
  EXPECT_TRUE(pays(std::make_unique<Mlp>(8, std::vector<Index>{50}, Activation::kTanh), gaussian()));
  EXPECT_FALSE(pays(std::make_unique<Mlp>(7, std::vector<Index>{50}, Activation::kTanh), gaussian()));
  EXPECT_FALSE(pays(std::make_unique<Mlp>(16, std::vector<Index>{50, 50}, Activation::kTanh), gaussian()));
  EXPECT_FALSE(pays(std::make_unique<Linear>(16, 1, true), gaussian()));
  EXPECT_TRUE(pays(std::make_unique<Mlp>(4, std::vector<Index>{5}, Activation::kTanh, 3),
                   std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"})));
}

TEST(LayeredJacobian, NotForAPriorWhoseGroupsCutAcrossALayersColumns) {
  // A laplacian prior is not group-diagonal; a prior with one group per weight cuts every column.
  const Case c = make_case("gaussian", "groups", {4}, 6, 2);
  EXPECT_TRUE(internal::layered_jacobian_applies(*c.posterior));
  const Network& net = c.posterior->network();
  std::vector<ParamGroup> groups;
  for (Index i = 0; i < net.num_params(); ++i) groups.push_back({std::string("w").append(std::to_string(i)), {{i, 1}}});
  Prior per_weight(net.num_params(), groups, Eigen::VectorXd::Ones(net.num_params()));
  const Posterior cut(net.clone(), std::make_unique<GaussianLikelihood>(1.0), per_weight, c.posterior->X(),
                      c.posterior->Y());
  EXPECT_FALSE(internal::layered_jacobian_applies(cut));
  const auto Z = internal::make_weighted_jacobian(cut, c.w, true);
  ASSERT_TRUE(Z);
  EXPECT_FALSE(Z->layered());
  internal::Curvature curvature(cut, c.w, {.form = CurvatureForm::kWoodbury});
  EXPECT_FALSE(curvature.layered());
  ASSERT_TRUE(curvature.factor(0.0));
  const Eigen::MatrixXd A = testing::reference_precision(cut, c.w);
  const double log_det = 2.0 * Eigen::LLT<Eigen::MatrixXd>(A).matrixL().toDenseMatrix().diagonal().array().log().sum();
  EXPECT_NEAR(curvature.log_det(), log_det, 1e-10 * std::abs(log_det));
}

}  // namespace
}  // namespace occam

namespace occam {
namespace {

TEST(LayeredJacobian, TheEvidenceGradientsTraceTermEqualsTheOneFromTheInverseTimesTheJacobian) {
  // finish_total_gradient: tr(A⁻¹ dA[u]) from the rows' Gram matrices against A⁻¹Jᵀ formed, for the
  // same directions u (random here: the algebra does not need w at a mode).
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Posterior& post = *c.posterior;
    internal::Curvature curvature(post, c.w, {.form = CurvatureForm::kWoodbury});
    ASSERT_TRUE(curvature.layered());
    ASSERT_TRUE(curvature.factor(0.0));
    const Eigen::VectorXd gamma = curvature.well_determined();
    const Index num_hyper = post.prior().num_hyperparameters() + (post.likelihood().has_precision() ? 1 : 0);
    Rng rng(9);
    Eigen::MatrixXd U(post.dim(), num_hyper);
    for (Index k = 0; k < num_hyper; ++k) U.col(k) = rng.normal_vector(post.dim());
    const evidence::InverseCurvature solve_A = [&](const Eigen::MatrixXd& R) -> Eigen::MatrixXd {
      return curvature.solve_matrix(R);
    };
    const evidence::TotalGradient explicit_form = evidence::finish_total_gradient(post, c.w, gamma, solve_A, U);
    const evidence::TotalGradient gram_form = evidence::finish_total_gradient(post, c.w, gamma, solve_A, U, &curvature);
    // Both difference J along u with the same step: agreement to the rounding of the differences.
    EXPECT_LT(relative_difference(gram_form.gradient, explicit_form.gradient), 1e-8);
  }
}

TEST(DenseInverseJacobianBlocks, TheEvidenceGradientsTraceTermEqualsTheOneFromTheInverseTimesTheJacobian) {
  // The dense form of a layered network with several outputs: tr(A⁻¹ dA[u]) from A⁻¹ and the
  // layers' factors against A⁻¹Jᵀ by triangular solves, in blocks of 4 rows and in one block; for
  // K = 1 the dense form declines (the solves cost no more there).
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Posterior& post = *c.posterior;
    const Index num_hyper = post.prior().num_hyperparameters() + (post.likelihood().has_precision() ? 1 : 0);
    Rng rng(9);
    Eigen::MatrixXd U(post.dim(), num_hyper);
    for (Index k = 0; k < num_hyper; ++k) U.col(k) = rng.normal_vector(post.dim());
    for (const Index block_rows : {Index{2048}, Index{4}}) {
      internal::Curvature curvature(post, c.w, {.form = CurvatureForm::kDense, .block_rows = block_rows});
      ASSERT_TRUE(curvature.factor(0.0));
      Eigen::MatrixXd C;
      std::vector<Eigen::MatrixXd> E;
      const bool several_outputs = post.network().num_outputs() > 1;
      ASSERT_EQ(curvature.inverse_jacobian_blocks(c.w, U, 1e-5, &C, &E), several_outputs);
      if (!several_outputs) continue;
      const Eigen::VectorXd gamma = curvature.well_determined();
      const evidence::InverseCurvature solve_A = [&](const Eigen::MatrixXd& R) -> Eigen::MatrixXd {
        return curvature.solve_matrix(R);
      };
      const evidence::TotalGradient explicit_form = evidence::finish_total_gradient(post, c.w, gamma, solve_A, U);
      const evidence::TotalGradient layered_form =
          evidence::finish_total_gradient(post, c.w, gamma, solve_A, U, &curvature);
      EXPECT_LT(relative_difference(layered_form.gradient, explicit_form.gradient), 1e-8)
          << "block_rows " << block_rows;
    }
  }
}

}  // namespace
}  // namespace occam

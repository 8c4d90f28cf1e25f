// The curvature kernels (src/inference/curvature/curvature.h) against the straightforward dense computation written
// here: H = Σ_{k,l} J_kᵀ diag(Λ_kl) J_l from the full Jacobian, A = (β/β₀)H + P + μI formed in
// full, and its Cholesky factor; for every likelihood family, several priors, m < W and m ≥ W,
// and both forms.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "inference/curvature/curvature.h"
#include "inference/evidence/exact_hessian.h"
#include "model/output_hessian.h"
#include "occam/io.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "testing/finite_difference.h"
#include "testing/gauss_newton.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using internal::Curvature;
using internal::CurvatureOptions;

double relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).norm() / std::max(b.norm(), 1e-300);
}

struct Problem {
  std::string name;
  std::unique_ptr<Posterior> posterior;
  Eigen::VectorXd w;
};

// Targets of each family from a seeded stream; X ~ N(0, I).
Eigen::MatrixXd targets(const std::string& family, Index m, Rng& rng) {
  Eigen::MatrixXd Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    if (family == "gaussian" || family == "hetero") Y(n, 0) = rng.normal();
    if (family == "bernoulli") Y(n, 0) = rng.uniform() < 0.4 ? 1.0 : 0.0;
    if (family == "poisson") Y(n, 0) = static_cast<double>(rng.uniform_int(4));
    if (family == "categorical") Y(n, 0) = static_cast<double>(rng.uniform_int(3));
  }
  return Y;
}

std::unique_ptr<Likelihood> likelihood_of(const std::string& family) {
  if (family == "gaussian") return std::make_unique<GaussianLikelihood>(3.5);
  if (family == "bernoulli") return std::make_unique<BernoulliLikelihood>();
  if (family == "poisson") return std::make_unique<PoissonLikelihood>();
  if (family == "categorical") return std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"});
  return std::make_unique<HeteroscedasticLikelihood>();
}

// A network of 4 inputs with `hidden` tanh units (or a Linear model when hidden = 0) on m rows;
// prior: ridge | groups | ard | laplacian, with distinct α per group so that a mix-up shows.
Problem make_problem(const std::string& family, const std::string& prior_kind, Index hidden, Index m,
                     std::uint64_t seed) {
  Rng rng(seed);
  const Index D = 4;
  const Index K = family == "categorical" ? 3 : family == "hetero" ? 2 : 1;
  std::unique_ptr<Network> net;
  if (hidden == 0)
    net = std::make_unique<Linear>(D, K, true);
  else
    net = std::make_unique<Mlp>(D, std::vector<Index>{hidden}, Activation::kTanh, K);
  PriorSpec spec;
  spec.kind = parse_prior_kind(prior_kind);
  if (spec.kind == PriorKind::kLaplacian) spec.graph = chain_graph(D);
  Prior prior = make_prior(*net, spec);
  Eigen::VectorXd theta = prior.hyperparameters();
  for (Index j = 0; j < theta.size(); ++j) theta[j] = 0.3 + 0.7 * static_cast<double>(j);
  prior.set_hyperparameters(theta);
  Eigen::MatrixXd X(m, D);
  for (Index n = 0; n < m; ++n)
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
  Problem p;
  p.name = family + "/" + prior_kind + "/H" + std::to_string(hidden) + "/m" + std::to_string(m);
  p.w = 0.5 * net->initial_params(rng);
  p.posterior =
      std::make_unique<Posterior>(std::move(net), likelihood_of(family), std::move(prior), X, targets(family, m, rng));
  return p;
}

using testing::reference_precision;

void expect_matches_reference(const Problem& p, CurvatureForm form) {
  SCOPED_TRACE(p.name + (form == CurvatureForm::kDense ? " dense" : " woodbury"));
  const Posterior& post = *p.posterior;
  const Index W = post.dim();
  Curvature c(post, p.w, {.form = form});
  ASSERT_EQ(c.form(), form);
  Rng rng(7);
  const Eigen::VectorXd r = rng.normal_vector(W);
  Eigen::MatrixXd G(W, 3);
  for (Index j = 0; j < 3; ++j) G.col(j) = rng.normal_vector(W);
  // Two dampings and, for the Gaussian, a changed β at the same formation: nothing is re-formed.
  for (double mu : {0.0, 0.37}) {
    const double beta0 = post.likelihood().has_precision() ? post.likelihood().precision() : 1.0;
    for (double beta : {beta0, 2.0 * beta0}) {
      if (!post.likelihood().has_precision() && beta != beta0) continue;
      SCOPED_TRACE("mu " + std::to_string(mu) + " beta " + std::to_string(beta));
      ASSERT_TRUE(c.factor(post.prior().hyperparameters(), beta, mu));
      const Eigen::MatrixXd A = reference_precision(post, p.w, beta / beta0, mu);
      const Eigen::LLT<Eigen::MatrixXd> llt(A);
      ASSERT_EQ(llt.info(), Eigen::Success);
      const Eigen::MatrixXd Ainv = llt.solve(Eigen::MatrixXd::Identity(W, W));
      const double log_det = 2.0 * llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
      EXPECT_NEAR(c.log_det(), log_det, 1e-10 * std::abs(log_det));
      EXPECT_LT(relative_difference(c.solve(r), llt.solve(r)), 1e-10);
      EXPECT_LT(relative_difference(c.solve_matrix(G), llt.solve(G)), 1e-10);
      // Without the refinement step: A⁻¹r to within the conditioning of the capacitance matrix.
      EXPECT_LT(relative_difference(c.precondition(r), llt.solve(r)), 1e-8);
      const Eigen::VectorXd s = G.col(0);
      EXPECT_NEAR(s.dot(c.precondition(r)), r.dot(c.precondition(s)), 1e-10 * std::abs(s.dot(c.precondition(r))));
      EXPECT_NEAR(c.squared_norm(r), r.dot(A * r), 1e-10 * r.dot(A * r));
      EXPECT_LT(relative_difference(c.inverse_diagonal(), Ainv.diagonal()), 1e-10);
      EXPECT_LT(relative_difference(c.quadratic_forms(G), (G.transpose() * Ainv * G).diagonal()), 1e-10);
      EXPECT_LT(relative_difference(c.covariance(), Ainv), 1e-10);
      Prior prior = post.prior();
      EXPECT_LT(relative_difference(c.group_traces(), prior.group_traces(Ainv.diagonal())), 1e-10);
      EXPECT_LT(relative_difference(c.well_determined(), prior.well_determined(Ainv)), 1e-9);
      if (mu == 0.0) {
        const LaplaceApproximation q = c.laplace(p.w);
        EXPECT_NEAR(q.log_det_precision(), log_det, 1e-10 * std::abs(log_det));
        EXPECT_LT(relative_difference(q.covariance_diagonal(), Ainv.diagonal()), 1e-10);
      }
    }
  }
}

TEST(Curvature, EveryFamilyAndPriorMatchesTheDenseComputation) {
  // m·K < W (a network of 12 hidden units, W = 61–90, on 9–20 rows) and m·K ≥ W (a GLM on 40 rows).
  int cases = 0;
  for (const std::string family : {"gaussian", "bernoulli", "poisson", "categorical", "hetero"}) {
    for (const std::string prior : {"ridge", "groups", "ard", "laplacian"}) {
      for (const auto& [hidden, m] : std::vector<std::pair<Index, Index>>{{12, 9}, {12, 20}, {0, 40}}) {
        const Problem p = make_problem(family, prior, hidden, m, 100 + cases);
        expect_matches_reference(p, CurvatureForm::kDense);
        const Index n = m * p.posterior->network().num_outputs();
        if (prior != "laplacian") expect_matches_reference(p, CurvatureForm::kWoodbury);
        ++cases;
        (void)n;
      }
    }
  }
  EXPECT_EQ(cases, 60);
}

TEST(Curvature, AutoPicksWoodburyOnlyWhenItApplies) {
  const Problem small = make_problem("gaussian", "groups", 12, 9, 1);      // n = 9 < W = 73
  const Problem large = make_problem("gaussian", "groups", 0, 40, 2);      // n = 40 > W = 5
  const Problem smooth = make_problem("gaussian", "laplacian", 12, 9, 3);  // not group-diagonal
  EXPECT_EQ(Curvature(*small.posterior, small.w).form(), CurvatureForm::kWoodbury);
  EXPECT_EQ(Curvature(*large.posterior, large.w).form(), CurvatureForm::kDense);
  EXPECT_EQ(Curvature(*smooth.posterior, smooth.w).form(), CurvatureForm::kDense);
  EXPECT_EQ(Curvature(*small.posterior, small.w, {.hessian = HessianKind::kExact}).form(), CurvatureForm::kDense);
  EXPECT_THROW(Curvature(*smooth.posterior, smooth.w, {.form = CurvatureForm::kWoodbury}), Error);
}

TEST(Curvature, FactorReadsThePosteriorsCurrentHyperparameters) {
  // factor(μ) must see α and β set on the posterior after formation, without re-forming.
  Problem p = make_problem("gaussian", "groups", 12, 9, 4);
  Posterior& post = *p.posterior;
  for (CurvatureForm form : {CurvatureForm::kDense, CurvatureForm::kWoodbury}) {
    post.prior().set_hyperparameters(Eigen::VectorXd::Constant(post.prior().num_hyperparameters(), 1.0));
    post.likelihood().set_precision(3.5);
    Curvature c(post, p.w, {.form = form});
    Eigen::VectorXd theta(post.prior().num_hyperparameters());
    theta << 0.1, 2.0, 30.0, 0.5;
    post.prior().set_hyperparameters(theta);
    post.likelihood().set_precision(11.0);
    ASSERT_TRUE(c.factor(0.01));
    const Eigen::MatrixXd A = reference_precision(post, p.w, 1.0, 0.01);  // Λ = β = 11 already
    const double log_det = 2.0 * A.llt().matrixL().toDenseMatrix().diagonal().array().log().sum();
    EXPECT_NEAR(c.log_det(), log_det, 1e-10 * std::abs(log_det));
    EXPECT_EQ(c.theta(), theta);
    EXPECT_EQ(c.beta(), 11.0);
  }
}

TEST(Curvature, ExactHessianMatchesLaplace) {
  const Problem p = make_problem("bernoulli", "groups", 6, 30, 5);
  Curvature c(*p.posterior, p.w, {.hessian = HessianKind::kExact});
  ASSERT_TRUE(c.factor(0.0));
  const LaplaceApproximation q = laplace(*p.posterior, p.w, HessianKind::kExact);
  EXPECT_NEAR(c.log_det(), q.log_det_precision(), 1e-10 * std::abs(q.log_det_precision()));
  EXPECT_EQ(c.clipped_eigenvalues(), q.clipped_eigenvalues);
  EXPECT_LT(relative_difference(c.inverse_diagonal(), q.covariance_diagonal()), 1e-10);
}

TEST(Curvature, NoFactorIsAnError) {
  const Problem p = make_problem("gaussian", "ridge", 4, 10, 6);
  Curvature c(*p.posterior, p.w);
  EXPECT_THROW(c.log_det(), Error);
  EXPECT_THROW(c.factor(-1.0), Error);
  EXPECT_FALSE(c.factored());
}

TEST(Curvature, WoodburyLaplaceMatchesTheDenseOneAndRoundTripsExactly) {
  // n = 9 rows, W = 73: the Woodbury factor is the smaller to hold, so laplace() keeps it.
  for (const std::string family : {"gaussian", "bernoulli", "hetero"}) {
    SCOPED_TRACE(family);
    const Problem p = make_problem(family, "groups", 12, 9, 8);
    const Posterior& post = *p.posterior;
    const LaplaceApproximation q = laplace(post, p.w, HessianKind::kGgn);
    ASSERT_EQ(q.form(), CurvatureForm::kWoodbury);
    Curvature dense(post, p.w, {.form = CurvatureForm::kDense});
    ASSERT_TRUE(dense.factor(0.0));
    const LaplaceApproximation d = dense.laplace(p.w);
    ASSERT_EQ(d.form(), CurvatureForm::kDense);
    const Eigen::MatrixXd A = reference_precision(post, p.w, 1.0, 0.0);
    const Eigen::MatrixXd Ainv = A.llt().solve(Eigen::MatrixXd::Identity(A.rows(), A.cols()));
    EXPECT_NEAR(q.log_det_precision(), d.log_det_precision(), 1e-10 * std::abs(d.log_det_precision()));
    EXPECT_LT(relative_difference(q.covariance(), Ainv), 1e-10);
    EXPECT_LT(relative_difference(q.covariance_diagonal(), Ainv.diagonal()), 1e-10);
    EXPECT_LT(relative_difference(q.precision_diagonal(), A.diagonal()), 1e-12);
    Rng rng(9);
    Eigen::MatrixXd G(post.dim(), 4);
    for (Index j = 0; j < 4; ++j) G.col(j) = rng.normal_vector(post.dim());
    EXPECT_LT(relative_difference(q.quadratic_form_inverse(G), d.quadratic_form_inverse(G)), 1e-10);
    // S Sᵀ = A⁻¹ for the factor that sampling and the predictive use.
    const Eigen::MatrixXd St = q.covariance_factor_transpose(Eigen::MatrixXd::Identity(post.dim(), post.dim()));
    EXPECT_LT(relative_difference(St.transpose() * St, Ainv), 1e-10);
    // A saved and loaded approximation is the same to the last bit: samples and variances.
    const LaplaceApproximation loaded = LaplaceApproximation::from_json(nlohmann::json::parse(q.to_json().dump()));
    ASSERT_EQ(loaded.form(), CurvatureForm::kWoodbury);
    Rng a(10), b(10);
    EXPECT_EQ(q.sample(a), loaded.sample(b));
    EXPECT_EQ(q.quadratic_form_inverse(G), loaded.quadratic_form_inverse(G));
    EXPECT_EQ(q.log_det_precision(), loaded.log_det_precision());
  }
}

TEST(Curvature, LargerRowCountsKeepTheDenseLaplaceFactor) {
  // n = 40 rows, W = 73: U (40 × 73) and Q (40 × 40) hold more numbers than L's triangle.
  const Problem p = make_problem("gaussian", "groups", 12, 40, 9);
  EXPECT_EQ(laplace(*p.posterior, p.w, HessianKind::kGgn).form(), CurvatureForm::kDense);
}

TEST(Curvature, AModelFileWithTheWoodburyFactorPredictsIdenticallyAfterLoading) {
  const Problem p = make_problem("gaussian", "groups", 12, 9, 11);
  ModelFile model;
  model.network = p.posterior->network().clone();
  model.likelihood = p.posterior->likelihood().clone();
  model.prior = p.posterior->prior();
  Dataset data;
  data.X = p.posterior->X();
  data.Y = p.posterior->Y();
  model.standardizer = Standardizer::fit(data, Standardize::kBoth);
  model.feature_names = {"a", "b", "c", "d"};
  model.target_name = "y";
  model.posterior = laplace(*p.posterior, p.w, HessianKind::kGgn);
  ASSERT_EQ(std::get<LaplaceApproximation>(model.posterior).form(), CurvatureForm::kWoodbury);
  testing::TempDir dir;
  const std::string path = dir.file("model.json");
  save_model(path, model);
  const ModelFile loaded = load_model(path);
  ASSERT_EQ(std::get<LaplaceApproximation>(loaded.posterior).form(), CurvatureForm::kWoodbury);
  Rng rng(12);
  Eigen::MatrixXd X(7, 4);
  for (Index j = 0; j < 4; ++j) X.col(j) = rng.normal_vector(7);
  for (PredictiveMethod method : {PredictiveMethod::kLinearized, PredictiveMethod::kMonteCarlo}) {
    PredictOptions options;
    options.method = method;
    const Prediction a = predict(model, X, options), b = predict(loaded, X, options);
    EXPECT_EQ(a.mean, b.mean);
    EXPECT_EQ(a.std, b.std);
    EXPECT_EQ(a.lower, b.lower);
    EXPECT_EQ(a.upper, b.upper);
  }
}

// The exact Hessian-vector product of S(w) that the MAP's conjugate gradients use, made from one
// kept forward pass (Network::linearise), equals the product made from the network's separate
// passes (jvp, backward, curvature_vp, each with its own forward pass) to rounding, for every
// likelihood, and the directional derivative of ∇S (central differences) to their accuracy.
TEST(ExactHessianProduct, TheKeptForwardPassGivesTheUncachedProductForEveryLikelihood) {
  for (const std::string family : {"gaussian", "bernoulli", "poisson", "categorical", "hetero"}) {
    for (const Index hidden : {Index{0}, Index{3}}) {
      const Problem p = make_problem(family, "groups", hidden, 13, 7);
      SCOPED_TRACE(p.name);
      const Posterior& post = *p.posterior;
      const Network& net = post.network();
      const evidence::ExactHessian hessian(post, p.w);
      Eigen::MatrixXd F;
      net.forward(p.w, post.X(), &F);
      OutputDerivatives d;
      post.likelihood().neg_log_derivatives(F, post.Y(), &d);
      const Eigen::MatrixXd lambda = post.likelihood().neg_log_hessian(F, post.Y());
      Rng rng(3);
      for (int repeat = 0; repeat < 3; ++repeat) {
        const Eigen::VectorXd v = rng.normal_vector(post.dim());
        Eigen::MatrixXd Jv;
        net.jvp(p.w, post.X(), v, &Jv);
        Eigen::VectorXd gauss_newton, second_order;
        net.backward(p.w, post.X(), internal::apply_output_hessian(lambda, Jv), &gauss_newton);
        net.curvature_vp(p.w, post.X(), d.gradient, v, &second_order);
        const Eigen::VectorXd uncached = gauss_newton + second_order + post.prior().apply_precision(v);
        const Eigen::VectorXd cached = hessian(v);
        EXPECT_LT(relative_difference(cached, uncached), 1e-12);
        const Eigen::VectorXd fd = testing::fd_directional(
            [&](const Eigen::VectorXd& w) {
              double log_p;
              Eigen::VectorXd grad;
              post.evaluate(w, &log_p, &grad);
              return Eigen::VectorXd(-grad);
            },
            p.w, v);
        EXPECT_LT(relative_difference(cached, fd), 1e-6);
      }
    }
  }
}

// The right-hand side of the MAP's geodesic acceleration, JᵀΛ f_vv (trust_region_map.cc), against
// f_vv from central differences of the Jacobian-vector product J(w ± εv)v, for every likelihood;
// and a network linear in its weights says so, since there f_vv = 0.
TEST(ExactHessianProduct, TheOutputAccelerationIsTheSecondDirectionalDerivativePulledBack) {
  for (const std::string family : {"gaussian", "bernoulli", "poisson", "categorical", "hetero"}) {
    const Problem p = make_problem(family, "groups", 3, 13, 7);
    SCOPED_TRACE(p.name);
    const Posterior& post = *p.posterior;
    const Network& net = post.network();
    EXPECT_FALSE(net.linear_in_weights());
    const evidence::ExactHessian hessian(post, p.w);
    Eigen::MatrixXd F;
    net.forward(p.w, post.X(), &F);
    const Eigen::MatrixXd lambda = post.likelihood().neg_log_hessian(F, post.Y());
    Rng rng(5);
    const Eigen::VectorXd v = 0.3 * rng.normal_vector(post.dim());
    const double eps = 1e-5;
    Eigen::MatrixXd Jv_plus, Jv_minus;
    net.jvp(p.w + eps * v, post.X(), v, &Jv_plus);
    net.jvp(p.w - eps * v, post.X(), v, &Jv_minus);
    const Eigen::MatrixXd f_vv = (Jv_plus - Jv_minus) / (2.0 * eps);
    ASSERT_GT(f_vv.norm(), 1e-3);
    Eigen::VectorXd reference;
    net.backward(p.w, post.X(), internal::apply_output_hessian(lambda, f_vv), &reference);
    // The central differences in the product itself (step 1e-3·v here) are second order.
    EXPECT_LT(relative_difference(hessian.pull_output_acceleration(v, 1e-3), reference), 1e-5);
    // A 10% step, as the MAP takes it, is still within a percent.
    EXPECT_LT(relative_difference(hessian.pull_output_acceleration(v, 0.1), reference), 1e-2);
  }
  EXPECT_TRUE(make_problem("gaussian", "groups", 0, 13, 7).posterior->network().linear_in_weights());
}

}  // namespace
}  // namespace occam

// The structured Laplace approximations (laplace.h, HessianStructure; src/inference/laplace/structured/) against the
// full one, formed here from the full Jacobian: each structure equals the full approximation in
// the limit where it must (last-layer on a network without a hidden layer, diag where the
// Gauss–Newton matrix is diagonal), keeps exactly its part of A otherwise, and its evidence loop
// ends at the fixed point of its own log-evidence; the model file keeps it bit for bit.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "inference/evidence/engine.h"
#include "inference/laplace/structured/precision_factors.h"
#include "inference/laplace/structured/structured.h"
#include "occam/evidence.h"
#include "occam/fit.h"
#include "occam/io.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/gauss_newton.h"
#include "testing/temp_dir.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

const HessianStructure kDiag{HessianStructureKind::kDiagonal};
const HessianStructure kLastLayer{HessianStructureKind::kLastLayer};
const HessianStructure kKron{HessianStructureKind::kKronecker};
HessianStructure low_rank(Index K) { return {HessianStructureKind::kLowRank, K}; }

// The full A = JᵀΛJ + P from the full Jacobian: the definition each structure approximates.
Eigen::MatrixXd full_precision(const Posterior& post, const Eigen::VectorXd& w) {
  return testing::reference_precision(post, w);
}

std::unique_ptr<Likelihood> likelihood_of(const std::string& family) {
  if (family == "gaussian") return std::make_unique<GaussianLikelihood>(3.5);
  if (family == "bernoulli") return std::make_unique<BernoulliLikelihood>();
  return std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"});
}

// `hidden` tanh units (none: the output layer is all there is) on 3 inputs, m rows, distinct α
// per group so that a mix-up of groups shows.
struct Problem {
  std::unique_ptr<Posterior> posterior;
  Eigen::VectorXd w;
};
Problem make_problem(const std::string& family, std::vector<Index> hidden, Index m, std::uint64_t seed) {
  Rng rng(seed);
  const Index D = 3, K = family == "categorical" ? 3 : 1;
  auto net = std::make_unique<Mlp>(D, std::move(hidden), Activation::kTanh, K);
  Prior prior = make_prior(*net, PriorSpec{});
  Eigen::VectorXd theta = prior.hyperparameters();
  for (Index j = 0; j < theta.size(); ++j) theta[j] = 0.4 + 0.9 * static_cast<double>(j);
  prior.set_hyperparameters(theta);
  Eigen::MatrixXd X(m, D), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    Y(n, 0) = family == "gaussian"    ? rng.normal()
              : family == "bernoulli" ? (rng.uniform() < 0.4 ? 1.0 : 0.0)
                                      : static_cast<double>(rng.uniform_int(3));
  }
  Problem p;
  p.w = 0.7 * net->initial_params(rng);
  p.posterior = std::make_unique<Posterior>(std::move(net), likelihood_of(family), std::move(prior), X, Y);
  return p;
}

double relative(double a, double b) { return std::abs(a - b) / std::max(1.0, std::abs(b)); }

TEST(StructuredLaplace, ParsesAndNamesEachStructure) {
  for (const char* name : {"full", "diag", "last-layer", "kron", "lowrank:1", "lowrank:20"}) {
    EXPECT_EQ(to_string(parse_hessian_structure(name)), name);
  }
  EXPECT_EQ(parse_hessian_structure("lowrank:20"), low_rank(20));
  for (const char* bad : {"lowrank:0", "lowrank:", "lowrank:x", "lowrank:-3", "lowrank: 5", "lowrank:5x", "lowrank"}) {
    try {
      parse_hessian_structure(bad);
      ADD_FAILURE() << bad << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("lowrank:K (K a positive integer"), std::string::npos) << e.what();
    }
  }
  try {
    parse_hessian_structure("kfac");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hessian_structure"), std::string::npos) << e.what();
  }
}

TEST(StructuredLaplace, LastLayerWithoutHiddenLayerIsTheFullApproximation) {
  // A network with no hidden layer is a GLM: its output layer is every weight, and the last-layer
  // approximation must be the full one — log|A|, the log-evidence, γ, variances and draws.
  for (const std::string family : {"gaussian", "bernoulli", "categorical"}) {
    SCOPED_TRACE(family);
    const Problem p = make_problem(family, {}, 25, 3);
    const LaplaceApproximation full = laplace(*p.posterior, p.w, HessianKind::kGgn);
    const LaplaceApproximation last = laplace(*p.posterior, p.w, HessianKind::kGgn, kLastLayer);
    EXPECT_EQ(last.integrated_dim(), p.posterior->dim());
    EXPECT_LT(relative(last.log_det_precision(), full.log_det_precision()), 1e-11);
    EXPECT_LT(relative(log_evidence(*p.posterior, last), log_evidence(*p.posterior, full)), 1e-12);
    const Eigen::VectorXd gf = well_determined_parameters(p.posterior->prior(), full);
    const Eigen::VectorXd gl = well_determined_parameters(p.posterior->prior(), last);
    EXPECT_LT((gf - gl).norm(), 1e-10 * gf.norm());
    EXPECT_LT((last.covariance() - full.covariance()).norm(), 1e-10 * full.covariance().norm());
    // The linearised predictive variance gᵀA⁻¹g.
    Rng rng(5);
    Eigen::MatrixXd G(p.posterior->dim(), 4);
    for (Index i = 0; i < G.size(); ++i) G.data()[i] = rng.normal();
    const Eigen::VectorXd vf = full.quadratic_form_inverse(G), vl = last.quadratic_form_inverse(G);
    EXPECT_LT((vf - vl).norm(), 1e-10 * vf.norm());
  }
}

TEST(StructuredLaplace, LastLayerKeepsTheOutputBlockOfAAndHoldsTheRest) {
  const Problem p = make_problem("categorical", {4}, 30, 8);
  const Posterior& post = *p.posterior;
  const LaplaceApproximation q = laplace(post, p.w, HessianKind::kGgn, kLastLayer);
  const Index K = 3, H = 4, size = K * H + K, first = post.dim() - size;
  ASSERT_EQ(q.integrated_dim(), size);
  ASSERT_NE(q.precision_as<internal::LastLayerPrecision>(), nullptr);
  EXPECT_EQ(q.precision_as<internal::LastLayerPrecision>()->integrated().front(), first);
  const Eigen::MatrixXd A_LL = full_precision(post, p.w).bottomRightCorner(size, size);
  const Eigen::MatrixXd L = q.precision_as<internal::LastLayerPrecision>()->cholesky();
  EXPECT_LT((L * L.transpose() - A_LL).norm(), 1e-12 * A_LL.norm());
  const Eigen::LLT<Eigen::MatrixXd> llt(A_LL);
  const double log_det = 2.0 * Eigen::MatrixXd(llt.matrixL()).diagonal().array().log().sum();
  EXPECT_NEAR(q.log_det_precision(), log_det, 1e-11 * std::abs(log_det));
  // log Z = log p(D, w*) + (p/2) log 2π − ½ log|A_LL|: the held weights' prior density stays in.
  double log_joint;
  ASSERT_TRUE(post.evaluate(p.w, &log_joint, nullptr));
  EXPECT_NEAR(log_evidence(post, q), log_joint + 0.5 * size * std::log(2.0 * std::numbers::pi) - 0.5 * log_det, 1e-9);
  // Zero variance for the held weights, A_LL⁻¹'s for the others; draws move only the output layer.
  const Eigen::VectorXd var = q.covariance_diagonal();
  EXPECT_EQ(var.head(first).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LT((var.tail(size) - Eigen::MatrixXd(A_LL.inverse()).diagonal()).norm(), 1e-10 * var.tail(size).norm());
  Rng rng(2);
  const Eigen::VectorXd draw = q.sample(rng);
  EXPECT_TRUE(testing::bitwise_equal(Eigen::VectorXd(draw.head(first)), Eigen::VectorXd(p.w.head(first))));
  EXPECT_GT((draw.tail(size) - p.w.tail(size)).norm(), 0.0);
  // γ: the held weights count in full (W_g − α_g·0).
  const Eigen::VectorXd gamma = well_determined_parameters(post.prior(), q);
  const Eigen::VectorXd sizes = post.prior().group_sizes();
  EXPECT_EQ(gamma[0], sizes[0]);  // input weights
  EXPECT_EQ(gamma[1], sizes[1]);  // hidden biases
  EXPECT_LT(gamma[2], sizes[2]);  // output weights
}

TEST(StructuredLaplace, DiagonalKeepsTheDiagonalOfTheFullPrecision) {
  for (const std::string family : {"gaussian", "categorical"}) {
    SCOPED_TRACE(family);
    const Problem p = make_problem(family, {5}, 40, 11);
    const LaplaceApproximation q = laplace(*p.posterior, p.w, HessianKind::kGgn, kDiag);
    const Eigen::VectorXd reference = full_precision(*p.posterior, p.w).diagonal();
    ASSERT_NE(q.precision_as<internal::DiagonalPrecision>(), nullptr);
    EXPECT_LT((q.precision_as<internal::DiagonalPrecision>()->diagonal() - reference).norm(), 1e-12 * reference.norm());
    EXPECT_NEAR(q.log_det_precision(), reference.array().log().sum(), 1e-11 * std::abs(q.log_det_precision()));
    EXPECT_LT((q.covariance_diagonal() - reference.cwiseInverse()).norm(), 1e-12 * reference.cwiseInverse().norm());
  }
}

TEST(StructuredLaplace, DiagonalEqualsFullWhereTheGaussNewtonMatrixIsDiagonal) {
  // A linear-Gaussian model without intercept on orthogonal input columns: JᵀJ = XᵀX is diagonal,
  // so A = βXᵀX + P is, and diag is exact: the log-evidence, γ and the predictive variances agree.
  const Index m = 12, D = 3;
  Eigen::MatrixXd X = Eigen::MatrixXd::Zero(m, D), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    X(n, n % D) = 0.5 + 0.25 * static_cast<double>(n);  // disjoint supports: orthogonal columns
    Y(n, 0) = std::sin(static_cast<double>(n));
  }
  auto net = std::make_unique<Linear>(D, 1, /*intercept=*/false);
  Prior prior = make_prior(*net, PriorSpec{});
  Posterior post(std::move(net), std::make_unique<GaussianLikelihood>(2.0), prior, X, Y);
  const Eigen::VectorXd w = Eigen::Vector3d(0.3, -0.2, 0.1);
  const LaplaceApproximation full = laplace(post, w, HessianKind::kGgn);
  const LaplaceApproximation diag = laplace(post, w, HessianKind::kGgn, kDiag);
  EXPECT_LT(relative(log_evidence(post, diag), log_evidence(post, full)), 1e-13);
  const Eigen::VectorXd gf = well_determined_parameters(post.prior(), full);
  EXPECT_LT((well_determined_parameters(post.prior(), diag) - gf).norm(), 1e-12 * gf.norm());
  Eigen::MatrixXd G(D, 2);
  G << 1.0, -0.5, 2.0, 0.25, -1.0, 3.0;
  EXPECT_LT((diag.quadratic_form_inverse(G) - full.quadratic_form_inverse(G)).norm(),
            1e-12 * full.quadratic_form_inverse(G).norm());
  // And on a correlated design it is not: the check can fail.
  X(0, 1) = 1.0;
  Posterior correlated(std::make_unique<Linear>(D, 1, false), std::make_unique<GaussianLikelihood>(2.0), prior, X, Y);
  EXPECT_GT(relative(log_evidence(correlated, laplace(correlated, w, HessianKind::kGgn, kDiag)),
                     log_evidence(correlated, laplace(correlated, w, HessianKind::kGgn))),
            1e-6);
}

TEST(StructuredLaplace, MonteCarloDrawsHaveTheStructuresCovariance) {
  // Draws of N(w*, A⁻¹) by the structure: the sample covariance of a linear functional cᵀw matches
  // cᵀA⁻¹c within its Monte Carlo standard error (variance of a sample variance: 2σ⁴/(n − 1)).
  const Problem p = make_problem("gaussian", {3}, 30, 4);
  for (const HessianStructure& s : {kDiag, kLastLayer, kKron, low_rank(4)}) {
    SCOPED_TRACE(to_string(s));
    const LaplaceApproximation q = laplace(*p.posterior, p.w, HessianKind::kGgn, s);
    const Index W = q.dim();
    const Eigen::VectorXd c = Eigen::VectorXd::LinSpaced(W, -1.0, 1.0);
    const double sigma2 = q.quadratic_form_inverse(c)[0];
    Rng rng(17);
    const int n = 4000;
    double sum = 0.0, sum2 = 0.0;
    for (int i = 0; i < n; ++i) {
      const double x = c.dot(q.sample(rng) - q.mean);
      sum += x;
      sum2 += x * x;
    }
    const double var = (sum2 - sum * sum / n) / (n - 1);
    EXPECT_NEAR(var, sigma2, 4.0 * sigma2 * std::sqrt(2.0 / (n - 1)));
  }
}

// The evidence loop with a structure ends at the fixed point of that structure's own
// log-evidence: γ_g = W_g − α_g tr_g(A⁻¹) and α_g = γ_g/2E_W,g, β = (m − γ_β)/2E_D hold, and the
// reported gradient is the derivative of log Z_structure in log θ at fixed w (finite differences).
TEST(StructuredLaplace, EvidenceLoopEndsAtTheStructuresFixedPoint) {
  const auto d = testing::gap_data(40, 0.1, 2);
  for (const HessianStructure& s : {kDiag, kLastLayer, kKron, low_rank(3)}) {
    SCOPED_TRACE(to_string(s));
    auto net = std::make_unique<Mlp>(1, std::vector<Index>{4}, Activation::kTanh, 1);
    Rng rng(3);
    Eigen::VectorXd w = net->initial_params(rng);
    Prior prior = make_prior(*net, PriorSpec{});
    Posterior post(std::move(net), std::make_unique<GaussianLikelihood>(10.0), prior, d.X, d.Y);
    EvidenceOptions options;
    options.structure = s;
    options.map.gradient_tolerance = 1e-9;
    options.hyper_gradient_tolerance = 1e-6;
    options.tolerance = 0.0;
    options.halved_step_gain = 0.0;
    options.max_outer_iterations = 500;
    const EvidenceResult r = fit_evidence(&post, options, &w);
    ASSERT_EQ(r.summary.termination, Termination::kConverged) << r.summary.message;
    EXPECT_EQ(r.summary.loop, EvidenceLoop::kOuter);
    EXPECT_EQ(r.summary.hessian_structure, s);
    EXPECT_EQ(r.laplace.structure(), s);
    const LaplaceApproximation& q = r.laplace;
    const Eigen::VectorXd alpha = post.prior().alpha();
    const Eigen::VectorXd E_W = post.prior().energies(w);
    const Eigen::VectorXd tr = post.prior().group_traces(q.covariance_diagonal());
    const Eigen::VectorXd gamma = post.prior().group_sizes() - alpha.cwiseProduct(tr);
    EXPECT_LT((gamma - r.summary.gamma).norm(), 1e-10 * gamma.norm());
    // A group the evidence prunes (E_W,g → 0) ends at the bound 1e10, named in at_bound.
    const std::vector<std::string> names = evidence::all_hyperparameter_names(post);
    auto at_bound = [&](Index j) {
      return std::find(r.summary.at_bound.begin(), r.summary.at_bound.end(), names[static_cast<std::size_t>(j)]) !=
             r.summary.at_bound.end();
    };
    for (Index g = 0; g < alpha.size(); ++g) {
      if (at_bound(g)) {
        EXPECT_EQ(alpha[g], evidence::kMaxHyper);
        continue;
      }
      EXPECT_NEAR(alpha[g], gamma[g] / (2.0 * E_W[g]), 1e-4 * alpha[g]) << g;
    }
    const double held = static_cast<double>(q.dim() - q.integrated_dim());
    const double beta = post.likelihood().precision();
    EXPECT_NEAR(beta, (40.0 - (gamma.sum() - held)) / (2.0 * r.summary.E_D), 1e-4 * beta);
    // d log Z_structure / d log θ at fixed w, by central differences of the structure's log-evidence.
    const Eigen::VectorXd theta = evidence::all_hyperparameters(post);
    ASSERT_EQ(r.summary.hyper_gradient.size(), theta.size());
    // log Z_structure at θ·e^step (entry j), w held; and the mode-held gradient there.
    auto log_z = [&](const Eigen::VectorXd& at, Index j, double step) {
      Eigen::VectorXd t = at;
      t[j] *= std::exp(step);
      evidence::set_all_hyperparameters(&post, t);
      const double value = log_evidence(post, laplace(post, w, HessianKind::kGgn, s));
      evidence::set_all_hyperparameters(&post, theta);
      return value;
    };
    auto gradient = [&](const Eigen::VectorXd& at) {
      evidence::set_all_hyperparameters(&post, at);
      const LaplaceApproximation qa = laplace(post, w, HessianKind::kGgn, s);
      const Eigen::VectorXd g = evidence::mode_held_gradient(post, w, well_determined_parameters(post.prior(), qa),
                                                             evidence::held_weights(qa));
      evidence::set_all_hyperparameters(&post, theta);
      return g;
    };
    const double h = 1e-4;
    for (Index j = 0; j < theta.size(); ++j) {
      EXPECT_NEAR((log_z(theta, j, h) - log_z(theta, j, -h)) / (2.0 * h), r.summary.hyper_gradient[j], 1e-5) << j;
      if (at_bound(j)) continue;
      // Away from the fixed point, where the gradient is not zero: θ_j doubled.
      Eigen::VectorXd shifted = theta;
      shifted[j] *= 2.0;
      const double g = gradient(shifted)[j];
      EXPECT_GT(std::abs(g), 1e-3) << j;
      EXPECT_NEAR((log_z(shifted, j, h) - log_z(shifted, j, -h)) / (2.0 * h), g, 1e-6 * std::max(1.0, std::abs(g)))
          << j;
    }
  }
}

TEST(StructuredLaplace, ModelFileRoundTripPredictsBitIdentically) {
  const auto d = testing::gap_data(30, 0.1, 2);
  Dataset data;
  data.X = d.X;
  data.Y = d.Y;
  data.feature_names = {"x1"};
  data.target_name = "y";
  ModelSpec spec;
  spec.network.hidden = {3};
  const Eigen::MatrixXd X = Eigen::VectorXd::LinSpaced(7, -1.0, 1.0);
  for (const HessianStructure& s : {kDiag, kLastLayer, kKron, low_rank(4)}) {
    SCOPED_TRACE(to_string(s));
    LaplaceMethod method;
    method.evidence.structure = s;
    const FittedModel m = fit(spec, data, method);
    ASSERT_NE(m.summary.termination, Termination::kFailure) << m.summary.message;
    testing::TempDir dir;
    save_model(dir.file("model.json"), m);
    const FittedModel loaded = load_model(dir.file("model.json"));
    const auto* q = std::get_if<LaplaceApproximation>(&loaded.posterior);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->structure(), s);
    for (PredictiveMethod how : {PredictiveMethod::kLinearized, PredictiveMethod::kMonteCarlo}) {
      PredictOptions options;
      options.method = how;
      options.samples = 200;
      const Prediction a = m.predict(X, options), b = loaded.predict(X, options);
      EXPECT_TRUE(testing::bitwise_equal(a.mean, b.mean));
      EXPECT_TRUE(testing::bitwise_equal(a.std, b.std));
      EXPECT_TRUE((a.std.array() > 0.0).all());
    }
  }
}

TEST(StructuredLaplace, KroneckerFactorsMatchTheirDefinition) {
  // Q = Σ_n a_n a_nᵀ and G = (1/m) Σ_n Σ_k g_nk g_nkᵀ by brute force from the per-row Jacobian:
  // ∂f_k/∂b_l = g (the pre-activation gradient), ∂f_k/∂W_l(i, j) = g_i a_j, weighted by Λ^½
  // (softmax: Λ_n = diag(p) − ppᵀ, factored here by its eigendecomposition).
  const Problem p = make_problem("categorical", {4, 3}, 20, 6);
  const Posterior& post = *p.posterior;
  const Index m = 20, K = 3;
  Eigen::MatrixXd F, J;
  OutputDerivatives d;
  post.network().forward(p.w, post.X(), &F);
  post.likelihood().neg_log_derivatives(F, post.Y(), &d);
  post.network().jacobian(p.w, post.X(), &J);
  const std::vector<internal::KroneckerFactors> factors = internal::kronecker_factors(post, p.w);
  const std::vector<Index> sizes = {3, 4, 3, 3};
  Index offset = 0;
  ASSERT_EQ(factors.size(), 3u);
  for (std::size_t l = 0; l < 3; ++l) {
    const Index in = sizes[l], out = sizes[l + 1], bias = offset + in * out;
    Eigen::MatrixXd Q = Eigen::MatrixXd::Zero(in, in), G = Eigen::MatrixXd::Zero(out, out);
    for (Index n = 0; n < m; ++n) {
      Eigen::MatrixXd Ln(K, K);
      for (Index k = 0; k < K; ++k)
        for (Index c = 0; c < K; ++c) Ln(k, c) = d.hessian(n, k + c * K);
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Ln);
      const Eigen::MatrixXd R =
          eig.eigenvalues().cwiseMax(0.0).cwiseSqrt().asDiagonal() * eig.eigenvectors().transpose();
      // Rows of Λ_n^½ J_n: the Jacobian rows of output k at example n are J.row(k·m + n).
      Eigen::MatrixXd Jn(K, J.cols());
      for (Index k = 0; k < K; ++k) Jn.row(k) = J.row(k * m + n);
      const Eigen::MatrixXd Zn = R * Jn;
      for (Index k = 0; k < K; ++k) G += Zn.row(k).segment(bias, out).transpose() * Zn.row(k).segment(bias, out) / m;
      // a_n from the unweighted Jacobian of output 0: a_j = ∂f/∂W(i, j) / ∂f/∂b(i) at the i with largest |g_i|.
      Index i;
      Jn.row(0).segment(bias, out).cwiseAbs().maxCoeff(&i);
      Eigen::VectorXd a(in);
      for (Index j = 0; j < in; ++j) a[j] = Jn(0, offset + j * out + i) / Jn(0, bias + i);
      Q += a * a.transpose();
    }
    EXPECT_EQ(factors[l].weight_offset, offset);
    EXPECT_EQ(factors[l].bias_offset, bias);
    EXPECT_LT((factors[l].Q - Q).norm(), 1e-9 * Q.norm()) << l;
    EXPECT_LT((factors[l].G - G).norm(), 1e-10 * G.norm()) << l;
    offset = bias + out;
  }
}

TEST(StructuredLaplace, KroneckerEqualsFullWhereItIsExact) {
  // One layer, one Gaussian output: every g_n is √β, so G = β and the weight block Σ_n (a_n a_nᵀ)·β
  // is Q ⊗ G exactly; with centred inputs the weight–bias cross term β Σ_n a_n vanishes, so A is
  // block-diagonal as KFAC assumes and kron is the full approximation.
  Problem p = make_problem("gaussian", {}, 15, 9);
  Eigen::MatrixXd X = p.posterior->X();
  X.rowwise() -= X.colwise().mean();
  Posterior post(p.posterior->network().clone(), std::make_unique<GaussianLikelihood>(3.5), p.posterior->prior(), X,
                 p.posterior->Y());
  const LaplaceApproximation full = laplace(post, p.w, HessianKind::kGgn);
  const LaplaceApproximation kron = laplace(post, p.w, HessianKind::kGgn, kKron);
  EXPECT_LT(relative(log_evidence(post, kron), log_evidence(post, full)), 1e-12);
  EXPECT_LT((kron.covariance() - full.covariance()).norm(), 1e-10 * full.covariance().norm());
  EXPECT_LT((kron.precision_diagonal() - full.precision_diagonal()).norm(), 1e-10 * full.precision_diagonal().norm());
  const Eigen::VectorXd gf = well_determined_parameters(post.prior(), full);
  EXPECT_LT((well_determined_parameters(post.prior(), kron) - gf).norm(), 1e-10 * gf.norm());
  // Uncentred inputs: the cross term is back, and kron is no longer exact.
  const LaplaceApproximation off = laplace(*p.posterior, p.w, HessianKind::kGgn, kKron);
  EXPECT_GT(relative(log_evidence(*p.posterior, off),
                     log_evidence(*p.posterior, laplace(*p.posterior, p.w, HessianKind::kGgn))),
            1e-6);
}

// Every type of factor answers the same questions consistently with its own covariance A⁻¹ (from
// SᵀI): A⁻¹R, diag(A⁻¹), gᵀA⁻¹g and the mean and covariance of its draws; and it survives its JSON
// bit for bit. Dense and Woodbury (full H of 40 and of 6 rows), diagonal, last-layer, kron, lowrank.
TEST(StructuredLaplace, EveryFactorTypeAgreesWithItsCovariance) {
  const Problem big = make_problem("gaussian", {4}, 40, 21), few = make_problem("gaussian", {4}, 6, 22);
  struct Case {
    const Problem* problem;
    HessianStructure structure;
    CurvatureForm form;
  };
  const HessianStructure kFull{HessianStructureKind::kFull};
  for (const Case& c : {Case{&big, kFull, CurvatureForm::kDense}, Case{&few, kFull, CurvatureForm::kWoodbury},
                        Case{&big, kDiag, CurvatureForm::kDense}, Case{&big, kLastLayer, CurvatureForm::kDense},
                        Case{&big, kKron, CurvatureForm::kDense}, Case{&big, low_rank(5), CurvatureForm::kWoodbury}}) {
    SCOPED_TRACE(to_string(c.structure));
    const LaplaceApproximation q = laplace(*c.problem->posterior, c.problem->w, HessianKind::kGgn, c.structure);
    EXPECT_EQ(q.structure(), c.structure);
    EXPECT_EQ(q.form(), c.form);
    const Index W = q.dim();
    const Eigen::MatrixXd S_t = q.covariance_factor_transpose(Eigen::MatrixXd::Identity(W, W));
    const Eigen::MatrixXd cov = S_t.transpose() * S_t;
    Rng rng(5);
    Eigen::MatrixXd R(W, 3);
    for (Index i = 0; i < R.size(); ++i) R.data()[i] = rng.normal();
    EXPECT_LT((q.covariance_times(R) - cov * R).norm(), 1e-12 * (cov * R).norm());
    EXPECT_LT((q.covariance_diagonal() - cov.diagonal()).norm(), 1e-12 * cov.diagonal().norm());
    const Eigen::VectorXd quadratic = (R.transpose() * cov * R).diagonal();
    EXPECT_LT((q.quadratic_form_inverse(R) - quadratic).norm(), 1e-12 * quadratic.norm());
    // A draw is w_MAP + Sz with S = (SᵀI)ᵀ and z the stream's next integrated_dim() normals, exactly.
    {
      Rng a(7), b(7);
      const Eigen::VectorXd x = q.sample(a) - q.mean;
      const Eigen::VectorXd Sz = S_t.transpose() * b.normal_vector(q.integrated_dim());
      EXPECT_LT((x - Sz).norm(), 1e-12 * Sz.norm());
    }
    // 20,000 draws: each entry of their covariance within 6 standard errors of A⁻¹'s
    // (Var of a sample covariance (x_i x_j) ≤ (σ_ii σ_jj + σ_ij²)/n).
    const int n = 20000;
    Eigen::MatrixXd second = Eigen::MatrixXd::Zero(W, W);
    Eigen::VectorXd first = Eigen::VectorXd::Zero(W);
    for (int k = 0; k < n; ++k) {
      const Eigen::VectorXd x = q.sample(rng) - q.mean;
      first += x;
      second.noalias() += x * x.transpose();
    }
    for (Index i = 0; i < W; ++i) {
      EXPECT_LE(std::abs(first[i] / n), 6.0 * std::sqrt(cov(i, i) / n) + 1e-300) << "mean of weight " << i;
      for (Index j = 0; j < W; ++j) {
        const double se = std::sqrt((cov(i, i) * cov(j, j) + cov(i, j) * cov(i, j)) / n);
        EXPECT_LE(std::abs(second(i, j) / n - cov(i, j)), 6.0 * se + 1e-300) << i << ", " << j;
      }
    }
    const LaplaceApproximation loaded = LaplaceApproximation::from_json(q.to_json());
    EXPECT_EQ(loaded.to_json(), q.to_json());
    EXPECT_EQ(loaded.log_det_precision(), q.log_det_precision());
    EXPECT_TRUE(testing::bitwise_equal(loaded.covariance_times(R), q.covariance_times(R)));
  }
  // A default-constructed approximation has no factor: an error, not a crash.
  EXPECT_THROW(LaplaceApproximation().log_det_precision(), Error);
}

TEST(StructuredLaplace, KroneckerBlocksAreTheirFactorsEigendecompositions) {
  // Each block of A is Q ⊗ G + αI (weights) or m·G + αI (biases): checked against A formed from
  // the factors in full, on a two-layer net; log|A| is the sum of the blocks'.
  const Problem p = make_problem("gaussian", {4}, 25, 12);
  const LaplaceApproximation q = laplace(*p.posterior, p.w, HessianKind::kGgn, kKron);
  const std::vector<internal::KroneckerFactors> f = internal::kronecker_factors(*p.posterior, p.w);
  const Eigen::VectorXd precision = p.posterior->prior().precision_diagonal();
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(q.dim(), q.dim());
  for (const internal::KroneckerFactors& l : f) {
    const Index in = l.Q.rows(), out = l.G.rows();
    Eigen::MatrixXd QG(in * out, in * out);
    for (Index a = 0; a < in; ++a)
      for (Index b = 0; b < in; ++b) QG.block(a * out, b * out, out, out) = l.Q(a, b) * l.G;
    A.block(l.weight_offset, l.weight_offset, in * out, in * out) = QG;
    A.block(l.bias_offset, l.bias_offset, out, out) = 25.0 * l.G;
  }
  A.diagonal() += precision;
  const Eigen::LLT<Eigen::MatrixXd> llt(A);
  const double log_det = 2.0 * Eigen::MatrixXd(llt.matrixL()).diagonal().array().log().sum();
  EXPECT_NEAR(q.log_det_precision(), log_det, 1e-10 * std::abs(log_det));
  const Eigen::MatrixXd cov = llt.solve(Eigen::MatrixXd::Identity(q.dim(), q.dim()));
  EXPECT_LT((q.covariance() - cov).norm(), 1e-10 * cov.norm());
  EXPECT_LT((q.covariance_diagonal() - cov.diagonal()).norm(), 1e-10 * cov.diagonal().norm());
  EXPECT_LT((q.precision_diagonal() - A.diagonal()).norm(), 1e-10 * A.diagonal().norm());
}

// lowrank:W keeps every eigenpair of H: A = H + P (the diagonal remainder is rounding), so it is
// the full approximation — also where H is singular (m·K < W: the Krylov space becomes invariant
// and the iteration restarts orthogonally to it).
TEST(StructuredLaplace, LowRankOfFullRankIsTheFullApproximation) {
  struct Case {
    std::string family;
    std::vector<Index> hidden;
    Index m;
  };
  for (const Case& c : {Case{"gaussian", {5}, 40}, Case{"categorical", {4}, 30}, Case{"bernoulli", {5}, 12}}) {
    SCOPED_TRACE(c.family);
    const Problem p = make_problem(c.family, c.hidden, c.m, 21);
    const Posterior& post = *p.posterior;
    const Index W = post.dim();
    const LaplaceApproximation full = laplace(post, p.w, HessianKind::kGgn);
    const LaplaceApproximation low = laplace(post, p.w, HessianKind::kGgn, low_rank(W));
    EXPECT_EQ(low.structure(), low_rank(W));
    EXPECT_EQ(low.form(), CurvatureForm::kWoodbury);
    const LanczosSummary& lanczos = *low.precision_as<internal::WoodburyPrecision>()->lanczos();
    EXPECT_TRUE(lanczos.converged);
    EXPECT_LE(lanczos.steps, W);
    EXPECT_LT(relative(low.log_det_precision(), full.log_det_precision()), 1e-11);
    EXPECT_LT(relative(log_evidence(post, low), log_evidence(post, full)), 1e-12);
    const Eigen::VectorXd gf = well_determined_parameters(post.prior(), full);
    EXPECT_LT((well_determined_parameters(post.prior(), low) - gf).norm(), 1e-10 * gf.norm());
    EXPECT_LT((low.covariance() - full.covariance()).norm(), 1e-10 * full.covariance().norm());
    Rng rng(5);
    Eigen::MatrixXd G(W, 4);
    for (Index i = 0; i < G.size(); ++i) G.data()[i] = rng.normal();
    const Eigen::VectorXd vf = full.quadratic_form_inverse(G);
    EXPECT_LT((low.quadratic_form_inverse(G) - vf).norm(), 1e-10 * vf.norm());
  }
}

// For K < W: V diag(s) Vᵀ (recovered from the stored factor as D^½UᵀUD^½) has H's top K eigenvalues,
// and what it leaves, H − V diag(s) Vᵀ, has H's next ones on top — V spans the top eigenvectors;
// A's diagonal is the full A's exactly (the diagonal remainder is in D).
TEST(StructuredLaplace, LowRankKeepsTheTopEigenpairsAndTheExactDiagonal) {
  const Problem p = make_problem("categorical", {8}, 60, 14);
  const Posterior& post = *p.posterior;
  const Index W = post.dim(), K = 5;
  ASSERT_EQ(W, 59);
  const Eigen::MatrixXd A_full = full_precision(post, p.w);
  Eigen::MatrixXd H = A_full;
  H.diagonal() -= post.prior().precision_diagonal();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> exact(H);
  const Eigen::VectorXd lambda = exact.eigenvalues().reverse();  // descending
  const LaplaceApproximation q = laplace(post, p.w, HessianKind::kGgn, low_rank(K));
  const auto& woodbury = *q.precision_as<internal::WoodburyPrecision>();
  const LanczosSummary& lanczos = *woodbury.lanczos();
  EXPECT_TRUE(lanczos.converged);
  EXPECT_LE(lanczos.max_relative_residual, 1e-8);
  EXPECT_LT(lanczos.steps, W);  // converged before the Krylov space was all of R^W
  ASSERT_EQ(woodbury.root().rows(), K);
  const Eigen::VectorXd d_half = woodbury.diagonal().cwiseSqrt();
  const Eigen::MatrixXd kept =
      d_half.asDiagonal() * (woodbury.root().transpose() * woodbury.root()) * d_half.asDiagonal();
  const Eigen::VectorXd s = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(kept).eigenvalues().reverse();
  for (Index k = 0; k < K; ++k) EXPECT_NEAR(s[k], lambda[k], 1e-12 * lambda[0]) << k;
  EXPECT_LT(s.tail(W - K).cwiseAbs().maxCoeff(), 1e-12 * lambda[0]);
  const Eigen::VectorXd rest = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H - kept).eigenvalues().reverse();
  for (Index k = 0; k < K; ++k) EXPECT_NEAR(rest[k], lambda[K + k], 1e-9 * lambda[0]) << k;
  const Eigen::VectorXd diag = A_full.diagonal();
  EXPECT_LT((q.precision_diagonal() - diag).cwiseAbs().maxCoeff(), 1e-12 * diag.cwiseAbs().maxCoeff());
  // Not the full approximation: the dropped eigenvalues are missed off the diagonal.
  EXPECT_GT(relative(q.log_det_precision(), laplace(post, p.w, HessianKind::kGgn).log_det_precision()), 1e-6);
  // The same fit twice: the same bits (a fixed start vector).
  const LaplaceApproximation again = laplace(post, p.w, HessianKind::kGgn, low_rank(K));
  EXPECT_TRUE(testing::bitwise_equal(again.precision_as<internal::WoodburyPrecision>()->root(), woodbury.root()));
  EXPECT_TRUE(
      testing::bitwise_equal(again.precision_as<internal::WoodburyPrecision>()->diagonal(), woodbury.diagonal()));
}

TEST(StructuredLaplace, RefusesWhatItCannotApproximate) {
  const Problem p = make_problem("gaussian", {3}, 10, 1);
  EXPECT_THROW(laplace(*p.posterior, p.w, HessianKind::kExact, kDiag), Error);
  try {
    laplace(*p.posterior, p.w, HessianKind::kGgn, low_rank(p.posterior->dim() + 1));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lowrank:K with 1 ≤ K ≤ " + std::to_string(p.posterior->dim())),
              std::string::npos)
        << e.what();
  }
  EvidenceOptions options;
  options.structure = kLastLayer;
  options.hessian = HessianKind::kExact;
  EXPECT_THROW(options.validate(), Error);
}

}  // namespace
}  // namespace occam

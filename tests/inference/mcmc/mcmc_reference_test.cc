// `fit` with SamplingMethod on GLMs, checked against references computed here without the
// library's model code: Bayesian linear regression at fixed α, β against its closed-form
// posterior (Bishop 2006, §3.3), and logistic and Poisson (with an offset) regressions against
// self-normalised importance sampling from a Student-t around their Laplace approximation (found
// by Newton's method below), with the log densities written out in the test.
//
// Pooling as in mcmc_pooled_variance_test.cc: many independent chains, each with its own warm-up,
// give their own estimates of E[θ_j] and E[(θ_j − μ_j)²] (μ the reference mean); the spread of
// those estimates across chains is the Monte Carlo standard error of their average whatever the
// autocorrelation within a chain. Every moment must lie within k = 4.5 combined standard errors
// (the chains' and the reference's) of the reference: with 6 moments per model and 18 in all, an
// exact sampler fails with probability about 18 × 6.8·10⁻⁶. The relative standard error of each
// variance is asserted to be at most 1.5%, so that a variance biased by 7% or more fails.
//
// These are checks of the whole path: fit() builds the network, likelihood and prior from the
// spec, the chains start from their MAP fits, adapt a diagonal metric and step size in warm-up,
// and the kept draws are read back from the summary.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>

#include "occam/fit.h"
#include "occam/rng.h"
#include "testing/linear_gaussian.h"

namespace occam {
namespace {

constexpr double kK = 4.5;
constexpr double kMaxRelativeSe = 0.015;

using LogPosterior = std::function<double(const Eigen::VectorXd&, Eigen::VectorXd*, Eigen::MatrixXd*)>;

// Φ = [X, 1] for the linear network's θ = [B, b] (testing::design).
using testing::design;

struct Moments {
  Eigen::VectorXd mean, mean_se;          // E[θ_j]
  Eigen::VectorXd variance, variance_se;  // E[(θ_j − μ_j)²] about the reference mean μ
};

// Each chain's estimates from its kept draws, averaged over the chains, with their standard error.
Moments pooled_chain_moments(const mcmc::SamplerSummary& s, Index W, const Eigen::VectorXd& reference_mean) {
  const Index first = std::find(s.columns.begin(), s.columns.end(), "w.1") - s.columns.begin();
  const double C = static_cast<double>(s.draws.size());
  Eigen::VectorXd sum_m = Eigen::VectorXd::Zero(W), sq_m = sum_m, sum_v = sum_m, sq_v = sum_m;
  for (const Eigen::MatrixXd& d : s.draws) {
    const Eigen::MatrixXd theta = d.middleCols(first, W);
    const Eigen::VectorXd m = theta.colwise().mean().transpose();
    const Eigen::VectorXd v = (theta.rowwise() - reference_mean.transpose()).cwiseAbs2().colwise().mean().transpose();
    sum_m += m;
    sq_m += m.cwiseAbs2();
    sum_v += v;
    sq_v += v.cwiseAbs2();
  }
  Moments out;
  out.mean = sum_m / C;
  out.variance = sum_v / C;
  out.mean_se = ((sq_m - C * out.mean.cwiseAbs2()) / (C - 1.0) / C).cwiseMax(0.0).cwiseSqrt();
  out.variance_se = ((sq_v - C * out.variance.cwiseAbs2()) / (C - 1.0) / C).cwiseMax(0.0).cwiseSqrt();
  return out;
}

void expect_moments(const char* name, const Moments& chains, const Moments& reference) {
  std::cout << name << ": variance / reference (± combined s.e.):";
  for (Index j = 0; j < reference.mean.size(); ++j) {
    const double se_m = std::hypot(chains.mean_se[j], reference.mean_se[j]);
    const double se_v = std::hypot(chains.variance_se[j], reference.variance_se[j]);
    std::cout << ' ' << chains.variance[j] / reference.variance[j] << " ± " << se_v / reference.variance[j];
    EXPECT_LE(std::abs(chains.mean[j] - reference.mean[j]), kK * se_m)
        << name << " θ" << j << ": mean " << chains.mean[j] << ", reference " << reference.mean[j]
        << " (z = " << (chains.mean[j] - reference.mean[j]) / se_m << ")";
    EXPECT_LE(std::abs(chains.variance[j] - reference.variance[j]), kK * se_v)
        << name << " θ" << j << ": variance " << chains.variance[j] << ", reference " << reference.variance[j]
        << " (z = " << (chains.variance[j] - reference.variance[j]) / se_v << ")";
    EXPECT_LE(se_v / reference.variance[j], kMaxRelativeSe) << name << " θ" << j << ": the pooling is too small";
  }
  std::cout << '\n';
}

// Many short chains of NUTS on the spec's posterior at its fixed hyperparameters, unstandardised.
mcmc::SamplerSummary sample_chains(ModelSpec spec, const Dataset& data, std::uint64_t seed) {
  spec.network.kind = NetworkKind::kLinear;
  spec.prior.kind = PriorKind::kRidge;
  spec.standardize = Standardize::kNone;
  SamplingMethod method;
  method.sampler.chains = 120;
  method.sampler.threads = 2;
  method.sampler.num_warmup = 300;
  method.sampler.num_draws = 400;
  method.sampler.seed = seed;
  method.chains.gibbs = false;
  method.memory.max_bytes = -1.0;
  FittedModel model = fit(spec, data, method);
  return *model.summary.sampler;
}

// Self-normalised importance sampling (Geweke 1989) from a multivariate t with ν = 4 degrees of
// freedom around the mode of log_p, scaled by the inverse Hessian there: heavier tails than any
// of these posteriors, so the weights have finite variance. Standard errors by the delta method.
Moments importance_sampling(const LogPosterior& log_p, Index d, int draws, std::uint64_t seed) {
  // Newton's method to the mode.
  Eigen::VectorXd mode = Eigen::VectorXd::Zero(d), g;
  Eigen::MatrixXd H;
  for (int it = 0; it < 100; ++it) {
    log_p(mode, &g, &H);
    const Eigen::VectorXd step = (-H).llt().solve(g);
    mode += step;
    if (step.norm() < 1e-12) break;
  }
  log_p(mode, &g, &H);
  EXPECT_LT(g.norm(), 1e-8) << "Newton's method did not reach the mode";
  const Eigen::MatrixXd L = (-H).llt().solve(Eigen::MatrixXd::Identity(d, d)).llt().matrixL();
  const double nu = 4.0;
  Rng rng(seed);
  Eigen::MatrixXd theta(draws, d);
  Eigen::VectorXd log_w(draws);
  for (int s = 0; s < draws; ++s) {
    const Eigen::VectorXd z = rng.normal_vector(d);
    double chi2 = 0.0;
    for (int k = 0; k < 4; ++k) chi2 += std::pow(rng.normal(), 2);
    const Eigen::VectorXd t = mode + L * z / std::sqrt(chi2 / nu);
    // log q(t) up to a constant: −(ν + d)/2 · log(1 + δᵀΣ⁻¹δ/ν), δᵀΣ⁻¹δ = ‖z‖²·ν/χ².
    const double quad = z.squaredNorm() * nu / chi2;
    theta.row(s) = t.transpose();
    log_w[s] = log_p(t, nullptr, nullptr) + 0.5 * (nu + static_cast<double>(d)) * std::log1p(quad / nu);
  }
  const Eigen::ArrayXd w = (log_w.array() - log_w.maxCoeff()).exp();
  const Eigen::ArrayXd wn = w / w.sum();
  Moments out;
  out.mean = theta.transpose() * wn.matrix();
  out.mean_se.resize(d);
  out.variance.resize(d);
  out.variance_se.resize(d);
  for (Index j = 0; j < d; ++j) {
    const Eigen::ArrayXd dev2 = (theta.col(j).array() - out.mean[j]).square();
    out.mean_se[j] = std::sqrt((wn.square() * dev2).sum());
    out.variance[j] = (wn * dev2).sum();
    out.variance_se[j] = std::sqrt((wn.square() * (dev2 - out.variance[j]).square()).sum());
  }
  std::cout << "importance sampling: effective sample size " << 1.0 / wn.square().sum() << " of " << draws << '\n';
  return out;
}

// A canonical-link GLM under the prior N(0, α⁻¹I), written out here: with η = Φθ + offset and the
// log-partition b, log p(θ | y) + const = Σ [y η − b(η)] − α/2 ‖θ‖², its gradient
// Φᵀ(y − b'(η)) − αθ and Hessian −Φᵀ diag(b''(η)) Φ − αI.
template <typename B, typename B1, typename B2>
LogPosterior canonical_glm(const Eigen::MatrixXd& Phi, const Eigen::VectorXd& y, const Eigen::VectorXd& offset,
                           double alpha, B b, B1 b1, B2 b2) {
  return [=](const Eigen::VectorXd& t, Eigen::VectorXd* g, Eigen::MatrixXd* H) {
    const Eigen::ArrayXd eta = (Phi * t).array() + offset.array();
    if (g != nullptr) {
      *g = Phi.transpose() * (y.array() - b1(eta)).matrix() - alpha * t;
      *H = -Phi.transpose() * b2(eta).matrix().asDiagonal() * Phi;
      H->diagonal().array() -= alpha;
    }
    return (y.array() * eta - b(eta)).sum() - 0.5 * alpha * t.squaredNorm();
  };
}

// 40 rows, x1, x2 ~ N(0, 1) from a fixed stream.
Eigen::MatrixXd inputs(Index m, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd X(m, 2);
  for (Index i = 0; i < m; ++i) X.row(i) << rng.normal(), rng.normal();
  return X;
}

TEST(McmcReference, LinearRegressionMatchesTheClosedFormPosterior) {
  const Index m = 30;
  Dataset data;
  data.X = inputs(m, 11);
  Rng rng(12);
  data.Y.resize(m, 1);
  for (Index i = 0; i < m; ++i) data.Y(i, 0) = 0.8 * data.X(i, 0) - 0.5 * data.X(i, 1) + 0.3 + 0.5 * rng.normal();
  ModelSpec spec;
  spec.prior.alpha = 2.0;
  spec.likelihood.beta = 3.0;
  const mcmc::SamplerSummary s = sample_chains(spec, data, 21);
  const testing::ExactPosterior exact =
      testing::exact_posterior(design(data.X), data.Y.col(0), Eigen::VectorXd::Constant(3, 2.0), 3.0);
  Moments reference;
  reference.mean = exact.mean;
  reference.variance = exact.covariance.diagonal();
  reference.mean_se = reference.variance_se = Eigen::VectorXd::Zero(3);
  expect_moments("linear regression", pooled_chain_moments(s, 3, exact.mean), reference);
}

TEST(McmcReference, LogisticRegressionMatchesImportanceSampling) {
  const Index m = 40;
  const double alpha = 1.0;
  Dataset data;
  data.X = inputs(m, 31);
  Rng rng(32);
  data.Y.resize(m, 1);
  for (Index i = 0; i < m; ++i) {
    const double f = 1.5 * data.X(i, 0) - 1.0 * data.X(i, 1) + 0.5;
    data.Y(i, 0) = rng.uniform() < 1.0 / (1.0 + std::exp(-f)) ? 1.0 : 0.0;
  }
  // b(η) = log(1 + e^η), b' = σ(η), b'' = σ(1 − σ).
  const auto sigmoid = [](const Eigen::ArrayXd& e) -> Eigen::ArrayXd { return 1.0 / (1.0 + (-e).exp()); };
  const LogPosterior log_p = canonical_glm(
      design(data.X), data.Y.col(0), Eigen::VectorXd::Zero(m), alpha,
      [](const Eigen::ArrayXd& e) -> Eigen::ArrayXd { return e.max(0.0) + (-e.abs()).exp().log1p(); }, sigmoid,
      [sigmoid](const Eigen::ArrayXd& e) -> Eigen::ArrayXd { return sigmoid(e) * (1.0 - sigmoid(e)); });

  ModelSpec spec;
  spec.likelihood.kind = LikelihoodKind::kBernoulli;
  spec.prior.alpha = alpha;
  const Moments reference = importance_sampling(log_p, 3, 400000, 33);
  expect_moments("logistic regression", pooled_chain_moments(sample_chains(spec, data, 34), 3, reference.mean),
                 reference);
}

TEST(McmcReference, PoissonRegressionWithOffsetMatchesImportanceSampling) {
  const Index m = 40;
  const double alpha = 1.0;
  Dataset data;
  data.X = inputs(m, 41);
  Rng rng(42);
  data.Y.resize(m, 1);
  data.offset.resize(m);
  for (Index i = 0; i < m; ++i) {
    data.offset[i] = std::log(0.5 + 2.0 * rng.uniform());
    const double rate = std::exp(0.6 * data.X(i, 0) - 0.4 * data.X(i, 1) + 0.2 + data.offset[i]);
    int count = 0;  // inversion of the Poisson CDF
    for (double p = std::exp(-rate), c = p, u = rng.uniform(); u > c; c += (p *= rate / ++count)) {
    }
    data.Y(i, 0) = count;
  }
  // b(η) = b'(η) = b''(η) = e^η.
  const auto exp = [](const Eigen::ArrayXd& e) -> Eigen::ArrayXd { return e.exp(); };
  const LogPosterior log_p = canonical_glm(design(data.X), data.Y.col(0), data.offset, alpha, exp, exp, exp);

  ModelSpec spec;
  spec.likelihood.kind = LikelihoodKind::kPoisson;
  spec.likelihood.offset_column = "log_exposure";
  spec.prior.alpha = alpha;
  const Moments reference = importance_sampling(log_p, 3, 400000, 43);
  expect_moments("poisson regression", pooled_chain_moments(sample_chains(spec, data, 44), 3, reference.mean),
                 reference);
}

}  // namespace
}  // namespace occam

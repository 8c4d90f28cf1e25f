// SGLD and SGHMC on Bayesian linear regression, whose posterior N(μ, A⁻¹) is known exactly,
// against the stationary covariance their discretisations are predicted to have.
//
// On a Gaussian target every step is linear: with x = θ − μ and the minibatch gradient
// ∇̂ = −A x + n_t (n_t the gradient noise), the chain's state s (x, and SGHMC's velocity v)
// follows s' = M s + c n_t + b ξ_t, ξ_t ~ N(0, I):
//   SGLD:  x' = (I − (h/2)A) x + (h/2) n + √h ξ
//   SGHMC: v' = (1 − hC) v − hA x + h n + √(2Ch) ξ,  x' = x + h v'
// With the full data (n = 0) the stationary covariance solves the discrete Lyapunov equation
// Σ = M Σ Mᵀ + b bᵀ; for SGLD its x-block is (A(I − hA/4))⁻¹, the scalar 1/(a(1 − ha/4)), larger
// than the posterior's A⁻¹ by a factor that goes to 1 as h → 0. With minibatches of b rows out of m,
// drawn without replacement (a permutation per epoch of K = m/b batches), the noise of a batch
// is n_t = (m/b) Σ_{i∈B_t} r_i − Σ_i r_i where the model makes the Hessian term exact (every
// x_i = ±1, so each batch's curvature is the full data's and only the r_i = β x_i y_i part is
// noisy): Var n_t = (m/b)² b σ_r² (m − b)/(m − 1), and the K batches of an epoch have noises that
// sum to zero, so any two of one epoch have covariance −Var n/(K − 1), those of different epochs
// none. The stationary variance is then Σ_k (e₁ᵀMᵏb)² plus the noise's Σ_{j,k} φ_j φ_k Cov(n_{t−j},
// n_{t−k}), φ_j = e₁ᵀMʲc, averaged over the place of the last batch in its epoch.
//
// Monte Carlo error as in mcmc_pooled_variance_test.cc: many independent chains, each started at a
// draw from the predicted stationary distribution (SGHMC: after a burn-in for its velocity), and
// the spread of their estimates of E[x xᵀ] gives the standard error of the pooled one. Every check
// allows k = 4.5 standard errors, and asserts the relative standard error is at most 0.8% (it is
// 0.3-0.6% here), so that a bias of 5% or more cannot pass. The step sizes make the discretisation
// bias 4-8% at the larger step: the tests see it (the posterior's own variance is more than 10
// standard errors away there) and see it shrink at a quarter of the step. Broken on purpose, the
// tests fail: without the m/|B| scale of the minibatch likelihood (variance 13 and 3.5 times the
// prediction), without the √2 of SGHMC's noise (0.5 times), with minibatches drawn with
// replacement (1.39 and 1.19 times, 75 and 61 standard errors).
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <cmath>
#include <iostream>
#include <memory>
#include <vector>

#include "occam/mcmc/sampler.h"
#include "occam/mcmc/sgmcmc.h"
#include "occam/mcmc/stochastic_density.h"
#include "testing/pooled_moments.h"

namespace occam::mcmc {
namespace {

// y_n ~ N(x_nᵀθ, 1/β), θ ~ N(0, I/α).
class LinearRegression final : public LogDensity, public StochasticLogDensity {
 public:
  LinearRegression(Eigen::MatrixXd X, Eigen::VectorXd y, double alpha, double beta)
      : X_(std::move(X)), y_(std::move(y)), alpha_(alpha), beta_(beta) {}
  Eigen::Index dim() const override { return X_.cols(); }
  Eigen::Index num_data() const override { return X_.rows(); }
  bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& theta, double* log_p, Eigen::VectorXd* grad) const override {
    std::vector<Eigen::Index> all(static_cast<std::size_t>(X_.rows()));
    for (Eigen::Index i = 0; i < X_.rows(); ++i) all[static_cast<std::size_t>(i)] = i;
    return minibatch_estimate(*this, theta, all, log_p, grad);
  }
  bool log_prior(const Eigen::Ref<const Eigen::VectorXd>& theta, double* value, Eigen::VectorXd* grad) const override {
    *value = -0.5 * alpha_ * theta.squaredNorm();
    if (grad) *grad = -alpha_ * theta;
    return true;
  }
  bool log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& theta, const std::vector<Eigen::Index>& rows,
                      double* value, Eigen::VectorXd* grad) const override {
    const Eigen::MatrixXd Xb = X_(rows, Eigen::all);
    const Eigen::VectorXd r = y_(rows) - Xb * theta;
    *value = -0.5 * beta_ * r.squaredNorm();
    if (grad) *grad = beta_ * Xb.transpose() * r;
    return true;
  }
  Eigen::MatrixXd precision() const {  // A
    return alpha_ * Eigen::MatrixXd::Identity(dim(), dim()) + beta_ * X_.transpose() * X_;
  }
  Eigen::VectorXd mean() const { return precision().llt().solve(beta_ * X_.transpose() * y_); }
  // r_i = β x_i y_i: the part of a row's gradient that does not depend on θ.
  Eigen::VectorXd gradient_offsets() const { return beta_ * X_.col(0).cwiseProduct(y_); }

 private:
  Eigen::MatrixXd X_;
  Eigen::VectorXd y_;
  double alpha_, beta_;
};

// A chain started at μ + L z, z ~ N(0, I).
class RegressionChain final : public ChainModel {
 public:
  RegressionChain(const LinearRegression& model, const Eigen::VectorXd& mean, const Eigen::MatrixXd& factor)
      : model_(model), mean_(mean), factor_(factor) {}
  const LogDensity& density() const override { return model_; }
  const StochasticLogDensity* stochastic_density() const override { return &model_; }
  Eigen::VectorXd initial_point(Rng& rng) override { return mean_ + factor_ * rng.normal_vector(model_.dim()); }

 private:
  const LinearRegression& model_;
  const Eigen::VectorXd& mean_;
  const Eigen::MatrixXd& factor_;
};

// The stationary covariance of s' = M s + b ξ: Σ = M Σ Mᵀ + b bᵀ, solved as (I − M⊗M) vec Σ = vec(b bᵀ).
Eigen::MatrixXd lyapunov(const Eigen::MatrixXd& M, const Eigen::MatrixXd& b) {
  const Eigen::Index n = M.rows();
  Eigen::MatrixXd K = Eigen::MatrixXd::Identity(n * n, n * n);
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j < n; ++j) K.block(i * n, j * n, n, n) -= M(i, j) * M;  // vec(MΣMᵀ) = (M⊗M) vec Σ
  const Eigen::MatrixXd Q = b * b.transpose();
  const Eigen::VectorXd s = K.partialPivLu().solve(Eigen::Map<const Eigen::VectorXd>(Q.data(), n * n));
  return Eigen::Map<const Eigen::MatrixXd>(s.data(), n, n);
}

// M, b and c (the gradient noise's column) of one step, for d coordinates; x first, then v.
struct LinearStep {
  Eigen::MatrixXd M, b, c;
};
LinearStep sgld_step(const Eigen::MatrixXd& A, double h) {
  const Eigen::Index d = A.rows();
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(d, d);
  return {I - 0.5 * h * A, std::sqrt(h) * I, 0.5 * h * I};
}
LinearStep sghmc_step(const Eigen::MatrixXd& A, double h, double C) {
  const Eigen::Index d = A.rows();
  const Eigen::MatrixXd I = Eigen::MatrixXd::Identity(d, d);
  LinearStep s{Eigen::MatrixXd(2 * d, 2 * d), Eigen::MatrixXd(2 * d, d), Eigen::MatrixXd(2 * d, d)};
  s.M << I - h * h * A, h * (1.0 - h * C) * I, -h * A, (1.0 - h * C) * I;
  s.b << h * std::sqrt(2.0 * C * h) * I, std::sqrt(2.0 * C * h) * I;
  s.c << h * h * I, h * I;
  return s;
}

// The stationary variance of x (d = 1) with minibatch noise of variance v whose K batches per
// epoch sum to zero (above), averaged over the place of the last batch in its epoch.
double minibatch_variance(const LinearStep& s, double v, int K) {
  std::vector<double> phi;  // φ_j = e₁ᵀMʲc
  Eigen::VectorXd impulse = s.c.col(0);
  while (phi.size() < 100000) {
    phi.push_back(impulse[0]);
    if (phi.size() > 50 && impulse.norm() < 1e-14 * std::abs(phi.front())) break;
    impulse = s.M * impulse;
  }
  double sum_sq = 0.0;
  for (double p : phi) sum_sq += p * p;
  double cross = 0.0;  // Σ over pairs j ≠ k in one epoch of φ_j φ_k, averaged over the phase
  for (int phase = 0; phase < K; ++phase) {
    // Noise t − j lies in epoch ⌊(phase − j)/K⌋.
    double group_sum = 0.0, group_sq = 0.0;
    long long group = 0;
    for (std::size_t j = 0; j < phi.size(); ++j) {
      const long long offset = phase - static_cast<long long>(j);
      const long long e = offset >= 0 ? offset / K : -((-offset + K - 1) / K);
      if (j > 0 && e != group) {
        cross += group_sum * group_sum - group_sq;
        group_sum = group_sq = 0.0;
      }
      group = e;
      group_sum += phi[j];
      group_sq += phi[j] * phi[j];
    }
    cross += group_sum * group_sum - group_sq;
  }
  cross /= K;
  return lyapunov(s.M, s.b)(0, 0) + v * (sum_sq - cross / (K - 1));
}

struct Pooled {
  Eigen::MatrixXd mean, std_error;
};

// The pooled E[(θ − μ)(θ − μ)ᵀ] over options.chains chains started at N(μ, start_covariance).
Pooled pooled_covariance(const LinearRegression& model, const Eigen::MatrixXd& start_covariance,
                         SamplerOptions options) {
  const Eigen::VectorXd mu = model.mean();
  const Eigen::MatrixXd factor = start_covariance.llt().matrixL();
  const Eigen::MatrixXd frame = Eigen::MatrixXd::Identity(model.dim(), model.dim());
  options.keep_draws = false;
  std::vector<testing::ChainMoments> per_chain(static_cast<std::size_t>(options.chains));
  sample([&](int) { return std::make_unique<RegressionChain>(model, mu, factor); }, options,
         [&](int c) {
           return std::make_unique<testing::SecondMomentSink>(mu, frame, &per_chain[static_cast<std::size_t>(c)]);
         });
  const Eigen::Index d = model.dim();
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(d, d), sum_sq = Eigen::MatrixXd::Zero(d, d);
  for (const testing::ChainMoments& c : per_chain) {
    const Eigen::MatrixXd estimate =
        Eigen::MatrixXd(c.sum_outer.selfadjointView<Eigen::Lower>()) / static_cast<double>(c.draws);
    sum += estimate;
    sum_sq += estimate.cwiseAbs2();
  }
  const double n = options.chains;
  Pooled p;
  p.mean = sum / n;
  p.std_error = ((sum_sq - n * p.mean.cwiseAbs2()) / (n - 1.0) / n).cwiseMax(0.0).cwiseSqrt();
  return p;
}

constexpr double kK = 4.5;  // standard errors allowed
constexpr double kMaxRelativeSe = 0.008;

// Every variance within kK standard errors of `predicted`, with the power asked.
void expect_variances(const char* name, const Pooled& p, const Eigen::MatrixXd& predicted,
                      const Eigen::MatrixXd& exact) {
  std::cout << name << ": variance / predicted (± se), predicted / posterior:";
  for (Eigen::Index i = 0; i < predicted.rows(); ++i) {
    std::cout << "  " << p.mean(i, i) / predicted(i, i) << " ± " << p.std_error(i, i) / predicted(i, i) << ", "
              << predicted(i, i) / exact(i, i);
    EXPECT_LE(std::abs(p.mean(i, i) - predicted(i, i)), kK * p.std_error(i, i))
        << name << ", variance " << i << ": " << p.mean(i, i) << " ± " << p.std_error(i, i) << ", predicted "
        << predicted(i, i) << " (z = " << (p.mean(i, i) - predicted(i, i)) / p.std_error(i, i) << ")";
    EXPECT_LE(p.std_error(i, i) / predicted(i, i), kMaxRelativeSe) << name << ": the pooling is too small";
    for (Eigen::Index j = 0; j < i; ++j) {
      EXPECT_LE(std::abs(p.mean(i, j) - predicted(i, j)), kK * p.std_error(i, j))
          << name << ", covariance " << i << "," << j;
    }
  }
  std::cout << '\n';
}

SamplerOptions sg_options(SamplerKind method, double step, int chains, int warmup, int draws, Eigen::Index batch,
                          std::uint64_t seed) {
  SamplerOptions o;
  o.method = method;
  o.chains = chains;
  o.threads = 2;
  o.num_warmup = warmup;
  o.num_draws = draws;
  o.seed = seed;
  o.initial_step_size = step;
  o.stochastic_gradient.batch_size = batch;
  return o;
}

// Two correlated inputs, 100 rows: A's eigenvalues about 60 and 190.
LinearRegression two_input_regression() {
  Rng rng(7);
  const Eigen::Index m = 100;
  Eigen::MatrixXd X(m, 2);
  Eigen::VectorXd y(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const double u = rng.normal(), w = rng.normal();
    X(i, 0) = u;
    X(i, 1) = 0.5 * u + w;
    y[i] = 1.0 * X(i, 0) - 0.5 * X(i, 1) + rng.normal();
  }
  return LinearRegression(X, y, 1.0, 1.0);
}

// One input x_i = ±1, 1000 rows: each minibatch's curvature is the full data's (a = α + mβ).
LinearRegression sign_input_regression() {
  Rng rng(8);
  const Eigen::Index m = 1000;
  Eigen::MatrixXd X(m, 1);
  Eigen::VectorXd y(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    X(i, 0) = rng.uniform() < 0.5 ? -1.0 : 1.0;
    y[i] = 0.5 * X(i, 0) + rng.normal();
  }
  return LinearRegression(X, y, 1.0, 1.0);
}

double largest_eigenvalue(const Eigen::MatrixXd& A) {
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(A).eigenvalues().maxCoeff();
}

TEST(SgMcmc, LyapunovSolverGivesSgldClosedForm) {
  const LinearRegression model = two_input_regression();
  const Eigen::MatrixXd A = model.precision();
  const double h = 0.4 / largest_eigenvalue(A);
  const LinearStep s = sgld_step(A, h);
  const Eigen::MatrixXd closed = (A * (Eigen::MatrixXd::Identity(2, 2) - 0.25 * h * A)).inverse();
  EXPECT_LT((lyapunov(s.M, s.b) - closed).norm(), 1e-12 * closed.norm());
}

// Full batch: the Euler–Maruyama covariance (A(I − hA/4))⁻¹, the bias seen at hλ_max = 0.4 and
// shrinking at a quarter of that step.
TEST(SgMcmc, SgldFullBatchMatchesItsDiscretisationAndTheBiasShrinksWithTheStep) {
  const LinearRegression model = two_input_regression();
  const Eigen::MatrixXd A = model.precision(), exact = A.inverse();
  const double h = 0.4 / largest_eigenvalue(A);
  Eigen::MatrixXd errors(2, 2);
  for (int k = 0; k < 2; ++k) {
    const double step = k == 0 ? h : h / 4;
    const LinearStep s = sgld_step(A, step);
    const Eigen::MatrixXd predicted = lyapunov(s.M, s.b);
    const Pooled p = pooled_covariance(
        model, predicted, sg_options(SamplerKind::kSgld, step, 64, 0, k == 0 ? 12000 : 40000, 100, 11 + k));
    expect_variances(k == 0 ? "sgld, full batch, h" : "sgld, full batch, h/4", p, predicted, exact);
    for (Eigen::Index i = 0; i < 2; ++i) errors(i, k) = std::abs(p.mean(i, i) - exact(i, i)) / exact(i, i);
    if (k == 0) {
      // The bias is there to see: the posterior's own variance along the stiff direction is rejected.
      EXPECT_GT((p.mean.diagonal() - exact.diagonal()).cwiseQuotient(p.std_error.diagonal()).cwiseAbs().maxCoeff(),
                10.0);
    }
  }
  EXPECT_LT(errors.col(1).maxCoeff(), errors.col(0).maxCoeff() / 2) << errors;
}

TEST(SgMcmc, SghmcFullBatchMatchesItsDiscretisationAndTheBiasShrinksWithTheStep) {
  const LinearRegression model = two_input_regression();
  const Eigen::MatrixXd A = model.precision(), exact = A.inverse();
  const double h = 0.5 / std::sqrt(largest_eigenvalue(A));  // h²λ_max = 0.25
  Eigen::MatrixXd errors(2, 2);
  for (int k = 0; k < 2; ++k) {
    const double step = k == 0 ? h : h / 4;
    const double friction = 0.3 / step;  // hC = 0.3: the velocity forgets in a few steps
    const LinearStep s = sghmc_step(A, step, friction);
    const Eigen::MatrixXd predicted = lyapunov(s.M, s.b).topLeftCorner(2, 2);
    SamplerOptions o = sg_options(SamplerKind::kSghmc, step, 64, 200, k == 0 ? 8000 : 30000, 100, 21 + k);
    o.stochastic_gradient.friction = friction;
    const Pooled p = pooled_covariance(model, predicted, o);
    expect_variances(k == 0 ? "sghmc, full batch, h" : "sghmc, full batch, h/4", p, predicted, exact);
    for (Eigen::Index i = 0; i < 2; ++i) errors(i, k) = std::abs(p.mean(i, i) - exact(i, i)) / exact(i, i);
    if (k == 0) {
      EXPECT_GT((p.mean.diagonal() - exact.diagonal()).cwiseQuotient(p.std_error.diagonal()).cwiseAbs().maxCoeff(),
                10.0);
    }
  }
  EXPECT_LT(errors.col(1).maxCoeff(), errors.col(0).maxCoeff() / 2) << errors;
}

// Minibatches of 50 of 1000 rows (K = 20 per epoch): the gradient noise's term, with the
// anti-correlation of the batches of one epoch.
double gradient_noise_variance(const LinearRegression& model, Eigen::Index batch) {
  const Eigen::VectorXd r = model.gradient_offsets();
  const double m = static_cast<double>(r.size()), b = static_cast<double>(batch);
  const double population = (r.array() - r.mean()).square().mean();
  return (m / b) * (m / b) * b * population * (m - b) / (m - 1.0);
}

TEST(SgMcmc, SgldMinibatchMatchesTheDiscretisationWithGradientNoise) {
  const LinearRegression model = sign_input_regression();
  const Eigen::MatrixXd A = model.precision(), exact = A.inverse();
  const double h = 0.2 / A(0, 0);
  const Eigen::Index batch = 50;
  const LinearStep s = sgld_step(A, h);
  const Eigen::MatrixXd predicted =
      Eigen::MatrixXd::Constant(1, 1, minibatch_variance(s, gradient_noise_variance(model, batch), 20));
  std::cout << "sgld minibatch: predicted / full-batch prediction " << predicted(0, 0) / lyapunov(s.M, s.b)(0, 0)
            << '\n';
  const Pooled p = pooled_covariance(model, predicted, sg_options(SamplerKind::kSgld, h, 64, 0, 20000, batch, 31));
  expect_variances("sgld, batches of 50", p, predicted, exact);
}

TEST(SgMcmc, SghmcMinibatchMatchesTheDiscretisationWithGradientNoise) {
  const LinearRegression model = sign_input_regression();
  const Eigen::MatrixXd A = model.precision(), exact = A.inverse();
  const double h = 0.4 / std::sqrt(A(0, 0)), friction = 0.3 / h;
  const Eigen::Index batch = 50;
  const LinearStep s = sghmc_step(A, h, friction);
  const Eigen::MatrixXd predicted =
      Eigen::MatrixXd::Constant(1, 1, minibatch_variance(s, gradient_noise_variance(model, batch), 20));
  std::cout << "sghmc minibatch: predicted / full-batch prediction " << predicted(0, 0) / lyapunov(s.M, s.b)(0, 0)
            << '\n';
  SamplerOptions o = sg_options(SamplerKind::kSghmc, h, 64, 200, 20000, batch, 41);
  o.stochastic_gradient.friction = friction;
  const Pooled p = pooled_covariance(model, predicted, o);
  expect_variances("sghmc, batches of 50", p, predicted, exact);
}

}  // namespace
}  // namespace occam::mcmc

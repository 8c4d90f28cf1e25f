// Analytic Gaussian targets for the samplers: log N(x; μ, Σ) from the precision P = Σ⁻¹, and a
// check of draws' means and variances against the truth within a multiple of their Monte Carlo
// standard errors (posterior's mcse_mean, the same estimator the samplers report).
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "occam/log_density.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/sampler.h"

namespace occam::testing {

class GaussianTarget final : public LogDensity {
 public:
  GaussianTarget(Eigen::VectorXd mean, Eigen::MatrixXd covariance)
      : mean_(std::move(mean)),
        covariance_(std::move(covariance)),
        precision_(covariance_.llt().solve(Eigen::MatrixXd::Identity(mean_.size(), mean_.size()))),
        diagonal_(covariance_.isDiagonal(0.0)),
        precision_diagonal_(precision_.diagonal()) {}
  Eigen::Index dim() const override { return mean_.size(); }
  bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& x, double* log_p, Eigen::VectorXd* grad) const override {
    // Scratch per thread (chains evaluate the shared target concurrently), so that the tests'
    // hundreds of millions of evaluations allocate nothing; a diagonal precision costs O(d).
    thread_local Eigen::VectorXd r, Pr;
    r = x - mean_;
    if (diagonal_) {
      Pr = precision_diagonal_.cwiseProduct(r);
    } else {
      Pr.noalias() = precision_ * r;
    }
    *log_p = -0.5 * r.dot(Pr);
    if (grad) *grad = -Pr;
    return true;
  }
  const Eigen::VectorXd& mean() const { return mean_; }
  const Eigen::MatrixXd& covariance() const { return covariance_; }

 private:
  Eigen::VectorXd mean_;
  Eigen::MatrixXd covariance_;
  Eigen::MatrixXd precision_;
  bool diagonal_;
  Eigen::VectorXd precision_diagonal_;
};

// A ChainModel over a shared target, chains started at N(0, I) draws.
class TargetModel final : public mcmc::ChainModel {
 public:
  explicit TargetModel(const LogDensity& target) : target_(target) {}
  const LogDensity& density() const override { return target_; }
  Eigen::VectorXd initial_point(Rng& rng) override { return rng.normal_vector(target_.dim()); }

 private:
  const LogDensity& target_;
};

// 100-d N(0, I).
inline GaussianTarget iid_gaussian(Eigen::Index d = 100) {
  return GaussianTarget(Eigen::VectorXd::Zero(d), Eigen::MatrixXd::Identity(d, d));
}
// 2-d, unit variances, correlation ρ, mean (1, −1).
inline GaussianTarget correlated_gaussian(double rho = 0.99) {
  Eigen::MatrixXd S(2, 2);
  S << 1.0, rho, rho, 1.0;
  return GaussianTarget(Eigen::Vector2d(1.0, -1.0), S);
}
// d-dimensional, variances log-spaced over [10⁻², 10²] (condition number 10⁴), optionally
// rotated by a fixed orthogonal matrix (then no diagonal metric can undo the scaling).
inline GaussianTarget ill_conditioned_gaussian(Eigen::Index d = 50, bool rotated = false) {
  Eigen::VectorXd variances(d);
  for (Eigen::Index i = 0; i < d; ++i)
    variances[i] = std::pow(10.0, -2.0 + 4.0 * static_cast<double>(i) / static_cast<double>(d - 1));
  Eigen::MatrixXd S = variances.asDiagonal();
  if (rotated) {
    Eigen::MatrixXd M(d, d);
    for (Eigen::Index i = 0; i < d; ++i)
      for (Eigen::Index j = 0; j < d; ++j)
        M(i, j) =
            std::sin(1.0 + 3.0 * static_cast<double>(i) + 7.0 * static_cast<double>(j) * static_cast<double>(j + 1));
    const Eigen::MatrixXd Q = M.householderQr().householderQ();
    S = Q * S * Q.transpose();
    S = 0.5 * (S + S.transpose()).eval();
  }
  return GaussianTarget(Eigen::VectorXd::LinSpaced(d, -1.0, 1.0), S);
}

// How many Monte Carlo standard errors 2d simultaneous checks may allow: at least 4, and enough
// that a correct sampler fails any of them with probability at most 1e-3 (Bonferroni: each
// two-sided check at 1e-3/(2d)). At d = 100, 4 MCSE alone fails a correct sampler in about 1.3%
// of seeds — and of floating-point paths, since a different instruction set gives another chain.
inline double simultaneous_mcse_bound(Eigen::Index d) {
  const double per_check = 1e-3 / (2.0 * static_cast<double>(2 * d));
  return std::max(4.0, boost::math::quantile(boost::math::complement(boost::math::normal(), per_check)));
}

// Every coordinate's mean and E[(x − μ)²] within `k` Monte Carlo standard errors of the truth
// (k ≤ 0: simultaneous_mcse_bound of the dimension).
inline void expect_moments_within_mcse(const mcmc::SamplerSummary& s, const GaussianTarget& target, double k = 0.0) {
  if (k <= 0.0) k = simultaneous_mcse_bound(target.dim());
  for (Eigen::Index i = 0; i < target.dim(); ++i) {
    const std::string name = s.columns[static_cast<std::size_t>(mcmc::kNumSamplerColumns + i)];
    const Eigen::MatrixXd x = s.column(name);
    const double mean = x.mean();
    const double mcse = mcmc::mcse_mean(x);
    EXPECT_LE(std::abs(mean - target.mean()[i]), k * mcse)
        << name << ": mean " << mean << ", truth " << target.mean()[i] << ", mcse " << mcse;
    const Eigen::MatrixXd sq = (x.array() - target.mean()[i]).square().matrix();
    const double var = sq.mean();
    const double var_mcse = mcmc::mcse_mean(sq);
    EXPECT_LE(std::abs(var - target.covariance()(i, i)), k * var_mcse)
        << name << ": variance " << var << ", truth " << target.covariance()(i, i) << ", mcse " << var_mcse;
  }
}

}  // namespace occam::testing

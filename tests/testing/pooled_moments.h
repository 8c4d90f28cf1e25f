// Second moments of a sampler's draws pooled over many independent chains, with an honest Monte
// Carlo standard error: each chain starts at an exact draw from the target (so it is stationary
// from its first iteration and needs no warm-up) and gives its own estimate of E[y yᵀ],
// y = Uᵀ(x − μ) in a chosen frame U. The chains are independent, so the spread of their estimates
// is the spread of the pooled one times √chains, whatever the autocorrelation within a chain.
//
//   testing::PooledMoments m = testing::pooled_second_moments(target, U, options);
//   testing::expect_second_moments(m, U.transpose() * target.covariance() * U, {.k = 4.5, .max_relative_se = 0.0015});
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "occam/mcmc/sampler.h"
#include "testing/gaussian_target.h"

namespace occam::testing {

// A chain on a density whose distribution is the Gaussian `target`, started at an exact draw from
// it, μ + L·z with Σ = LLᵀ (the density may be the target itself, or a model's log density with
// the target as its closed form).
class StationaryGaussianModel final : public mcmc::ChainModel {
 public:
  StationaryGaussianModel(const LogDensity& density, const GaussianTarget& target,
                          const Eigen::MatrixXd& covariance_factor)
      : density_(density), target_(target), factor_(covariance_factor) {}
  const LogDensity& density() const override { return density_; }
  Eigen::VectorXd initial_point(Rng& rng) override {
    return target_.mean() + factor_ * rng.normal_vector(target_.dim());
  }

 private:
  const LogDensity& density_;
  const GaussianTarget& target_;
  const Eigen::MatrixXd& factor_;
};

// One chain's sums over its kept draws.
struct ChainMoments {
  Eigen::MatrixXd sum_outer;  // Σ_t y_t y_tᵀ
  long long draws = 0;
  long long leapfrog_steps = 0;  // Σ_t n_leapfrog__
};

// Accumulates a chain's draws into its ChainMoments as they are made (no draw is kept).
class SecondMomentSink final : public mcmc::DrawSink {
 public:
  SecondMomentSink(const Eigen::VectorXd& mean, const Eigen::MatrixXd& frame, ChainMoments* out)
      : mean_(mean), frame_(frame), out_(out) {
    out_->sum_outer = Eigen::MatrixXd::Zero(frame.cols(), frame.cols());
  }
  void draw(const Eigen::VectorXd& row, bool warmup) override {
    if (warmup) return;
    centred_ = row.segment(mcmc::kNumSamplerColumns, mean_.size()) - mean_;
    y_.noalias() = frame_.transpose() * centred_;
    out_->sum_outer.selfadjointView<Eigen::Lower>().rankUpdate(y_);
    ++out_->draws;
    out_->leapfrog_steps += static_cast<long long>(row[4]);
  }

 private:
  const Eigen::VectorXd& mean_;
  const Eigen::MatrixXd& frame_;
  ChainMoments* out_;
  Eigen::VectorXd centred_, y_;
};

struct PooledMoments {
  Eigen::MatrixXd mean;       // the average over chains of each chain's mean of y yᵀ
  Eigen::MatrixXd std_error;  // standard deviation of the chains' estimates / √chains
  int chains = 0;
  long long draws = 0;               // over all chains
  double mean_leapfrog_steps = 0.0;  // per transition
};

// Runs options.chains chains (no warm-up: options.num_warmup must be 0, and the step size and
// metric those of options) on `density` from exact draws of the Gaussian `target` it equals, and
// pools their second moments in the frame U (d × r; the identity for the coordinates themselves).
inline PooledMoments pooled_second_moments(const LogDensity& density, const GaussianTarget& target,
                                           const Eigen::MatrixXd& frame, mcmc::SamplerOptions options) {
  EXPECT_EQ(options.num_warmup, 0) << "chains start in the stationary distribution";
  options.keep_draws = false;
  const Eigen::MatrixXd factor = target.covariance().llt().matrixL();
  std::vector<ChainMoments> per_chain(static_cast<std::size_t>(options.chains));
  mcmc::sample([&](int) { return std::make_unique<StationaryGaussianModel>(density, target, factor); }, options,
               [&](int c) {
                 return std::make_unique<SecondMomentSink>(target.mean(), frame,
                                                           &per_chain[static_cast<std::size_t>(c)]);
               });

  const Eigen::Index r = frame.cols();
  PooledMoments out;
  out.chains = options.chains;
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(r, r), sum_sq = Eigen::MatrixXd::Zero(r, r);
  long long leapfrog = 0;
  for (const ChainMoments& c : per_chain) {
    const Eigen::MatrixXd estimate =
        Eigen::MatrixXd(c.sum_outer.selfadjointView<Eigen::Lower>()) / static_cast<double>(c.draws);
    sum += estimate;
    sum_sq += estimate.cwiseAbs2();
    out.draws += c.draws;
    leapfrog += c.leapfrog_steps;
  }
  const double n = out.chains;
  out.mean = sum / n;
  // The unbiased between-chain variance, divided by the number of chains.
  out.std_error = ((sum_sq - n * out.mean.cwiseAbs2()) / (n - 1.0) / n).cwiseMax(0.0).cwiseSqrt();
  out.mean_leapfrog_steps = static_cast<double>(leapfrog) / static_cast<double>(out.draws);
  return out;
}

// The same on the target's own density.
inline PooledMoments pooled_second_moments(const GaussianTarget& target, const Eigen::MatrixXd& frame,
                                           mcmc::SamplerOptions options) {
  return pooled_second_moments(target, target, frame, std::move(options));
}

struct MomentCheck {
  double k = 4.5;                // allowed standard errors
  double max_relative_se = 0.0;  // the power asked of the pooling: se(Σ̂_ii)/Σ_ii at most this (0: not checked)
};

// Every entry of the pooled E[y yᵀ] within k standard errors of `truth`, and the diagonal's
// relative standard error small enough for the check to see the bias it is meant to catch.
inline void expect_second_moments(const PooledMoments& m, const Eigen::MatrixXd& truth, MomentCheck check) {
  for (Eigen::Index i = 0; i < truth.rows(); ++i) {
    const double scale = truth(i, i);
    EXPECT_LE(std::abs(m.mean(i, i) - scale), check.k * m.std_error(i, i))
        << "variance " << i << ": ratio to the truth " << m.mean(i, i) / scale << " ± " << m.std_error(i, i) / scale
        << " (z = " << (m.mean(i, i) - scale) / m.std_error(i, i) << ")";
    if (check.max_relative_se > 0.0) {
      EXPECT_LE(m.std_error(i, i) / scale, check.max_relative_se) << "variance " << i << ": the pooling is too small";
    }
    for (Eigen::Index j = 0; j < i; ++j) {
      EXPECT_LE(std::abs(m.mean(i, j) - truth(i, j)), check.k * m.std_error(i, j))
          << "covariance (" << i << ", " << j << "): " << m.mean(i, j) << " ± " << m.std_error(i, j) << ", truth "
          << truth(i, j);
    }
  }
}

}  // namespace occam::testing

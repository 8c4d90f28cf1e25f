// The convergence report judges what a user uses (lp__, α, β, f.*, log_lik.*), never the weights,
// and shows chains in different modes both as R̂ and as disagreeing per-chain means.
#include "occam/mcmc/convergence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "occam/status.h"

namespace occam::mcmc {
namespace {

// `chains` chains of `n` draws: the sampler columns, then w.1 (chain c sits at 5c: a weight whose
// labels the chains permute), f.1 (iid N(shift_c, 1)), and `log_lik` columns log_lik.i.
SamplerSummary make_run(int chains, int n, const std::vector<double>& f_shift, int log_lik = 0, unsigned seed = 1) {
  SamplerSummary s;
  s.columns = sampler_columns();
  s.columns.insert(s.columns.end(), {"w.1", "f.1"});
  for (int i = 1; i <= log_lik; ++i) s.columns.push_back("log_lik." + std::to_string(i));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  for (int c = 0; c < chains; ++c) {
    Eigen::MatrixXd d(n, static_cast<Eigen::Index>(s.columns.size()));
    for (int r = 0; r < n; ++r) {
      d(r, 0) = normal(rng);                // lp__
      d(r, 1) = 0.8;                        // accept_stat__
      d(r, 2) = 0.1 * (c + 1);              // stepsize__
      d(r, 3) = r % 2 == 0 ? 3 : 5;         // treedepth__
      d(r, 4) = 15;                         // n_leapfrog__
      d(r, 5) = (c == 1 && r < 3) ? 1 : 0;  // divergent__: three in chain 2
      d(r, 6) = 0.0;                        // energy__
      d(r, 7) = 5.0 * c + 0.01 * normal(rng);
      d(r, 8) = f_shift[static_cast<std::size_t>(c)] + normal(rng);
      for (int i = 0; i < log_lik; ++i)
        d(r, 9 + i) = -1.0 + 0.1 * normal(rng) + (i == log_lik - 1 ? f_shift[static_cast<std::size_t>(c)] : 0.0);
    }
    s.draws.push_back(d);
    s.chains.push_back(chain_statistics(s.columns, d, c, 5));
  }
  return s;
}

TEST(Convergence, WellMixedChainsAreTrustedWhateverTheWeightsDo) {
  const ConvergenceReport r = assess_convergence(make_run(4, 500, {0, 0, 0, 0}));
  // w.1 differs between chains (R̂ far above 1.01) but is not judged.
  for (const auto& v : r.variables) EXPECT_NE(v.name, "w.1");
  ASSERT_EQ(r.predictive, (std::vector<std::string>{"f.1"}));
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_EQ(r.draws, 2000);
  EXPECT_EQ(r.divergences, 3);
  EXPECT_FALSE(r.trustworthy());  // divergences
  EXPECT_EQ(r.max_depth_hits, 4 * 250);
}

TEST(Convergence, AChainInAnotherModeShowsInRhatAndInItsOwnMean) {
  const ConvergenceReport r = assess_convergence(make_run(4, 500, {0, 0, 3, 0}));
  ASSERT_EQ(r.chain_mean.rows(), 1);
  ASSERT_EQ(r.chain_mean.cols(), 4);
  // Each chain's mean is within 5 standard errors (1/√500) of its own mode.
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(r.chain_mean(0, c), c == 2 ? 3.0 : 0.0, 5.0 / std::sqrt(500.0)) << c;
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(r.chain_sd(0, c), 1.0, 0.15) << c;
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.front().find("R-hat of f.1"), std::string::npos) << r.warnings.front();
}

TEST(Convergence, ThePointwiseLogLikelihoodIsJudgedByItsWorstColumn) {
  const ConvergenceReport mixed = assess_convergence(make_run(4, 400, {0, 0, 0, 0}, 3));
  ASSERT_TRUE(mixed.log_lik.has_value());
  EXPECT_EQ(mixed.log_lik->count, 3);
  EXPECT_LT(mixed.log_lik->max_rhat, 1.01);
  const ConvergenceReport split = assess_convergence(make_run(4, 400, {0, 0, 0, 2}, 3));
  EXPECT_EQ(split.log_lik->max_rhat_column, "log_lik.3");
  EXPECT_GT(split.log_lik->max_rhat, 1.1);
  EXPECT_TRUE(std::any_of(split.warnings.begin(), split.warnings.end(), [](const std::string& w) {
    return w.find("pointwise log-likelihood reaches") != std::string::npos;
  }));
  EXPECT_FALSE(assess_convergence(make_run(2, 100, {0, 0})).log_lik.has_value());
}

TEST(Convergence, ChainStatisticsComeFromTheSamplerColumns) {
  const SamplerSummary s = make_run(2, 10, {0, 0});
  const ChainSummary c = chain_statistics(s.columns, s.draws[1], 1, 5);
  EXPECT_EQ(c.chain, 1);
  EXPECT_EQ(c.draws, 10);
  EXPECT_DOUBLE_EQ(c.step_size, 0.2);
  EXPECT_DOUBLE_EQ(c.mean_accept_stat, 0.8);
  EXPECT_DOUBLE_EQ(c.mean_tree_depth, 4.0);
  EXPECT_EQ(c.divergences, 3);
  EXPECT_EQ(c.gradient_evaluations, 150);
  EXPECT_EQ(c.max_depth_hits, 5);
  EXPECT_EQ(chain_statistics(s.columns, s.draws[1], 1, 0).max_depth_hits, 0);  // depth unknown
}

TEST(Convergence, MergedRunsAreTheirChainsOneAfterTheOther) {
  const SamplerSummary a = make_run(2, 50, {0, 0}, 0, 1), b = make_run(3, 40, {0, 0, 0}, 0, 2);
  const SamplerSummary m = merge_runs({a, b}, {"run_a", "run_b"});
  ASSERT_EQ(m.draws.size(), 5u);
  for (int c = 0; c < 5; ++c) EXPECT_EQ(m.chains[static_cast<std::size_t>(c)].chain, c);
  EXPECT_EQ(m.draws[2], b.draws[0]);
  EXPECT_EQ(assess_convergence(m).draws, 2 * 50 + 3 * 40);
  const SamplerSummary other = make_run(2, 50, {0, 0}, 2);
  try {
    merge_runs({a, other}, {"run_a", "run_c"});
    FAIL() << "runs with other columns were merged";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("run_c has other columns than run_a"), std::string::npos) << e.what();
  }
}

TEST(Convergence, BadInputIsRefused) {
  EXPECT_THROW(assess_convergence(SamplerSummary{}), Error);
  ConvergenceOptions options;
  options.max_rhat = 0.9;
  EXPECT_THROW(assess_convergence(make_run(2, 10, {0, 0}), options), Error);
  SamplerSummary ragged = make_run(2, 10, {0, 0});
  ragged.draws[1].conservativeResize(10, 3);
  EXPECT_THROW(assess_convergence(ragged), Error);
}

}  // namespace
}  // namespace occam::mcmc

// PSIS-LOO against R's loo package on fixed draws, and the generalised Pareto fit against a
// known shape. The fixture in tests/data/loo is made by
//   Rscript tests/data/loo/make_fixture.R tests/data/loo
// (Debian's r-cran-loo 2.5.1): the test reads the same log-likelihood file R computed from.
#include "occam/mcmc/loo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "occam/status.h"

namespace {

const std::string kDir = std::string(OCCAM_TEST_DATA_DIR) + "/loo/";

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  std::string cell;
  while (std::getline(in, cell, ',')) cells.push_back(cell);
  return cells;
}

// log_lik.csv: chain, draw, log_lik.1 ... log_lik.n; returns the matrix and the number of chains.
Eigen::MatrixXd read_log_lik(Eigen::Index* chains) {
  std::ifstream in(kDir + "log_lik.csv");
  std::string line;
  std::getline(in, line);
  const std::size_t columns = split(line).size() - 2;
  std::vector<std::vector<double>> rows;
  int last_chain = 0;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    last_chain = std::stoi(cells[0]);
    std::vector<double> row;
    for (std::size_t j = 2; j < cells.size(); ++j) row.push_back(std::stod(cells[j]));
    EXPECT_EQ(row.size(), columns);
    rows.push_back(row);
  }
  Eigen::MatrixXd m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(columns));
  for (std::size_t s = 0; s < rows.size(); ++s)
    for (std::size_t i = 0; i < columns; ++i)
      m(static_cast<Eigen::Index>(s), static_cast<Eigen::Index>(i)) = rows[s][i];
  *chains = last_chain;
  return m;
}

// expected_*.csv: what, elpd_loo, mcse_elpd_loo, p_loo, looic, pareto_k, n_eff — one row per
// observation ("pointwise.i"), then "estimate" and "se".
std::map<std::string, std::vector<double>> read_expected(const std::string& file) {
  std::ifstream in(kDir + file);
  std::string line;
  std::getline(in, line);
  std::map<std::string, std::vector<double>> rows;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    std::vector<double> values;
    for (std::size_t j = 1; j < cells.size(); ++j)
      values.push_back(cells[j] == "NA" ? std::nan("") : std::stod(cells[j]));
    rows[cells[0]] = values;
  }
  return rows;
}

constexpr double kTolerance = 1e-6;

void expect_matches_r(const occam::mcmc::LooResult& loo, const std::string& file) {
  const auto expected = read_expected(file);
  const Eigen::Index n = loo.pointwise_elpd_loo.size();
  ASSERT_EQ(expected.size(), static_cast<std::size_t>(n + 2));
  for (Eigen::Index i = 0; i < n; ++i) {
    const auto& row = expected.at("pointwise." + std::to_string(i + 1));
    SCOPED_TRACE("observation " + std::to_string(i + 1));
    EXPECT_NEAR(loo.pointwise_elpd_loo[i], row[0], kTolerance);
    EXPECT_NEAR(loo.pointwise_mcse_elpd_loo[i], row[1], kTolerance);
    EXPECT_NEAR(loo.pointwise_p_loo[i], row[2], kTolerance);
    EXPECT_NEAR(loo.pointwise_looic[i], row[3], kTolerance);
    EXPECT_NEAR(loo.pareto_k[i], row[4], kTolerance);
    EXPECT_NEAR(loo.n_eff[i], row[5], kTolerance * row[5]);
  }
  const auto& estimate = expected.at("estimate");
  const auto& se = expected.at("se");
  EXPECT_NEAR(loo.elpd_loo, estimate[0], kTolerance);
  EXPECT_NEAR(loo.p_loo, estimate[2], kTolerance);
  EXPECT_NEAR(loo.looic, estimate[3], kTolerance);
  EXPECT_NEAR(loo.se_elpd_loo, se[0], kTolerance);
  EXPECT_NEAR(loo.se_p_loo, se[2], kTolerance);
  EXPECT_NEAR(loo.se_looic, se[3], kTolerance);
}

TEST(PsisLoo, MatchesRLooWithRelativeEfficiencies) {
  Eigen::Index chains = 0;
  const Eigen::MatrixXd log_lik = read_log_lik(&chains);
  ASSERT_EQ(chains, 4);
  const occam::mcmc::LooResult loo = occam::mcmc::psis_loo(log_lik, chains);
  expect_matches_r(loo, "expected_reff.csv");

  std::ifstream in(kDir + "expected_r_eff.txt");
  for (Eigen::Index i = 0; i < log_lik.cols(); ++i) {
    double r_eff = 0.0;
    ASSERT_TRUE(in >> r_eff);
    EXPECT_NEAR(loo.relative_efficiency[i], r_eff, kTolerance) << "observation " << i + 1;
  }
  // The outlier (the last observation) is the one the importance sampling cannot handle.
  EXPECT_GT(loo.pareto_k[log_lik.cols() - 1], 1.0);
  EXPECT_EQ(loo.pareto_k_counts[3], 1);
  EXPECT_TRUE(std::isnan(loo.mcse_elpd_loo));
}

TEST(PsisLoo, MatchesRLooWithoutRelativeEfficiencies) {
  Eigen::Index chains = 0;
  const Eigen::MatrixXd log_lik = read_log_lik(&chains);
  occam::mcmc::LooOptions options;
  options.relative_efficiency = false;
  expect_matches_r(occam::mcmc::psis_loo(log_lik, chains, options), "expected_noreff.csv");
}

TEST(PsisLoo, TotalMonteCarloErrorIsTheRootSumOfSquaresWhenEveryKIsSmall) {
  Eigen::Index chains = 0;
  const Eigen::MatrixXd log_lik = read_log_lik(&chains).leftCols(19);  // without the outlier
  const occam::mcmc::LooResult loo = occam::mcmc::psis_loo(log_lik, chains);
  ASSERT_LE(loo.pareto_k.maxCoeff(), 0.7);
  EXPECT_DOUBLE_EQ(loo.mcse_elpd_loo, loo.pointwise_mcse_elpd_loo.norm());
}

// The shape of a generalised Pareto sample is recovered within four standard errors; the
// estimator's asymptotic standard error is (1 + k)/√n (Zhang & Stephens 2009, §3), and the prior's
// pull towards 0.5 is 10(0.5 − k)/(n + 10), far below it at n = 20000.
TEST(PsisLoo, GeneralizedParetoFitRecoversAKnownShape) {
  for (const double k : {-0.2, 0.3, 0.8}) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    const int n = 20000;
    const double sigma = 2.0;
    Eigen::VectorXd x(n);
    for (int j = 0; j < n; ++j) x[j] = sigma * std::expm1(-k * std::log1p(-uniform(rng))) / k;
    std::sort(x.data(), x.data() + n);
    const occam::mcmc::GeneralizedPareto fit = occam::mcmc::fit_generalized_pareto(x);
    EXPECT_NEAR(fit.k, k, 4.0 * (1.0 + k) / std::sqrt(static_cast<double>(n))) << "k = " << k;
    EXPECT_NEAR(fit.sigma / sigma, 1.0, 0.1) << "k = " << k;
  }
}

TEST(PsisLoo, SmoothedWeightsNeverExceedTheLargestRawWeight) {
  std::mt19937_64 rng(11);
  std::student_t_distribution<double> heavy(1.5);
  Eigen::VectorXd log_ratios(4000);
  for (Eigen::Index s = 0; s < log_ratios.size(); ++s) log_ratios[s] = std::log(std::abs(heavy(rng)) + 1e-12);
  const occam::mcmc::ParetoSmoothedWeights w =
      occam::mcmc::pareto_smooth(log_ratios, occam::mcmc::pareto_tail_length(4000, 1.0));
  EXPECT_LE(w.log_weights.maxCoeff(), log_ratios.maxCoeff());
  // |t(1.5)| has a tail index 1/1.5: k̂ near 0.67.
  EXPECT_GT(w.pareto_k, 0.5);
  EXPECT_LT(w.pareto_k, 0.9);
  // Only the tail moves (beyond the rounding of shifting by the largest ratio and back).
  int changed = 0;
  for (Eigen::Index s = 0; s < log_ratios.size(); ++s) changed += std::abs(w.log_weights[s] - log_ratios[s]) > 1e-12;
  EXPECT_LE(changed, occam::mcmc::pareto_tail_length(4000, 1.0));
}

TEST(PsisLoo, RefusesNonFiniteLogLikelihoodNamingTheDrawAndObservation) {
  Eigen::MatrixXd log_lik = Eigen::MatrixXd::Constant(10, 3, -1.0);
  log_lik(6, 2) = -std::numeric_limits<double>::infinity();
  try {
    occam::mcmc::psis_loo(log_lik, 2);
    FAIL() << "accepted a non-finite log-likelihood";
  } catch (const occam::Error& e) {
    EXPECT_EQ(e.kind(), occam::ErrorKind::kInvalidInput);
    EXPECT_NE(std::string(e.what()).find("observation 3 in draw 7"), std::string::npos) << e.what();
  }
}

TEST(PsisLoo, RefusesDrawsThatDoNotSplitIntoTheChains) {
  const Eigen::MatrixXd log_lik = Eigen::MatrixXd::Constant(10, 3, -1.0);
  EXPECT_THROW(occam::mcmc::psis_loo(log_lik, 3), occam::Error);
  EXPECT_THROW(occam::mcmc::psis_loo(log_lik, 0), occam::Error);
  EXPECT_THROW(occam::mcmc::psis_loo(Eigen::MatrixXd::Constant(1, 3, -1.0), 1), occam::Error);
}

}  // namespace

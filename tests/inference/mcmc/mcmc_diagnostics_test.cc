// R̂, ESS and MCSE against R's posterior package (1.4.0) on fixed draws.
//
// tests/data/mcmc_draws.csv (4 variables × 4 chains × 201 draws) and
// tests/data/mcmc_diagnostics_expected.csv were made by
//   cd tests/data && Rscript make_mcmc_diagnostics_fixture.R
// which calls posterior's rhat, rhat_basic, ess_bulk, ess_tail, ess_mean and mcse_mean.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "occam/mcmc/diagnostics.h"

namespace occam::mcmc {
namespace {

// A small CSV reader that accepts the padded numbers R's format() writes.
std::vector<std::vector<std::string>> read_cells(const std::string& name) {
  std::ifstream in(std::string(OCCAM_TEST_DATA_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    std::string cell;
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

struct Fixture {
  std::map<std::string, Eigen::MatrixXd> draws;                   // variable → iterations × chains
  std::map<std::string, std::map<std::string, double>> expected;  // variable → statistic → value
};

Fixture load() {
  Fixture f;
  const auto draws = read_cells("mcmc_draws.csv");
  const auto& header = draws.front();
  const Eigen::Index n = static_cast<Eigen::Index>(draws.size()) - 1;
  for (std::size_t j = 0; j < header.size(); ++j) {
    const std::string variable = header[j].substr(0, header[j].find('.'));
    const int chain = std::atoi(header[j].substr(header[j].find('.') + 1).c_str()) - 1;
    Eigen::MatrixXd& m = f.draws[variable];
    if (m.size() == 0) m.resize(n, 4);
    for (Eigen::Index i = 0; i < n; ++i)
      m(i, chain) = std::strtod(draws[static_cast<std::size_t>(i) + 1][j].c_str(), nullptr);
  }
  const auto expected = read_cells("mcmc_diagnostics_expected.csv");
  for (std::size_t i = 1; i < expected.size(); ++i) {
    for (std::size_t j = 1; j < expected[i].size(); ++j) {
      f.expected[expected[i][0]][expected[0][j]] = std::strtod(expected[i][j].c_str(), nullptr);
    }
  }
  return f;
}

TEST(McmcDiagnostics, MatchThePosteriorPackage) {
  const Fixture f = load();
  ASSERT_EQ(f.draws.size(), 4u);
  for (const auto& [variable, x] : f.draws) {
    SCOPED_TRACE(variable);
    ASSERT_EQ(x.rows(), 201);
    const auto& e = f.expected.at(variable);
    // Agreement to ~1e-9: the same formulas, summed in a different order (FFT sizes differ).
    EXPECT_NEAR(rhat(x), e.at("rhat"), 1e-9);
    EXPECT_NEAR(rhat_basic(x), e.at("rhat_basic"), 1e-9);
    EXPECT_NEAR(ess_bulk(x), e.at("ess_bulk"), 1e-7 * e.at("ess_bulk"));
    EXPECT_NEAR(ess_tail(x), e.at("ess_tail"), 1e-7 * e.at("ess_tail"));
    EXPECT_NEAR(ess_mean(x), e.at("ess_mean"), 1e-7 * e.at("ess_mean"));
    EXPECT_NEAR(mcse_mean(x), e.at("mcse_mean"), 1e-9);
  }
}

TEST(McmcDiagnostics, ConstantOrNonFiniteDrawsGiveNaN) {
  const Eigen::MatrixXd constant = Eigen::MatrixXd::Constant(100, 4, 2.5);
  EXPECT_TRUE(std::isnan(rhat(constant)));
  EXPECT_TRUE(std::isnan(ess_bulk(constant)));
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(100, 4);
  x(3, 2) = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isnan(ess_tail(x)));
  const Diagnostics d = diagnose(x);
  EXPECT_TRUE(std::isnan(d.rhat));
}

TEST(McmcDiagnostics, AQuantityConstantWithinEachChainHasNoRhat) {
  // A sampler's step size after warm-up: one value per chain, equal to the last bit within it or
  // off by rounding. Within-chain variance 0 (or 1e-32) made R̂ infinite or 1e15.
  Eigen::MatrixXd steps(100, 4);
  const double step[] = {0.145, 0.132, 0.161, 0.150};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 100; ++i)
      steps(i, c) = step[c] * (1.0 + (i % 2 == 0 ? 0.0 : 2.0 * std::numeric_limits<double>::epsilon()));
  }
  EXPECT_TRUE(std::isnan(rhat(steps)));
  EXPECT_TRUE(std::isnan(rhat_basic(steps)));
  EXPECT_TRUE(std::isnan(ess_bulk(steps)));
  EXPECT_TRUE(std::isnan(ess_tail(steps)));
  EXPECT_TRUE(std::isnan(diagnose(steps).rhat));
  // One chain that moves is enough for R̂ to mean something (and to be large here).
  steps(7, 0) = 0.2;
  EXPECT_GT(rhat(steps), 1.1);
}

TEST(McmcDiagnostics, IndependentDrawsHaveEssNearTheirNumber) {
  // 4 × 1000 draws of a uniform stream: ESS ≈ 4000 (its sampling sd is ≈ 4000·√(2/4000) ≈ 90).
  Eigen::MatrixXd x(1000, 4);
  std::uint64_t state = 12345;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x.data()[i] = static_cast<double>(state >> 11) * 0x1.0p-53;
  }
  EXPECT_NEAR(ess_bulk(x), 4000.0, 400.0);
  EXPECT_LT(rhat(x), 1.01);
  EXPECT_NEAR(quantile(Eigen::VectorXd::LinSpaced(11, 0.0, 10.0), 0.25), 2.5, 1e-12);
}

}  // namespace
}  // namespace occam::mcmc

// The numbers behind the pictures (occam/plot_data.h): rank histograms, histograms, the calibration
// curve of a correctly specified model, the predictive band and the evidence ascent of a report.

#include "occam/plot_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "occam/fit.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {
namespace {

TEST(RankHistograms, RanksArePooledAndTiesShareTheirAverageRank) {
  Eigen::MatrixXd draws(2, 2);  // iterations × chains
  draws << 1.0, 3.0, 2.0, 4.0;
  Eigen::MatrixXi counts = rank_histograms(draws, 2);
  EXPECT_EQ(counts(0, 0), 2);  // chain 1 holds ranks 1 and 2: the lower half
  EXPECT_EQ(counts(1, 1), 2);
  EXPECT_EQ(counts(1, 0) + counts(0, 1), 0);
  // Ties: 1, 1 share rank 1.5 (lower half), 2, 2 share 3.5 (upper half): one each per chain.
  draws << 1.0, 1.0, 2.0, 2.0;
  counts = rank_histograms(draws, 2);
  EXPECT_EQ(counts, Eigen::MatrixXi::Ones(2, 2));
  EXPECT_THROW(rank_histograms(draws, 0), Error);
  EXPECT_THROW(rank_histograms(Eigen::MatrixXd(0, 2), 4), Error);
}

TEST(RankHistograms, ChainsOfOneDistributionAreFlatAndAShiftedChainIsNot) {
  Rng rng(5, 0);
  const Index S = 2000;
  const int bins = 10;
  Eigen::MatrixXd same(S, 2), shifted(S, 2);
  for (Index s = 0; s < S; ++s) {
    same(s, 0) = rng.normal();
    same(s, 1) = rng.normal();
    shifted(s, 0) = same(s, 0);
    shifted(s, 1) = same(s, 1) + 1.0;
  }
  // Same distribution: each count is Binomial-like around S/bins = 200 with sd ≈ √(200·0.9) ≈ 13.4;
  // 5 sd bounds every one of the 20 counts with room.
  const Eigen::MatrixXi flat = rank_histograms(same, bins);
  EXPECT_EQ(flat.colwise().sum(), Eigen::RowVector2i(S, S));
  EXPECT_LE((flat.array() - S / bins).abs().maxCoeff(), 67) << flat;
  // Chain 2 shifted up by one sd: its draws crowd the top ranks, chain 1's the bottom. Of the
  // pooled top tenth, a fraction ≈ 0.89 comes from the shifted chain (the mixture's 90% quantile
  // t solves ½(1 − Φ(t)) + ½(1 − Φ(t − 1)) = 0.1): ≈ 357 of its draws, against 200 if flat.
  const Eigen::MatrixXi skewed = rank_histograms(shifted, bins);
  EXPECT_GT(skewed(bins - 1, 1), 3 * S / bins / 2) << skewed;
  EXPECT_GT(skewed(0, 0), 3 * S / bins / 2) << skewed;
}

TEST(Histogram, CountsEachValueOnceWithTheUpperEdgeInTheLastBin) {
  Eigen::VectorXd values(6);
  values << 0.0, 0.5, 0.99, 1.0, 2.0, -0.1;  // -0.1 and 2.0 lie outside [0, 1]
  const Histogram h = histogram(values, 2, 0.0, 1.0);
  EXPECT_EQ(h.counts, Eigen::Vector2i(1, 3));
  EXPECT_DOUBLE_EQ(h.edges[1], 0.5);
  EXPECT_THROW(histogram(values, 2, 1.0, 1.0), Error);
  EXPECT_THROW(histogram(values, 2, 0.0, std::nan("")), Error);
}

// y = 1 + 2x₁ − x₂ + N(0, 0.5²): Bayesian linear regression is the true model, so its central
// intervals cover their level on fresh data up to the binomial spread √(p(1−p)/m).
Table linear_table(Index m, std::uint64_t seed) {
  Rng rng(seed, 0);
  Table t;
  t.columns = {"x1", "x2", "y"};
  t.values.resize(m, 3);
  for (Index i = 0; i < m; ++i) {
    const double x1 = rng.normal(), x2 = rng.normal();
    t.values.row(i) << x1, x2, 1.0 + 2.0 * x1 - x2 + 0.5 * rng.normal();
  }
  return t;
}

FittedModel linear_fit() {
  ModelSpec spec;
  spec.network.kind = NetworkKind::kLinear;
  return fit(spec, make_dataset(linear_table(200, 1), "y"));
}

TEST(CalibrationCurve, ACorrectlySpecifiedModelCoversEachLevelWithinItsBinomialSpread) {
  const FittedModel model = linear_fit();
  const Table test = linear_table(4000, 2);
  const CalibrationCurve c = calibration_curve(model, test);
  ASSERT_EQ(c.nominal.size(), 19);
  EXPECT_EQ(c.rows, 4000);
  for (Index k = 0; k < 19; ++k) {
    EXPECT_NEAR(c.nominal[k], 0.05 * static_cast<double>(k + 1), 1e-12);
    EXPECT_DOUBLE_EQ(c.std_error[k], std::sqrt(c.nominal[k] * (1 - c.nominal[k]) / 4000));
    // 4 standard errors per level (19 correlated levels: a false alarm is rare) plus the small
    // miscalibration a 200-row fit's estimate of σ may leave.
    EXPECT_NEAR(c.empirical[k], c.nominal[k], 4 * c.std_error[k] + 0.01) << "level " << c.nominal[k];
  }
  // The curve is the coverage of predict()'s own intervals.
  PredictOptions at;
  at.level = 0.5;
  const Prediction p = model.predict(test, at);
  const Eigen::VectorXd y = test.values.col(2);
  const double inside = static_cast<double>(((y.array() >= p.lower.array()) && (y.array() <= p.upper.array())).count());
  EXPECT_DOUBLE_EQ(c.empirical[9], inside / 4000.0);
  // Levels given: sorted, and a table without the target is refused.
  EXPECT_EQ(calibration_curve(model, test, {0.9, 0.1}).nominal, Eigen::Vector2d(0.1, 0.9));
  Table no_target = test;
  no_target.columns[2] = "z";
  EXPECT_THROW(calibration_curve(model, no_target), Error);
}

TEST(PredictiveBand, RunsAlongOneInputWithTheOthersAtTheirMeans) {
  const FittedModel model = linear_fit();
  const Table test = linear_table(50, 3);
  const PredictiveBand band = predictive_band(model, test, "x2", 11);
  ASSERT_EQ(band.x.size(), 11);
  const double lo = test.values.col(1).minCoeff(), hi = test.values.col(1).maxCoeff();
  EXPECT_NEAR(band.x[0], lo - 0.05 * (hi - lo), 1e-12);
  EXPECT_NEAR(band.x[10], hi + 0.05 * (hi - lo), 1e-12);
  ASSERT_EQ(band.held, std::vector<std::string>{"x1"});
  EXPECT_DOUBLE_EQ(band.held_at[0], test.values.col(0).mean());
  // A linear model's band is a straight line of slope ≈ −1 along x2.
  const double slope = (band.prediction.mean[10] - band.prediction.mean[0]) / (band.x[10] - band.x[0]);
  EXPECT_NEAR(slope, -1.0, 0.15);
  EXPECT_TRUE((band.prediction.upper.array() > band.prediction.mean.array()).all());
  EXPECT_THROW(predictive_band(model, test, "x3"), Error);
  EXPECT_THROW(predictive_band(model, test, "x1", 1), Error);
}

TEST(EvidenceAscent, ReadsEachRoundOfTheReportOrOfAModelFilesSummary) {
  const nlohmann::json report = {{"trace",
                                  {{{"iteration", 0},
                                    {"log_evidence", -10.0},
                                    {"alpha", {{"b", 1.0}, {"a", 2.0}}},
                                    {"beta", 3.0},
                                    {"accepted", true}},
                                   {{"iteration", 1},
                                    {"log_evidence", nullptr},
                                    {"alpha", {{"b", 4.0}, {"a", 5.0}}},
                                    {"beta", nullptr},
                                    {"accepted", false}}}}};
  for (const nlohmann::json& source : {report, nlohmann::json{{"summary", report}, {"network", {}}}}) {
    const EvidenceAscent a = evidence_ascent(source);
    EXPECT_EQ(a.step, (std::vector<int>{0, 1}));
    EXPECT_EQ(a.alpha_names, (std::vector<std::string>{"a", "b"}));
    EXPECT_DOUBLE_EQ(a.alpha(1, 0), 5.0);
    EXPECT_DOUBLE_EQ(a.alpha(1, 1), 4.0);
    EXPECT_DOUBLE_EQ(a.log_evidence[0], -10.0);
    EXPECT_TRUE(std::isnan(a.log_evidence[1]));
    EXPECT_TRUE(std::isnan(a.beta[1]));
    EXPECT_EQ(a.accepted, (std::vector<bool>{true, false}));
  }
  EXPECT_THROW(evidence_ascent(nlohmann::json{{"trace", {{{"iteration", 0}, {"elbo", 1.0}}}}}), Error);
  EXPECT_THROW(evidence_ascent(nlohmann::json::array()), Error);
}

}  // namespace
}  // namespace occam

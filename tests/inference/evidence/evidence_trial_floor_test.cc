// The floor under a trial MAP of the evidence ascent (src/inference/evidence/engine.h, MapFloor): from a
// given iteration on, the trust-region Newton MAP estimates the log-evidence at the mode it is
// heading for, and stops when that estimate falls below the floor. The ascent uses it to abandon
// a long trial step whose MAP is on its way to a mode far below the current one
// (src/inference/evidence/evidence_ascent.cc, kAbandonNats).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "inference/evidence/engine.h"
#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "testing/tanh_teacher.h"

namespace occam {
namespace {

// 60 rows of tanh_teacher.h's problem and a 3-6-1 network at α = 1, β = 10: a MAP from a random
// start takes tens of Newton iterations.
Posterior floor_problem() { return testing::tanh_teacher_posterior(7, 60, 6); }

struct MapRun {
  Termination termination = Termination::kFailure;
  Eigen::VectorXd w;
  int iterations = 0;
  std::string message;
};

// minimize_map from w_start, as a trial of the ascent runs it (tightened tolerance), with the floor
// when given.
MapRun run_map(Posterior& posterior, const Eigen::VectorXd& w_start, evidence::MapFloor* floor) {
  EvidenceOptions options;
  EvidenceSummary summary;
  MapRun out;
  out.w = w_start;
  evidence::Run run{posterior, options, out.w, summary};
  EXPECT_TRUE(evidence::uses_levenberg_marquardt(options.map, posterior));
  out.termination = evidence::minimize_map(run, &out.message, nullptr, 1e-3, 0, floor);
  out.iterations = summary.map_iterations;
  return out;
}

Eigen::VectorXd random_start(const Posterior& posterior) {
  Rng init(3);
  return posterior.network().initial_params(init);
}

TEST(EvidenceTrialFloor, AFloorBelowEveryEstimateChangesNothing) {
  Posterior posterior = floor_problem();
  const Eigen::VectorXd start = random_start(posterior);
  const MapRun plain = run_map(posterior, start, nullptr);
  ASSERT_EQ(plain.termination, Termination::kConverged) << plain.message;
  ASSERT_GT(plain.iterations, 5) << "the problem should need several Newton iterations";
  evidence::MapFloor floor{-std::numeric_limits<double>::infinity(), 0};
  const MapRun floored = run_map(posterior, start, &floor);
  EXPECT_FALSE(floor.reached);
  EXPECT_EQ(floored.termination, Termination::kConverged);
  EXPECT_EQ(floored.iterations, plain.iterations);
  EXPECT_EQ(floored.w, plain.w);  // bit for bit: the check only reads
}

TEST(EvidenceTrialFloor, AnUnreachableFloorStopsTheMapAtTheFirstIterateItIsCheckedAt) {
  Posterior posterior = floor_problem();
  const Eigen::VectorXd start = random_start(posterior);
  const MapRun plain = run_map(posterior, start, nullptr);
  ASSERT_EQ(plain.termination, Termination::kConverged) << plain.message;
  const int after = 3;
  ASSERT_GT(plain.iterations, after + 2);
  evidence::MapFloor floor{std::numeric_limits<double>::infinity(), after};
  const MapRun floored = run_map(posterior, start, &floor);
  EXPECT_TRUE(floor.reached);
  EXPECT_EQ(floored.termination, Termination::kNoProgress) << "an abandoned MAP is never converged";
  EXPECT_NE(floored.message.find("abandoned"), std::string::npos) << floored.message;
  EXPECT_GE(floored.iterations, after);
  EXPECT_LT(floored.iterations, plain.iterations);
}

// The estimate at w_start, as the check at the start iterate sees it: the floor at which a MAP
// with after_iterations = 0 stops before its first step, found by bisection.
double estimate_at(Posterior& posterior, const Eigen::VectorXd& w_start, double low, double high) {
  for (int i = 0; i < 60 && high - low > 1e-10 * std::max(1.0, std::abs(low)); ++i) {
    const double mid = 0.5 * (low + high);
    evidence::MapFloor floor{mid, 0};
    const MapRun r = run_map(posterior, w_start, &floor);
    if (floor.reached && r.iterations == 0)
      high = mid;
    else
      low = mid;
  }
  return 0.5 * (low + high);
}

// Near the mode the estimate is the Laplace log-evidence itself (log_evidence(), laplace.h, an
// independent computation): 1.2e-6 nats off at 10⁻⁶ posterior standard deviations, where a wrong
// ½ on log|A| or a missing (W/2) log 2π (28 nats here) would show. Further out it counts S(w) back
// to the mode by the Newton decrement: on this problem S(w) − S(w*) is 43 and 147 nats at 2 and 3
// standard deviations along a random direction, and the estimate is 8.7 and 14.3 below L (what is
// left is how log|A| moves with w); without the decrement, or with its sign wrong, it would be off
// by more than S(w) − S(w*) itself.
TEST(EvidenceTrialFloor, TheEstimateIsTheLaplaceLogEvidenceAtTheModeAndNearItFarBelowS) {
  Posterior posterior = floor_problem();
  const MapRun mode = run_map(posterior, random_start(posterior), nullptr);
  ASSERT_EQ(mode.termination, Termination::kConverged) << mode.message;
  const LaplaceApproximation q = laplace(posterior, mode.w, HessianKind::kGgn);
  const double L = log_evidence(posterior, q);
  ASSERT_TRUE(std::isfinite(L));
  Rng rng(11);
  const Eigen::VectorXd offset = q.sample(rng) - q.mean;  // ‖offset‖_A² ~ χ²_W
  const double sd = std::sqrt(static_cast<double>(offset.size()));
  double log_p;
  Eigen::VectorXd grad;
  ASSERT_TRUE(posterior.evaluate(mode.w, &log_p, &grad));
  const double S_mode = -log_p;

  const Eigen::VectorXd near = mode.w + (1e-6 / sd) * offset;
  EXPECT_NEAR(estimate_at(posterior, near, L - 100.0, L + 100.0), L, 1e-4);
  for (double r : {2.0, 3.0}) {
    const Eigen::VectorXd w = mode.w + (r / sd) * offset;
    ASSERT_TRUE(posterior.evaluate(w, &log_p, &grad));
    const double excess = -log_p - S_mode;  // S(w) − S(w*)
    ASSERT_GT(excess, 10.0) << "r = " << r;
    const double estimate = estimate_at(posterior, w, L - 2.0 * excess, L + 2.0 * excess);
    EXPECT_LT(std::abs(estimate - L), 0.5 * excess) << "r = " << r << ": estimate " << estimate << ", L " << L;
  }
}

}  // namespace
}  // namespace occam

// The memory estimate of a fit: its terms from the sizes alone, and a refusal that names the
// size and the options that avoid it.
#include <gtest/gtest.h>

#include <string>

#include "occam/fit.h"
#include "occam/memory.h"
#include "occam/status.h"

namespace occam {
namespace {

TEST(FitMemory, LaplaceOfThreeThousandHiddenUnitsIsGigabytesOfSquares) {
  // Two inputs, 3000 tanh units, one output: W = 3000·3 + 3001 = 12001.
  FitMemoryRequest r;
  r.params = 12001;
  r.rows = 500;
  r.inputs = 2;
  const MemoryEstimate e = estimate_fit_memory(r);
  ASSERT_FALSE(e.terms.empty());
  EXPECT_NE(e.terms.front().what.find("12001²"), std::string::npos) << e.describe();
  EXPECT_DOUBLE_EQ(e.terms.front().bytes, 7.5 * 12001.0 * 12001.0 * 8.0);
  EXPECT_GE(e.bytes, e.terms.front().bytes);
  // The same network fitted by L-BFGS alone needs a few megabytes.
  r.kind = FitMemoryKind::kPoint;
  EXPECT_LT(estimate_fit_memory(r).bytes, 3e6);
}

TEST(FitMemory, RefusalNamesTheSizeAndTheWayOut) {
  FitMemoryRequest r;
  r.params = 12001;
  r.rows = 500;
  r.inputs = 2;
  const MemoryEstimate e = estimate_fit_memory(r);
  try {
    check_fit_memory(e, 1e9);
    ADD_FAILURE() << "no refusal";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(what.find("8.64 GB"), std::string::npos) << what;
    EXPECT_NE(what.find("12001²"), std::string::npos) << what;
    EXPECT_NE(what.find("1 GB available"), std::string::npos) << what;
    EXPECT_NE(what.find("MapOptions::optimizer"), std::string::npos) << what;
  }
  EXPECT_NO_THROW(check_fit_memory(e, 1e11));
  EXPECT_NO_THROW(check_fit_memory(e, 0.0));  // no limit
}

TEST(FitMemory, FamiliesAndMetricsScaleAsTheyShould) {
  FitMemoryRequest r;
  r.params = 5000;
  r.rows = 100;
  r.inputs = 10;
  r.kind = FitMemoryKind::kVariational;
  r.family = {FamilyKind::kFullRank, 0};
  const double full = estimate_fit_memory(r).bytes;
  r.family = {FamilyKind::kLowRank, 10};
  const double low = estimate_fit_memory(r).bytes;
  r.family = {FamilyKind::kMeanField, 0};
  const double mean_field = estimate_fit_memory(r).bytes;
  EXPECT_NEAR(full - low, 6.5 * 5000.0 * 5000.0 * 8.0 - 4.0 * 5000.0 * 10.0 * 8.0, 1.0);
  EXPECT_LE(mean_field, low);
  r.kind = FitMemoryKind::kSampling;
  r.chains = 4;
  r.draws = 1000;
  const double diagonal = estimate_fit_memory(r).bytes;
  r.dense_metric = true;
  EXPECT_NEAR(estimate_fit_memory(r).bytes - diagonal, 4 * 3.0 * 5000.0 * 5000.0 * 8.0, 1.0);
  // A smoothing graph over 20000 inputs: its dense eigendecomposition alone is 6.4 GB.
  r = FitMemoryRequest{};
  r.params = 20001;
  r.kind = FitMemoryKind::kPoint;
  r.graph_nodes = 20000;
  EXPECT_NE(estimate_fit_memory(r).avoid.find("smoothing graph"), std::string::npos);
  r.params = -1;
  EXPECT_THROW(estimate_fit_memory(r), Error);
}

// The memory estimate of an L-BFGS Laplace fit with a structured curvature, on 10 rows of 20 inputs.
MemoryEstimate structured_estimate(const std::vector<Index>& hidden, const char* structure) {
  ModelSpec spec;
  spec.network.hidden = hidden;
  Dataset data;
  data.X = Eigen::MatrixXd::Zero(10, 20);
  data.Y = Eigen::MatrixXd::Zero(10, 1);
  LaplaceMethod method;
  method.evidence.map.optimizer = Optimizer::kLbfgs;
  method.evidence.structure = parse_hessian_structure(structure);
  return estimate_fit_memory(fit_memory_request(spec, data, method));
}

// lowrank:K holds its Lanczos basis, min(W, 2K + 100) vectors of W, and says how to hold less.
TEST(FitMemory, LowRankCurvatureCountsItsLanczosBasis) {
  const MemoryEstimate diag = structured_estimate({256, 256}, "diag");
  const MemoryEstimate lowrank = structured_estimate({256, 256}, "lowrank:500");
  const double W = 71425.0;
  EXPECT_NEAR(lowrank.bytes - diag.bytes, (2 * 500 + 100) * W * 8.0, 1.0);
  EXPECT_NE(lowrank.terms.front().what.find("Lanczos basis (1100 vectors of W)"), std::string::npos);
  EXPECT_NE(lowrank.avoid.find("a smaller K"), std::string::npos);
}

// kron holds each layer's Kronecker factors, in² + out² entries (4 copies), and last-layer its p × p
// precision (3 copies): a 20-4000-1 network (W = 88,001) is 2 × 4000² + 20² + 1 entries under kron,
// 0.5 GB beside the 14 MB of its vectors, and says how to hold less.
TEST(FitMemory, StructuredCurvatureCountsItsDenseBlocks) {
  const MemoryEstimate diag = structured_estimate({4000}, "diag");
  const MemoryEstimate kron = structured_estimate({4000}, "kron");
  EXPECT_NEAR(kron.bytes - diag.bytes, 4.0 * (2.0 * 4000 * 4000 + 20 * 20 + 1) * 8.0, 1.0);
  EXPECT_EQ(kron.terms.front().kind, MemoryTermKind::kCurvatureBlocks);
  EXPECT_NE(kron.avoid.find("fewer hidden units"), std::string::npos) << kron.avoid;
  const MemoryEstimate last_layer = structured_estimate({4000}, "last-layer");
  EXPECT_NEAR(last_layer.bytes - diag.bytes, 3.0 * 4001.0 * 4001.0 * 8.0, 1.0);
}

// The default Laplace fit of a 20-256-256-1 network (W = 71,425) on 2,000 rows takes the online
// loop with kron (one full-batch curvature would be 2000·71425·2000 = 2.9e11 multiply-adds), so its
// memory is that of vectors of W, not the 41 GB of one W × W matrix; with the joint loop asked for,
// the full curvature's.
TEST(FitMemory, TheAutomaticLoopIsEstimatedAsTheLoopItChooses) {
  ModelSpec spec;
  spec.network.hidden = {256, 256};
  Dataset data;
  data.X = Eigen::MatrixXd::Zero(2000, 20);
  data.Y = Eigen::MatrixXd::Zero(2000, 1);
  LaplaceMethod method;
  const FitMemoryRequest automatic = fit_memory_request(spec, data, method);
  EXPECT_EQ(automatic.kind, FitMemoryKind::kPoint);
  EXPECT_LT(estimate_fit_memory(automatic).bytes, 1e9);
  method.evidence.loop = EvidenceLoop::kJoint;
  EXPECT_EQ(fit_memory_request(spec, data, method).kind, FitMemoryKind::kLaplace);
}

// The draws kept are counted with every column a draw has, the pointwise log-likelihoods too,
// and twice (a store grows by doubling; the weights are copied out for prediction).
TEST(FitMemory, KeptDrawsCountEveryColumn) {
  Dataset data;
  data.X = Eigen::MatrixXd::Zero(5000, 2);
  data.Y = Eigen::MatrixXd::Zero(5000, 1);
  ModelSpec spec;
  spec.network.hidden = {10};  // W = 41
  SamplingMethod method;
  method.sampler.chains = 4;
  method.sampler.num_draws = 1000;
  method.chains.gibbs = false;
  const FitMemoryRequest without = fit_memory_request(spec, data, method);
  EXPECT_EQ(without.draws, 1000);
  EXPECT_EQ(without.draw_columns, 7 + 41 + 5);  // sampler columns, weights, 5 monitored outputs
  method.chains.log_lik = true;
  const FitMemoryRequest with = fit_memory_request(spec, data, method);
  EXPECT_EQ(with.draw_columns, without.draw_columns + 5000);
  EXPECT_NEAR(estimate_fit_memory(with).bytes - estimate_fit_memory(without).bytes, 2.0 * 4 * 1000 * 5000 * 8.0, 1.0);
  // Thinning keeps ⌈draws/thin⌉.
  method.sampler.thin = 3;
  EXPECT_EQ(fit_memory_request(spec, data, method).draws, 334);
}

// A committee holds one fit's memory per member fitted at once, and every member's factor.
TEST(FitMemory, ACommitteeCountsItsFitsAtOnceAndItsKeptFactors) {
  FitMemoryRequest r;
  r.params = 12001;
  r.rows = 500;
  r.inputs = 2;
  const MemoryEstimate one = estimate_fit_memory(r);
  r.fits_at_once = 2;
  r.models_kept = 5;
  const MemoryEstimate committee = estimate_fit_memory(r);
  const double W2 = 12001.0 * 12001.0 * 8.0;
  ASSERT_FALSE(committee.terms.empty());
  EXPECT_DOUBLE_EQ(committee.terms.front().bytes, 2.0 * 7.5 * W2);
  EXPECT_NE(committee.terms.front().what.find("2 fits at once"), std::string::npos) << committee.describe();
  bool kept = false;
  for (const MemoryTerm& t : committee.terms) {
    if (t.kind == MemoryTermKind::kCommittee) {
      kept = true;
      EXPECT_DOUBLE_EQ(t.bytes, 5.0 * W2);
    }
  }
  EXPECT_TRUE(kept) << committee.describe();
  EXPECT_NEAR(committee.bytes - 2.0 * one.bytes, 5.0 * W2, 2.0 * 500 * 3 * 8.0 + 1.0);  // the data once, not twice
  EXPECT_NE(committee.avoid.find("CommitteeOptions::threads"), std::string::npos) << committee.avoid;
}

TEST(FitMemory, AvailableMemoryIsReadFromTheSystem) {
  const double bytes = available_memory();
  EXPECT_GT(bytes, 1e6);  // any machine that runs the tests has a megabyte left
  EXPECT_EQ(format_bytes(1.5e9), "1.5 GB");
  EXPECT_EQ(format_bytes(512), "512 B");
}

}  // namespace
}  // namespace occam

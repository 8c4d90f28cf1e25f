// The evidence ascent at a group the data do not determine: its maximum is at α = ∞ (γ → 0), and
// the ascent sets the group's α to the upper bound in one step and reports it held there, rather
// than walking it outward step after step (src/inference/evidence/evidence_ascent.cc, kPrunedGamma).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "occam/evidence.h"
#include "occam/likelihood.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "testing/tanh_teacher.h"

namespace occam {
namespace {

// 80 rows of tanh_teacher.h's problem and a 3-8-1 network: the teacher needs no biases, and the
// evidence prunes them.
Posterior pruning_problem(std::uint64_t seed) { return testing::tanh_teacher_posterior(seed, 80, 8); }

TEST(EvidencePruning, AGroupTheDataDoNotDetermineIsHeldAtTheUpperBound) {
  Posterior post = pruning_problem(4);
  Rng init(1);
  Eigen::VectorXd w = post.network().initial_params(init);
  const EvidenceResult r = fit_evidence(&post, EvidenceOptions{}, &w);
  const EvidenceSummary& s = r.summary;
  ASSERT_EQ(s.termination, Termination::kConverged) << s.message;
  EXPECT_LE(s.gradient_norm, s.gradient_tolerance);
  EXPECT_LE(s.hyper_gradient_norm, s.hyper_gradient_tolerance);
  // The hidden biases: at the bound, γ vanishing, and reported as held there.
  const auto it = std::find(s.group_names.begin(), s.group_names.end(), "hidden_biases");
  ASSERT_NE(it, s.group_names.end());
  const auto g = static_cast<Index>(it - s.group_names.begin());
  EXPECT_NEAR(s.alpha[g], 1e10, 1e10 * 1e-12);  // exp(log 1e10)
  EXPECT_LT(s.gamma[g], 1e-3);
  EXPECT_NE(std::find(s.at_bound.begin(), s.at_bound.end(), "hidden_biases"), s.at_bound.end());
  // The groups the data do determine are not.
  for (const std::string name : {"input_weights", "output_weights"}) {
    EXPECT_EQ(std::find(s.at_bound.begin(), s.at_bound.end(), name), s.at_bound.end()) << name;
  }
}

}  // namespace
}  // namespace occam

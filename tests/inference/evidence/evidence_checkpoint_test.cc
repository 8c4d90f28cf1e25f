// The joint evidence ascent's checkpoints (EvidenceOptions::checkpoint, ::resume): the ascent
// resumed from the state it saved after any of its steps ends where the uninterrupted ascent ends,
// bit for bit, without running again the MAPs before that step.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "occam/evidence.h"
#include "occam/posterior.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/tanh_teacher.h"

namespace occam {
namespace {

using testing::bitwise_equal;

// 80 rows of tanh_teacher.h's problem and a 3-8-1 network (the evidence prunes its biases).
Posterior problem() { return testing::tanh_teacher_posterior(4, 80, 8); }

EvidenceOptions joint() {
  EvidenceOptions options;
  options.loop = EvidenceLoop::kJoint;
  return options;
}

Eigen::VectorXd start_weights(const Posterior& post) {
  Rng init(1);
  return post.network().initial_params(init);
}

// problem() fitted from the start weights with `options`, resumed from `from`: the result, its w,
// and the MAP iterations the run spent itself.
struct Resumed {
  EvidenceResult result;
  Eigen::VectorXd w;
  int map_iterations_run = 0;
};
Resumed resume(EvidenceOptions options, const EvidenceCheckpoint& from) {
  options.resume = std::make_shared<EvidenceCheckpoint>(from);
  int map_iterations_run = 0;
  options.map.callback = [&map_iterations_run](const MapIteration&) {
    ++map_iterations_run;
    return CallbackReturn::kContinue;
  };
  Posterior fresh = problem();
  Eigen::VectorXd w = start_weights(fresh);
  EvidenceResult result = fit_evidence(&fresh, options, &w);
  return {std::move(result), std::move(w), map_iterations_run};
}

TEST(EvidenceCheckpoint, AnAscentResumedFromAnyOfItsCheckpointsEndsAsTheUninterruptedOne) {
  std::vector<EvidenceCheckpoint> saved;
  EvidenceOptions options = joint();
  options.checkpoint = [&saved](const EvidenceCheckpoint& c) { saved.push_back(c); };
  Posterior post = problem();
  Eigen::VectorXd w = start_weights(post);
  const EvidenceResult whole = fit_evidence(&post, options, &w);
  const EvidenceSummary& s = whole.summary;
  ASSERT_EQ(s.termination, Termination::kConverged) << s.message;
  // One state after the start and after every step, the last the one the fit ended on.
  ASSERT_GE(saved.size(), 4u);
  for (std::size_t k = 0; k < saved.size(); ++k) EXPECT_EQ(saved[k].steps, static_cast<int>(k));
  EXPECT_TRUE(bitwise_equal(saved.back().w, w));
  EXPECT_EQ(saved.back().summary.map_iterations, s.map_iterations);
  EXPECT_EQ(saved.back().summary.trace.size(), s.trace.size());

  for (const std::size_t k : {std::size_t{0}, saved.size() / 2, saved.size() - 1}) {
    SCOPED_TRACE(k);
    const EvidenceCheckpoint& from = saved[k];
    const auto [resumed, w_again, map_iterations_run] = resume(joint(), from);
    const EvidenceSummary& r = resumed.summary;
    EXPECT_EQ(r.termination, s.termination);
    EXPECT_TRUE(bitwise_equal(w_again, w));
    EXPECT_EQ(r.log_evidence, s.log_evidence);
    EXPECT_TRUE(bitwise_equal(r.alpha, s.alpha));
    EXPECT_EQ(r.beta, s.beta);
    EXPECT_TRUE(bitwise_equal(r.gamma, s.gamma));
    EXPECT_TRUE(bitwise_equal(r.hyper_gradient, s.hyper_gradient));
    EXPECT_EQ(r.outer_iterations, s.outer_iterations);
    EXPECT_EQ(r.map_iterations, s.map_iterations);
    EXPECT_EQ(r.map_steps.refused, s.map_steps.refused);
    ASSERT_EQ(r.trace.size(), s.trace.size());
    for (std::size_t i = 0; i < s.trace.size(); ++i) EXPECT_EQ(r.trace[i].log_evidence, s.trace[i].log_evidence);
    // Only the steps after the checkpoint ran: none of the MAP iterations before it.
    EXPECT_EQ(map_iterations_run, s.map_iterations - from.summary.map_iterations);
    EXPECT_TRUE(bitwise_equal(resumed.laplace.mean, whole.laplace.mean));
    EXPECT_EQ(resumed.laplace.log_det_precision(), whole.laplace.log_det_precision());
    EXPECT_GE(r.seconds, from.summary.seconds);
    EXPECT_EQ(r.resumed_at_step, from.steps);
  }
  EXPECT_EQ(s.resumed_at_step, -1);
}

// With a tolerance on dL/dφ no ascent meets, the ascent climbs to the maximum and then ends when
// no step raises L any more (kNoProgress, the trust region collapsed). The state it saved after
// that step says so, and a resume from it ends there at once, as the fit did: the same
// termination, message, steps and w, no MAP iteration run, no state saved again. (Before, the
// state did not keep the ending, and the resumed ascent tried further steps from it.)
TEST(EvidenceCheckpoint, AnAscentThatEndedWithoutProgressEndsAtOnceWhenResumedFromItsLastState) {
  std::vector<EvidenceCheckpoint> saved;
  EvidenceOptions options = joint();
  options.hyper_gradient_tolerance = 1e-300;
  options.max_outer_iterations = 1000;  // the collapsed trust region ends it, not the budget
  options.checkpoint = [&saved](const EvidenceCheckpoint& c) { saved.push_back(c); };
  Posterior post = problem();
  Eigen::VectorXd w = start_weights(post);
  const EvidenceResult whole = fit_evidence(&post, options, &w);
  const EvidenceSummary& s = whole.summary;
  ASSERT_EQ(s.termination, Termination::kNoProgress) << s.message;
  ASSERT_FALSE(saved.empty());
  for (std::size_t k = 0; k + 1 < saved.size(); ++k) EXPECT_FALSE(saved[k].ended.has_value()) << k;
  const EvidenceCheckpoint& last = saved.back();
  ASSERT_TRUE(last.ended.has_value());
  EXPECT_EQ(last.ended->termination, Termination::kNoProgress);
  EXPECT_EQ(last.steps, s.outer_iterations);

  EvidenceOptions again = options;
  int saved_again = 0;
  again.checkpoint = [&saved_again](const EvidenceCheckpoint&) { ++saved_again; };
  const auto [resumed, w_again, map_iterations_run] = resume(again, last);
  const EvidenceSummary& r = resumed.summary;
  EXPECT_EQ(r.termination, s.termination);
  EXPECT_EQ(r.message, s.message);
  EXPECT_EQ(r.stopping_test, s.stopping_test);
  EXPECT_EQ(r.outer_iterations, s.outer_iterations);
  EXPECT_EQ(r.map_iterations, s.map_iterations);
  EXPECT_EQ(r.trace.size(), s.trace.size());
  EXPECT_TRUE(bitwise_equal(w_again, w));
  EXPECT_EQ(r.log_evidence, s.log_evidence);
  EXPECT_TRUE(bitwise_equal(r.hyper_gradient, s.hyper_gradient));
  EXPECT_EQ(map_iterations_run, 0);
  EXPECT_EQ(saved_again, 0);
  EXPECT_EQ(r.resumed_at_step, last.steps);
}

TEST(EvidenceCheckpoint, OnlyTheJointAscentHasThem) {
  for (const EvidenceLoop loop : {EvidenceLoop::kOuter, EvidenceLoop::kOnline}) {
    EvidenceOptions options = joint();
    options.loop = loop;
    if (loop == EvidenceLoop::kOnline) options.structure = parse_hessian_structure("kron");
    options.checkpoint = [](const EvidenceCheckpoint&) {};
    Posterior post = problem();
    Eigen::VectorXd w = start_weights(post);
    try {
      fit_evidence(&post, options, &w);
      ADD_FAILURE() << "a checkpoint was accepted with the " << to_string(loop) << " loop";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(to_string(loop)), std::string::npos) << e.what();
    }
  }
}

TEST(EvidenceCheckpoint, ACheckpointOfAnotherNetworkIsRefused) {
  std::vector<EvidenceCheckpoint> saved;
  EvidenceOptions options = joint();
  options.max_outer_iterations = 1;
  options.checkpoint = [&saved](const EvidenceCheckpoint& c) { saved.push_back(c); };
  Posterior post = problem();
  Eigen::VectorXd w = start_weights(post);
  fit_evidence(&post, options, &w);
  ASSERT_FALSE(saved.empty());
  auto other = std::make_shared<EvidenceCheckpoint>(saved.front());
  other->w.conservativeResize(other->w.size() - 1);
  EvidenceOptions again = joint();
  again.resume = other;
  Posterior fresh = problem();
  Eigen::VectorXd w_again = start_weights(fresh);
  try {
    fit_evidence(&fresh, again, &w_again);
    ADD_FAILURE() << "a checkpoint of another network was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("weights"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace occam

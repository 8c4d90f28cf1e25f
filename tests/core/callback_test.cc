// Progress callbacks that can stop an engine (callback.h), and what each round of the evidence
// loop reports: its log-evidence beside the α, β it belongs to.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>

#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/map.h"
#include "occam/vi.h"
#include "testing/linear_gaussian.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

TEST(StopFlag, TheEvidenceGradientStopsWhenItsThreadsFlagIsSet) {
  // A softmax regression: the exact gradient of the log-evidence loops over pairs of outputs
  // with no callback of its own. With the thread's stop flag set it throws StoppedOnRequest; the
  // flag of another thread, or none, leaves it alone.
  Rng rng(2);
  const Index m = 30;
  Eigen::MatrixXd X(m, 2), Y(m, 1);
  for (Index n = 0; n < m; ++n) {
    X(n, 0) = rng.normal();
    X(n, 1) = rng.normal();
    Y(n, 0) = static_cast<double>(n % 3);
  }
  const Linear net(2, 3, true);
  Posterior post(net.clone(), std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b", "c"}),
                 Prior::from_network(net, AlphaGroups::kSingle, 1.0), X, Y);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  find_map(post, MapOptions{}, &w);
  const LaplaceApproximation q = laplace(post, w, HessianKind::kGgn);
  const Eigen::VectorXd free_run = total_log_evidence_gradient(post, q);
  std::atomic<bool> stop{true};
  {
    const ScopedStopFlag watch(&stop);
    EXPECT_TRUE(stop_requested());
    EXPECT_THROW(total_log_evidence_gradient(post, q), StoppedOnRequest);
    std::thread other([&] { EXPECT_FALSE(stop_requested()); });  // the flag is this thread's
    other.join();
    stop = false;
    EXPECT_EQ(total_log_evidence_gradient(post, q), free_run);
  }
  stop = true;
  EXPECT_FALSE(stop_requested());  // the scope has ended
}

TEST(EvidenceTrace, EachRoundsLogEvidenceBelongsToTheAlphaAndBetaBesideIt) {
  // Bayesian linear regression: the MAP is exact after one Levenberg–Marquardt step, so each
  // round's log-evidence must equal the closed form at the α, β the round reports. A trace that
  // showed the re-estimated values beside the previous round's evidence fails this by far: the
  // early rounds move α and β by orders of magnitude.
  const auto d = testing::linear_data(40, 3, 0.3, 5);
  Posterior post = testing::linear_posterior(d, 1e-3, 1e-3, 0.1);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  EvidenceOptions options;
  options.map.gradient_tolerance = 1e-12;
  options.map.function_tolerance = 0.0;
  options.tolerance = 1e-12;
  const EvidenceResult r = fit_evidence(&post, options, &w);
  ASSERT_EQ(r.summary.termination, Termination::kConverged) << r.summary.message;
  ASSERT_GE(r.summary.trace.size(), 3u);
  const Eigen::MatrixXd Phi = testing::design(d.X);
  for (const EvidenceIteration& it : r.summary.trace) {
    Eigen::VectorXd precision(Phi.cols());
    precision.head(Phi.cols() - 1).setConstant(it.alpha[0]);  // weights
    precision[Phi.cols() - 1] = it.alpha[1];                  // intercept
    const double exact = testing::exact_log_evidence(Phi, d.Y.col(0), precision, it.beta);
    EXPECT_NEAR(it.log_evidence, exact, 1e-7 * std::abs(exact)) << "round " << it.iteration;
  }
  // The first round ran at the starting values.
  EXPECT_DOUBLE_EQ(r.summary.trace.front().alpha[0], 1e-3);
  EXPECT_DOUBLE_EQ(r.summary.trace.front().beta, 0.1);
}

TEST(Callbacks, AbortStopsEveryMapOptimizerWithItsBestPoint) {
  const auto d = testing::gap_data(40, 0.1, 3);
  for (Optimizer optimizer :
       {Optimizer::kLevenbergMarquardt, Optimizer::kNewton, Optimizer::kLbfgs, Optimizer::kAdam}) {
    SCOPED_TRACE(to_string(optimizer));
    auto [post, w] = testing::tanh_network(d, 8, AlphaGroups::kDefault, 1.0, 10.0, 1);
    double start_value;
    ASSERT_TRUE(post.evaluate(w, &start_value, nullptr));
    MapOptions options;
    options.optimizer = optimizer;
    options.batch_size = 10;
    int calls = 0;
    options.callback = [&calls](const MapIteration&) {
      return ++calls == 3 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    };
    const MapSummary s = find_map(post, options, &w);
    EXPECT_EQ(s.termination, Termination::kAborted) << s.message;
    EXPECT_EQ(calls, 3);
    double value;
    ASSERT_TRUE(post.evaluate(w, &value, nullptr));
    EXPECT_GE(value, start_value);  // the best point so far, not a worse one
  }
}

TEST(Callbacks, ACallbackThatReturnsNothingAlwaysContinues) {
  // A progress printer written as a void lambda converts to the callback type and never stops
  // the run: the same fit runs to the same end as without it.
  const auto d = testing::gap_data(40, 0.1, 3);
  auto [post, w] = testing::tanh_network(d, 8, AlphaGroups::kDefault, 1.0, 10.0, 1);
  Eigen::VectorXd w_plain = w;
  MapOptions options;
  options.max_iterations = 20;
  const MapSummary plain = find_map(post, options, &w_plain);
  int calls = 0;
  options.callback = [&calls](const MapIteration&) { ++calls; };
  ASSERT_TRUE(static_cast<bool>(options.callback));
  const MapSummary watched = find_map(post, options, &w);
  EXPECT_GT(calls, 0);
  EXPECT_EQ(watched.termination, plain.termination);
  EXPECT_EQ(watched.iterations, plain.iterations);
  EXPECT_EQ(w, w_plain);
  options.callback = nullptr;
  EXPECT_FALSE(static_cast<bool>(options.callback));
}

TEST(Callbacks, AbortEndsTheEvidenceLoopOnAConsistentState) {
  const auto d = testing::gap_data(40, 0.1, 3);
  auto [post, w] = testing::tanh_network(d, 6, AlphaGroups::kDefault, 1.0, 10.0, 2);
  EvidenceOptions options;
  options.callback = [](const EvidenceIteration& it) {
    return it.iteration == 2 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  const EvidenceResult r = fit_evidence(&post, options, &w);
  EXPECT_EQ(r.summary.termination, Termination::kAborted) << r.summary.message;
  ASSERT_FALSE(r.summary.trace.empty());
  EXPECT_EQ(r.summary.trace.back().iteration, 2);
  // The state kept is the best round so far — the last accepted entry (the ascent's round 0 is its
  // start): its hyperparameters, its w_MAP, and the Laplace approximation and log-evidence at them.
  const auto kept = std::find_if(r.summary.trace.rbegin(), r.summary.trace.rend(),
                                 [](const EvidenceIteration& it) { return it.accepted; });
  ASSERT_NE(kept, r.summary.trace.rend());
  EXPECT_EQ(post.prior().hyperparameters(), kept->alpha);
  EXPECT_EQ(post.likelihood().precision(), kept->beta);
  EXPECT_EQ(r.laplace.mean, w);
  EXPECT_DOUBLE_EQ(r.summary.log_evidence, log_evidence(post, r.laplace));
  EXPECT_NEAR(r.summary.log_evidence, kept->log_evidence, 1e-9 * std::abs(kept->log_evidence));

  // A MAP run stopped inside the loop stops the loop too.
  auto [post2, w2] = testing::tanh_network(d, 6, AlphaGroups::kDefault, 1.0, 10.0, 2);
  EvidenceOptions map_stop;
  map_stop.map.callback = [](const MapIteration&) { return CallbackReturn::kAbort; };
  const EvidenceResult r2 = fit_evidence(&post2, map_stop, &w2);
  EXPECT_EQ(r2.summary.termination, Termination::kAborted) << r2.summary.message;
  EXPECT_LE(r2.summary.trace.size(), 1u);
  EXPECT_TRUE(std::isfinite(r2.summary.log_evidence));
  EXPECT_EQ(r2.summary.stopping_test, "the callback asked to stop");

  // Stopped in a later trial's MAP (the way Ctrl-C stops `occam fit`): the report says so, not
  // that a step budget ran out.
  int stopped = 0;
  for (const int stop_at : {40, 80, 160}) {
    SCOPED_TRACE("stopped at MAP iteration " + std::to_string(stop_at));
    auto [post3, w3] = testing::tanh_network(d, 6, AlphaGroups::kDefault, 1.0, 10.0, 2);
    EvidenceOptions late_stop;
    int calls = 0;
    late_stop.map.callback = [&calls, stop_at](const MapIteration&) {
      return ++calls >= stop_at ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    };
    const EvidenceResult r3 = fit_evidence(&post3, late_stop, &w3);
    if (calls < stop_at) continue;  // the fit ended first
    ++stopped;
    EXPECT_EQ(r3.summary.termination, Termination::kAborted) << r3.summary.message;
    EXPECT_EQ(r3.summary.stopping_test, "the callback asked to stop") << r3.summary.message;
    EXPECT_EQ(r3.summary.message.find("maximum of"), std::string::npos) << r3.summary.message;
  }
  EXPECT_GT(stopped, 0);  // at least one fit ran long enough to be stopped
}

TEST(Callbacks, AbortStopsVariationalInferenceAtAnEvaluation) {
  const auto d = testing::gap_data(40, 0.1, 3);
  auto [post, w] = testing::tanh_network(d, 4, AlphaGroups::kDefault, 1.0, 10.0, 2);
  VariationalOptions options;
  options.family = parse_variational_family("meanfield");
  options.adapt_iterations = 0;
  options.eval_every = 20;
  options.callback = [](const VariationalIteration& it) {
    return it.iteration >= 60 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  const VariationalResult r = fit_variational(&post, options, w);
  EXPECT_EQ(r.summary.termination, Termination::kAborted) << r.summary.message;
  EXPECT_EQ(r.summary.iterations, 60);
  EXPECT_EQ(r.summary.trace.size(), 3u);
  EXPECT_TRUE(std::isfinite(r.summary.elbo));
}

}  // namespace
}  // namespace occam

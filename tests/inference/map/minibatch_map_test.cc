// The minibatch MAP (minibatch_map.h): Adam and SGD with momentum near the exact ridge solution,
// termination from the full-batch gradient, the same numbers for one and two threads, progress
// reports with the epochs planned, and a stop on request.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "occam/linear.h"
#include "occam/minibatch_map.h"
#include "testing/linear_gaussian.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

Posterior ridge(const testing::ToyData& d, double alpha, double beta, int threads = 1) {
  auto net = std::make_unique<Linear>(d.X.cols(), 1, true);
  Prior prior = Prior::from_network(*net, AlphaGroups::kSingle, alpha);
  DataShard shard;
  shard.threads = threads;
  shard.block_rows = 64;
  return Posterior(std::move(net), std::make_unique<GaussianLikelihood>(beta), std::move(prior), d.X, d.Y, shard);
}

// Adam and SGD with momentum, constant and cosine schedules, end near the ridge solution: within a
// few posterior standard deviations (1/√(β·m) ≈ 0.01 per weight here), which the minibatch noise
// of the last steps sets.
TEST(MinibatchMap, AdamAndSgdEndNearTheRidgeSolution) {
  const auto d = testing::linear_data(400, 3, 0.2, 9);
  const Posterior post = ridge(d, 1.0, 25.0);
  Eigen::MatrixXd Phi(d.X.rows(), 4);
  Phi << d.X, Eigen::VectorXd::Ones(d.X.rows());
  const auto exact = testing::exact_posterior(Phi, d.Y.col(0), Eigen::VectorXd::Constant(4, 1.0), 25.0);
  const Eigen::VectorXd sd = exact.covariance.diagonal().cwiseSqrt();
  for (Optimizer optimizer : {Optimizer::kAdam, Optimizer::kSgd}) {
    for (LearningRateSchedule schedule : {LearningRateSchedule::kConstant, LearningRateSchedule::kCosine}) {
      MinibatchOptions o;
      o.optimizer = optimizer;
      o.schedule = schedule;
      o.epochs = 200;
      o.batch_size = 50;
      o.learning_rate = optimizer == Optimizer::kAdam ? 1e-2 : 1e-5;
      Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
      const MinibatchSummary s = find_map_minibatch(post, o, &w);
      const std::string what = std::string(to_string(optimizer)) + "/" + to_string(schedule);
      EXPECT_EQ(s.epochs, 200) << what;
      EXPECT_EQ(s.steps, 200 * 8) << what;
      EXPECT_NE(s.termination, Termination::kFailure) << what << ": " << s.message;
      EXPECT_LT(((w - exact.mean).array() / sd.array()).abs().maxCoeff(), 3.0) << what << ": " << w.transpose();
    }
  }
}

TEST(MinibatchMap, NeverConvergedWhenTheFullBatchGradientIsLarge) {
  const auto d = testing::gap_data(200, 0.1, 2);
  auto [post, w] = testing::tanh_network(d, 10, AlphaGroups::kDefault, 0.01, 100.0, 4);
  MinibatchOptions o;
  o.epochs = 2;
  const MinibatchSummary s = find_map_minibatch(post, o, &w);
  EXPECT_EQ(s.termination, Termination::kMaxIterations) << s.message;
  EXPECT_GT(s.gradient_norm, s.gradient_tolerance);
  // The summary's norm is the full-batch one at the returned w.
  double log_p;
  Eigen::VectorXd grad;
  ASSERT_TRUE(post.evaluate(w, &log_p, &grad));
  EXPECT_EQ(s.gradient_norm, grad.norm());
  EXPECT_EQ(s.objective, -log_p);
}

TEST(MinibatchMap, SameNumbersForOneAndTwoThreads) {
  const auto d = testing::linear_data(300, 3, 0.2, 4);
  std::vector<Eigen::VectorXd> weights;
  std::vector<double> norms;
  for (int threads : {1, 2}) {
    const Posterior post = ridge(d, 1.0, 25.0, threads);
    MinibatchOptions o;
    o.optimizer = Optimizer::kSgd;
    o.learning_rate = 1e-5;
    o.epochs = 5;
    o.batch_size = 32;
    o.check_every = 1;
    o.seed = 17;
    Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
    norms.push_back(find_map_minibatch(post, o, &w).gradient_norm);
    weights.push_back(w);
  }
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(norms[0], norms[1]);
}

// Progress with an ETA: each report carries the epoch, the epochs planned and the fraction done;
// kAbort (a Ctrl-C in the command-line tool) ends the run within the epoch, as kAborted.
TEST(MinibatchMap, ReportsProgressAndStopsWhenAsked) {
  const auto d = testing::linear_data(1000, 3, 0.2, 5);
  const Posterior post = ridge(d, 1.0, 25.0);
  MinibatchOptions o;
  o.epochs = 50;
  o.batch_size = 10;             // 100 steps an epoch
  o.steps_between_reports = 30;  // three reports within each epoch, then its end
  std::vector<MapIteration> seen;
  o.callback = [&](const MapIteration& it) {
    seen.push_back(it);
    return seen.size() == 6 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  Eigen::VectorXd w = Eigen::VectorXd::Zero(post.dim());
  const MinibatchSummary s = find_map_minibatch(post, o, &w);
  EXPECT_EQ(s.termination, Termination::kAborted) << s.message;
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[3].iteration, 1);
  EXPECT_EQ(seen[3].epoch_fraction, 1.0);
  EXPECT_EQ(seen[4].iteration, 2);
  EXPECT_NEAR(seen[4].epoch_fraction, 0.3, 1e-12);
  EXPECT_EQ(seen[5].total, 50);
  EXPECT_EQ(s.epochs, 1);
  EXPECT_EQ(s.steps, 160);  // the second epoch stopped after its 60th step
  EXPECT_TRUE(std::isfinite(s.gradient_norm));
}

TEST(MinibatchMap, ValidateNamesTheBadField) {
  MinibatchOptions o;
  o.momentum = 1.0;
  try {
    o.validate();
    ADD_FAILURE() << "momentum 1 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("momentum"), std::string::npos) << e.what();
  }
  o = MinibatchOptions{};
  o.optimizer = Optimizer::kLbfgs;
  EXPECT_THROW(o.validate(), Error);
}

}  // namespace
}  // namespace occam

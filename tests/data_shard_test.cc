// A posterior whose rows are spread over processes (DataShard): its value, gradient, Hessian-vector
// products and L-BFGS MAP have the same bits on 1, 2 or 3 processes and any number of threads.
#include <gtest/gtest.h>

#include "curvature.h"
#include "occam/laplace.h"
#include "occam/map.h"
#include "occam/posterior.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/mpi_check.h"
#include "testing/thread_group.h"
#include "testing/sharded_posterior.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::ThreadGroup;
using testing::ToyData;

using testing::shard_of;
using testing::shard_start;
constexpr Index kBlockRows = testing::kShardBlockRows;

ToyData data() { return testing::shard_test_data(); }

// Everything one process computes: log p, ∇ log p, log p(D|w), the GGN and exact Hessian-vector
// products, and the L-BFGS MAP from the seeded start, in one vector.
Eigen::VectorXd everything(const Posterior& p) {
  const Eigen::VectorXd w = shard_start(p);
  double log_p = 0.0;
  Eigen::VectorXd grad;
  EXPECT_TRUE(p.evaluate(w, &log_p, &grad));
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(w.size(), -1.0, 1.0);
  const Eigen::VectorXd ggn = p.data_hessian_vp(w, v, HessianKind::kGgn), exact = p.data_hessian_vp(w, v, HessianKind::kExact);
  MapSummary s;
  const Eigen::VectorXd map = testing::shard_map(p, &s);
  EXPECT_GT(s.iterations, 20);
  Eigen::VectorXd all(2 + 4 * w.size());
  all << log_p, p.log_likelihood(w), grad, ggn, exact, map;
  return all;
}

Eigen::VectorXd spread(const ToyData& d, int K, int threads) {
  ThreadGroup group(K);
  std::vector<Eigen::VectorXd> results(K);
  group.run([&](const Communicator& comm) {
    const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), K);
    results[comm.rank()] = everything(shard_of(d, first, last, &comm, threads));
  });
  for (int r = 1; r < K; ++r) EXPECT_TRUE(bitwise_equal(results[r], results[0])) << "rank " << r << " of " << K;
  return results[0];
}

TEST(DataShard, ProcessesAndThreadsGiveTheBitsOfOneProcess) {
  const ToyData d = data();
  const Eigen::VectorXd one = everything(shard_of(d, 0, d.X.rows(), nullptr, 1));
  for (int K : {1, 2, 3}) {
    for (int threads : {1, 2}) {
      EXPECT_TRUE(bitwise_equal(spread(d, K, threads), one)) << K << " processes, " << threads << " threads";
    }
  }
}

TEST(DataShard, BlocksChangeOnlyTheRoundingOfTheSums) {
  const ToyData d = data();
  const Posterior blocked = shard_of(d, 0, d.X.rows(), nullptr, 1), whole = shard_of(d, 0, d.X.rows(), nullptr, 1, 4096);
  const Eigen::VectorXd w = shard_start(blocked), v = Eigen::VectorXd::LinSpaced(w.size(), -1.0, 1.0);
  double a = 0.0, b = 0.0;
  Eigen::VectorXd ga, gb;
  ASSERT_TRUE(blocked.evaluate(w, &a, &ga));
  ASSERT_TRUE(whole.evaluate(w, &b, &gb));
  EXPECT_NEAR(a, b, 1e-12 * std::abs(b));
  EXPECT_LE((ga - gb).norm(), 1e-12 * gb.norm());
  const Eigen::VectorXd ha = blocked.data_hessian_vp(w, v, HessianKind::kExact), hb = whole.data_hessian_vp(w, v, HessianKind::kExact);
  EXPECT_LE((ha - hb).norm(), 1e-12 * hb.norm());
  EXPECT_FALSE(bitwise_equal(ga, gb));  // the blocks are really summed apart
}

TEST(DataShard, EnginesThatNeedEveryRowRefuseASpreadPosterior) {
  const ToyData d = data();
  ThreadGroup group(2);
  std::vector<std::string> messages(2);
  group.run([&](const Communicator& comm) {
    const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), 2);
    const Posterior p = shard_of(d, first, last, &comm, 1);
    Eigen::VectorXd w = shard_start(p);
    try {
      MapOptions lm;
      lm.optimizer = Optimizer::kLevenbergMarquardt;
      find_map(p, lm, &w);
    } catch (const Error& e) {
      messages[comm.rank()] += e.what();
    }
    EXPECT_THROW(internal::Curvature(p, w), Error);
    for (HessianStructureKind kind :
         {HessianStructureKind::kDiagonal, HessianStructureKind::kLastLayer, HessianStructureKind::kKronecker}) {
      EXPECT_THROW(laplace(p, w, HessianKind::kGgn, HessianStructure{kind}), Error);
    }
    EXPECT_THROW(p.data_hessian(w, HessianKind::kGgn), Error);
    double log_p;
    EXPECT_THROW(p.evaluate_batch(w, {0, 1}, &log_p, nullptr), Error);
  });
  for (const std::string& m : messages) EXPECT_NE(m.find("spread over 2 processes"), std::string::npos) << m;
}

TEST(DataShard, ShardsOffBlockBoundariesOrMissingRowsAreRefused) {
  const ToyData d = data();
  EXPECT_THROW(shard_of(d, 0, 500, nullptr, 1), Error);  // one process must hold every row
  ThreadGroup group(2);
  group.run([&](const Communicator& comm) {
    EXPECT_THROW(shard_of(d, comm.rank() == 0 ? 0 : 100, comm.rank() == 0 ? 100 : 1000, &comm, 1), Error);  // 100 % 64 ≠ 0
  });
}

#ifdef OCCAM_MPI_CHECK
using testing::bits;
using testing::mpi_check_lines;

// The same over real processes: `mpirun -n K` for K = 1, 2, 3, each process with two threads.
TEST(DataShard, MpiProcessesReachTheMapOfOneProcessBitForBit) {
  const ToyData d = data();
  const std::string expected = bits(testing::shard_map(shard_of(d, 0, d.X.rows(), nullptr, 1)));
  for (int K : {1, 2, 3}) {
    std::string output;
    const std::vector<std::string> lines = mpi_check_lines(K, "map 2", &output);
    EXPECT_EQ(static_cast<int>(lines.size()), K) << output;
    for (const std::string& line : lines) EXPECT_EQ(line, expected) << K << " processes";
  }
}
#endif

}  // namespace
}  // namespace occam

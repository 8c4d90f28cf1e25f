// The fixed-order sum (src/core/parallel/fixed_order_sum.h): the same bits however the blocks are
// spread over processes and threads, and RowBlocks' shards.
#include "core/parallel/fixed_order_sum.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <mutex>
#include <thread>

#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/mpi_check.h"
#include "testing/block_terms.h"
#include "testing/thread_group.h"

namespace occam {
namespace {

using internal::FixedOrderSum;
using internal::TreeNode;
using testing::bitwise_equal;
using testing::ThreadGroup;

const internal::BlockTerm kTerm = [](Eigen::Index block, Eigen::VectorXd* out) { *out = testing::block_term(block); };

TEST(FixedOrderSum, ReorderingTheTermsChangesTheirSumSoTheTestsBelowCanFail) {
  const Eigen::Index n = 100;
  Eigen::VectorXd forward = Eigen::VectorXd::Zero(4), backward = Eigen::VectorXd::Zero(4);
  for (Eigen::Index b = 0; b < n; ++b) forward += testing::block_term(b);
  for (Eigen::Index b = n - 1; b >= 0; --b) backward += testing::block_term(b);
  const FixedOrderSum tree(n);
  const Eigen::VectorXd pairwise = tree.value(tree.root(), kTerm);
  EXPECT_FALSE(bitwise_equal(forward, backward));
  EXPECT_FALSE(bitwise_equal(forward, pairwise));
}

TEST(FixedOrderSum, TheCoverOfAnyRangeIsDisjointContiguousAndSmall) {
  for (Eigen::Index n = 1; n <= 40; ++n) {
    const FixedOrderSum tree(n);
    for (Eigen::Index first = 0; first <= n; ++first) {
      for (Eigen::Index last = first; last <= n; ++last) {
        const std::vector<TreeNode> cover = tree.cover(first, last);
        Eigen::Index at = first;
        for (const TreeNode& node : cover) {
          ASSERT_EQ(tree.begin(node), at) << "n " << n << " [" << first << ", " << last << ")";
          at = tree.end(node);
        }
        ASSERT_EQ(at, last);
        ASSERT_LE(static_cast<int>(cover.size()), std::max(1, 2 * tree.height()));
      }
    }
  }
}

TEST(FixedOrderSum, AnySpreadOverProcessesGivesTheSameBits) {
  for (Eigen::Index n : {1, 2, 3, 5, 7, 8, 13, 64, 100, 1000}) {
    const FixedOrderSum tree(n);
    const Eigen::VectorXd reference = tree.value(tree.root(), kTerm);
    for (int K = 1; K <= 8; ++K) {
      const RowBlocks blocks{.num_rows = n * 10, .block_rows = 10};
      ASSERT_EQ(blocks.num_blocks(), n);
      std::vector<std::pair<TreeNode, Eigen::VectorXd>> gathered;
      for (int r = 0; r < K; ++r) {
        const auto [first, last] = blocks.blocks_of(r, K);
        for (auto& node : tree.cover_values(first, last, kTerm, 1)) gathered.push_back(std::move(node));
      }
      EXPECT_TRUE(bitwise_equal(tree.combine(gathered), reference)) << "n " << n << ", " << K << " processes";
    }
  }
}

TEST(FixedOrderSum, AnyNumberOfThreadsGivesTheSameBits) {
  const SerialCommunicator serial;
  for (Eigen::Index n : {1, 3, 17, 100, 257}) {
    const FixedOrderSum tree(n);
    const Eigen::VectorXd reference = tree.value(tree.root(), kTerm);
    for (int threads = 1; threads <= 5; ++threads) {
      EXPECT_TRUE(bitwise_equal(tree.sum(serial, 0, n, kTerm, threads), reference))
          << "n " << n << ", " << threads << " threads";
    }
  }
}

TEST(FixedOrderSum, ProcessesExchangingTheirCoversAllGetTheSameBits) {
  const Eigen::Index n = 77;
  const FixedOrderSum tree(n);
  const Eigen::VectorXd reference = tree.value(tree.root(), kTerm);
  const RowBlocks blocks{.num_rows = 7700, .block_rows = 100};
  for (int K : {1, 2, 3, 5}) {
    ThreadGroup group(K);
    std::vector<Eigen::VectorXd> results(K);
    group.run([&](const Communicator& comm) {
      const auto [first, last] = blocks.blocks_of(comm.rank(), K);
      results[comm.rank()] = tree.sum(comm, first, last, kTerm, 2);
    });
    for (int r = 0; r < K; ++r) EXPECT_TRUE(bitwise_equal(results[r], reference)) << "rank " << r << " of " << K;
  }
}

TEST(FixedOrderSum, PairwiseRoundingStaysWithinItsBound) {
  // |computed − exact| ≤ h·u·Σ|x| for pairwise summation of depth h (Higham 1993), u = 2^-53.
  const Eigen::Index n = 1000;
  const FixedOrderSum tree(n);
  const Eigen::VectorXd computed = tree.value(tree.root(), kTerm);
  for (Eigen::Index k = 0; k < computed.size(); ++k) {
    long double exact = 0.0L, magnitude = 0.0L;
    for (Eigen::Index b = 0; b < n; ++b) {
      exact += testing::block_term(b)(k);
      magnitude += std::abs(static_cast<long double>(testing::block_term(b)(k)));
    }
    EXPECT_LE(std::abs(static_cast<long double>(computed(k)) - exact), tree.height() * 0x1p-53L * magnitude * 1.01L);
  }
}

TEST(FixedOrderSum, NodesThatDoNotCoverEveryBlockOnceAreRefused) {
  const FixedOrderSum tree(5);
  Eigen::VectorXd v = Eigen::VectorXd::Ones(2);
  EXPECT_THROW(tree.combine({{TreeNode{2, 0}, v}}), Error);  // block 4 missing
  EXPECT_THROW(tree.combine({{TreeNode{2, 0}, v}, {TreeNode{0, 4}, v}, {TreeNode{0, 3}, v}}), Error);  // block 3 twice
  EXPECT_THROW(tree.combine({{TreeNode{3, 0}, v}, {TreeNode{3, 0}, v}}), Error);                       // a node twice
  EXPECT_THROW(tree.combine({{TreeNode{1, 3}, v}, {TreeNode{2, 0}, v}}), Error);  // past the last block
  EXPECT_TRUE(
      bitwise_equal(tree.combine({{TreeNode{2, 0}, v}, {TreeNode{0, 4}, v}}), Eigen::VectorXd::Constant(2, 2.0)));
  EXPECT_THROW(FixedOrderSum(0), Error);
  EXPECT_THROW(tree.cover(2, 6), Error);
}

TEST(RowBlocks, ShardsAreContiguousCoverEveryRowAndDifferByAtMostOneBlock) {
  for (Eigen::Index m : {0, 1, 999, 1000, 1001, 123457}) {
    const RowBlocks blocks{.num_rows = m, .block_rows = 1000};
    for (int K = 1; K <= 6; ++K) {
      Eigen::Index at = 0, fewest = m, most = 0;
      for (int r = 0; r < K; ++r) {
        const auto [first, last] = blocks.rows_of(r, K);
        ASSERT_EQ(first, at);
        at = last;
        fewest = std::min(fewest, last - first);
        most = std::max(most, last - first);
      }
      EXPECT_EQ(at, m);
      EXPECT_LE(most - fewest, blocks.block_rows);
    }
  }
  EXPECT_EQ((RowBlocks{.num_rows = 0, .block_rows = 10}.num_blocks()), 1);
  EXPECT_THROW((RowBlocks{.num_rows = 5, .block_rows = 0}.num_blocks()), Error);
  EXPECT_THROW((RowBlocks{.num_rows = 5, .block_rows = 1}.blocks_of(2, 2)), Error);
}

#ifdef OCCAM_MPI_CHECK
using testing::bits;
using testing::mpi_check_lines;

// The same over real processes: `mpirun -n K` for K = 1, 2, 3, each process with two threads.
TEST(FixedOrderSum, MpiProcessesGetTheBitsOfOneProcess) {
  const Eigen::Index n = 77;
  const FixedOrderSum tree(n);
  const std::string expected = bits(tree.value(tree.root(), kTerm));
  for (int K : {1, 2, 3}) {
    std::string output;
    const std::vector<std::string> lines = mpi_check_lines(K, "sum " + std::to_string(n) + " 2", &output);
    EXPECT_EQ(static_cast<int>(lines.size()), K) << output;
    for (const std::string& line : lines) EXPECT_EQ(line, expected) << K << " processes";
  }
}
#endif

}  // namespace
}  // namespace occam

// fixed_order_sum.h (internal) — a sum of per-block terms whose rounding does not depend on which
// process or thread computed which block.
//
// The n blocks are the leaves of one binary tree: node (ℓ, i) covers the blocks
// [i·2^ℓ, min((i+1)·2^ℓ, n)), and its value is its left child's plus its right child's (left
// first), or the left child's alone when the right one covers no block. The root (h, 0), with
// h = ⌈log₂ n⌉, is the sum. The tree depends on n alone, so every way of computing it gives the
// same bits.
//
// A process that holds the blocks [first, last) computes the largest nodes that lie wholly inside
// its range (its cover: at most 2h nodes, like a segment tree's decomposition of an interval),
// exchanges them with the other processes, and every process completes the nodes above them in the
// same order. Threads inside a process split its cover into smaller nodes and compute those in
// parallel. Pairwise summation also bounds the rounding error by O(ε log n) of the sum of
// magnitudes instead of O(ε n) (Higham 1993, "The accuracy of floating point summation").
//
//   internal::FixedOrderSum tree(blocks.num_blocks());
//   Eigen::VectorXd g = tree.sum(comm, first, last, term, threads);
#pragma once

#include <Eigen/Core>
#include <functional>
#include <vector>

#include "occam/parallel.h"

namespace occam::internal {

// Block b's term, written into *out; every block's term has the same size. Called concurrently
// from several threads when the sum runs with more than one.
using BlockTerm = std::function<void(Eigen::Index block, Eigen::VectorXd* out)>;

struct TreeNode {
  int level = 0;
  Eigen::Index index = 0;
  bool operator==(const TreeNode&) const = default;
};

class FixedOrderSum {
 public:
  explicit FixedOrderSum(Eigen::Index num_blocks);  // Throws Error(kInvalidArgument) when < 1.

  Eigen::Index num_blocks() const { return n_; }
  int height() const { return height_; }
  TreeNode root() const { return {height_, 0}; }
  // The first block of a node and one past its last.
  Eigen::Index begin(TreeNode node) const;
  Eigen::Index end(TreeNode node) const;

  // The largest nodes inside [first, last), left to right; empty when first == last.
  std::vector<TreeNode> cover(Eigen::Index first, Eigen::Index last) const;
  // The cover with nodes split into their children (largest first) until there are at least
  // `pieces` nodes or only leaves are left: work for that many threads.
  std::vector<TreeNode> split(std::vector<TreeNode> nodes, int pieces) const;
  // A node's value from its blocks' terms, children before parents (at most h + 1 vectors live).
  Eigen::VectorXd value(TreeNode node, const BlockTerm& term) const;
  // The values of the cover of [first, last), computed on `threads` threads.
  std::vector<std::pair<TreeNode, Eigen::VectorXd>> cover_values(Eigen::Index first, Eigen::Index last,
                                                                 const BlockTerm& term, int threads) const;
  // The root from node values that cover every block exactly once (in any order). Throws
  // Error(kInvalidArgument) when they do not.
  Eigen::VectorXd combine(const std::vector<std::pair<TreeNode, Eigen::VectorXd>>& nodes) const;

  // The whole sum: this process computes the cover of its blocks [first, last), the processes of
  // comm exchange their covers, and each combines them. Every process must call it, with the
  // ranges of RowBlocks::blocks_of or any other ranges that partition the blocks.
  Eigen::VectorXd sum(const Communicator& comm, Eigen::Index first, Eigen::Index last, const BlockTerm& term,
                      int threads = 1) const;

 private:
  Eigen::Index n_;
  int height_;
};

}  // namespace occam::internal

// fixed_order_sum.cc — the tree sum of src/core/parallel/fixed_order_sum.h, its exchange between
// processes, and RowBlocks (include/occam/parallel.h).
#include "core/parallel/fixed_order_sum.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include "occam/status.h"

namespace occam {

using Eigen::Index;

Index RowBlocks::num_blocks() const {
  if (block_rows < 1) throw Error(ErrorKind::kInvalidArgument, "row blocks: block_rows must be at least 1");
  if (num_rows < 0) throw Error(ErrorKind::kInvalidArgument, "row blocks: num_rows must not be negative");
  return std::max<Index>(1, (num_rows + block_rows - 1) / block_rows);
}

std::pair<Index, Index> RowBlocks::blocks_of(int rank, int size) const {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorKind::kInvalidArgument,
                "row blocks: rank " + std::to_string(rank) + " of " + std::to_string(size) + " processes");
  }
  const Index n = num_blocks();
  return {n * rank / size, n * (rank + 1) / size};
}

std::pair<Index, Index> RowBlocks::rows_of(int rank, int size) const {
  const auto [first, last] = blocks_of(rank, size);
  return {std::min(first * block_rows, num_rows), std::min(last * block_rows, num_rows)};
}

std::pair<Index, Index> RowBlocks::rows_of_block(Index block) const {
  if (block < 0 || block >= num_blocks()) {
    throw Error(ErrorKind::kInvalidArgument, "row blocks: no block " + std::to_string(block));
  }
  return {std::min(block * block_rows, num_rows), std::min((block + 1) * block_rows, num_rows)};
}

}  // namespace occam

namespace occam::internal {

FixedOrderSum::FixedOrderSum(Index num_blocks) : n_(num_blocks), height_(0) {
  if (num_blocks < 1) throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: needs at least one block");
  while ((Index{1} << height_) < n_) ++height_;
}

Index FixedOrderSum::begin(TreeNode node) const { return node.index << node.level; }
Index FixedOrderSum::end(TreeNode node) const { return std::min((node.index + 1) << node.level, n_); }

std::vector<TreeNode> FixedOrderSum::cover(Index first, Index last) const {
  if (first < 0 || last > n_ || first > last) {
    throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: blocks [" + std::to_string(first) + ", " +
                                                 std::to_string(last) + ") are not within the " + std::to_string(n_) +
                                                 " blocks");
  }
  std::vector<TreeNode> nodes;
  for (Index b = first; b < last;) {
    // The largest node that starts at b and ends by `last`: grow while b is aligned to it.
    TreeNode node{0, b};
    while (node.level < height_ && b % (Index{1} << (node.level + 1)) == 0) {
      const TreeNode parent{node.level + 1, b >> (node.level + 1)};
      if (end(parent) > last) break;
      node = parent;
    }
    nodes.push_back(node);
    b = end(node);
  }
  return nodes;
}

std::vector<TreeNode> FixedOrderSum::split(std::vector<TreeNode> nodes, int pieces) const {
  while (static_cast<int>(nodes.size()) < pieces) {
    auto largest = std::max_element(nodes.begin(), nodes.end(),
                                    [&](TreeNode a, TreeNode b) { return end(a) - begin(a) < end(b) - begin(b); });
    if (largest == nodes.end() || largest->level == 0) break;
    const TreeNode left{largest->level - 1, 2 * largest->index}, right{largest->level - 1, 2 * largest->index + 1};
    *largest = left;
    if (begin(right) < n_) nodes.insert(largest + 1, right);
  }
  return nodes;
}

Eigen::VectorXd FixedOrderSum::value(TreeNode node, const BlockTerm& term) const {
  Eigen::VectorXd out;
  if (node.level == 0) {
    term(node.index, &out);
    return out;
  }
  out = value({node.level - 1, 2 * node.index}, term);
  const TreeNode right{node.level - 1, 2 * node.index + 1};
  if (begin(right) < n_) {
    const Eigen::VectorXd r = value(right, term);
    if (r.size() != out.size()) {
      throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: blocks' terms differ in size (" +
                                                   std::to_string(out.size()) + " and " + std::to_string(r.size()) +
                                                   ")");
    }
    out += r;
  }
  return out;
}

std::vector<std::pair<TreeNode, Eigen::VectorXd>> FixedOrderSum::cover_values(Index first, Index last,
                                                                              const BlockTerm& term,
                                                                              int threads) const {
  // More pieces than threads so that unequal pieces still share out evenly.
  const std::vector<TreeNode> nodes = threads > 1 ? split(cover(first, last), 4 * threads) : cover(first, last);
  std::vector<std::pair<TreeNode, Eigen::VectorXd>> values(nodes.size());
  const int workers = std::clamp<int>(threads, 1, std::max<int>(1, static_cast<int>(nodes.size())));
  if (workers == 1) {
    for (std::size_t k = 0; k < nodes.size(); ++k) values[k] = {nodes[k], value(nodes[k], term)};
    return values;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> failures(workers);
  std::vector<std::thread> pool;
  for (int t = 0; t < workers; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (std::size_t k; (k = next.fetch_add(1)) < nodes.size();) values[k] = {nodes[k], value(nodes[k], term)};
      } catch (...) {
        failures[t] = std::current_exception();
        next = nodes.size();
      }
    });
  }
  for (std::thread& t : pool) t.join();
  for (const std::exception_ptr& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
  return values;
}

Eigen::VectorXd FixedOrderSum::combine(const std::vector<std::pair<TreeNode, Eigen::VectorXd>>& nodes) const {
  std::map<std::pair<int, Index>, const Eigen::VectorXd*> known;
  Index covered = 0;
  for (const auto& [node, v] : nodes) {
    if (node.level < 0 || node.level > height_ || node.index < 0 || begin(node) >= n_ ||
        !known.emplace(std::pair{node.level, node.index}, &v).second) {
      throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: node (" + std::to_string(node.level) + ", " +
                                                   std::to_string(node.index) +
                                                   ") is not a node of the tree or is given twice");
    }
    covered += end(node) - begin(node);
  }
  if (covered != n_) {
    throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: the nodes cover " + std::to_string(covered) +
                                                 " blocks, not the " + std::to_string(n_) + " of the tree");
  }
  // The same recursion as value(), with the given nodes in place of block terms.
  std::size_t used = 0;
  const std::function<Eigen::VectorXd(TreeNode)> at = [&](TreeNode node) -> Eigen::VectorXd {
    if (const auto it = known.find({node.level, node.index}); it != known.end()) {
      ++used;
      return *it->second;
    }
    if (node.level == 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  "fixed-order sum: block " + std::to_string(node.index) + " is not covered");
    }
    Eigen::VectorXd out = at({node.level - 1, 2 * node.index});
    const TreeNode right{node.level - 1, 2 * node.index + 1};
    if (begin(right) < n_) {
      const Eigen::VectorXd r = at(right);
      if (r.size() != out.size()) throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: nodes differ in size");
      out += r;
    }
    return out;
  };
  Eigen::VectorXd total = at(root());
  if (used != nodes.size()) throw Error(ErrorKind::kInvalidArgument, "fixed-order sum: nodes overlap");
  return total;
}

Eigen::VectorXd FixedOrderSum::sum(const Communicator& comm, Index first, Index last, const BlockTerm& term,
                                   int threads) const {
  std::vector<std::pair<TreeNode, Eigen::VectorXd>> mine = cover_values(first, last, term, threads);
  if (comm.size() == 1) return combine(mine);
  // Each node as (level, index, size, values…); indices and sizes are exact in a double below 2^53.
  std::vector<double> packed;
  for (const auto& [node, v] : mine) {
    packed.insert(packed.end(),
                  {static_cast<double>(node.level), static_cast<double>(node.index), static_cast<double>(v.size())});
    packed.insert(packed.end(), v.data(), v.data() + v.size());
  }
  const std::vector<double> all = comm.allgather(packed);
  std::vector<std::pair<TreeNode, Eigen::VectorXd>> nodes;
  for (std::size_t k = 0; k < all.size();) {
    if (k + 3 > all.size()) throw Error(ErrorKind::kIo, "fixed-order sum: a process sent a truncated node");
    const TreeNode node{static_cast<int>(all[k]), static_cast<Index>(all[k + 1])};
    const auto size = static_cast<std::size_t>(all[k + 2]);
    k += 3;
    if (k + size > all.size()) throw Error(ErrorKind::kIo, "fixed-order sum: a process sent a truncated node");
    nodes.emplace_back(node, Eigen::Map<const Eigen::VectorXd>(all.data() + k, static_cast<Index>(size)));
    k += size;
  }
  return combine(nodes);
}

}  // namespace occam::internal

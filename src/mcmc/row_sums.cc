#include "row_sums.h"

#include <vector>

#include "occam/parallel.h"
#include "occam/status.h"
#include "parallel/fixed_order_sum.h"

namespace occam::mcmc::internal {
namespace {

const Communicator& processes(const Posterior& posterior) {
  static const SerialCommunicator kSerial;
  return posterior.shard().communicator != nullptr ? *posterior.shard().communicator : kSerial;
}

// The blocks of the whole data and the range [first, last) of them this process holds.
struct HeldBlocks {
  RowBlocks blocks;
  Index first = 0, last = 0;
};

HeldBlocks held_blocks(const Posterior& posterior) {
  const DataShard& shard = posterior.shard();
  const Index rows = posterior.X().rows();
  HeldBlocks held{.blocks = {.num_rows = posterior.num_data(), .block_rows = shard.block_rows}};
  held.first = shard.first_row / shard.block_rows;
  held.last = rows == 0 ? held.first : (shard.first_row + rows - 1) / shard.block_rows + 1;
  return held;
}

void block_term(const Posterior& posterior, const RowBlocks& blocks, Index block, const RowBlockTerm& term,
                Eigen::VectorXd* out) {
  const auto [begin, end] = blocks.rows_of_block(block);
  const Index start = begin - posterior.shard().first_row;
  const Eigen::MatrixXd X = posterior.X().middleRows(start, end - begin), Y = posterior.Y().middleRows(start, end - begin);
  term(X, Y, out);
}

}  // namespace

Eigen::VectorXd sum_over_rows(const Posterior& posterior, const RowBlockTerm& term) {
  const HeldBlocks held = held_blocks(posterior);
  const occam::internal::FixedOrderSum tree(held.blocks.num_blocks());
  return tree.sum(processes(posterior), held.first, held.last,
                  [&](Index block, Eigen::VectorXd* out) { block_term(posterior, held.blocks, block, term, out); },
                  posterior.shard().threads);
}

Eigen::VectorXd gather_rows(const Posterior& posterior, const RowBlockTerm& term) {
  const HeldBlocks held = held_blocks(posterior);
  std::vector<double> mine;
  mine.reserve(static_cast<std::size_t>(posterior.X().rows()));
  Eigen::VectorXd values;
  for (Index block = held.first; block < held.last; ++block) {
    block_term(posterior, held.blocks, block, term, &values);
    const auto [begin, end] = held.blocks.rows_of_block(block);
    if (values.size() != end - begin) {
      throw Error(ErrorKind::kInvalidArgument, "gather_rows: a block's term must hold one value per row");
    }
    mine.insert(mine.end(), values.data(), values.data() + values.size());
  }
  // The processes hold consecutive ranges of rows in rank order: their values concatenated are the
  // rows' in order.
  const std::vector<double> all = processes(posterior).allgather(mine);
  return Eigen::Map<const Eigen::VectorXd>(all.data(), static_cast<Index>(all.size()));
}

}  // namespace occam::mcmc::internal

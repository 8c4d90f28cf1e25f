#include "core/row_sums.h"

#include <vector>

#include "occam/likelihood.h"
#include "occam/parallel.h"
#include "occam/status.h"

namespace occam::internal {

Eigen::VectorXd sum_over_row_blocks(const Posterior& posterior, const RowBlockTerm& term) {
  return posterior.sum_over_rows([&](Index start, Index rows, Eigen::VectorXd* out) {
    const Eigen::MatrixXd X = posterior.X().middleRows(start, rows), Y = posterior.Y().middleRows(start, rows);
    term(X, Y, out);
  });
}

Eigen::VectorXd gather_rows(const Posterior& posterior, const RowBlockTerm& term) {
  const DataShard& shard = posterior.shard();
  const RowBlocks blocks{.num_rows = posterior.num_data(), .block_rows = shard.block_rows};
  const Index rows = posterior.X().rows();
  const Index first = shard.first_row / shard.block_rows;
  const Index last = rows == 0 ? first : (shard.first_row + rows - 1) / shard.block_rows + 1;
  std::vector<double> mine;
  mine.reserve(static_cast<std::size_t>(rows));
  Eigen::VectorXd values;
  for (Index block = first; block < last; ++block) {
    const auto [begin, end] = blocks.rows_of_block(block);
    const Index start = begin - shard.first_row;
    const Eigen::MatrixXd X = posterior.X().middleRows(start, end - begin),
                          Y = posterior.Y().middleRows(start, end - begin);
    term(X, Y, &values);
    if (values.size() != end - begin) {
      throw Error(ErrorKind::kInvalidArgument, "gather_rows: a block's term must hold one value per row");
    }
    mine.insert(mine.end(), values.data(), values.data() + values.size());
  }
  // The processes hold consecutive ranges of rows in rank order: their values concatenated are the
  // rows' in order.
  // One process needs no exchange (and its chains may run on threads of their own, which must not
  // share a communicator's all-gather).
  if (shard.communicator == nullptr || shard.communicator->size() <= 1) {
    return Eigen::Map<const Eigen::VectorXd>(mine.data(), static_cast<Index>(mine.size()));
  }
  const std::vector<double> all = shard.communicator->allgather(mine);
  return Eigen::Map<const Eigen::VectorXd>(all.data(), static_cast<Index>(all.size()));
}

double gaussian_data_error(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w) {
  return sum_over_row_blocks(posterior, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
    Eigen::MatrixXd F;
    posterior.network().forward(w, X, &F);
    *out = Eigen::VectorXd::Constant(1, GaussianLikelihood::data_error(F, Y));
  })(0);
}

}  // namespace occam::internal

// row_sums.h (internal) — a chain model's sums and gathers over every row of its posterior's data,
// however the rows are spread over processes (DataShard).
//
// Each block of rows (as RowBlocks deals them) is copied to matrices of its own and handed to the
// term, so that a block's term has the same bits whichever process holds it; sums then add the
// blocks' terms along the fixed-order tree of Posterior's own sums (src/parallel/fixed_order_sum.h),
// so that every process gets the same bits as one process holding every row. With one block (at
// most DataShard::block_rows rows on one process) the term sees the whole data, as before blocks.
// Every process of the posterior calls them together.
#pragma once

#include <Eigen/Core>
#include <functional>

#include "occam/posterior.h"

namespace occam::mcmc::internal {

// The term of one block: its inputs and targets, and the result.
using RowBlockTerm = std::function<void(const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out)>;

// Σ over every block of the data of term(block), each term of the same size.
Eigen::VectorXd sum_over_rows(const Posterior& posterior, const RowBlockTerm& term);

// One value per row of the whole data, in row order: term(block) writes one value per row of the block.
Eigen::VectorXd gather_rows(const Posterior& posterior, const RowBlockTerm& term);

}  // namespace occam::mcmc::internal

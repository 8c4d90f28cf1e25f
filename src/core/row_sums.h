// row_sums.h (internal) — sums and gathers over every row of a posterior's data, however the rows
// are spread over processes and threads (DataShard), for the terms Posterior's own methods do not
// cover: curvature factors, E_D, per-row log-likelihoods.
//
// Each block of rows (as RowBlocks deals them) is copied to matrices of its own and handed to the
// term, so that a block's term has the same bits whichever process holds it; sums add the blocks'
// terms along the fixed-order tree (Posterior::sum_over_rows, src/core/parallel/fixed_order_sum.h), so
// every process gets the same bits as one process holding every row. With one block (at most
// DataShard::block_rows rows on one process) the term sees the whole data. Every process of the
// posterior calls them together; a sum's terms may run on DataShard::threads threads at once.
#pragma once

#include <Eigen/Core>
#include <functional>

#include "occam/posterior.h"

namespace occam::internal {

// The term of one block: its inputs and targets, and the result.
using RowBlockTerm = std::function<void(const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out)>;

// Σ over every block of the data of term(block), each term of the same size.
Eigen::VectorXd sum_over_row_blocks(const Posterior& posterior, const RowBlockTerm& term);

// One value per row of the whole data, in row order: term(block) writes one value per row of the block.
Eigen::VectorXd gather_rows(const Posterior& posterior, const RowBlockTerm& term);

// The Gaussian misfit E_D = ½ Σ_n ‖y_n − f(x_n; w)‖² over every row (MacKay's E_D; the evidence
// loop's β update and β's Gibbs draw).
double gaussian_data_error(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w);

}  // namespace occam::internal

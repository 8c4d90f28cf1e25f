// parallel.h — a fit spread over processes (MPI) and threads with results that do not depend on
// how it is spread.
//
// The rows of the data are cut into blocks of `block_rows` rows counted from row 0 of the whole
// data set. Every sum over the rows (the log-likelihood, its gradient, curvature terms) is a sum of
// per-block terms added along one binary tree over the block indices, a tree that depends only on
// the number of blocks (src/core/parallel/fixed_order_sum.h). Floating-point addition is not
// associative, but with the order fixed the sum is the same to the last bit on one process or
// many, with one thread or several.
//
// A Communicator is what the processes share: their number, their rank, and an all-gather. The
// library ships the serial one; include "occam/mpi_communicator.h" (header-only, it needs <mpi.h>)
// for Open MPI's, or implement the three functions over any transport.
//
//   occam::RowBlocks blocks{.num_rows = m, .block_rows = 1024};
//   auto [first, last] = blocks.rows_of(comm.rank(), comm.size());   // this process's rows
#pragma once

#include <Eigen/Core>
#include <utility>
#include <vector>

#include "occam/status.h"

namespace occam {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;  // 0 … size() − 1
  virtual int size() const = 0;
  // Every process's values, concatenated in rank order; every process receives the same vector.
  // Called by all processes together. Throws Error(kIo) when the exchange fails.
  virtual std::vector<double> allgather(const std::vector<double>& mine) const = 0;
};

// Thrown by every process together when a step they all take failed on one or more of them (reading
// their rows of a file, say): the same kind and message on each, naming the first process that
// failed, so a front end reports it once (from process 0) and no process is left waiting.
class CollectiveError final : public Error {
 public:
  using Error::Error;
};

// One process: allgather returns its own values.
class SerialCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<double> allgather(const std::vector<double>& mine) const override { return mine; }
};

// The blocks of rows and which process holds which: process r of K holds the contiguous blocks
// [⌊r·n/K⌋, ⌊(r+1)·n/K⌋) of the n blocks, so the shards differ by at most one block.
struct RowBlocks {
  Eigen::Index num_rows = 0;
  Eigen::Index block_rows = 1024;

  Eigen::Index num_blocks() const;  // ⌈num_rows / block_rows⌉ (at least 1)
  std::pair<Eigen::Index, Eigen::Index> blocks_of(int rank, int size) const;  // [first, last)
  std::pair<Eigen::Index, Eigen::Index> rows_of(int rank, int size) const;    // [first, last)
  std::pair<Eigen::Index, Eigen::Index> rows_of_block(Eigen::Index block) const;
};

}  // namespace occam

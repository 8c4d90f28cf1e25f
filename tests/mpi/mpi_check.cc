// mpi_check — run by `mpirun -n K` from the tests: every process computes one spread result over
// MPI and prints its bits, for the tests to compare with a single process's.
//   mpi_check sum BLOCKS THREADS   the fixed-order sum of the test terms (tests/core/fixed_order_sum_test.cc)
//   mpi_check map THREADS          the L-BFGS MAP of a posterior spread by rows (tests/model/data_shard_test.cc)
// Rank 0 prints one line of bits per process.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "occam/mpi_communicator.h"
#include "core/parallel/fixed_order_sum.h"
#include "testing/block_terms.h"
#include "testing/mpi_check.h"
#include "testing/sharded_posterior.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    const occam::MpiCommunicator comm;
    Eigen::VectorXd result;
    if (mode == "sum" && argc == 4) {
      const Eigen::Index n = std::atol(argv[2]);
      const occam::RowBlocks blocks{.num_rows = n * 10, .block_rows = 10};
      const auto [first, last] = blocks.blocks_of(comm.rank(), comm.size());
      result = occam::internal::FixedOrderSum(n).sum(
          comm, first, last, [](Eigen::Index b, Eigen::VectorXd* out) { *out = occam::testing::block_term(b); },
          std::atoi(argv[3]));
    } else if (mode == "map" && argc == 3) {
      result = occam::testing::sharded_map(&comm, std::atoi(argv[2]));
    } else {
      throw std::runtime_error("usage: mpi_check sum BLOCKS THREADS | map THREADS");
    }
    // Rank 0 prints every process's result, a line each: lines printed by several processes at once
    // can be interleaved by mpirun's forwarding of their output.
    const std::vector<double> all = comm.allgather(std::vector<double>(result.data(), result.data() + result.size()));
    if (comm.rank() == 0) {
      const auto n = static_cast<Eigen::Index>(all.size()) / comm.size();
      for (int r = 0; r < comm.size(); ++r) {
        std::printf("%s\n", occam::testing::bits(Eigen::Map<const Eigen::VectorXd>(all.data() + r * n, n)).c_str());
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_check: %s\n", e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}

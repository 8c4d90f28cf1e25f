// fixed_order_sum_check — run by `mpirun -n K` from tests/fixed_order_sum_test.cc: every process
// sums the test terms of `n` blocks over MPI with `threads` threads and prints its sum's bits.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "occam/mpi_communicator.h"
#include "parallel/fixed_order_sum.h"
#include "testing/block_terms.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  try {
    if (argc != 3) throw std::runtime_error("usage: fixed_order_sum_check BLOCKS THREADS");
    const Eigen::Index n = std::atol(argv[1]);
    const int threads = std::atoi(argv[2]);
    const occam::MpiCommunicator comm;
    const occam::RowBlocks blocks{.num_rows = n * 10, .block_rows = 10};
    const auto [first, last] = blocks.blocks_of(comm.rank(), comm.size());
    const occam::internal::FixedOrderSum tree(n);
    const Eigen::VectorXd sum = tree.sum(
        comm, first, last, [](Eigen::Index b, Eigen::VectorXd* out) { *out = occam::testing::block_term(b); }, threads);
    std::string line = "sum";
    char number[64];
    for (Eigen::Index k = 0; k < sum.size(); ++k) {
      std::snprintf(number, sizeof number, " %a", sum(k));
      line += number;
    }
    std::printf("%s\n", line.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fixed_order_sum_check: %s\n", e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}

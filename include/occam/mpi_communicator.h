// mpi_communicator.h — occam::Communicator over MPI (header-only: the library itself does not
// link MPI; a program that includes this links it, e.g. CMake's MPI::MPI_CXX).
//
// Errors on the communicator are returned, not fatal, so that a failed exchange becomes an
// occam::Error the program can report; a process that dies still ends the whole run (mpirun
// stops the others).
//
//   MPI_Init(&argc, &argv);
//   { occam::MpiCommunicator comm;  … fits that take &comm … }
//   MPI_Finalize();
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "occam/parallel.h"
#include "occam/status.h"

namespace occam {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<double> allgather(const std::vector<double>& mine) const override {
    if (mine.size() > static_cast<std::size_t>(kMaxCount)) {
      throw Error(ErrorKind::kInvalidArgument,
                  "MPI all-gather: " + std::to_string(mine.size()) + " values exceed one message's count limit");
    }
    const int count = static_cast<int>(mine.size());
    std::vector<int> counts(size_), offsets(size_);
    check(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[r] = static_cast<int>(total);
      total += counts[r];
      if (total > kMaxCount) {
        throw Error(ErrorKind::kInvalidArgument,
                    "MPI all-gather: the processes' values together exceed one message's count limit");
      }
    }
    std::vector<double> all(static_cast<std::size_t>(total));
    check(MPI_Allgatherv(mine.data(), count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE, comm_),
          "MPI_Allgatherv");
    return all;
  }

 private:
  static constexpr long long kMaxCount = 2147483647LL;

  static void check(int code, const char* call) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw Error(ErrorKind::kIo, std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace occam

#include "process_group.h"

#include <cstdlib>
#include <memory>

#ifdef OCCAM_CLI_WITH_MPI
#include "occam/mpi_communicator.h"
#endif

namespace occam::cli {
namespace {

#ifdef OCCAM_CLI_WITH_MPI
std::unique_ptr<MpiCommunicator>& world() {
  static std::unique_ptr<MpiCommunicator> comm;
  return comm;
}
#endif

}  // namespace

void start_processes([[maybe_unused]] int* argc, [[maybe_unused]] char*** argv) {
#ifdef OCCAM_CLI_WITH_MPI
  // Open MPI's launcher (or a PMIx one) sets these; a plain run never initialises MPI.
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr) return;
  MPI_Init(argc, argv);
  world() = std::make_unique<MpiCommunicator>();
#endif
}

void finish_processes([[maybe_unused]] bool failed, [[maybe_unused]] int exit_code) {
#ifdef OCCAM_CLI_WITH_MPI
  if (!world()) return;
  const bool spread = world()->size() > 1;
  world().reset();
  if (failed && spread) MPI_Abort(MPI_COMM_WORLD, exit_code);
  MPI_Finalize();
#endif
}

const Communicator* processes() {
#ifdef OCCAM_CLI_WITH_MPI
  if (world() && world()->size() > 1) return world().get();
#endif
  return nullptr;
}

bool is_writer() { return processes() == nullptr || processes()->rank() == 0; }

void wait_for_all_processes() {
  if (processes() != nullptr) processes()->allgather({});
}

}  // namespace occam::cli

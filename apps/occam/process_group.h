// process_group.h — the processes one run of the tool is spread over: under mpirun (Open MPI) every
// process of MPI_COMM_WORLD, otherwise this one alone. Only process 0 prints and writes files.
#pragma once

#include "occam/parallel.h"

namespace occam::cli {

// Starts MPI when the tool was launched by mpirun and built with MPI; call once, first.
void start_processes(int* argc, char*** argv);
// Ends MPI (normally), or, with a failure of this process while others may wait for it in a
// collective, stops them all with exit_code.
void finish_processes(bool failed, int exit_code);
// The processes, or null when this one is alone.
const Communicator* processes();
// True for process 0, or when alone: the one that prints and writes.
bool is_writer();
// Returns once every process has called it (at once when alone): e.g. for process 0 to finish
// writing before another ends the run.
void wait_for_all_processes();

}  // namespace occam::cli

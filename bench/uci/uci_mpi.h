// uci_mpi.h — the benchmark's rows dealt over MPI processes (Open MPI; `mpirun -n K occam_uci ...`,
// or a host file for several machines: docs/RESULTS.md).
//
// Rank 0 reads the results file, deals the rows it lacks one at a time to ranks 1 … K−1 as they
// ask for work, and appends each row to the file the moment it arrives: it alone writes, and a
// worker that dies loses only its current row (a rerun redoes it, like any missing row). Workers
// run the same tasks as the serial loop (uci_runner.h), so the rows are bit-identical to a serial
// run's, in the order they finish. Rank 0 waits in a sleeping poll, so it costs no core: give
// mpirun one more process than the cores you want busy.
#pragma once

#include <string>

#include "uci/uci_runner.h"

namespace occam::uci {

// True when this process was started by mpirun (Open MPI's or a PMIx launcher's environment).
bool launched_by_mpirun();

// Initialises MPI, runs rank 0's dealing or a worker's loop, finalises MPI and returns the exit
// code (as the serial run's; every rank returns rank 0's outcome). With one process it runs the
// serial loop's rows itself.
int run_with_mpi(const Plan& plan, const std::string& out_path, int* argc, char*** argv);

}  // namespace occam::uci

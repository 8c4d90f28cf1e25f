// collective.h (internal) — decisions that the processes sampling one spread posterior take
// together, so that they stay in lockstep.
//
// When a posterior's rows are spread over processes (DataShard), every process runs every chain
// and each evaluation of the log density is a collective sum. The sums have the same bits
// everywhere, so every accept/reject and tree decision agrees by itself; what comes from outside
// the computation — a stop request (a signal reaches each process at its own moment), a failure
// of one process's file writes — must be agreed explicitly, or the processes would leave the
// chain at different iterations and pair one chain's collective with another's.
#pragma once

#include <vector>

#include "occam/parallel.h"

namespace occam::mcmc::internal {

// True when `mine` holds on any process of `comm` (null or one process: `mine`). Called by every
// process of comm together.
inline bool any_process(const Communicator* comm, bool mine) {
  if (comm == nullptr || comm->size() <= 1) return mine;
  for (const double flag : comm->allgather({mine ? 1.0 : 0.0})) {
    if (flag != 0.0) return true;
  }
  return false;
}

}  // namespace occam::mcmc::internal

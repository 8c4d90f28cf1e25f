// agreement.h (internal) — what processes holding different rows must agree on beyond sums:
// text (class labels, messages) and whether a step that may fail on some of them failed.
//
// A step that reads or checks a process's own rows can fail on one process only; if that process
// threw while the others went on to the next collective call, they would wait for it forever.
// Every such step ends with agree_on_failure(), so that every process throws or none does.
#pragma once

#include <exception>
#include <string>
#include <vector>

#include "occam/parallel.h"

namespace occam::internal {

// Every process's strings, concatenated in rank order (an all-gather of their bytes). Called by
// every process together.
std::vector<std::string> allgather_strings(const Communicator& processes, const std::vector<std::string>& mine);

// Called by every process together at the end of a step that may have failed on some (`failure`
// empty where it did not): when none failed it returns; otherwise every process throws the same
// CollectiveError (parallel.h): the kind and message of the first (lowest-ranked) process that
// failed, naming that process.
void agree_on_failure(const Communicator& processes, const std::exception_ptr& failure);

// True when `mine` holds on any process of `comm` (null or one process: `mine`): a stop asked of
// one process (a signal reaches each at its own moment), agreed so that all leave a loop of
// collective calls at the same iteration. Called by every process of comm together.
inline bool any_process(const Communicator* comm, bool mine) {
  if (comm == nullptr || comm->size() <= 1) return mine;
  for (const double flag : comm->allgather({mine ? 1.0 : 0.0})) {
    if (flag != 0.0) return true;
  }
  return false;
}

}  // namespace occam::internal

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

#include "core/parallel/agreement.h"

namespace occam::mcmc::internal {

using occam::internal::any_process;  // core/parallel/agreement.h

}  // namespace occam::mcmc::internal

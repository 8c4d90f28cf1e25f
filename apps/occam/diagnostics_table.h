// diagnostics_table.h — the convergence table `sample`, `summary` and `demo mcmc` print for a run.
#pragma once

#include <string>

#include "occam/mcmc/convergence.h"

namespace occam::cli {

// The diagnostics of lp__, alpha.*, beta and f.* (R̂, bulk/tail ESS, MCSE), the worst R̂ and ESS
// of the pointwise log-likelihood, each chain's mean and sd of the monitored outputs (when there
// are several chains), per-chain sampler statistics and warnings; the first table is also
// written as CSV to `csv_path` (when not empty). `seconds` < 0 leaves the time out of the
// header; `interrupted` marks it.
std::string diagnostics_table(const mcmc::ConvergenceReport& report, double seconds, bool interrupted,
                              const std::string& csv_path);

}  // namespace occam::cli

// diagnostics_table.h — the convergence table `sample` and `demo mcmc` print for a run.
#pragma once

#include <string>

#include "occam/mcmc/sampler.h"

namespace occam::cli {

// The diagnostics table of lp__, alpha.*, beta and f.* (R̂, bulk/tail ESS, MCSE), per-chain
// sampler statistics and warnings; also written as CSV to `csv_path` (when not empty).
std::string diagnostics_table(const mcmc::SamplerSummary& summary, const std::string& csv_path);

}  // namespace occam::cli

// diagnostics_table.h — the convergence table `sample` and `demo mcmc` print for a run.
#pragma once

#include <string>

#include "occam/mcmc/sampler.h"

namespace occam::cli {

// The diagnostics table of lp__, alpha.*, smoothing, beta and f.* (R̂, bulk/tail ESS, MCSE) and,
// with `weights`, of w.* (a linear model's coefficients, which unlike a network's weights are
// identifiable); per-chain sampler statistics and warnings; also written as CSV to `csv_path`
// (when not empty).
std::string diagnostics_table(const mcmc::SamplerSummary& summary, const std::string& csv_path, bool weights = false);

}  // namespace occam::cli

// run_summary.h — a finished MCMC run's per-chain statistics written beside its draws, and its
// draws and statistics read back, so that runs can be summarised again or merged without
// sampling again (`occam summary`; CmdStan's stansummary does this for Stan's files).
//
//   occam::write_chain_statistics("run/chains.csv", *model.summary.sampler);
//   std::vector<occam::mcmc::SamplerSummary> runs = {occam::read_run_draws("run1"),
//                                                    occam::read_run_draws("run2")};
//   auto report = occam::mcmc::assess_convergence(occam::mcmc::merge_runs(runs));
#pragma once

#include <string>

#include "occam/mcmc/sampler.h"
#include "occam/model_spec.h"

namespace occam {

// chains.csv: one row per chain — chain (from 1), iterations, draws, step_size, accept_stat,
// tree_depth, divergences, gradients, warmup_seconds, sampling_seconds, max_depth_hits,
// warmup_divergences (the last two added in 0.x; readers accept files without them). Written
// atomically; throws Error(kIo).
void write_chain_statistics(const std::string& path, const mcmc::SamplerSummary& summary);

// The kept draws of the run in `run` (a folder written by sampling, or its model.json), read
// through load_model's manifest checks (a killed, failed or changed run is refused, naming the
// folder), with each chain's statistics from the run's chains.csv when it has one, else from
// the draws' sampler columns (mcmc::chain_statistics: times unknown, gradients of the kept
// draws only). `seconds` is the chains' total time when known, else -1. Throws
// Error(kInvalidInput) when the run has no draws or its chains.csv does not match them.
// `spec` (when not null) receives the run's model specification, e.g. to judge a linear model's
// coefficients (ConvergenceOptions::coefficients).
mcmc::SamplerSummary read_run_draws(const std::string& run, ModelSpec* spec = nullptr);

}  // namespace occam

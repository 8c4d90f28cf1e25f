// occam summary — the convergence table of finished runs, again or merged, without sampling
// (include/occam/run_summary.h, include/occam/mcmc/convergence.h).

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "diagnostics_table.h"
#include "occam/mcmc/convergence.h"
#include "occam/run_summary.h"
#include "occam/status.h"
#include "output.h"

namespace occam::cli {
namespace {

struct SummaryArgs {
  std::vector<std::string> runs;
  std::string out;
  double max_rhat = 1.01;
  double min_ess_per_chain = 100.0;
};

constexpr const char* kSummaryExample = R"(
Examples:
  occam summary run                        # the table 'occam sample' printed, from the files
  occam summary run1 run2 --out all.csv    # two runs of the same model as one of more chains

The runs must be complete or interrupted runs of the same model (their chain files must have the
same columns); their chains are numbered in the order given. The table judges lp__, alpha.*,
beta, the outputs at the monitored inputs (f.*) and, when the chain files have them, the
pointwise log-likelihood columns (log_lik.*): not the weights, whose labels a network's
symmetries permute (docs/mcmc.md, "Reading the diagnostics").)";

mcmc::ConvergenceOptions convergence_options(const SummaryArgs& args) {
  mcmc::ConvergenceOptions options;
  options.max_rhat = args.max_rhat;
  options.min_ess_per_chain = args.min_ess_per_chain;
  options.validate();
  return options;
}

void run_summary(const SummaryArgs& args) {
  const mcmc::ConvergenceOptions options = convergence_options(args);
  std::vector<NamedPath> inputs;
  for (const std::string& run : args.runs) inputs.push_back({"run", run});
  check_output_path({"--out", args.out}, inputs);
  std::vector<mcmc::SamplerSummary> runs;
  mcmc::ConvergenceOptions judged = options;
  for (const std::string& run : args.runs) {
    ModelSpec spec;
    runs.push_back(read_run_draws(run, &spec));
    // A linear model's coefficients are identifiable and judged, as occam sample does.
    judged.coefficients = spec.network.kind == NetworkKind::kLinear;
  }
  const mcmc::SamplerSummary merged = mcmc::merge_runs(runs, args.runs);
  // The header leaves out the run's wall time, which the files do not hold; each chain's time is
  // in its row.
  std::cout << diagnostics_table(mcmc::assess_convergence(merged, judged), -1.0, merged.interrupted, args.out);
}

}  // namespace

Command add_summary_command(CLI::App& parent) {
  auto args = std::make_shared<SummaryArgs>();
  CLI::App* command = parent.add_subcommand(
      "summary",
      "Summarise finished MCMC runs again, or merge several runs' chains, without sampling (R-hat, ESS, MCSE)");
  command->add_option("runs", args->runs, "run directories written by 'occam sample' (or their model.json)")
      ->required();
  command->add_option("--out", args->out, "write the table of lp__, alpha.*, beta and f.* (CSV) to this file");
  command->add_option("--max-rhat", args->max_rhat, "warn about R-hat above this")->capture_default_str();
  command
      ->add_option("--min-ess-per-chain", args->min_ess_per_chain,
                   "warn about bulk or tail ESS below this times the number of chains")
      ->capture_default_str();
  command->footer(kSummaryExample);
  return {command, [args] { run_summary(*args); }, [args] { convergence_options(*args); }};
}

}  // namespace occam::cli

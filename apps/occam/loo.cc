// occam loo — PSIS leave-one-out cross-validation of MCMC draws (include/occam/loo.h).

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "occam/data.h"
#include "occam/io.h"
#include "occam/loo.h"
#include "occam/status.h"
#include "occam/text.h"
#include "output.h"

namespace occam::cli {
namespace {

struct LooArgs {
  std::string run;
  std::string data;
  std::string out;
  bool no_relative_efficiency = false;
};

constexpr const char* kLooExample = R"(
Example:
  occam sample --data train.csv --target y --out run
  occam loo run --data train.csv --out loo.csv

Prints elpd_loo (the expected log predictive density of a new observation, summed over the
training rows), p_loo (the effective number of parameters) and looic = -2 elpd_loo with their
standard errors, then the Pareto k table: an observation with k > 0.7 is too influential for the
importance-sampling estimate, which is then unreliable for it. --out writes one row per training
row: elpd_loo, mcse_elpd_loo, p_loo, looic, pareto_k, n_eff, r_eff. The numbers equal R's
loo::loo(log_lik, r_eff = relative_eff(exp(log_lik), chain_id)) (docs/mcmc.md).)";

std::string fixed(double v, int decimals) {
  if (std::isnan(v)) return "NA";
  return format("%.*f", decimals, v);
}

void run_loo(const LooArgs& args) {
  check_output_path({"--out", args.out}, {{"--data", args.data}, {"run", args.run}});
  const FittedModel model = load_model(args.run);
  // Only a categorical target may hold words; a Bernoulli one is read as the numbers 0 and 1 it
  // must be (read as text, any column would pass as a target of zeros).
  const bool labels = model.spec.likelihood.kind == LikelihoodKind::kCategorical;
  const Table table = labels ? read_csv(args.data, model.target_name) : read_csv(args.data);
  mcmc::LooOptions options;
  options.relative_efficiency = !args.no_relative_efficiency;
  const mcmc::LooResult r = loo(model, table, options);

  const auto& draws = std::get<PosteriorDraws>(model.posterior);
  const Index n = r.pointwise_elpd_loo.size();
  std::cout << "Computed from " << draws.weights.rows() << " by " << n << " log-likelihood matrix ("
            << draws.draws_per_chain.size() << " chains)\n\n"
            << format("%-10s %12s %10s\n", "", "Estimate", "SE")
            << format("%-10s %12s %10s\n", "elpd_loo", fixed(r.elpd_loo, 1).c_str(), fixed(r.se_elpd_loo, 1).c_str())
            << format("%-10s %12s %10s\n", "p_loo", fixed(r.p_loo, 1).c_str(), fixed(r.se_p_loo, 1).c_str())
            << format("%-10s %12s %10s\n", "looic", fixed(r.looic, 1).c_str(), fixed(r.se_looic, 1).c_str())
            << "------\nMonte Carlo SE of elpd_loo is " << fixed(r.mcse_elpd_loo, 1)
            << (std::isnan(r.mcse_elpd_loo) ? " (some Pareto k > 0.7)" : "") << ".\n\nPareto k diagnostic values:\n"
            << format("%-24s %6s %7s %11s\n", "", "Count", "Pct.", "Min. n_eff");
  const char* rows[4] = {"(-Inf, 0.5]   (good)", " (0.5, 0.7]   (ok)", "   (0.7, 1]   (bad)",
                         "   (1, Inf)   (very bad)"};
  for (int c = 0; c < 4; ++c) {
    double min_n_eff = std::nan("");
    for (Index i = 0; i < n; ++i) {
      if (mcmc::pareto_k_class(r.pareto_k[i]) == c && !(r.n_eff[i] >= min_n_eff)) min_n_eff = r.n_eff[i];
    }
    std::cout << format("%-24s %6d %6.1f%% %11s\n", rows[c], r.pareto_k_counts[c],
                        100.0 * r.pareto_k_counts[c] / static_cast<double>(n), fixed(min_n_eff, 0).c_str());
  }
  if (!args.out.empty()) {
    Eigen::MatrixXd values(n, 7);
    values << r.pointwise_elpd_loo, r.pointwise_mcse_elpd_loo, r.pointwise_p_loo, r.pointwise_looic, r.pareto_k,
        r.n_eff, r.relative_efficiency;
    write_file_atomic(
        args.out, format_csv({"elpd_loo", "mcse_elpd_loo", "p_loo", "looic", "pareto_k", "n_eff", "r_eff"}, values));
  }
}

}  // namespace

Command add_loo_command(CLI::App& parent) {
  auto args = std::make_shared<LooArgs>();
  CLI::App* command = parent.add_subcommand(
      "loo", "Leave-one-out cross-validation of MCMC draws by Pareto-smoothed importance sampling (PSIS-LOO)");
  command->add_option("run", args->run, "a run directory written by 'occam sample' (or its model.json)")->required();
  command->add_option("--data", args->data, "the training data the run was sampled from (CSV)")->required();
  command->add_option("--out", args->out, "write the pointwise values (CSV) to this file");
  command->add_flag("--no-r-eff", args->no_relative_efficiency,
                    "take the draws as independent (r_eff = 1, as loo::loo without r_eff)");
  command->footer(kLooExample);
  return {command, [args] { run_loo(*args); }};
}

}  // namespace occam::cli

// occam demo mcmc — the lecture's MCMC figures on the demo's toy data: function draws from the
// prior and from the posterior (NUTS on the weights, Gibbs on α and β) for networks of 1 and 50
// hidden units, and trace plots of lp__, α and β.

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "demo_mcmc.h"
#include "diagnostics_table.h"
#include "gnuplot.h"
#include "interrupt.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/predict.h"
#include "occam/status.h"
#include "model_options.h"
#include "output.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct DemoMcmcArgs {
  std::string out_dir = "demo-mcmc";
  std::uint64_t seed = 1;
  int warmup = 500;
  int draws = 500;
  int chains = 2;
};

constexpr Index kTrainSize = 60;
constexpr Index kGridSize = 201;
constexpr double kGridLimit = 1.5;
constexpr int kFunctionDraws = 8;
const std::vector<Index> kHiddenSizes = {1, 50};

constexpr const char* kDemoMcmcExample = R"(
Example:
  occam demo mcmc --out-dir demo-mcmc

For networks of 1 and 50 tanh hidden units: NUTS on the weights with one α and β drawn by Gibbs
(2 chains of 500 warm-up + 500 draws), then mcmc_prior_draws_h<H>.csv (function draws from the prior
at the posterior-median α), mcmc_posterior_draws_h<H>.csv (function draws from the chains),
mcmc_band_h<H>.csv (predictive mean and 95% interval), mcmc_trace_h<H>.csv (lp__, α, β per
iteration and chain), mcmc_summary_h<H>.csv (diagnostics), mcmc.gp and, with gnuplot, mcmc.png.)";

using PathOf = std::function<std::string(const std::string&)>;

// NUTS on the weights of an H-unit network with one α and β drawn by Gibbs, from a MAP start.
FittedModel sample_network(Index h, const Dataset& train, const DemoMcmcArgs& args, Progress& progress) {
  const long long hl = static_cast<long long>(h);
  ModelSpec spec;
  spec.network.hidden = {h};
  // One α for all weights: with MacKay's four groups, the groups of a single parameter (the
  // output bias, and every group when H = 1) form funnels with their α under the vague
  // hyperprior, and the chains diverge there (docs/mcmc.md).
  spec.prior.kind = PriorKind::kRidge;
  SamplingMethod method;
  method.chains.gibbs = true;
  method.chains.init = mcmc::InitKind::kMap;
  method.sampler.chains = args.chains;
  method.sampler.num_warmup = args.warmup;
  method.sampler.num_draws = args.draws;
  method.sampler.seed = args.seed + static_cast<std::uint64_t>(h);
  progress.update(format("H=%lld: sampling %d chains of %d + %d iterations", hl, args.chains, args.warmup, args.draws),
                  true);
  FittedModel model = fit(spec, train, method, [](const FitProgress&) {
    return interrupted() ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  });
  progress.clear();
  if (model.summary.termination == Termination::kAborted) throw Interrupted{"the demo stopped"};
  return model;
}

// The posterior median of each α (the prior draws are drawn at it).
Eigen::VectorXd median_alpha(const mcmc::SamplerSummary& s, int groups) {
  Eigen::VectorXd alpha(groups);
  for (int g = 0; g < groups; ++g) {
    const Eigen::MatrixXd a = s.column("alpha." + std::to_string(g + 1));
    alpha[g] = mcmc::quantile(Eigen::Map<const Eigen::VectorXd>(a.data(), a.size()), 0.5);
  }
  return alpha;
}

std::vector<std::string> draw_header() {
  std::vector<std::string> header = {"x"};
  for (int k = 0; k < kFunctionDraws; ++k) header.push_back("draw_" + std::to_string(k + 1));
  return header;
}

// Function draws from the prior at α, and from the chains (evenly spaced through the pooled draws).
void write_function_draws(const FittedModel& model, const Eigen::VectorXd& alpha, const Eigen::VectorXd& grid,
                          const Eigen::MatrixXd& grid_inputs, Index h, const DemoMcmcArgs& args, const PathOf& path) {
  const long long hl = static_cast<long long>(h);
  const Standardizer& standardizer = model.standardizer;
  Prior prior_at_median = model.prior;
  prior_at_median.set_alpha(alpha);
  Rng prior_rng(args.seed, 300 + static_cast<std::uint64_t>(h));
  const Eigen::MatrixXd prior_f =
      prior_function_draws(*model.network, prior_at_median, grid_inputs, kFunctionDraws, prior_rng);
  const std::vector<std::string> header = draw_header();
  Eigen::MatrixXd values(kGridSize, kFunctionDraws + 1);
  values << grid, standardizer.targets_to_original(prior_f);
  write_file_atomic(path(format("mcmc_prior_draws_h%lld.csv", hl)), format_csv(header, values));

  const Eigen::MatrixXd& weights = std::get<PosteriorDraws>(model.posterior).weights;
  const Index total = weights.rows();
  Eigen::MatrixXd post_f(kGridSize, kFunctionDraws), F;
  for (int k = 0; k < kFunctionDraws; ++k) {
    model.network->forward(weights.row((k * total) / kFunctionDraws).transpose(), grid_inputs, &F);
    post_f.col(k) = F.col(0);
  }
  values << grid, standardizer.targets_to_original(post_f);
  write_file_atomic(path(format("mcmc_posterior_draws_h%lld.csv", hl)), format_csv(header, values));
}

// Traces: iteration, then per chain lp__, alpha.1..G, beta.
void write_traces(const mcmc::SamplerSummary& s, int groups, Index h, const DemoMcmcArgs& args, const PathOf& path) {
  std::vector<std::string> trace_header = {"iteration"};
  std::vector<std::string> traced = {"lp__"};
  for (int g = 0; g < groups; ++g) traced.push_back("alpha." + std::to_string(g + 1));  // one α: 3 columns per chain
  traced.push_back("beta");
  for (int c = 0; c < args.chains; ++c)
    for (const std::string& t : traced) trace_header.push_back(t + "_chain" + std::to_string(c + 1));
  const Eigen::Index n = s.column("lp__").rows();
  Eigen::MatrixXd trace(n, 1 + static_cast<Index>(traced.size()) * args.chains);
  trace.col(0) = Eigen::VectorXd::LinSpaced(n, 1, static_cast<double>(n));
  Index col = 1;
  for (int c = 0; c < args.chains; ++c)
    for (const std::string& t : traced) trace.col(col++) = s.column(t).col(c);
  write_file_atomic(path(format("mcmc_trace_h%lld.csv", static_cast<long long>(h))), format_csv(trace_header, trace));
}

// The summary line of one network: time, lp__'s R-hat and ESS, β, the noise s.d., divergences.
std::string report_line(const FittedModel& model, Index h) {
  const mcmc::SamplerSummary& s = *model.summary.sampler;
  const Index W = std::get<PosteriorDraws>(model.posterior).weights.cols();
  const mcmc::Diagnostics lp = mcmc::diagnose(s.column("lp__"));
  const mcmc::Diagnostics beta = mcmc::diagnose(s.column("beta"));
  int divergences = 0;
  for (const auto& c : s.chains) divergences += c.divergences;
  return format(
      "H=%-3lld W=%-4lld %5.1f s  lp__ R-hat %.3f ESS %5.0f  beta %.1f (R-hat %.3f)  noise sd %.3f  "
      "divergences %d\n",
      static_cast<long long>(h), static_cast<long long>(W), s.seconds, lp.rhat, lp.ess_bulk, beta.mean, beta.rhat,
      model.standardizer.y_scale / std::sqrt(beta.mean), divergences);
}

std::string gnuplot_script(const DemoMcmcArgs& args) {
  std::string gp = "# Plots the files of `occam demo mcmc`; run with: gnuplot mcmc.gp\n";
  gp +=
      "set terminal " + (gnuplot_installed() ? gnuplot_png_terminal() : std::string("pngcairo")) + " size 1400,1400\n";
  gp += "set output 'mcmc.png'\nset termoption noenhanced\nset datafile separator ','\nset grid\n";
  gp += "set key below horizontal\nset xlabel 'x'\nset ylabel 'y'\n";
  gp += "set multiplot layout 3,2 title 'occam demo mcmc: NUTS on the weights, Gibbs on alpha and beta'\n";
  const std::string data = "'mcmc_data.csv' using 1:2 with points pt 7 ps 0.6 lc rgb 'black' title 'data'";
  gp += format("set xrange [%g:%g]\nset yrange [-3:3]\n", -kGridLimit, kGridLimit);
  for (const Index h : kHiddenSizes) {
    gp += format("set title 'H = %lld: prior function draws (alpha at its posterior median)'\n",
                 static_cast<long long>(h));
    gp += format("plot for [i=2:%d] 'mcmc_prior_draws_h%lld.csv' using 1:i with lines lc rgb '#999999' notitle, %s\n",
                 kFunctionDraws + 1, static_cast<long long>(h), data.c_str());
  }
  for (const Index h : kHiddenSizes) {
    const long long hl = static_cast<long long>(h);
    gp += format("set title 'H = %lld: posterior function draws and 95%% predictive interval'\n", hl);
    gp += format(
        "plot 'mcmc_band_h%lld.csv' using 1:3:4 with filledcurves lc rgb '#cfe0f5' title '95%% interval', "
        "for [i=2:%d] 'mcmc_posterior_draws_h%lld.csv' using 1:i with lines lc rgb '#7a9cc6' notitle, "
        "'mcmc_band_h%lld.csv' using 1:2 with lines lw 2 lc rgb '#1f4e99' title 'predictive mean', %s\n",
        hl, kFunctionDraws + 1, hl, hl, data.c_str());
  }
  gp += "set autoscale\nset xlabel 'iteration after warm-up'\n";
  gp += "set title 'H = 50: lp__ per chain'\nset ylabel 'lp__'\n";
  gp += "plot for [c=0:" + std::to_string(args.chains - 1) +
        "] 'mcmc_trace_h50.csv' using 1:(column(2 + c*3)) with lines title sprintf('chain %d', c+1)\n";
  gp += "set title 'H = 50: alpha and beta per chain'\nset ylabel 'alpha, beta'\nset logscale y\n";
  gp += "plot for [c=0:" + std::to_string(args.chains - 1) +
        "] 'mcmc_trace_h50.csv' using 1:(column(3 + c*3)) with lines title sprintf('alpha chain %d', c+1), "
        "for [c=0:" +
        std::to_string(args.chains - 1) +
        "] 'mcmc_trace_h50.csv' using 1:(column(4 + c*3)) with lines title sprintf('beta chain %d', c+1)\n";
  gp += "unset multiplot\n";
  return gp;
}

void run_demo_mcmc(const DemoMcmcArgs& args) {
  namespace fs = std::filesystem;
  make_output_directory(args.out_dir);
  const PathOf path = [&](const std::string& name) { return (fs::path(args.out_dir) / name).string(); };

  Rng data_rng(args.seed, /*stream=*/0);
  const Dataset train = toy_data(kTrainSize, data_rng);
  Eigen::MatrixXd table(kTrainSize, 2);
  table << train.X, train.Y;
  write_file_atomic(path("mcmc_data.csv"), format_csv({"x", "y"}, table));
  const Eigen::VectorXd grid = Eigen::VectorXd::LinSpaced(kGridSize, -kGridLimit, kGridLimit);

  Progress progress(ProgressMode::kAuto);
  std::string report;
  for (const Index h : kHiddenSizes) {
    const long long hl = static_cast<long long>(h);
    const FittedModel model = sample_network(h, train, args, progress);
    const mcmc::SamplerSummary& s = *model.summary.sampler;
    const Eigen::MatrixXd grid_inputs = model.standardizer.transform_inputs(grid);
    diagnostics_table(mcmc::assess_convergence(s), s.seconds, s.interrupted,
                      path(format("mcmc_summary_h%lld.csv", hl)));
    const Eigen::VectorXd alpha = median_alpha(s, model.prior.num_groups());
    write_function_draws(model, alpha, grid, grid_inputs, h, args, path);
    // The Monte Carlo predictive band from every draw, with each draw's β.
    const Prediction p = model.predict(grid);
    Eigen::MatrixXd band(kGridSize, 4);
    band << grid, p.mean, p.lower, p.upper;
    write_file_atomic(path(format("mcmc_band_h%lld.csv", hl)), format_csv({"x", "mean", "lower", "upper"}, band));
    write_traces(s, static_cast<int>(alpha.size()), h, args, path);
    report += report_line(model, h);
  }
  write_file_atomic(path("mcmc.gp"), gnuplot_script(args));

  std::cout << "occam demo mcmc: " << kTrainSize << " noisy samples of sin(pi x); NUTS + Gibbs, " << args.chains
            << " chains of " << args.warmup << " + " << args.draws << " iterations\n"
            << report << "data written to " << args.out_dir << "/\n";
  render_plot(args.out_dir, "mcmc.gp", path("mcmc.png"), std::cout);
}

}  // namespace

Command add_demo_mcmc_command(CLI::App& demo) {
  auto args = std::make_shared<DemoMcmcArgs>();
  CLI::App* c = demo.add_subcommand(
      "mcmc",
      "Sample networks of 1 and 50 hidden units by NUTS + Gibbs on the toy data; plot prior and posterior "
      "function draws and traces");
  c->add_option("--out-dir", args->out_dir, "directory for the data files and the plot (created if needed)");
  c->add_option("--seed", args->seed, "seed of the toy data and the chains")->check(Seed());
  c->add_option("--warmup", args->warmup, "warm-up iterations per chain")->check(CLI::NonNegativeNumber);
  c->add_option("--draws", args->draws, "draws per chain")->check(CLI::Range(2, 1000000));
  c->add_option("--chains", args->chains, "chains")->check(CLI::Range(1, 64));
  c->footer(kDemoMcmcExample);
  return {c, [args] { run_demo_mcmc(*args); }};
}

}  // namespace occam::cli

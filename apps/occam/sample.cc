// occam sample — MCMC over a network's weights (NUTS, HMC or Metropolis), α and β fixed or by
// Gibbs, parallel chains written as Stan CSV files, and a table of convergence diagnostics.

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "fitting.h"
#include "occam/data.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/network_model.h"
#include "occam/mcmc/sampler.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/mlp.h"
#include "occam/status.h"
#include "sampling.h"

namespace occam::cli {
namespace {

struct SampleArgs {
  std::string data;
  std::string target;
  std::string out = "run";
  std::vector<Index> hidden = {10};
  std::string activation = "tanh";
  std::string alpha_groups = "default";
  std::string standardize = "both";
  std::string method = "nuts";
  int chains = 4;
  int threads = 0;
  int warmup = 1000;
  int draws = 1000;
  int thin = 1;
  bool save_warmup = false;
  std::uint64_t seed = 1;
  std::string init = "map";
  std::string parameterization = "centered";
  std::string hyper = "gibbs";
  double alpha = kDefaultAlpha;
  double beta = kDefaultBeta;
  double hyper_shape = mcmc::GammaPrior{}.shape;
  double hyper_rate = mcmc::GammaPrior{}.rate;
  std::string metric = "diag";
  std::string precondition = "none";
  double step_size = 0.0;
  double target_accept = 0.0;
  int max_depth = mcmc::NutsOptions{}.max_depth;
  int leapfrog_steps = mcmc::HmcOptions{}.num_steps;
  double jitter = mcmc::HmcOptions{}.jitter;
  std::string monitor;
  bool quiet = false;
};

constexpr const char* kSampleExample = R"(
Example:
  occam sample --data train.csv --target y --hidden 10 --method nuts --chains 4 \
               --warmup 1000 --draws 1000 --seed 1 --out run/
  occam predict --draws run/ --data test.csv --out pred.csv

Writes run/chain_<k>.csv (Stan's CSV format, one file per chain, each draw flushed as it is made),
run/model.json (what predict needs), run/summary.csv (the diagnostics table) and run/chains.csv
(per-chain step size, acceptance, tree depth, divergences, gradient evaluations and seconds). Ctrl-C stops every
chain cleanly: the draws so far stay on disk in valid files (exit code 130).

Hyperparameters: --hyper gibbs draws α_g and β from their Gamma full conditionals between weight
transitions, under Gamma(a, b) priors (--hyper-shape a, --hyper-rate b; shape and rate, default
a = b = 0.01, a proper vague prior; a = b = 0 is the improper 1/σ prior). --hyper fixed keeps the
--alpha and --beta given. Both refer to the standardised data (--standardize).

Weights are not identifiable (hidden units can be permuted and flipped), so the table reports
lp__, α, β and f.k, the network output at monitored inputs (--monitor, default 5 training rows).)";

std::atomic<bool> g_stop{false};
extern "C" void on_sigint(int) {
  g_stop.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// Shows one progress bar per chain on a single line, from whichever chain thread is due.
class ChainProgress {
 public:
  ChainProgress(int chains, bool wanted) : progress_(wanted), done_(static_cast<std::size_t>(chains)) {}
  void update(int chain, int iteration, int total) {
    done_[static_cast<std::size_t>(chain)].store(iteration + 1, std::memory_order_relaxed);
    total_ = total;
    if (!progress_.enabled()) return;
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || !progress_.due()) return;
    std::string line;
    for (std::size_t c = 0; c < done_.size(); ++c) {
      const int pct = total_ > 0 ? 100 * done_[c].load(std::memory_order_relaxed) / total_ : 100;
      const int filled = pct / 10;
      line += format("%schain %zu [%s%s] %3d%%", c ? "  " : "", c + 1, std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(10 - filled), '.').c_str(), pct);
    }
    progress_.update(line);
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    progress_.clear();
  }

 private:
  Progress progress_;
  std::mutex mutex_;
  std::vector<std::atomic<int>> done_;
  std::atomic<int> total_{0};
};

class ProgressSink final : public mcmc::DrawSink {
 public:
  ProgressSink(std::unique_ptr<mcmc::DrawSink> inner, ChainProgress* progress, int chain)
      : inner_(std::move(inner)), progress_(progress), chain_(chain) {}
  void begin(const std::vector<std::string>& columns) override { inner_->begin(columns); }
  void adaptation_done(double step, const mcmc::Metric& metric) override { inner_->adaptation_done(step, metric); }
  void draw(const Eigen::VectorXd& row, bool warmup) override { inner_->draw(row, warmup); }
  void iteration(int iteration, int total) override { progress_->update(chain_, iteration, total); }
  void end(const mcmc::ChainSummary& s) override { inner_->end(s); }

 private:
  std::unique_ptr<mcmc::DrawSink> inner_;
  ChainProgress* progress_;
  int chain_;
};

void run_sample(const SampleArgs& args) {
  namespace fs = std::filesystem;
  mcmc::SamplerOptions options;
  options.method = mcmc::parse_sampler_kind(args.method);
  options.chains = args.chains;
  options.threads = args.threads;
  options.num_warmup = args.warmup;
  options.num_draws = args.draws;
  options.thin = args.thin;
  options.save_warmup = args.save_warmup;
  options.seed = args.seed;
  options.metric = mcmc::parse_metric_kind(args.metric);
  options.initial_step_size = args.step_size > 0.0 ? args.step_size : (options.method == mcmc::SamplerKind::kMetropolis ? 0.0 : 1.0);
  options.target_accept = args.target_accept;
  options.nuts.max_depth = args.max_depth;
  options.hmc.num_steps = args.leapfrog_steps;
  options.hmc.jitter = args.jitter;
  options.stop = &g_stop;
  options.validate();

  const Table table = read_csv(args.data);
  const Dataset train = make_dataset(table, args.target);
  const Standardizer standardizer = Standardizer::fit(train, parse_standardize(args.standardize));
  const Eigen::MatrixXd X = standardizer.transform_inputs(train.X);
  const Eigen::MatrixXd Y = standardizer.transform_targets(train.Y);
  auto network = std::make_unique<Mlp>(X.cols(), args.hidden, parse_activation(args.activation));
  Prior prior = Prior::from_network(*network, parse_alpha_groups(args.alpha_groups), args.alpha);
  const Posterior posterior(std::move(network), std::make_unique<GaussianLikelihood>(args.beta), prior, X, Y);

  mcmc::NetworkModelOptions model;
  model.gibbs = args.hyper == "gibbs";
  model.hyper.alpha = {.shape = args.hyper_shape, .rate = args.hyper_rate};
  model.hyper.beta = model.hyper.alpha;
  model.init = mcmc::parse_init_kind(args.init);
  model.non_centered = args.parameterization == "noncentered";
  model.output_shift = standardizer.y_mean;
  model.output_scale = standardizer.y_scale;
  Eigen::MatrixXd monitor_raw;
  if (!args.monitor.empty()) {
    monitor_raw = select_columns(read_csv(args.monitor), train.feature_names);
  } else {
    const Index k = std::min<Index>(5, train.X.rows());
    monitor_raw.resize(k, train.X.cols());
    for (Index i = 0; i < k; ++i) monitor_raw.row(i) = train.X.row(k > 1 ? i * (train.X.rows() - 1) / (k - 1) : 0);
  }
  model.monitor_inputs = standardizer.transform_inputs(monitor_raw);
  if (model.gibbs) mcmc::check_gibbs_supported(posterior);  // a clear error before any file is written

  if (args.precondition == "laplace") {
    // A⁻¹ at one MAP fit as the starting metric (Metropolis: the proposal covariance).
    Rng rng(args.seed, 1000);
    // The metric stays A⁻¹ (dense); warm-up adapts only the step size (proposal scale).
    options.initial_inverse_metric = laplace_covariance(posterior, rng);
    options.metric = mcmc::MetricKind::kDense;
    options.adapt_metric = false;
  }

  std::error_code ec;
  fs::create_directories(args.out, ec);
  if (ec || !fs::is_directory(args.out)) throw Error(ErrorKind::kIo, "cannot create the directory '" + args.out + "'");
  const auto path = [&](const std::string& name) { return (fs::path(args.out) / name).string(); };
  // Remove the chain files of an earlier, larger run, which predict would otherwise read.
  for (int c = args.chains; fs::exists(path("chain_" + std::to_string(c + 1) + ".csv")); ++c) {
    fs::remove(path("chain_" + std::to_string(c + 1) + ".csv"));
  }

  DrawsModel meta;
  meta.network = posterior.network().to_json();
  meta.likelihood = posterior.likelihood().to_json();
  meta.prior = posterior.prior().to_json();
  meta.standardizer = standardizer;
  meta.feature_names = train.feature_names;
  meta.target_name = train.target_name;
  meta.hyper = args.hyper;
  for (int c = 0; c < args.chains; ++c) meta.chain_files.push_back("chain_" + std::to_string(c + 1) + ".csv");
  meta.options = {{"method", args.method}, {"chains", args.chains}, {"warmup", args.warmup}, {"draws", args.draws},
                  {"thin", args.thin}, {"seed", args.seed}, {"init", args.init}, {"parameterization", args.parameterization}, {"metric", args.metric},
                  {"hyper_shape", args.hyper_shape}, {"hyper_rate", args.hyper_rate}, {"data", args.data},
                  {"target", args.target}};
  save_draws_model(path("model.json"), meta);

  std::vector<std::string> config = {
      "occam sample (Stan CSV format)",
      "model = " + posterior.network().describe() + ", gaussian likelihood",
      "method = sample (Default)",
      "  sample",
      "    num_samples = " + std::to_string(args.draws),
      "    num_warmup = " + std::to_string(args.warmup),
      "    save_warmup = " + std::to_string(args.save_warmup ? 1 : 0),
      "    thin = " + std::to_string(args.thin),
      "    algorithm = " + std::string(options.method == mcmc::SamplerKind::kMetropolis ? "metropolis" : "hmc"),
      "      engine = " + std::string(options.method == mcmc::SamplerKind::kNuts ? "nuts" : "static"),
      "        max_depth = " + std::to_string(args.max_depth),
      "      metric = " + std::string(mcmc::to_string(options.metric)),
      "hyper = " + args.hyper + (model.gibbs ? format(" (Gamma(%g, %g) priors on alpha and beta)", args.hyper_shape, args.hyper_rate) : ""),
      "init = " + args.init,
      "parameterization = " + args.parameterization,
      "data = " + args.data,
      "random",
      "  seed = " + std::to_string(args.seed),
  };

  ChainProgress progress(args.chains, !args.quiet);
  g_stop.store(false);
  auto previous = std::signal(SIGINT, on_sigint);
  mcmc::SamplerSummary summary;
  try {
    summary = mcmc::sample([&](int) { return std::make_unique<mcmc::NetworkChainModel>(posterior, model); }, options,
                           [&](int c) -> std::unique_ptr<mcmc::DrawSink> {
                             std::vector<std::string> lines = config;
                             lines.push_back("id = " + std::to_string(c + 1));
                             return std::make_unique<ProgressSink>(
                                 std::make_unique<mcmc::StanCsvWriter>(path(meta.chain_files[static_cast<std::size_t>(c)]), lines),
                                 &progress, c);
                           });
  } catch (...) {
    std::signal(SIGINT, previous);
    progress.clear();
    throw;
  }
  std::signal(SIGINT, previous);
  progress.clear();

  const std::string table_text = diagnostics_table(summary, path("summary.csv"));
  // Per-chain sampler statistics, for scripts (time per gradient, divergences).
  Eigen::MatrixXd chains(static_cast<Index>(summary.chains.size()), 10);
  for (std::size_t c = 0; c < summary.chains.size(); ++c) {
    const mcmc::ChainSummary& s = summary.chains[c];
    chains.row(static_cast<Index>(c)) << s.chain + 1, s.iterations, s.draws, s.step_size, s.mean_accept_stat,
        s.mean_tree_depth, s.divergences, static_cast<double>(s.gradient_evaluations), s.warmup_seconds,
        s.sampling_seconds;
  }
  write_file_atomic(path("chains.csv"),
                    format_csv({"chain", "iterations", "draws", "step_size", "accept_stat", "tree_depth", "divergences",
                                "gradients", "warmup_seconds", "sampling_seconds"},
                               chains));
  if (!args.quiet) {
    std::cout << table_text;
    std::cout << "draws written to " << args.out << "/ (" << meta.chain_files.front() << " ... "
              << meta.chain_files.back() << ", model.json, summary.csv)\n";
  }
  if (summary.interrupted) {
    std::cerr << "occam: interrupted: every chain stopped cleanly; the draws so far are in " << args.out << "/\n";
    std::exit(130);
  }
}

}  // namespace

Command add_sample_command(CLI::App& parent) {
  auto args = std::make_shared<SampleArgs>();
  CLI::App* c = parent.add_subcommand(
      "sample", "Sample a Bayesian network's posterior by MCMC (NUTS, HMC or Metropolis; α and β by Gibbs or fixed)");
  c->add_option("--data", args->data, "training data: CSV with a header row of column names")->required();
  c->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  c->add_option("--out", args->out, "output directory (created if needed)");
  c->add_option_function<std::string>(
       "--hidden", [args](const std::string& text) { args->hidden = parse_layer_sizes(text, "--hidden"); },
       "hidden units per layer, comma-separated for deeper nets")
      ->check(LayerSizesValidator())
      ->default_str("10");
  c->add_option("--activation", args->activation, "hidden-unit activation")
      ->check(CLI::IsMember({"tanh", "relu", "sigmoid", "softplus", "identity"}));
  c->add_option("--alpha-groups", args->alpha_groups, "default: MacKay's four weight groups; single: one α")
      ->check(CLI::IsMember({"default", "single"}));
  c->add_option("--standardize", args->standardize, "standardise inputs and target (both), inputs only, or none")
      ->check(CLI::IsMember({"both", "inputs", "none"}));
  c->add_option("--method", args->method, "nuts (No-U-Turn), hmc (fixed leapfrog steps) or metropolis (random walk)")
      ->check(CLI::IsMember({"nuts", "hmc", "metropolis"}));
  c->add_option("--chains", args->chains, "number of chains")->check(CLI::PositiveNumber);
  c->add_option("--threads", args->threads, "threads (0: one per chain); the draws do not depend on it")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--warmup", args->warmup, "warm-up (burn-in) iterations per chain: adapted, then discarded")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--draws", args->draws, "iterations per chain after warm-up")->check(CLI::NonNegativeNumber);
  c->add_option("--thin", args->thin, "keep every n-th draw")->check(CLI::PositiveNumber);
  c->add_flag("--save-warmup", args->save_warmup, "also write the warm-up draws to the chain files");
  c->add_option("--seed", args->seed, "seed; chain k uses its own stream of it");
  c->add_option("--init", args->init, "initial weights: prior (a prior draw), map (a MAP fit per chain) or laplace "
                                      "(a draw from the Laplace approximation at that MAP)")
      ->check(CLI::IsMember({"prior", "map", "laplace"}));
  c->add_option("--parameterization", args->parameterization,
                "coordinates of the weight kernel: noncentered (u = √α·w, whose prior does not change with α) or "
                "centered (w itself); the draws written are always w")
      ->check(CLI::IsMember({"noncentered", "centered"}));
  c->add_option("--hyper", args->hyper, "gibbs (α and β sampled from their Gamma full conditionals) or fixed")
      ->check(CLI::IsMember({"gibbs", "fixed"}));
  c->add_option("--alpha", args->alpha, "prior precision α (fixed, or the starting value for gibbs)")->check(CLI::PositiveNumber);
  c->add_option("--beta", args->beta, "noise precision β (fixed, or the starting value for gibbs)")->check(CLI::PositiveNumber);
  c->add_option("--hyper-shape", args->hyper_shape, "shape a of the Gamma(a, b) priors on α and β")->check(CLI::NonNegativeNumber);
  c->add_option("--hyper-rate", args->hyper_rate, "rate b of the Gamma(a, b) priors on α and β")->check(CLI::NonNegativeNumber);
  c->add_option("--metric", args->metric, "HMC/NUTS metric, or Metropolis proposal shape, adapted in warm-up: "
                                          "diag, dense or unit (not adapted)")
      ->check(CLI::IsMember({"diag", "dense", "unit"}));
  c->add_option("--precondition", args->precondition, "laplace: use the Laplace covariance A⁻¹ at a MAP fit as the "
                                                      "(dense, not adapted) metric; for Metropolis, the proposal covariance")
      ->check(CLI::IsMember({"none", "laplace"}));
  c->add_option("--step-size", args->step_size, "initial step size (Metropolis: proposal scale); 0: 1 for HMC and NUTS, 2.38/√W for Metropolis")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--target-accept", args->target_accept, "acceptance the step size adapts to; 0: 0.8 (HMC, NUTS) or 0.234 (Metropolis)")
      ->check(CLI::Range(0.0, 0.999));
  c->add_option("--max-depth", args->max_depth, "NUTS maximum tree depth")->check(CLI::Range(1, 30));
  c->add_option("--leapfrog-steps", args->leapfrog_steps, "HMC leapfrog steps per transition")->check(CLI::PositiveNumber);
  c->add_option("--jitter", args->jitter, "HMC step-size jitter, uniform in ±jitter·ε")->check(CLI::Range(0.0, 0.99));
  c->add_option("--monitor", args->monitor, "CSV of inputs at which to report the network output f (default: 5 training rows)");
  c->add_flag("--quiet", args->quiet, "print nothing on success");
  c->footer(kSampleExample);
  return {c, [args] { run_sample(*args); }};
}

}  // namespace occam::cli

// occam sample — MCMC over a network's weights (NUTS, HMC, Metropolis, the microcanonical MCLMC and
// MAMS, or the stochastic-gradient SGLD and SGHMC), α and β fixed or by Gibbs, parallel chains written as Stan CSV files, and a table of convergence diagnostics.

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "diagnostics_table.h"
#include "enum_choices.h"
#include "interrupt.h"
#include "model_options.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/io.h"
#include "occam/run_summary.h"
#include "occam/status.h"
#include "occam/time_left.h"
#include "output.h"
#include "process_group.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct SampleArgs {
  std::string data;
  // A resumed run: --data as the run was started with it. Its files name the data that way (a
  // chain restarted from its first iteration writes the same header as the run's other chains),
  // while `data` is resolved against the directory the run was started in.
  std::string data_as_given;
  std::string target;
  std::string out = "run";
  ModelArgs model;  // --model, --hidden, --likelihood, --prior, --alpha, --beta, ... as `occam fit` has them
  std::string method = "nuts";
  int chains = 4;
  int threads = 0;
  int warmup = 1000;
  int draws = 1000;
  int thin = 1;
  bool save_warmup = false;
  std::uint64_t seed = 1;
  std::string init = "map";
  std::string init_optimizer = "auto";
  std::string parameterization = "centered";
  std::string hyper = "gibbs";
  double hyper_shape = mcmc::GammaPrior{}.shape;
  double hyper_rate = mcmc::GammaPrior{}.rate;
  std::string metric = "diag";
  std::string precondition = "none";
  double step_size = 0.0;
  double target_accept = 0.0;
  int max_depth = mcmc::NutsOptions{}.max_depth;
  int leapfrog_steps = mcmc::HmcOptions{}.num_steps;
  double jitter = mcmc::HmcOptions{}.jitter;
  Index batch_size = 0;
  double friction = mcmc::StochasticGradientOptions{}.friction;
  int cycles = 0;
  double exploration = 0.0;
  int gibbs_every = 1;
  std::string integrator = mcmc::to_string(mcmc::MicrocanonicalOptions{}.integrator);
  double trajectory_length = 0.0;
  double energy_variance = mcmc::MicrocanonicalOptions{}.energy_variance;
  int max_steps = mcmc::MicrocanonicalOptions{}.max_steps;
  std::string monitor;
  std::string log_lik = "auto";
  std::string progress;  // --progress, empty when not given
  bool quiet = false;
  int checkpoint_every = 100;
  std::string resume;    // --resume RUN: continue that run
};

constexpr Index kAutoLogLikRows = 1000;

constexpr const char* kSampleExample = R"(
Examples:
  occam sample --data train.csv --target y --hidden 10 --method nuts --chains 4 \
               --warmup 1000 --draws 1000 --seed 1 --out run/
  occam predict --draws run/ --data test.csv --out pred.csv
  occam sample --data counts.csv --target count --model linear --likelihood poisson \
               --offset log_exposure --out glm/

The model options are those of 'occam fit': --model linear|mlp, --likelihood
gaussian|bernoulli|poisson|categorical|hetero (--offset for poisson), --prior
ridge|groups|ard|laplacian (--grid or --edges), --standardize.

Writes run/chain_<k>.csv (Stan's CSV format, one file per chain, each draw flushed as it is made),
run/model.json (what predict needs), run/summary.csv (the diagnostics table), run/chains.csv
(per-chain step size, acceptance, tree depth, divergences, gradient evaluations and seconds) and,
last, run/run.json: the manifest (status complete, interrupted or failed, each file's size and
checksum). An earlier run in the folder is removed first, manifest first; predict reads a folder
only through a manifest that matches its files. Ctrl-C (SIGINT) or SIGTERM stops every chain
cleanly, during the chains' MAP initialisation too: the draws so far stay on disk in valid files,
status interrupted (exit code 130, or 143 for SIGTERM).

Resuming: each chain's state is checkpointed to run/checkpoint_<k>.json every --checkpoint-every
iterations (default 100) and where the run stops. 'occam sample --resume run/' continues a run
that was interrupted or killed (kill -9, a crash, a reboot) from those checkpoints, with the
options and data it was started with, and ends with the chain files and summary.csv an
uninterrupted run writes, byte for byte (chains.csv too, but for its times). Options given with
--resume must be the run's own (a differing one is refused, exit code 2, naming it), except
--threads, --progress, --quiet, --checkpoint-every and --max-memory.

Hyperparameters: --hyper gibbs draws α_g and β (Gaussian likelihood) from their Gamma full
conditionals between weight transitions, under Gamma(a, b) priors (--hyper-shape a, --hyper-rate
b; shape and rate, default a = b = 0.01, a proper vague prior; a = b = 0 is the improper 1/σ
prior); a laplacian prior's λ_s and the ridge α of its smoothed weights, under the same prior, by
slice sampling. --hyper fixed keeps --alpha, --beta and --smoothing (default 1, 10, 1). They refer
to the standardised data (--standardize).

Microcanonical: --method mclmc runs the isokinetic dynamics with a partial velocity refresh each
step and no Metropolis test (a small bias, docs/mcmc.md states it); --method mams the same
dynamics as trajectories with a Metropolis test on their energy error (exact). Warm-up tunes the
step size (mclmc: to an energy error variance Var[dE]/d of --energy-variance; mams: to an
acceptance of 0.9), the diagonal metric and the decoherence length L (--trajectory-length fixes
it); each iteration is one stretch of about L/step-size integrator steps. In their chain files
n_leapfrog__ counts gradients and energy__ holds the iteration's energy error.

Stochastic gradients: --method sgld or sghmc takes one step per minibatch of --batch-size rows
(drawn without replacement, a new permutation each epoch), with time step --step-size (required),
no Metropolis correction (an O(h) bias), --warmup as burn-in and optionally --cycles (cyclical
step sizes) and --precondition rmsprop; with --hyper gibbs, α and β are drawn from the full data
every --gibbs-every epochs. In their chain files accept_stat__ is 1, energy__ nan and lp__ the
minibatch estimate (docs/mcmc.md, "Stochastic-gradient MCMC").

Under mpirun (a build with Open MPI), every --method spreads the rows over the processes, which
run every chain together, one after another: the draws and files of one process with the same
options, byte for byte (name --init-optimizer lbfgs: one process would fit a small net's MAP start
by Levenberg-Marquardt); sgld and sghmc gather each minibatch's rows from the processes that hold
them and split its gradient between them. Process 0 alone prints and writes the run folder, which
must be on a file system every process sees for --resume. --init laplace and --precondition
laplace are refused there (docs/mcmc.md, "Sampling with the rows spread over processes").

A network's weights are not identifiable (hidden units can be permuted and flipped), so the table
reports lp__, the hyperparameters and f.k, the network output at monitored inputs (--monitor,
default 5 training rows); for --model linear the coefficients w.j too.)";

// One progress bar per chain on a single line; the fit service calls it from the chains' threads,
// one call at a time. Ctrl-C stops every chain after its current iteration.
FitCallback chain_progress(Progress* progress, int chains) {
  auto done = std::make_shared<std::vector<int>>(static_cast<std::size_t>(chains), 0);
  auto eta = std::make_shared<TimeLeft>();
  return [progress, done, eta](const FitProgress& p) {
    if (interrupted()) return CallbackReturn::kAbort;
    // The MAP fits before sampling (chain < 0) are polled for Ctrl-C, not drawn.
    if (p.chain < 0 || !progress->enabled()) return CallbackReturn::kContinue;
    (*done)[static_cast<std::size_t>(p.chain)] = p.iteration;
    if (!eta->started()) eta->begin(0.0);  // the first iteration of the first chain
    if (!progress->due()) return CallbackReturn::kContinue;
    const double all = static_cast<double>(std::accumulate(done->begin(), done->end(), 0));
    const std::string left = eta->describe(all, static_cast<double>(p.total) * static_cast<double>(done->size()));
    std::string line;
    for (std::size_t c = 0; c < done->size(); ++c) {
      const int pct = p.total > 0 ? 100 * (*done)[c] / p.total : 100;
      if (progress->lines()) {  // a log: the iterations themselves
        line += format("%schain %zu: iteration %d of %d (%d%%)", c ? ", " : "", c + 1, (*done)[c], p.total, pct);
        continue;
      }
      const int filled = pct / 10;
      line += format("%schain %zu [%s%s] %3d%%", c ? "  " : "", c + 1, std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(10 - filled), '.').c_str(), pct);
    }
    progress->update(left.empty() ? line : line + (progress->lines() ? ", " : "  ") + left);
    return CallbackReturn::kContinue;
  };
}

struct SamplePlan {
  ModelSpec spec;
  SamplingMethod method;
};

// The spec and sampling options the flags ask for, validated; no file is read.
SamplePlan plan_sample(const CLI::App& command, const SampleArgs& args) {
  SamplePlan plan;
  plan.spec = model_spec(command, args.model);
  ModelSpec& spec = plan.spec;

  SamplingMethod& method = plan.method;
  mcmc::SamplerOptions& options = method.sampler;
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
  options.checkpoint_every = args.checkpoint_every;
  options.hmc.num_steps = args.leapfrog_steps;
  options.hmc.jitter = args.jitter;
  if (mcmc::is_stochastic_gradient(options.method)) {
    if (!(args.step_size > 0.0)) {
      throw Error(ErrorKind::kInvalidArgument, "--method " + args.method +
                                                   " needs --step-size: it is not adapted, and a good value depends on "
                                                   "the data's size and scale (docs/mcmc.md, Stochastic-gradient MCMC)");
    }
    if (args.precondition == "laplace" || args.parameterization == "noncentered") {
      throw Error(ErrorKind::kInvalidArgument, "--method " + args.method + " samples the centred weights; for its "
                                                   "preconditioning use --precondition rmsprop");
    }
    mcmc::StochasticGradientOptions& sg = options.stochastic_gradient;
    sg.batch_size = args.batch_size;
    sg.friction = args.friction;
    sg.cycles = args.cycles;
    sg.exploration = args.exploration;
    sg.rmsprop = args.precondition == "rmsprop";
    sg.gibbs_every = args.gibbs_every;
  } else if (args.precondition == "rmsprop") {
    throw Error(ErrorKind::kInvalidArgument, "--precondition rmsprop is for --method sgld and sghmc");
  } else {
    for (const char* name : {"--batch-size", "--friction", "--cycles", "--exploration", "--gibbs-every"}) {
      if (command.get_option(name)->count() > 0) {
        throw Error(ErrorKind::kInvalidArgument, std::string(name) + " applies to --method sgld and sghmc only");
      }
    }
  }
  if (mcmc::is_microcanonical(options.method)) {
    if (args.precondition == "laplace") {
      throw Error(ErrorKind::kInvalidArgument, "--method " + args.method + " takes a diagonal metric (--metric diag, "
                                                   "adapted in warm-up) or none (--metric unit), not --precondition laplace");
    }
    mcmc::MicrocanonicalOptions& mc = options.microcanonical;
    mc.integrator = mcmc::parse_isokinetic_integrator(args.integrator);
    mc.trajectory_length = args.trajectory_length;
    mc.energy_variance = args.energy_variance;
    mc.max_steps = args.max_steps;
  } else {
    for (const char* name : {"--integrator", "--trajectory-length", "--energy-variance", "--max-steps"}) {
      if (command.get_option(name)->count() > 0) {
        throw Error(ErrorKind::kInvalidArgument, std::string(name) + " applies to --method mclmc and mams only");
      }
    }
  }
  options.validate();
  method.chains.gibbs = args.hyper == "gibbs";
  method.chains.hyper.alpha = {.shape = args.hyper_shape, .rate = args.hyper_rate};
  method.chains.hyper.beta = method.chains.hyper.alpha;
  method.chains.init = mcmc::parse_init_kind(args.init);
  method.chains.map_optimizer = parse_optimizer(args.init_optimizer);
  method.chains.non_centered = args.parameterization == "noncentered";
  method.laplace_metric = args.precondition == "laplace";
  method.run_directory = args.out;
  method.memory.max_bytes = args.model.max_memory;
  // Under mpirun the rows are spread over the processes, which run every chain together, one
  // chain after another; --threads then sums each process's rows on that many threads.
  if (processes() != nullptr) {
    method.parallel.communicator = processes();
    method.parallel.threads = std::max(1, args.threads);
  }
  validate_spec(spec, args.model);
  return plan;
}

// The options given on the command line as words ("--warmup", "500", "--save-warmup"), to
// keep with the run and parse again when it is resumed.
std::vector<std::string> given_words(const CLI::App& command) {
  std::vector<std::string> words;
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_name() == "--resume" || option->get_name() == "--help") continue;
    if (option->get_items_expected_max() == 0) {  // a flag
      for (std::size_t i = 0; i < option->count(); ++i) words.push_back(option->get_name());
      continue;
    }
    for (const std::string& value : option->results()) {
      words.push_back(option->get_name());
      words.push_back(value);
    }
  }
  return words;
}

CLI::App* add_sample_options(CLI::App& parent, SampleArgs* args);

// The sample command parsed afresh from `words`, repeated options taking their last value.
struct ParsedSample {
  CLI::App root;
  SampleArgs args;
  CLI::App* command = nullptr;
};
std::unique_ptr<ParsedSample> parse_sample(const std::vector<std::string>& words) {
  auto parsed = std::make_unique<ParsedSample>();
  parsed->args.model.hidden = {10};
  parsed->command = add_sample_options(parsed->root, &parsed->args);
  for (CLI::Option* option : parsed->command->get_options({})) option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 parses a vector from its end
  reversed.push_back("sample");
  parsed->root.parse(reversed);
  return parsed;
}

void sample_with(const CLI::App& command, const SampleArgs& args, bool resume, const std::string& request);

// occam sample --resume RUN [options]: the run's own options, from its model.json, with the
// given ones checked against them.
void resume_sample(const CLI::App& command, const SampleArgs& given) {
  namespace fs = std::filesystem;
  const std::string dir = given.resume;
  const std::string text = run_request(dir);
  const nlohmann::json request = text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
  if (!request.is_object() || !request.contains("options") || !request.at("options").is_array()) {
    throw Error(ErrorKind::kInvalidInput, dir + ": the run keeps no record of its options (it was sampled by an occam "
                                                "without --resume); sample again into " + dir);
  }
  const auto words = request.at("options").get<std::vector<std::string>>();
  std::unique_ptr<ParsedSample> run;
  try {
    run = parse_sample(words);
  } catch (const CLI::ParseError& e) {
    throw Error(ErrorKind::kInvalidInput, dir + "/model.json: the run's options no longer parse (" + std::string(e.what()) + ")");
  }
  // Each option given now must ask for what the run had: the run's options with it appended
  // must mean the same spec, sampler settings and files.
  const auto meaning = [](ParsedSample& p) {
    const SamplePlan plan = plan_sample(*p.command, p.args);
    return nlohmann::json{{"settings", sampling_settings(plan.spec, plan.method)}, {"target", p.args.target},
                          {"monitor", p.args.monitor}, {"log_lik", p.args.log_lik}};
  };
  const nlohmann::json original = meaning(*run);
  static const std::vector<std::string> kFree = {"--resume", "--out", "--threads", "--progress", "--quiet",
                                                 "--checkpoint-every", "--max-memory", "--data", "--help"};
  std::vector<std::string> differing;
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || std::find(kFree.begin(), kFree.end(), option->get_name()) != kFree.end()) continue;
    std::vector<std::string> changed = words;
    std::vector<std::string> now;
    if (option->get_items_expected_max() == 0) {
      changed.push_back(option->get_name());
    } else {
      for (const std::string& value : option->results()) {
        changed.push_back(option->get_name());
        changed.push_back(value);
        now.push_back(value);
      }
    }
    if (meaning(*parse_sample(changed)) == original) continue;
    const CLI::Option* before = run->command->get_option(option->get_name());
    std::string was = before->count() > 0 ? (before->get_items_expected_max() == 0 ? "given" : "") : "not given";
    for (const std::string& value : before->count() > 0 && before->get_items_expected_max() != 0 ? before->results() : std::vector<std::string>{}) {
      was += (was.empty() ? "" : " ") + value;
    }
    std::string here = option->get_items_expected_max() == 0 ? "given" : "";
    for (const std::string& value : now) here += (here.empty() ? "" : " ") + value;
    differing.push_back(option->get_name() + " (" + here + " here, " + was + " in the run)");
  }
  if (!differing.empty()) {
    std::string message = "--resume " + dir + ": a run resumes with its own options; these differ: ";
    for (std::size_t i = 0; i < differing.size(); ++i) message += (i ? ", " : "") + differing[i];
    throw Error(ErrorKind::kInvalidArgument, message + " (leave them out to use the run's)");
  }
  // Files named relative to where the run was started.
  const fs::path started = request.value("directory", std::string());
  SampleArgs args = run->args;
  args.data_as_given = args.data;
  const auto from_start = [&](std::string* path) {
    if (!path->empty() && fs::path(*path).is_relative() && !started.empty()) *path = (started / *path).string();
  };
  from_start(&args.data);
  from_start(&args.monitor);
  from_start(&args.model.edges);
  if (!given.data.empty()) args.data = given.data;  // the same data elsewhere: the run checks its checksum
  args.out = dir;
  args.resume = dir;
  for (const auto& [name, apply] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"--threads", [&] { args.threads = given.threads; }},
           {"--progress", [&] { args.progress = given.progress; }},
           {"--quiet", [&] { args.quiet = given.quiet; }},
           {"--checkpoint-every", [&] { args.checkpoint_every = given.checkpoint_every; }},
           {"--max-memory", [&] { args.model.max_memory = given.model.max_memory; }}}) {
    if (command.get_option(name)->count() > 0) apply();
  }
  sample_with(*run->command, args, /*resume=*/true, text);
}

void run_sample(const CLI::App& command, const SampleArgs& args) {
  if (!args.resume.empty()) {
    resume_sample(command, args);
    return;
  }
  const nlohmann::json request = {{"options", given_words(command)}, {"directory", std::filesystem::current_path().string()}};
  sample_with(command, args, /*resume=*/false, request.dump());
}

void sample_with(const CLI::App& command, const SampleArgs& args, bool resume, const std::string& request) {
  namespace fs = std::filesystem;
  SamplePlan plan = plan_sample(command, args);
  ModelSpec& spec = plan.spec;
  SamplingMethod& method = plan.method;
  method.resume = resume;
  method.request = request;

  Dataset train = read_data(args.data, args.target, args.model, &spec, &method.parallel);
  if (!args.data_as_given.empty()) train.source = args.data_as_given;
  if (!args.monitor.empty()) method.monitor = select_columns(read_csv(args.monitor), train.feature_names);
  // Pointwise log-likelihood columns for PSIS-LOO (occam loo, R's loo): by default only for data
  // small enough that a chain file stays a few tens of MB (1000 draws × m columns).
  method.chains.log_lik = args.log_lik == "on" || (args.log_lik == "auto" && train.num_rows() <= kAutoLogLikRows);
  check_fit_memory(spec, train, method);

  // The run folder is this command's from the first draw to the last table (fit() holds it while it
  // samples; the tables below belong to the same run): a second sample or resume into it is refused.
  std::optional<RunDirectoryLock> folder_lock;
  if (is_writer()) folder_lock.emplace(args.out, RunDirectoryLock::Access::kWrite);
  // Process 0 alone reports progress, whatever --progress asks.
  Progress progress(is_writer() ? progress_mode(args.progress, args.quiet) : ProgressMode::kNone);
  const FittedModel model = fit(spec, train, method, chain_progress(&progress, args.chains));
  progress.clear();
  const mcmc::SamplerSummary& summary = *model.summary.sampler;
  if (!is_writer()) {
    // Process 0 writes the tables and prints for all: they hold the same draws. An interrupted
    // run ends here too, once process 0 has written everything (a process that ends with an
    // error stops the others).
    wait_for_all_processes();
    if (summary.interrupted) throw Interrupted{"every chain stopped cleanly (process 0 reports the run)"};
    return;
  }
  const auto path = [&](const std::string& name) { return (fs::path(args.out) / name).string(); };
  const std::string table_text =
      diagnostics_table(mcmc::assess_convergence(summary, {.coefficients = spec.network.kind == NetworkKind::kLinear}),
                        summary.seconds, summary.interrupted, path("summary.csv"));
  // Per-chain sampler statistics, for scripts (time per gradient, divergences) and `occam summary`.
  write_chain_statistics(path("chains.csv"), summary);
  // The manifest, rewritten last, now covers the tables too (run.json, docs/cli.md "Run folders").
  add_run_files(args.out, {"summary.csv", "chains.csv"}, command_line());
  wait_for_all_processes();
  if (!args.quiet) {
    std::cout << table_text;
    std::cout << "draws written to " << args.out << "/ (chain_1.csv ... chain_" << args.chains
              << ".csv, model.json, summary.csv)\n";
  }
  if (summary.interrupted) {
    throw Interrupted{"every chain stopped cleanly; the draws so far are in " + args.out + "/ (run.json: status interrupted)"};
  }
}

}  // namespace

Command add_sample_command(CLI::App& parent) {
  auto args = std::make_shared<SampleArgs>();
  args->model.hidden = {10};
  CLI::App* c = add_sample_options(parent, args.get());
  return {c, [c, args] { run_sample(*c, *args); }, [c, args] {
            if (args->resume.empty()) plan_sample(*c, *args);
          }};
}

namespace {

CLI::App* add_sample_options(CLI::App& parent, SampleArgs* args) {
  CLI::App* c = parent.add_subcommand(
      "sample", "Sample the posterior of a Bayesian network or GLM by MCMC (NUTS, HMC, Metropolis, MCLMC or "
      "MAMS; the hyperparameters by Gibbs or fixed)");
  CLI::Option* data = c->add_option("--data", args->data, "training data: CSV with a header row of column names")->required();
  CLI::Option* target = c->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  c->add_option("--out", args->out, "output directory (created if needed)");
  c->add_option("--resume", args->resume,
                "continue the interrupted or killed run in this folder from its checkpoints, with its own options and "
                "data (--data, --target and the rest need not be given; given, they must be the run's)")
      ->trigger_on_parse()
      ->each([data, target](const std::string&) {
        data->required(false);
        target->required(false);
      });
  c->add_option("--checkpoint-every", args->checkpoint_every,
                "iterations between checkpoints of each chain's state (checkpoint_<k>.json, for --resume); 0: none")
      ->check(NonNegative());
  add_model_options(c, &args->model, {.engine = false});
  c->add_option("--method", args->method, "nuts (No-U-Turn), hmc (fixed leapfrog steps), metropolis (random walk), "
                                          "mclmc (microcanonical Langevin, unadjusted: a small bias), mams (its "
                                          "Metropolis-adjusted form, exact), or on minibatches sgld (stochastic-gradient "
                                          "Langevin) or sghmc (with momentum)")
      ->check(one_of<mcmc::SamplerKind>());
  c->add_option("--chains", args->chains, "number of chains")->check(Positive());
  c->add_option("--threads", args->threads, "threads (0: one per chain; under mpirun, threads per process summing its "
                                            "rows, 0: one); the draws do not depend on it")
      ->check(NonNegative());
  c->add_option("--warmup", args->warmup, "warm-up (burn-in) iterations per chain: adapted, then discarded")
      ->check(NonNegative());
  c->add_option("--draws", args->draws, "iterations per chain after warm-up")->check(NonNegative());
  c->add_option("--thin", args->thin, "keep every n-th draw")->check(Positive());
  c->add_flag("--save-warmup", args->save_warmup, "also write the warm-up draws to the chain files");
  c->add_option("--seed", args->seed, "seed; chain k uses its own stream of it")->check(Seed());
  c->add_option("--init", args->init, "initial weights: prior (a prior draw), map (a MAP fit per chain) or laplace "
                                      "(a draw from the Laplace approximation at that MAP)")
      ->check(one_of<mcmc::InitKind>());
  c->add_option("--init-optimizer", args->init_optimizer,
                "optimiser of the MAP fit of --init map and laplace: auto (Levenberg-Marquardt up to 3000 weights, "
                "Newton for --model linear, L-BFGS above; always L-BFGS under mpirun), lbfgs, lm or newton")
      ->check(CLI::IsMember({"auto", "lbfgs", "lm", "newton"}));
  c->add_option("--log-lik", args->log_lik,
                "write log_lik.1..log_lik.m, the pointwise log-likelihood of the m training rows, in the chain files "
                "(for occam loo and R's loo): on, off, or auto (on for at most 1000 rows)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  c->add_option("--parameterization", args->parameterization,
                "coordinates of the weight kernel: noncentered (u = √α·w, whose prior does not change with α) or "
                "centered (w itself); the draws written are always w")
      ->check(CLI::IsMember({"noncentered", "centered"}));
  c->add_option("--hyper", args->hyper,
                "gibbs (α per group and β from their Gamma full conditionals; a laplacian prior's λ_s and its smoothed "
                "weights' α by slice sampling) or fixed (--alpha, --beta, --smoothing, default 1, 10, 1)")
      ->check(CLI::IsMember({"gibbs", "fixed"}));
  c->add_option("--hyper-shape", args->hyper_shape, "shape a of the Gamma(a, b) priors on α, λ_s and β")->check(NonNegative());
  c->add_option("--hyper-rate", args->hyper_rate, "rate b of the Gamma(a, b) priors on α, λ_s and β")->check(NonNegative());
  c->add_option("--metric", args->metric, "HMC/NUTS metric, or Metropolis proposal shape, adapted in warm-up: "
                                          "diag, dense or unit (not adapted)")
      ->check(one_of<mcmc::MetricKind>());
  c->add_option("--precondition", args->precondition, "laplace: use the Laplace covariance A⁻¹ at a MAP fit as the "
                                                      "(dense, not adapted) metric; for Metropolis, the proposal covariance; "
                                                      "rmsprop (sgld, sghmc): the diagonal RMSprop preconditioner")
      ->check(CLI::IsMember({"none", "laplace", "rmsprop"}));
  c->add_option("--step-size", args->step_size, "initial step size (Metropolis: proposal scale); 0: 1 for HMC, NUTS, MCLMC and MAMS, "
                                                "2.38/√W for Metropolis; sgld, sghmc: their time step h, required")
      ->check(NonNegative());
  c->add_option("--batch-size", args->batch_size, "sgld, sghmc: rows per minibatch (0: min(rows, 128))")->check(NonNegative());
  c->add_option("--friction", args->friction, "sghmc: the friction C per unit time (h·C < 1)")->check(Positive());
  c->add_option("--cycles", args->cycles, "sgld, sghmc: cosine step-size cycles over all iterations (0: a constant step)")
      ->check(NonNegative());
  c->add_option("--exploration", args->exploration,
                "sgld, sghmc with --cycles: the fraction of each cycle spent exploring (no noise, no draws kept)")
      ->check(InRange(0.0, 0.99));
  c->add_option("--gibbs-every", args->gibbs_every, "sgld, sghmc with --hyper gibbs: epochs between Gibbs updates")
      ->check(Positive());
  c->add_option("--integrator", args->integrator, "mclmc, mams: minimal_norm (two gradients a step) or leapfrog (one)")
      ->check(one_of<mcmc::IsokineticIntegrator>());
  c->add_option("--trajectory-length", args->trajectory_length,
                "mclmc, mams: the decoherence length L in the metric's coordinates; 0: tuned in warm-up")
      ->check(NonNegative());
  c->add_option("--energy-variance", args->energy_variance,
                "mclmc: the energy error variance per parameter, Var[dE]/d, its step size is tuned to")
      ->check(Positive());
  c->add_option("--max-steps", args->max_steps, "mclmc, mams: at most this many integrator steps per iteration")
      ->check(Positive());
  c->add_option("--target-accept", args->target_accept,
                "acceptance the step size adapts to; 0: 0.8 (HMC, NUTS), 0.9 (MAMS) or 0.234 (Metropolis)")
      ->check(InRange(0.0, 0.999));
  c->add_option("--max-depth", args->max_depth, "NUTS maximum tree depth")->check(CLI::Range(1, 30));
  c->add_option("--leapfrog-steps", args->leapfrog_steps, "HMC leapfrog steps per transition")->check(Positive());
  c->add_option("--jitter", args->jitter, "HMC step-size jitter, uniform in ±jitter·ε")->check(InRange(0.0, 0.99));
  c->add_option("--monitor", args->monitor, "CSV of inputs at which to report the network output f (default: 5 training rows)");
  add_progress_option(c, &args->progress);
  c->add_flag("--quiet", args->quiet, "print nothing on success (and no progress unless --progress)");
  c->footer(kSampleExample);
  return c;
}

}  // namespace

}  // namespace occam::cli

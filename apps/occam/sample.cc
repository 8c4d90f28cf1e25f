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
#include "method_flags.h"
#include "model_options.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/io.h"
#include "occam/method_options.h"
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
  // The sampler's options (--chains, --warmup, --max-depth, ...), made from the library's table of
  // method options (method_flags.h).
  MethodFlags sampler;
  std::string monitor;
  std::string log_lik = "auto";
  std::string progress;  // --progress, empty when not given
  bool quiet = false;
  std::string resume;  // --resume RUN: continue that run
};

constexpr Index kAutoLogLikRows = 1000;
// The command line checkpoints a run unless told not to (the library's default is none).
constexpr int kCheckpointEvery = 100;

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
      line += format("%schain %zu [%s%s] %3d%%", c ? "  " : "", c + 1,
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
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

  nlohmann::json options = args.sampler.given;
  options["method"] = args.method;
  if (!options.contains("checkpoint_every")) options["checkpoint_every"] = kCheckpointEvery;
  // The options by the table: the defaults, the ranges, and the checks that name the flags.
  plan.method = std::get<SamplingMethod>(method_from_json(options, OptionSpelling::kFlag));
  SamplingMethod& method = plan.method;
  method.run_directory = args.out;
  method.memory.max_bytes = args.model.max_memory;
  // Under mpirun the rows are spread over the processes, which run every chain together, one
  // chain after another; --threads then sums each process's rows on that many threads.
  if (processes() != nullptr) {
    method.parallel.communicator = processes();
    method.parallel.threads = std::max(1, method.sampler.threads);
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
  for (CLI::Option* option : parsed->command->get_options({}))
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
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
    throw Error(ErrorKind::kInvalidInput, dir +
                                              ": the run keeps no record of its options (it was sampled by an occam "
                                              "without --resume); sample again into " +
                                              dir);
  }
  const auto words = request.at("options").get<std::vector<std::string>>();
  std::unique_ptr<ParsedSample> run;
  try {
    run = parse_sample(words);
  } catch (const CLI::ParseError& e) {
    throw Error(ErrorKind::kInvalidInput,
                dir + "/model.json: the run's options no longer parse (" + std::string(e.what()) + ")");
  }
  // Each option given now must ask for what the run had: the run's options with it appended
  // must mean the same spec, sampler settings and files.
  const auto meaning = [](ParsedSample& p) {
    const SamplePlan plan = plan_sample(*p.command, p.args);
    return nlohmann::json{{"settings", sampling_settings(plan.spec, plan.method)},
                          {"target", p.args.target},
                          {"monitor", p.args.monitor},
                          {"log_lik", p.args.log_lik}};
  };
  const nlohmann::json original = meaning(*run);
  static const std::vector<std::string> kFree = {"--resume",     "--out",   "--threads",
                                                 "--progress",   "--quiet", "--checkpoint-every",
                                                 "--max-memory", "--data",  "--help"};
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
    for (const std::string& value : before->count() > 0 && before->get_items_expected_max() != 0
                                        ? before->results()
                                        : std::vector<std::string>{}) {
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
  const auto keep_given = [&](const char* key) { args.sampler.given[key] = given.sampler.given.at(key); };
  for (const auto& [name, apply] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"--threads", [&] { keep_given("threads"); }},
           {"--progress", [&] { args.progress = given.progress; }},
           {"--quiet", [&] { args.quiet = given.quiet; }},
           {"--checkpoint-every", [&] { keep_given("checkpoint_every"); }},
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
  const nlohmann::json request = {{"options", given_words(command)},
                                  {"directory", std::filesystem::current_path().string()}};
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
  const FittedModel model = fit(spec, train, method, chain_progress(&progress, method.sampler.chains));
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
    std::cout << "draws written to " << args.out << "/ (chain_1.csv ... chain_" << method.sampler.chains
              << ".csv, model.json, summary.csv)\n";
  }
  if (summary.interrupted) {
    throw Interrupted{"every chain stopped cleanly; the draws so far are in " + args.out +
                      "/ (run.json: status interrupted)"};
  }
}

}  // namespace

Command add_sample_command(CLI::App& parent) {
  auto args = std::make_shared<SampleArgs>();
  args->model.hidden = {10};
  CLI::App* c = add_sample_options(parent, args.get());
  return {c, [c, args] { run_sample(*c, *args); },
          [c, args] {
            if (args->resume.empty()) plan_sample(*c, *args);
          }};
}

namespace {

CLI::App* add_sample_options(CLI::App& parent, SampleArgs* args) {
  CLI::App* c = parent.add_subcommand(
      "sample",
      "Sample the posterior of a Bayesian network or GLM by MCMC (NUTS, HMC, Metropolis, MCLMC or "
      "MAMS; the hyperparameters by Gibbs or fixed)");
  CLI::Option* data =
      c->add_option("--data", args->data, "training data: CSV with a header row of column names")->required();
  CLI::Option* target =
      c->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  c->add_option("--out", args->out, "output directory (created if needed)");
  c->add_option("--resume", args->resume,
                "continue the interrupted or killed run in this folder from its checkpoints, with its own options and "
                "data (--data, --target and the rest need not be given; given, they must be the run's)")
      ->trigger_on_parse()
      ->each([data, target](const std::string&) {
        data->required(false);
        target->required(false);
      });
  add_model_options(c, &args->model, {.engine = false});
  c->add_option("--method", args->method,
                "nuts (No-U-Turn), hmc (fixed leapfrog steps), metropolis (random walk), "
                "mclmc (microcanonical Langevin, unadjusted: a small bias), mams (its "
                "Metropolis-adjusted form, exact), or on minibatches sgld (stochastic-gradient "
                "Langevin) or sghmc (with momentum)")
      ->check(one_of<mcmc::SamplerKind>());
  // --chains, --warmup, --draws, --seed, --init, --metric, --max-depth, --max-steps, ...: every
  // option of the samplers in the library's table, with its help, range or choices and default.
  add_method_flags(c, enum_names<mcmc::SamplerKind>().names(), &args->sampler);
  c->get_option("--checkpoint-every")->default_str(std::to_string(kCheckpointEvery));
  c->add_option("--log-lik", args->log_lik,
                "write log_lik.1..log_lik.m, the pointwise log-likelihood of the m training rows, in the chain files "
                "(for occam loo and R's loo): on, off, or auto (on for at most 1000 rows)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  c->add_option("--monitor", args->monitor,
                "CSV of inputs at which to report the network output f (default: 5 training rows)");
  add_progress_option(c, &args->progress);
  c->add_flag("--quiet", args->quiet, "print nothing on success (and no progress unless --progress)");
  c->footer(kSampleExample);
  return c;
}

}  // namespace

}  // namespace occam::cli

// occam_uci — the UCI regression benchmark (Hernández-Lobato & Adams 2015 splits) for every
// method in the registry (bench/uci/uci_methods.cc), one results CSV row per (dataset, split,
// method), appended as soon as the row is known; a restarted run skips the rows already there.
//
//   occam_uci --datasets yacht,bostonHousing --splits 0-2 --methods map-cv,laplace --out results.csv
//   python3 bench/uci_report.py results.csv      # tables and figure for docs/RESULTS.md
//
// Loops run split-major (split 0 of every data set, then split 1, ...), so an interrupted run has
// breadth over data sets before depth over splits. Progress goes to stderr; exit codes as the
// occam tool: 0 success, 1 usage, 2 invalid input or argument, 3 I/O, 4 a fit that failed.
//
// Rows reproduce bit for bit on any x86-64 machine with the same portable build: the program pins
// the CPU-dependent parts of floating point (uci/uci_numerics.h) and every results file starts
// with the build's provenance. Under `mpirun -n K` (built with Open MPI) rank 0 deals the rows to
// K - 1 workers and alone writes the results file (uci/uci_mpi.h).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "occam/status.h"
#include "occam/time_left.h"
#include "uci/uci_data.h"
#include "uci/uci_methods.h"
#include "uci/uci_numerics.h"
#include "uci/uci_results.h"
#include "uci/uci_runner.h"
#ifdef OCCAM_UCI_WITH_MPI
#include "uci/uci_mpi.h"
#endif

#ifndef OCCAM_SOURCE_DIR
#define OCCAM_SOURCE_DIR "."
#endif

namespace {

using namespace occam;
using namespace occam::uci;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int parse_nonnegative(const std::string& text) {
  std::size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "--splits: '" + text + "' is not a split number (expected e.g. all, 0-2 or 0,3,5)");
  }
  return value;
}

// "all" (empty result), "0-2", "0,3,5" or a mix such as "0-2,7".
std::vector<int> parse_splits(const std::string& text) {
  std::vector<int> out;
  if (text == "all") return out;
  for (const std::string& item : split_list(text)) {
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      out.push_back(parse_nonnegative(item));
      continue;
    }
    const int first = parse_nonnegative(item.substr(0, dash)), last = parse_nonnegative(item.substr(dash + 1));
    if (last < first) throw Error(ErrorKind::kInvalidArgument, "--splits: empty range '" + item + "'");
    for (int k = first; k <= last; ++k) out.push_back(k);
  }
  if (out.empty()) throw Error(ErrorKind::kInvalidArgument, "--splits: no split given");
  return out;
}

std::string method_help() {
  std::string text = "comma-separated methods, or all:";
  for (const UciMethod& m : method_registry()) text += "\n  " + m.name + ": " + m.description;
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  bool native_numerics = false;
  for (int i = 1; i < argc; ++i) native_numerics = native_numerics || std::string(argv[i]) == "--native-numerics";
  try {
    pin_numerics(argv, native_numerics);
  } catch (const Error& e) {
    std::fprintf(stderr, "occam_uci: %s\n", e.what());
    return exit_code(e.kind());
  }
  CLI::App app{
      "The UCI regression benchmark: test RMSE, test log-likelihood and 95% coverage per split, "
      "in the target's original units"};
  std::string data_dir =
      (std::filesystem::path(OCCAM_SOURCE_DIR) / ".." / "shared" / "data" / "uci").lexically_normal().string();
  std::string datasets_text = "all", splits_text = "all", methods_text = "all", out_path = "uci_results.csv";
  MethodSettings settings;
  bool list = false;
  app.add_option("--data-dir", data_dir, "directory with one folder per data set (data.txt, index_*.txt, ...)")
      ->capture_default_str();
  app.add_option("--datasets", datasets_text, "comma-separated data set folder names, or all")->capture_default_str();
  app.add_option("--splits", splits_text,
                 "splits to run: all, a range 0-2, a list 0,3,5 (splits a data set "
                 "does not have are skipped)")
      ->capture_default_str();
  app.add_option("--methods", methods_text, method_help())->capture_default_str();
  app.add_option("--out", out_path, "results CSV: created, or appended to (rows already there are skipped)")
      ->capture_default_str();
  app.add_option("--seed", settings.seed, "seed of the initial weights, the CV folds and the NUTS chains")
      ->capture_default_str();
  app.add_option("--cv-folds", settings.cv_folds, "map-cv: folds of the training split")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  app.add_option(
         "--max-map-iterations", settings.max_map_iterations,
         "Levenberg-Marquardt iterations per MAP run (map-cv's CV fits are L-BFGS, at most 1000 iterations each)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-rounds", settings.max_rounds, "laplace: evidence re-estimation rounds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::string optimizer_text = "auto";
  app.add_option("--map-optimizer", optimizer_text,
                 "MAP optimiser of laplace's rounds, map-cv's final fit and vi-meanfield's start: auto "
                 "(Levenberg-Marquardt for laplace and its committees; for the others up to 5000 training rows, "
                 "L-BFGS above), lm or lbfgs")
      ->check(CLI::IsMember({"auto", "lm", "lbfgs"}))
      ->capture_default_str();
  app.add_option("--nuts-chains", settings.nuts_chains, "nuts: chains, each from its own MAP fit")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--nuts-warmup", settings.nuts_warmup, "nuts: warm-up iterations per chain (adapted, then discarded)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--nuts-draws", settings.nuts_draws, "nuts: iterations per chain after warm-up")
      ->check(CLI::Range(4, 1000000))
      ->capture_default_str();
  app.add_option("--nuts-threads", settings.nuts_threads,
                 "nuts: threads (0: one per chain, at most the cores); the draws do not depend on it")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--nuts-max-depth", settings.nuts_max_depth,
                 "nuts: maximum tree depth (at most 2^depth - 1 gradients per iteration)")
      ->check(CLI::Range(1, 30))
      ->capture_default_str();
  app.add_option(
         "--committee-members", settings.committee_members,
         "laplace-committee and laplace-ensemble: Laplace fits from independent starts (weighted by their evidence; equally)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--hetero-refits", settings.hetero_refits,
                 "laplace-hetero-refit: weighted refits of the mean after the noise network (0: laplace-hetero)")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  std::string predictions_dir;
  app.add_option("--predictions", predictions_dir,
                 "also write each row's test predictions (test_row,y,mean,std) to DIR/<dataset>_<split>_<method>.csv");
  std::string run_dir;
  app.add_option("--run-dir", run_dir,
                 "nuts, mile: sample each row's chains into DIR/<dataset>_<split>_<method> with a checkpoint of each "
                 "chain every 100 iterations, and resume a row whose folder holds an interrupted run (a killed job "
                 "loses at most 100 iterations of each chain and a MAP start under way; the draws are the same); "
                 "laplace-committee, laplace-ensemble: keep each member's fit in DIR/<dataset>_<split>_committee as "
                 "it ends and read back those already there (a killed job loses at most the members under way), and "
                 "laplace-hetero takes its mean from member 1 there; the folder "
                 "records this build (provenance.txt) and another build's is refused");
  app.add_flag("--list", list, "list the data sets found and the methods, then exit");
  app.add_flag("--native-numerics", native_numerics,
               "use the CPU's own BLAS kernels and libm variants, or those OPENBLAS_CORETYPE and GLIBC_TUNABLES "
               "choose (named in the results file); faster, and rows may then differ on another CPU and are kept "
               "apart in the results file");
  app.add_option("--heartbeat", settings.heartbeat_seconds,
                 "seconds between progress lines inside a row (its latest MAP or NUTS iteration), so that a long "
                 "row shows it is alive; evidence rounds are always shown; 0: every iteration")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  bool provenance = false;
  app.add_flag("--provenance", provenance, "print the line a results file of this build starts with, then exit");
  CLI11_PARSE(app, argc, argv);

  try {
    settings.map_optimizer = parse_optimizer(optimizer_text);
    settings.progress = [](const std::string& line) { std::fprintf(stderr, "    %s\n", line.c_str()); };
    if (provenance) {
      std::printf("# %s\n", build_provenance().c_str());
      return 0;
    }
    if (list) {
      for (const std::string& name : list_datasets(data_dir)) {
        const UciDataset d = load_dataset(data_dir, name);
        std::printf("%-28s %6lld rows, %2zu inputs, %2d splits, %lld hidden units\n", name.c_str(),
                    static_cast<long long>(d.data.rows()), d.features.size(), d.num_splits,
                    static_cast<long long>(d.hidden_units));
      }
      for (const UciMethod& m : method_registry())
        std::printf("method %-21s %s\n", m.name.c_str(), m.description.c_str());
      return 0;
    }
    const std::vector<std::string> names = datasets_text == "all" ? list_datasets(data_dir) : split_list(datasets_text);
    std::vector<const UciMethod*> methods;
    if (methods_text == "all") {
      for (const UciMethod& m : method_registry()) methods.push_back(&m);
    } else {
      for (const std::string& name : split_list(methods_text)) methods.push_back(&find_method(name));
    }
    if (names.empty())
      throw Error(ErrorKind::kInvalidArgument, "no data sets selected (none found in " + data_dir + ")");
    if (methods.empty()) throw Error(ErrorKind::kInvalidArgument, "--methods: no method given");
    const std::vector<int> requested = parse_splits(splits_text);

    // Everything is read before the first fit, so that a bad name or file fails at once.
    std::vector<UciDataset> datasets;
    int max_splits = 0;
    for (const std::string& name : names) {
      datasets.push_back(load_dataset(data_dir, name));
      max_splits = std::max(max_splits, datasets.back().num_splits);
    }
    Plan plan;
    plan.datasets = std::move(datasets);
    plan.methods = methods;
    plan.splits = requested;
    if (plan.splits.empty()) {
      for (int k = 0; k < max_splits; ++k) plan.splits.push_back(k);
    }
    plan.settings = settings;
    if (!predictions_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(predictions_dir, ec);
      if (ec || !std::filesystem::is_directory(predictions_dir)) {
        throw Error(ErrorKind::kIo, "--predictions " + predictions_dir + ": cannot create the folder");
      }
      plan.predictions_dir = predictions_dir;
    }
    if (!run_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(run_dir, ec);
      if (ec || !std::filesystem::is_directory(run_dir)) {
        throw Error(ErrorKind::kIo, "--run-dir " + run_dir + ": cannot create the folder");
      }
      claim_run_folder(run_dir, build_provenance());
      plan.settings.run_directory = run_dir;
    }
    const std::vector<Task> tasks = plan.tasks();
    if (tasks.empty()) {
      throw Error(ErrorKind::kInvalidArgument,
                  "--splits " + splits_text + ": none of the selected data sets has these splits");
    }
#ifdef OCCAM_UCI_WITH_MPI
    if (launched_by_mpirun()) return run_with_mpi(plan, out_path, &argc, &argv);
#endif
    ResultsFile results(out_path, build_provenance());
    const int total = static_cast<int>(tasks.size());
    int index = 0, skipped = 0, failed = 0;
    // The time left, from the mean time of the rows run so far times the rows still to run.
    int pending = 0, run = 0;
    for (const Task& task : tasks) pending += plan.done(results, task) ? 0 : 1;
    const auto started = std::chrono::steady_clock::now();
    const auto eta = [&] {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      return run < pending ? ", ETA " + format_duration(elapsed / run * (pending - run)) : std::string();
    };
    for (const Task& task : tasks) {
      ++index;
      if (plan.done(results, task)) {
        ++skipped;
        continue;
      }
      const std::string label = plan.label(task);
      std::fprintf(stderr, "[%d/%d] %s ...\n", index, total, label.c_str());
      const TaskOutcome outcome = run_task(plan, task);
      ++run;
      if (!outcome.ok) {
        // A fit that could not be completed leaves no row: a rerun tries it again.
        ++failed;
        std::fprintf(stderr, "[%d/%d] %s FAILED: %s%s\n", index, total, label.c_str(), outcome.detail.c_str(),
                     eta().c_str());
        continue;
      }
      results.append(outcome.row);
      const ResultRow& r = outcome.row;
      std::fprintf(stderr, "[%d/%d] %s: rmse %.4g, test LL %.4f, coverage %.3f, %.1f s, %s; %s%s\n", index, total,
                   label.c_str(), r.rmse, r.test_ll, r.coverage95, r.seconds, r.termination.c_str(),
                   outcome.detail.c_str(), eta().c_str());
    }
    std::fprintf(stderr, "done: %d rows in %s (%d already there, %d failed)\n", results.size(), out_path.c_str(),
                 skipped, failed);
    return failed > 0 ? exit_code(ErrorKind::kNumerical) : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "occam_uci: %s\n", e.what());
    return exit_code(e.kind());
  }
}

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
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "occam/status.h"
#include "uci/uci_data.h"
#include "uci/uci_methods.h"
#include "uci/uci_results.h"

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
    throw Error(ErrorKind::kInvalidArgument, "--splits: '" + text + "' is not a split number (expected e.g. all, 0-2 or 0,3,5)");
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

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kInvalidInput: return 2;
    case ErrorKind::kIo: return 3;
    case ErrorKind::kNumerical: return 4;
  }
  return 5;
}

std::string method_help() {
  std::string text = "comma-separated methods, or all:";
  for (const UciMethod& m : method_registry()) text += "\n  " + m.name + ": " + m.description;
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The UCI regression benchmark: test RMSE, test log-likelihood and 95% coverage per split, "
               "in the target's original units"};
  std::string data_dir = (std::filesystem::path(OCCAM_SOURCE_DIR) / ".." / "shared" / "data" / "uci").lexically_normal().string();
  std::string datasets_text = "all", splits_text = "all", methods_text = "all", out_path = "uci_results.csv";
  MethodSettings settings;
  bool list = false;
  app.add_option("--data-dir", data_dir, "directory with one folder per data set (data.txt, index_*.txt, ...)")
      ->capture_default_str();
  app.add_option("--datasets", datasets_text, "comma-separated data set folder names, or all")->capture_default_str();
  app.add_option("--splits", splits_text, "splits to run: all, a range 0-2, a list 0,3,5 (splits a data set "
                                          "does not have are skipped)")
      ->capture_default_str();
  app.add_option("--methods", methods_text, method_help())->capture_default_str();
  app.add_option("--out", out_path, "results CSV: created, or appended to (rows already there are skipped)")
      ->capture_default_str();
  app.add_option("--seed", settings.seed, "seed of the initial weights, the CV folds and the NUTS chains")->capture_default_str();
  app.add_option("--cv-folds", settings.cv_folds, "map-cv: folds of the training split")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  app.add_option("--max-map-iterations", settings.max_map_iterations,
                 "Levenberg-Marquardt iterations per MAP run (map-cv's CV fits are L-BFGS, at most 1000 iterations each)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-rounds", settings.max_rounds, "laplace: evidence re-estimation rounds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  std::string optimizer_text = "auto";
  app.add_option("--map-optimizer", optimizer_text,
                 "MAP optimiser of laplace's rounds, map-cv's final fit and vi-meanfield's start: auto "
                 "(Levenberg-Marquardt for training sets of up to 5000 rows, L-BFGS above), lm or lbfgs")
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
  app.add_flag("--list", list, "list the data sets found and the methods, then exit");
  CLI11_PARSE(app, argc, argv);

  try {
    settings.map_optimizer = parse_optimizer(optimizer_text);
    settings.progress = [](const std::string& line) { std::fprintf(stderr, "    %s\n", line.c_str()); };
    if (list) {
      for (const std::string& name : list_datasets(data_dir)) {
        const UciDataset d = load_dataset(data_dir, name);
        std::printf("%-28s %6lld rows, %2zu inputs, %2d splits, %lld hidden units\n", name.c_str(),
                    static_cast<long long>(d.data.rows()), d.features.size(), d.num_splits,
                    static_cast<long long>(d.hidden_units));
      }
      for (const UciMethod& m : method_registry()) std::printf("method %-18s %s\n", m.name.c_str(), m.description.c_str());
      return 0;
    }
    const std::vector<std::string> names = datasets_text == "all" ? list_datasets(data_dir) : split_list(datasets_text);
    std::vector<const UciMethod*> methods;
    if (methods_text == "all") {
      for (const UciMethod& m : method_registry()) methods.push_back(&m);
    } else {
      for (const std::string& name : split_list(methods_text)) methods.push_back(&find_method(name));
    }
    if (names.empty()) throw Error(ErrorKind::kInvalidArgument, "no data sets selected (none found in " + data_dir + ")");
    if (methods.empty()) throw Error(ErrorKind::kInvalidArgument, "--methods: no method given");
    const std::vector<int> requested = parse_splits(splits_text);

    // Everything is read before the first fit, so that a bad name or file fails at once.
    std::vector<UciDataset> datasets;
    int max_splits = 0;
    for (const std::string& name : names) {
      datasets.push_back(load_dataset(data_dir, name));
      max_splits = std::max(max_splits, datasets.back().num_splits);
    }
    std::vector<int> splits = requested;
    if (splits.empty()) {
      for (int k = 0; k < max_splits; ++k) splits.push_back(k);
    }
    ResultsFile results(out_path);

    int total = 0;
    for (int k : splits) {
      for (const UciDataset& d : datasets) total += k < d.num_splits ? static_cast<int>(methods.size()) : 0;
    }
    if (total == 0) {
      throw Error(ErrorKind::kInvalidArgument, "--splits " + splits_text + ": none of the selected data sets has these splits");
    }
    int index = 0, skipped = 0, failed = 0;
    ErrorKind failure_kind = ErrorKind::kNumerical;
    for (int k : splits) {
      for (const UciDataset& d : datasets) {
        if (k >= d.num_splits) continue;
        const UciSplit split = load_split(d, k);
        for (const UciMethod* method : methods) {
          ++index;
          if (results.contains(d.name, k, method->name)) {
            ++skipped;
            continue;
          }
          settings.hidden_units = d.hidden_units;
          std::fprintf(stderr, "[%d/%d] %s split %d %s ...\n", index, total, d.name.c_str(), k, method->name.c_str());
          const auto start = std::chrono::steady_clock::now();
          try {
            const MethodOutput output = method->run(split, settings);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const SplitMetrics metrics = score(output, split.test.Y.col(0));
            results.append({d.name, k, method->name, metrics.rmse, metrics.test_ll, metrics.coverage95, seconds,
                            output.termination});
            std::fprintf(stderr, "[%d/%d] %s split %d %s: rmse %.4g, test LL %.4f, coverage %.3f, %.1f s, %s; %s\n",
                         index, total, d.name.c_str(), k, method->name.c_str(), metrics.rmse, metrics.test_ll,
                         metrics.coverage95, seconds, output.termination.c_str(), output.detail.c_str());
          } catch (const Error& e) {
            if (e.kind() != ErrorKind::kNumerical) throw;
            // A fit that could not be completed leaves no row: a rerun tries it again.
            ++failed;
            failure_kind = e.kind();
            std::fprintf(stderr, "[%d/%d] %s split %d %s FAILED: %s\n", index, total, d.name.c_str(), k,
                         method->name.c_str(), e.what());
          }
        }
      }
    }
    std::fprintf(stderr, "done: %d rows in %s (%d already there, %d failed)\n", results.size(), out_path.c_str(),
                 skipped, failed);
    return failed > 0 ? exit_code(failure_kind) : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "occam_uci: %s\n", e.what());
    return exit_code(e.kind());
  }
}

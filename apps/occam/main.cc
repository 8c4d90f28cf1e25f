// main.cc — the occam command-line tool: parses the command line, runs one subcommand, and maps
// occam::Error kinds to messages and exit codes. Only this tool prints or exits; the library
// reports through return values and exceptions.

#include <CLI/CLI.hpp>
#include <malloc.h>
#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "interrupt.h"
#include "occam/status.h"
#include "occam/version.h"
#include "output.h"

namespace {

// Documented in `occam --help`; scripts rely on them.
enum ExitCode : int {
  kOk = 0,
  kUsage = 1,         // the command line itself is wrong (reported by CLI11)
  kInvalid = 2,       // invalid input data or argument value
  kIoFailure = 3,     // a file that cannot be read or written
  kNumerical = 4,     // a computation that could not be completed
  kInternal = 5,      // an unexpected exception: a bug in occam
  kInterrupted = 130, // Ctrl-C: the shell's code for SIGINT
};

int exit_code(occam::ErrorKind kind) {
  switch (kind) {
    case occam::ErrorKind::kInvalidArgument:
    case occam::ErrorKind::kInvalidInput: return kInvalid;
    case occam::ErrorKind::kIo: return kIoFailure;
    case occam::ErrorKind::kNumerical: return kNumerical;
  }
  return kInternal;
}

constexpr const char* kFooter = R"(
Exit codes:
  0  success
  1  usage error (unknown option, missing or malformed argument)
  2  invalid input or argument (bad CSV cell, missing column, NaN/Inf, bad option value)
  3  I/O error (a file that cannot be read or written)
  4  numerical failure (a fit that could not be completed)
  5  internal error (please report it)
  130 interrupted by Ctrl-C (nothing half-written; occam sample keeps the draws so far in valid files)

Run 'occam <command> --help' for a command's options and an example.
Try it without any data: occam demo --out-dir demo-output)";

// The number of single-character edits between two words (Levenshtein).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` when it is close enough to be a typo of it, else "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

// "did you mean ...?" for the words of a command line that CLI11 refused: an unknown subcommand or
// an option the chosen command does not have.
std::string suggestion(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::string match = closest(argv[1], commands);
    return "unknown command '" + std::string(argv[1]) + "'" +
           (match.empty() ? "" : "; did you mean '" + match + "'?");
  }
  // The deepest parsed command's options.
  const CLI::App* command = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : command->get_subcommands()) {
      command = sub;
      deeper = true;
      break;
    }
  }
  std::vector<std::string> options;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) options.push_back("--" + name);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (!word.starts_with("--")) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(options.begin(), options.end(), name) != options.end()) continue;
    const std::string match = closest(name, options);
    if (!match.empty()) return "unknown option '" + name + "'; did you mean '" + match + "'?";
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  // The fits allocate and free W×W and m×W matrices (a few hundred kB to tens of MB) at every
  // optimiser iteration. Above glibc's mmap threshold each one is a fresh mmap whose pages fault
  // in again: on Boston with 121 weights that was 45% of the run time, all of it in the kernel.
  // Keeping such blocks on the heap lets them be reused.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  CLI::App app{"occam — Bayesian neural networks that learn their own hyperparameters\n"
               "(evidence framework, GLMs and cross-validation, MCMC, variational inference: predictive\n"
               "distributions, not points)",
               "occam"};
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("occam ") + occam::version());
  app.require_subcommand(1, 1);
  app.option_defaults()->always_capture_default();

  const std::vector<occam::cli::Command> commands = {
      occam::cli::add_fit_command(app),
      occam::cli::add_predict_command(app),
      occam::cli::add_compare_command(app),
      occam::cli::add_demo_command(app),
      occam::cli::add_cv_command(app),
      occam::cli::add_sample_command(app),
      occam::cli::add_loo_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string hint = suggestion(app, argc, argv);
    std::cerr << "occam: error: " << (hint.empty() ? std::string(e.what()) : hint)
              << "\nRun 'occam --help' or 'occam <command> --help' for usage.\n";
    return kUsage;
  }

  occam::cli::set_command_line(argc, argv);
  occam::cli::catch_interrupts();
  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) command.run();
    }
  } catch (const occam::cli::Interrupted& e) {
    std::cerr << "occam: interrupted: " << e.message << '\n';
    return kInterrupted;
  } catch (const occam::Error& e) {
    std::cerr << "occam: error: " << e.what() << '\n';
    return exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    std::cerr << "occam: error: out of memory\n";
    return kNumerical;
  } catch (const std::exception& e) {
    std::cerr << "occam: internal error: " << e.what() << '\n';
    return kInternal;
  }
  return kOk;
}

// main.cc — the occam command-line tool: parses the command line, runs one subcommand, and maps
// occam::Error kinds to messages and exit codes. Only this tool prints or exits; the library
// reports through return values and exceptions.

#include <CLI/CLI.hpp>
#include <malloc.h>
#include <exception>
#include <iostream>
#include <vector>

#include "commands.h"
#include "occam/status.h"

namespace {

// Documented in `occam --help`; scripts rely on them.
enum ExitCode : int {
  kOk = 0,
  kUsage = 1,         // the command line itself is wrong (reported by CLI11)
  kInvalid = 2,       // invalid input data or argument value
  kIoFailure = 3,     // a file that cannot be read or written
  kNumerical = 4,     // a computation that could not be completed
  kInternal = 5,      // an unexpected exception: a bug in occam
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
  130 interrupted by Ctrl-C (occam sample: the draws so far are on disk, in valid files)

Run 'occam <command> --help' for a command's options and an example.
Try it without any data: occam demo --out-dir demo-output)";

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
  app.set_version_flag("--version", "occam 0.1.0");
  app.require_subcommand(1, 1);
  app.option_defaults()->always_capture_default();

  const std::vector<occam::cli::Command> commands = {
      occam::cli::add_fit_command(app),
      occam::cli::add_predict_command(app),
      occam::cli::add_compare_command(app),
      occam::cli::add_demo_command(app),
      occam::cli::add_cv_command(app),
      occam::cli::add_sample_command(app),
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
    std::cerr << "occam: error: " << e.what() << "\nRun 'occam --help' or 'occam <command> --help' for usage.\n";
    return kUsage;
  }

  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) command.run();
    }
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

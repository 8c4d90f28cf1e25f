// main.cc — the occam command-line tool: parses the command line, runs one subcommand, and maps
// occam::Error kinds to messages and exit codes. Only this tool prints or exits; the library
// reports through return values and exceptions.

#include <CLI/CLI.hpp>
#include <malloc.h>
#include <exception>
#include <iostream>
#include <string>

#include "command_line.h"
#include "interrupt.h"
#include "message_text.h"
#include "occam/status.h"
#include "output.h"
#include "process_group.h"
#include "standard_output.h"

namespace {

// Documented in `occam --help`; scripts rely on them.
enum ExitCode : int {
  kOk = 0,
  kUsage = 1,      // the command line itself is wrong (reported by CLI11)
  kInvalid = 2,    // invalid input data or argument value
  kIoFailure = 3,  // a file that cannot be read or written
  kNumerical = 4,  // a computation that could not be completed
  kInternal = 5,   // an unexpected exception: a bug in occam
  // Interrupted: 128 + the signal, the shell's codes (130 for Ctrl-C, 143 for SIGTERM).
};

int exit_code(occam::ErrorKind kind) {
  switch (kind) {
    case occam::ErrorKind::kInvalidArgument:
    case occam::ErrorKind::kInvalidInput:
      return kInvalid;
    case occam::ErrorKind::kIo:
      return kIoFailure;
    case occam::ErrorKind::kNumerical:
      return kNumerical;
  }
  return kInternal;
}

// Runs the command line; the exit code, with standard output still open.
int run(int argc, char** argv, bool* collective) {
  occam::cli::CommandLine line;
  CLI::App& app = line.app;

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    occam::cli::print_message(occam::cli::usage_message(app, e, argc, argv));
    return kUsage;
  }

  occam::cli::set_command_line(argc, argv);
  occam::cli::start_processes(&argc, &argv);
  occam::cli::catch_interrupts();
  try {
    if (const occam::cli::Command* command = line.chosen()) {
      // Under mpirun with more than one process only the commands that spread their rows run: any
      // other would run once per process, each printing and writing the same files.
      const std::string name = command->app->get_name();
      if (occam::cli::processes() != nullptr && name != "fit" && name != "sample") {
        throw occam::CollectiveError(
            occam::ErrorKind::kInvalidArgument,
            "occam " + name +
                " runs as one process: under mpirun with more than one process "
                "only 'occam fit' and 'occam sample' run, with the rows spread over the processes");
      }
      command->run();
    }
  } catch (const occam::cli::Interrupted& e) {
    occam::cli::print_message(std::string("occam: interrupted (") + e.signal_name() + "): " + e.message + '\n');
    return e.exit_code();
  } catch (const occam::CollectiveError& e) {
    // Every process threw it together: process 0 reports it, and none waits for another.
    if (occam::cli::is_writer()) occam::cli::print_message("occam: error: " + std::string(e.what()) + '\n');
    *collective = true;
    return exit_code(e.kind());
  } catch (const occam::Error& e) {
    occam::cli::print_message("occam: error: " + std::string(e.what()) + '\n');
    return exit_code(e.kind());
  } catch (const std::bad_alloc&) {
    occam::cli::print_message("occam: error: out of memory\n");
    return kNumerical;
  } catch (const std::exception& e) {
    occam::cli::print_message("occam: internal error: " + std::string(e.what()) + '\n');
    return kInternal;
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  // The fits allocate and free W×W and m×W matrices (a few hundred kB to tens of MB) at every
  // optimiser iteration. Above glibc's mmap threshold each one is a fresh mmap whose pages fault
  // in again: on Boston with 121 weights that was 45% of the run time, all of it in the kernel.
  // Keeping such blocks on the heap lets them be reused.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  occam::cli::open_standard_output();
  bool collective = false;
  int code = run(argc, argv, &collective);
  // Output that did not reach its file is a failed command, whatever else happened.
  try {
    occam::cli::close_standard_output();
  } catch (const occam::Error& e) {
    occam::cli::print_message("occam: error: " + std::string(e.what()) + '\n');
    if (code == kOk) code = kIoFailure;
  }
  // A process that failed alone under mpirun stops the others, which may be waiting for it.
  occam::cli::finish_processes(code != kOk && !collective, code);
  return code;
}

// cli_runner.h — runs the built occam programs from a test as a user's shell would, in a
// temporary working directory, and captures the exit code, stdout and stderr.
//
//   occam::testing::TempDir dir;
//   occam::testing::CliRun run = occam::testing::occam(dir, "fit --data " + fixture("x.csv") + " --target y");
//   EXPECT_EQ(run.exit_code, 0) << run.err;
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"

namespace occam::testing {

// Single-quotes a word for the shell.
inline std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A file of tests/data: its path, and the path quoted for a command line.
inline std::string fixture_path(const std::string& name) { return std::string(OCCAM_TEST_DATA_DIR) + "/" + name; }
inline std::string fixture(const std::string& name) { return quote(fixture_path(name)); }

struct CliRun {
  int exit_code = -1;  // -1 if the program did not exit normally (e.g. killed by a signal)
  std::string out, err;
};

// Runs `program args` with the working directory `dir`; `env` is prepended (e.g. "PATH=/x").
// The captured streams are removed afterwards, so the directory holds only what the program wrote.
inline CliRun run_program(const std::string& program, const TempDir& dir, const std::string& args,
                          const std::string& env = "") {
  const std::string out = dir.file(".stdout"), err = dir.file(".stderr");
  const std::string command = "cd " + quote(dir.path().string()) + " && " + env + (env.empty() ? "" : " ") +
                              quote(program) + " " + args + " >" + quote(out) + " 2>" + quote(err);
  const int status = std::system(command.c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_text(out);
  run.err = read_text(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return run;
}

// The occam command-line tool of this build.
inline CliRun occam(const TempDir& dir, const std::string& args, const std::string& env = "") {
  return run_program(OCCAM_CLI_PATH, dir, args, env);
}

// The tool with its standard output sent where the shell redirection `stdout_to` says (">/dev/full",
// ">&-" for a closed descriptor); CliRun::out stays empty.
inline CliRun occam_with_stdout(const TempDir& dir, const std::string& args, const std::string& stdout_to) {
  const std::string err = dir.file(".stderr");
  const std::string command = "cd " + quote(dir.path().string()) + " && " + quote(OCCAM_CLI_PATH) + " " + args + " " +
                              stdout_to + " 2>" + quote(err);
  const int status = std::system(command.c_str());
  CliRun run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = read_text(err);
  std::filesystem::remove(err);
  return run;
}

// How long interrupt_occam waits for a run to become ready before signalling it anyway: long
// enough for the sanitizer build, and never reached on a run that becomes ready or ends.
inline constexpr std::chrono::seconds kReadyTimeout{600};

// Starts `program` with `args` (its output discarded, or its stderr written to `stderr_path`; in
// `directory` when given), waits until ready() holds or `timeout` passes, sends `signal` and
// returns the wait status of the process (at once if it exits first).
inline int interrupt_program(const std::string& program, const std::vector<std::string>& args,
                             const std::function<bool()>& ready, std::chrono::seconds timeout, int signal,
                             const std::string& stderr_path = "", const std::string& directory = "") {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!directory.empty() && ::chdir(directory.c_str()) != 0) ::_exit(126);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(stderr_path.empty() ? null : ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), STDERR_FILENO);
    std::vector<char*> argv = {const_cast<char*>(program.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  // The timeout only guards against a run that never becomes ready; a slow build (the sanitizers
  // make runs 10-50x slower) simply waits longer, and a run that ends by itself is not waited for.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline && !ready()) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, signal);
  ::waitpid(pid, &status, 0);
  return status;
}

// interrupt_program for OCCAM_CLI_PATH, by default with Ctrl-C's SIGINT.
inline int interrupt_occam(const std::vector<std::string>& args, const std::function<bool()>& ready,
                           std::chrono::seconds timeout, int signal = SIGINT, const std::string& stderr_path = "",
                           const std::string& directory = "") {
  return interrupt_program(OCCAM_CLI_PATH, args, ready, timeout, signal, stderr_path, directory);
}

}  // namespace occam::testing

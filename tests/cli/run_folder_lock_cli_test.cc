// A run folder is held by one process at a time: while `occam sample` (or `--resume`) writes it, a
// second sample or resume into it is refused (exit code 3, naming the process that writes it) and
// leaves the first run's files alone, and a reader is told the folder is being written. After two
// resumes at once, the run is the first's alone: its manifest matches its files and it reads back.
// The library's RunDirectoryLock, which all of this rests on, is tested last.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "occam/io.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/status.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

const std::string kPredict = "predict --draws run --data " + fixture("regression_inputs.csv") + " --out pred.csv";

// A run that would sample for hours, checkpointed every 10 iterations.
std::vector<std::string> endless_run(const std::string& out) {
  return {"sample",
          "--data",
          testing::fixture_path("regression_train.csv"),
          "--target",
          "y",
          "--hidden",
          "2",
          "--chains",
          "2",
          "--warmup",
          "20",
          "--draws",
          "100000000",
          "--init",
          "prior",
          "--checkpoint-every",
          "10",
          "--quiet",
          "--max-memory",
          "none",
          "--out",
          out};
}

long lines_of(const std::string& path) {
  const std::string text = read_text(path);
  return static_cast<long>(std::count(text.begin(), text.end(), '\n'));
}

bool both_chains_have(const std::string& run, long lines) {
  return lines_of(run + "/chain_1.csv") >= lines && lines_of(run + "/chain_2.csv") >= lines;
}

// Runs `words` until `ready` holds, then `while_running` (another command, while the first still
// writes), then stops the first with Ctrl-C. Returns the first's wait status.
int while_sampling(const std::vector<std::string>& words, const std::function<bool()>& ready,
                   const std::function<void()>& while_running) {
  bool done = false;
  return testing::interrupt_occam(
      words,
      [&] {
        if (done || !ready()) return done;
        while_running();
        done = true;
        return true;
      },
      testing::kReadyTimeout, SIGINT);
}

// The run in dir/run reads back, and every row of each chain file has the header's number of cells.
void expect_one_run(const TempDir& dir) {
  const nlohmann::json index = nlohmann::json::parse(read_text(dir.file("run/run.json")));
  EXPECT_EQ(index.at("status"), "interrupted");
  for (int c = 1; c <= 2; ++c) {
    const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("run/chain_" + std::to_string(c) + ".csv"));
    EXPECT_GT(csv.draws.rows(), 0);
  }
  const CliRun predict = occam(dir, kPredict);
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
}

const std::regex kInUse(
    "^occam: error: cannot write the run folder '.*run': another process is writing it \\(occam sample, "
    "process [0-9]+\\); a run folder is written by one process at a time");

TEST(RunFolderLock, ASecondSampleIntoAFolderBeingSampledIsRefused) {
  TempDir dir;
  const std::string run = dir.file("run");
  CliRun second;
  const int status = while_sampling(
      endless_run(run), [&] { return both_chains_have(run, 60); },
      [&] {
        second = occam(dir, "sample --data " + fixture("regression_train.csv") +
                                " --target y --hidden 1 --chains 2 --warmup 20 --draws 20 --quiet --out run");
      });
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_TRUE(std::regex_search(second.err, kInUse)) << second.err;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  expect_one_run(dir);
}

TEST(RunFolderLock, TwoResumesAtOnceLeaveOneRun) {
  TempDir dir;
  const std::string run = dir.file("run");
  // kill -9 once both chains have checkpoints: a run to resume.
  const int killed = testing::interrupt_occam(
      endless_run(run), [&] { return both_chains_have(run, 80); }, testing::kReadyTimeout, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(killed));
  const long before = lines_of(run + "/chain_1.csv");
  CliRun second;
  const int status = while_sampling(
      {"sample", "--resume", run, "--quiet"}, [&] { return both_chains_have(run, before + 40); },
      [&] {
        // On a folder nobody holds, this resume would sample for hours: the timeout ends it then.
        second = occam(dir, "sample --resume run --quiet", "timeout 120");
      });
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_TRUE(std::regex_search(second.err, kInUse)) << second.err;
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  expect_one_run(dir);
}

TEST(RunFolderLock, AFolderBeingSampledIsNotReadMeanwhile) {
  TempDir dir;
  const std::string run = dir.file("run");
  CliRun predict, summary;
  while_sampling(
      endless_run(run), [&] { return both_chains_have(run, 60); },
      [&] {
        predict = occam(dir, kPredict);
        summary = occam(dir, "summary run");
      });
  for (const CliRun& reader : {predict, summary}) {
    EXPECT_EQ(reader.exit_code, 3) << reader.err;
    EXPECT_TRUE(std::regex_search(reader.err, std::regex("^occam: error: cannot read the run folder '.*run': another "
                                                         "process is writing it \\(occam sample, process [0-9]+\\); "
                                                         "read it once that run has ended")))
        << reader.err;
  }
  EXPECT_FALSE(fs::exists(dir.file("pred.csv")));
}

// In the library: a hold taken again by the same process is the same hold (for writing, if either
// asks for it); another process is refused while it lasts and gets the folder once it ends.
TEST(RunDirectoryLock, HeldAgainByItsProcessAndRefusedToAnother) {
  TempDir dir;
  const std::string run = dir.file("run");
  // 0 when another process may take the folder with `access`, 1 when refused as in use, 2 otherwise.
  const auto other_process = [&](RunDirectoryLock::Access access) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      try {
        const RunDirectoryLock lock(run, access);
        ::_exit(0);
      } catch (const Error& e) {
        ::_exit(e.kind() == ErrorKind::kIo && std::string(e.what()).find("another process") != std::string::npos ? 1
                                                                                                                 : 2);
      }
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_FALSE(is_run_directory(run));
  {
    const RunDirectoryLock write(run, RunDirectoryLock::Access::kWrite);
    EXPECT_TRUE(is_run_directory(run));  // run.lock marks it
    {
      const RunDirectoryLock read(run, RunDirectoryLock::Access::kRead);
      const RunDirectoryLock again(run, RunDirectoryLock::Access::kWrite);
    }
    // The inner holds ended; the outer one still holds the folder.
    EXPECT_EQ(other_process(RunDirectoryLock::Access::kRead), 1);
    EXPECT_EQ(other_process(RunDirectoryLock::Access::kWrite), 1);
  }
  {
    const RunDirectoryLock read(run, RunDirectoryLock::Access::kRead);
    EXPECT_EQ(other_process(RunDirectoryLock::Access::kRead), 0);   // readers share it
    EXPECT_EQ(other_process(RunDirectoryLock::Access::kWrite), 1);  // a writer waits for them
  }
  EXPECT_EQ(other_process(RunDirectoryLock::Access::kWrite), 0);
  EXPECT_TRUE(fs::exists(run + "/run.lock"));  // never removed
}

}  // namespace
}  // namespace occam

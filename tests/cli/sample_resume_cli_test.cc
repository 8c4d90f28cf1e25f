// `occam sample --resume`: a run killed with SIGKILL (early in warm-up, mid-run, late in
// sampling) or stopped by Ctrl-C continues from its checkpoints and ends with the files of the
// uninterrupted run: chain files, summary.csv and chains.csv identical byte for byte, except the
// elapsed times, which no two runs share. Options that differ from the run's are refused by name;
// a complete run, or one without checkpoints, is refused too. The same for SGHMC with RMSprop
// and a cyclical step size, whose checkpoints hold its velocity, preconditioner and minibatch place,
// and for MCLMC (its velocity) and MAMS, killed inside their warm-up's decoherence stage too, whose
// finished runs `occam loo` and `occam summary` read.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::occam;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

constexpr int kWarmup = 200, kDraws = 200, kChains = 2;

// A run of 150 + 150 iterations by `method` (with its own options), checkpointed every iteration so
// that the run, fast by itself, lasts long enough to be killed in the middle.
std::vector<std::string> fast_run_words(const std::string& out, const std::vector<std::string>& method) {
  std::vector<std::string> words = {"sample",   "--data",   testing::fixture_path("regression_train.csv"),
                                    "--target", "y",        "--hidden",
                                    "4",        "--chains", std::to_string(kChains),
                                    "--warmup", "150",      "--draws",
                                    "150",      "--init",   "prior",
                                    "--seed",   "9",        "--checkpoint-every",
                                    "1",        "--quiet",  "--out",
                                    out};
  words.insert(words.end(), method.begin(), method.end());
  return words;
}

// SGHMC on minibatches of 8 of the 40 rows (5 an epoch).
const std::vector<std::string> kSghmc = {"--method",     "sghmc", "--step-size",    "0.01",    "--friction", "20",
                                         "--batch-size", "8",     "--precondition", "rmsprop", "--cycles",   "2"};

std::vector<std::string> run_words(const std::string& out) {
  return {"sample",
          "--data",
          testing::fixture_path("regression_train.csv"),
          "--target",
          "y",
          "--hidden",
          "4",
          "--chains",
          std::to_string(kChains),
          "--warmup",
          std::to_string(kWarmup),
          "--draws",
          std::to_string(kDraws),
          "--init",
          "prior",
          "--seed",
          "9",
          "--checkpoint-every",
          "7",
          "--quiet",
          "--out",
          out};
}

std::string command(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) line.append(line.empty() ? "" : " ").append(testing::quote(w));
  return line;
}

// The iterations chain k's checkpoint has recorded (0 while there is none).
int checkpointed(const std::string& run, int chain) {
  const std::string text = read_text(run + "/checkpoint_" + std::to_string(chain) + ".json");
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("state")) return 0;
  return j.at("state").value("iteration", 0);
}

// The rows chain k's file holds (warm-up rows too with --save-warmup), its header not counted.
int rows_written(const std::string& run, int chain) {
  std::istringstream in(read_text(run + "/chain_" + std::to_string(chain) + ".csv"));
  int rows = 0;
  for (std::string line; std::getline(in, line);) rows += !line.empty() && line[0] != '#';
  return std::max(0, rows - 1);
}

// chains.csv without its elapsed times (the warmup_seconds and sampling_seconds columns): the only
// bytes of a run folder's draws and summaries that differ between two runs with the same seed.
std::string without_times(const std::string& path) {
  const std::string text = read_text(path);
  std::istringstream in(text);
  std::string line, out;
  std::vector<bool> keep;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    if (keep.empty()) {
      for (const std::string& c : cells) keep.push_back(c != "warmup_seconds" && c != "sampling_seconds");
    }
    line.clear();
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i < keep.size() && keep[i]) line += cells[i] + ",";
    }
    out += line + "\n";
  }
  return out;
}

class SampleResume : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    reference_ = new CliRun(occam(*dir_, command(run_words("reference"))));
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(reference_->exit_code, 0) << reference_->err; }

  // The run in `run` has the reference's files.
  static void expect_reference_files(const std::string& run) {
    for (int c = 1; c <= kChains; ++c) {
      const std::string name = "/chain_" + std::to_string(c) + ".csv";
      // Byte for byte: chain files carry no elapsed times.
      const std::string a = read_text(dir_->file("reference") + name), b = read_text(run + name);
      EXPECT_TRUE(a == b) << name << " differs from the uninterrupted run's";
      EXPECT_GT(a.size(), 10000u);
    }
    EXPECT_EQ(read_text(dir_->file("reference/summary.csv")), read_text(run + "/summary.csv"));
    EXPECT_EQ(without_times(dir_->file("reference/chains.csv")), without_times(run + "/chains.csv"));
    const nlohmann::json manifest = nlohmann::json::parse(read_text(run + "/run.json"));
    EXPECT_EQ(manifest.at("status"), "complete");
    EXPECT_GE(manifest.at("resumed").get<int>(), 1);
  }

  // Starts the run into dir/run, sends `signal` once both chains' checkpoints have passed
  // `iteration`, and returns the wait status.
  static int run_until(const TempDir& dir, int iteration, int signal) {
    const std::string run = dir.file("run");
    std::vector<std::string> words = run_words(run);
    return testing::interrupt_occam(
        words, [&] { return checkpointed(run, 1) >= iteration && checkpointed(run, 2) >= iteration; },
        testing::kReadyTimeout, signal);
  }

  // A fast run's (fast_run_words): killed once both chains have checkpointed or written rows up to
  // `iteration` (rows count iterations with --save-warmup).
  static int fast_run_until(const TempDir& dir, const std::vector<std::string>& method, int iteration) {
    const std::string run = dir.file("run");
    const auto reached = [&](int chain) {
      return checkpointed(run, chain) >= iteration || rows_written(run, chain) >= iteration;
    };
    return testing::interrupt_occam(
        fast_run_words(run, method), [&] { return reached(1) && reached(2); }, testing::kReadyTimeout, SIGKILL);
  }

  // kill -9 at the given checkpoints of a fast run, then --resume: the uninterrupted run's files.
  static void expect_fast_run_resumes(const std::vector<std::string>& method, const std::vector<int>& kill_at,
                                      const TempDir& reference) {
    for (const int at : kill_at) {
      SCOPED_TRACE("killed after checkpoint " + std::to_string(at));
      TempDir dir;
      const int status = fast_run_until(dir, method, at);
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the run ended before it was killed";
      const CliRun resumed = occam(dir, "sample --resume run --quiet");
      ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
      for (const char* name : {"/chain_1.csv", "/chain_2.csv", "/summary.csv"}) {
        EXPECT_TRUE(read_text(reference.file("run") + name) == read_text(dir.file("run") + name)) << name;
      }
      EXPECT_EQ(without_times(reference.file("run/chains.csv")), without_times(dir.file("run/chains.csv")));
    }
  }

  static TempDir* dir_;
  static CliRun* reference_;
};
TempDir* SampleResume::dir_ = nullptr;
CliRun* SampleResume::reference_ = nullptr;

// kill -9 early in warm-up (in the first adaptation window), in the middle (just after warm-up)
// and late in sampling, then --resume: the files of the run that was never stopped.
TEST_F(SampleResume, AfterKill9TheResumedRunEqualsTheUninterruptedOne) {
  for (const int at : {20, kWarmup + 10, kWarmup + kDraws - 40}) {
    SCOPED_TRACE("killed after checkpoint " + std::to_string(at));
    TempDir dir;
    const int status = run_until(dir, at, SIGKILL);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the run ended before it was killed";
    ASSERT_FALSE(fs::exists(dir.file("run/run.json")));
    const CliRun resumed = occam(dir, "sample --resume run --quiet");
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    expect_reference_files(dir.file("run"));
  }
}

// A run started with a relative --data and killed while chain 1 ran (one thread: chain 2 had not
// started) resumes: chain 2 starts from its first iteration and its file names the data as the run
// did (not the path resolved against where the run started), so every file equals the
// uninterrupted run's.
TEST_F(SampleResume, ARestartedChainNamesTheDataAsTheRunDid) {
  TempDir dir;
  fs::copy_file(testing::fixture_path("regression_train.csv"), dir.file("train.csv"));
  std::vector<std::string> words = run_words("reference");
  *std::find(words.begin(), words.end(), testing::fixture_path("regression_train.csv")) = "train.csv";
  words.insert(words.end() - 2, {"--threads", "1"});  // chains one after another
  const CliRun reference = occam(dir, command(words));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;

  *std::find(words.begin(), words.end(), "reference") = "run";
  const int status = testing::interrupt_occam(
      words, [&] { return checkpointed(dir.file("run"), 1) >= 60; }, testing::kReadyTimeout, SIGKILL, "",
      dir.path().string());
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the run ended before it was killed";
  ASSERT_EQ(checkpointed(dir.file("run"), 2), 0) << "chain 2 had started";
  const CliRun resumed = occam(dir, "sample --resume run --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  for (const char* name : {"/chain_1.csv", "/chain_2.csv"}) {
    const std::string a = read_text(dir.file("reference") + name), b = read_text(dir.file("run") + name);
    EXPECT_TRUE(a == b) << name << " differs from the uninterrupted run's";
    EXPECT_NE(b.find("data = train.csv\n"), std::string::npos) << name;
  }
  const nlohmann::json model = nlohmann::json::parse(read_text(dir.file("run/model.json")));
  EXPECT_NE(model.dump().find("\"data\":\"train.csv\""), std::string::npos) << model.dump();
}

// Ctrl-C leaves an interrupted run (closing comments, run.json); --resume continues it, twice.
TEST_F(SampleResume, AnInterruptedRunResumes) {
  TempDir dir;
  const int status = run_until(dir, 60, SIGINT);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  EXPECT_EQ(nlohmann::json::parse(read_text(dir.file("run/run.json"))).at("status"), "interrupted");
  // Options the run had may be given again; --threads may differ (the draws do not depend on it).
  const CliRun resumed = occam(dir, "sample --resume run --seed 9 --chains 2 --threads 1 --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  expect_reference_files(dir.file("run"));
  EXPECT_EQ(nlohmann::json::parse(read_text(dir.file("run/run.json"))).at("resumed"), 1);
  // The resumed run is a run like any other: predict reads it.
  const CliRun predict =
      occam(dir, "predict --draws run --data " + testing::fixture("regression_inputs.csv") + " --out pred.csv");
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
}

TEST_F(SampleResume, OptionsThatDifferFromTheRunsAreRefusedByName) {
  TempDir dir;
  const int status = run_until(dir, 30, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status));
  const CliRun warmup = occam(dir, "sample --resume run --warmup 100 --target-accept 0.9 --seed 9");
  EXPECT_EQ(warmup.exit_code, 2) << warmup.err;
  EXPECT_NE(warmup.err.find("--warmup (100 here, 200 in the run)"), std::string::npos) << warmup.err;
  EXPECT_NE(warmup.err.find("--target-accept (0.9 here, not given in the run)"), std::string::npos) << warmup.err;
  EXPECT_EQ(warmup.err.find("--seed"), std::string::npos) << warmup.err;  // the run's own value
  // Other data under the run's file name: refused by their checksum.
  const std::string train = read_text(testing::fixture_path("regression_train.csv"));
  std::ofstream(dir.file("other.csv")) << train.substr(0, train.rfind('\n', train.size() - 2) + 1);
  const CliRun data = occam(dir, "sample --resume run --data other.csv");
  EXPECT_EQ(data.exit_code, 2) << data.err;
  EXPECT_NE(data.err.find("data.rows (40 in the run, 39 now)"), std::string::npos) << data.err;
  // The refusals left the run as it was: it still resumes.
  const CliRun resumed = occam(dir, "sample --resume run --quiet");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  expect_reference_files(dir.file("run"));
}

TEST_F(SampleResume, SghmcAfterKill9EqualsTheUninterruptedRun) {
  TempDir reference;
  const CliRun straight = occam(reference, command(fast_run_words("run", kSghmc)));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  expect_fast_run_resumes(kSghmc, {20, 200}, reference);
}

// MCLMC's warm-up of 150 iterations has its decoherence stage in iterations 106–150, MAMS's in
// 99–128, without checkpoints: a kill once 110 rows are written (--save-warmup) lands in it, and
// the run resumes from the checkpoint before the stage.
TEST_F(SampleResume, MicrocanonicalAfterKill9EqualsTheUninterruptedRun) {
  for (const char* method : {"mclmc", "mams"}) {
    SCOPED_TRACE(method);
    const std::vector<std::string> words = {"--method", method, "--save-warmup"};
    TempDir reference;
    const CliRun straight = occam(reference, command(fast_run_words("run", words)));
    ASSERT_EQ(straight.exit_code, 0) << straight.err;
    EXPECT_NE(read_text(reference.file("run/chain_1.csv")).find("# Trajectory length L = "), std::string::npos);
    expect_fast_run_resumes(words, {20, 110, 200}, reference);
    // (`occam summary` reads no run with warm-up rows in its chain files: a run without them.)
    const CliRun plain = occam(reference, command(fast_run_words("plain", {"--method", method})));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    const CliRun loo =
        occam(reference, "loo plain --data " + testing::quote(testing::fixture_path("regression_train.csv")));
    EXPECT_EQ(loo.exit_code, 0) << loo.err;
    EXPECT_NE(loo.out.find("elpd_loo"), std::string::npos) << loo.out;
    const CliRun summary = occam(reference, "summary plain");
    EXPECT_EQ(summary.exit_code, 0) << summary.err;
    EXPECT_NE(summary.out.find("lp__"), std::string::npos) << summary.out;
  }
}

TEST_F(SampleResume, ACompleteRunOrOneWithoutCheckpointsIsRefused) {
  const CliRun complete = occam(*dir_, "sample --resume reference");
  EXPECT_EQ(complete.exit_code, 2);
  EXPECT_NE(complete.err.find("reference: the run is complete"), std::string::npos) << complete.err;

  TempDir dir;
  std::vector<std::string> words = run_words(dir.file("run"));
  *std::find(words.begin(), words.end(), "7") = "0";  // --checkpoint-every 0
  const auto lines = [&](int chain) {
    const std::string text = read_text(dir.file("run/chain_" + std::to_string(chain) + ".csv"));
    return std::count(text.begin(), text.end(), '\n');
  };
  // In sampling: the comments, the header, the adapted metric and some 20 draws.
  const int status = testing::interrupt_occam(
      words, [&] { return lines(1) >= 50 && lines(2) >= 50; }, testing::kReadyTimeout, SIGINT);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 130) << status;
  const CliRun none = occam(dir, "sample --resume run");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("run: no checkpoint to resume from"), std::string::npos) << none.err;

  TempDir empty;
  const CliRun nothing = occam(empty, "sample --resume nowhere");
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("nowhere: not a run folder"), std::string::npos) << nothing.err;
}

}  // namespace
}  // namespace occam

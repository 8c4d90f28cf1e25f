// Run folders of `occam sample` never mix runs: an earlier run is removed (manifest first) before
// a new one writes anything, run.json is written last with the status and every file's size and
// checksum, and readers refuse a folder without a manifest (a killed run) or whose files differ
// from it. SIGTERM stops sample and fit like Ctrl-C, with exit code 143.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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

const std::string kQuickSample = "sample --data " + fixture("regression_train.csv") +
                                 " --target y --hidden 1 --chains 2 --warmup 30 --seed 1 --quiet --out run --draws ";
const std::string kPredict = "predict --draws run --data " + fixture("regression_inputs.csv") + " --out pred.csv";

nlohmann::json manifest(const TempDir& dir) { return nlohmann::json::parse(read_text(dir.file("run/run.json"))); }

// Lines in a chain file so far (0 while it does not exist).
long lines_of(const std::string& path) {
  const std::string text = read_text(path);
  return static_cast<long>(std::count(text.begin(), text.end(), '\n'));
}

// A sampler that would run for hours, into dir/run, stopped by `signal` once its manifest is gone
// (an earlier run's is removed first) and each chain file holds `lines` lines, more than a quick
// run's files have. Returns the wait status.
int sample_then_signal(const TempDir& dir, int signal, long lines = 150) {
  const std::string out = dir.file("run");
  return testing::interrupt_occam(
      {"sample", "--data", testing::fixture_path("regression_train.csv"), "--target", "y", "--hidden", "2", "--chains",
       "2", "--warmup", "20", "--draws", "100000000", "--init", "prior", "--out", out,
       // Never meant to finish: its draws would not fit in memory, which --max-memory would refuse.
       "--max-memory", "none"},
      [&] {
        return !fs::exists(out + "/run.json") && lines_of(out + "/chain_1.csv") >= lines &&
               lines_of(out + "/chain_2.csv") >= lines;
      },
      testing::kReadyTimeout, signal);
}

TEST(RunFolder, ACompleteRunHasAManifestWrittenLast) {
  TempDir dir;
  const CliRun run = occam(dir, kQuickSample + "20");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json index = manifest(dir);
  EXPECT_EQ(index.at("format"), "occam-run");
  EXPECT_EQ(index.at("status"), "complete");
  EXPECT_EQ(index.at("seed"), 1);
  ASSERT_EQ(index.at("chains").size(), 2u);
  EXPECT_EQ(index.at("chains")[1].at("draws"), 20);
  EXPECT_NE(index.at("command_line").get<std::string>().find("--draws 20"), std::string::npos);
  std::vector<std::string> names;
  for (const auto& file : index.at("files")) {
    names.push_back(file.at("name"));
    EXPECT_EQ(file.at("bytes").get<std::uintmax_t>(), fs::file_size(dir.file("run/" + names.back()))) << names.back();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"model.json", "chain_1.csv", "chain_2.csv", "checkpoint_1.json",
                                             "checkpoint_2.json", "summary.csv", "chains.csv"}));
  // Written last: no file of the run is newer than its manifest.
  for (const std::string& name : names) {
    EXPECT_LE(fs::last_write_time(dir.file("run/" + name)), fs::last_write_time(dir.file("run/run.json"))) << name;
  }
  EXPECT_EQ(occam(dir, kPredict).exit_code, 0);
}

// A run that fails after it started (no draws: exit 4) in a folder holding a complete run: none
// of the old run's files survives beside the new chain files as if it were current.
TEST(RunFolder, AFailedRunLeavesNoFileOfTheEarlierRun) {
  TempDir dir;
  ASSERT_EQ(occam(dir, kQuickSample + "20").exit_code, 0);
  const CliRun failed = occam(dir, kQuickSample + "0");
  ASSERT_EQ(failed.exit_code, 4) << failed.err;
  EXPECT_FALSE(fs::exists(dir.file("run/summary.csv"))) << "the earlier run's diagnostics table survived";
  EXPECT_FALSE(fs::exists(dir.file("run/chains.csv"))) << "the earlier run's chain statistics survived";
  ASSERT_TRUE(fs::exists(dir.file("run/run.json")));
  EXPECT_EQ(manifest(dir).at("status"), "failed");
  EXPECT_NE(manifest(dir).at("message").get<std::string>().find("no draws"), std::string::npos);
  const CliRun predict = occam(dir, kPredict);
  EXPECT_EQ(predict.exit_code, 2);
  EXPECT_NE(predict.err.find("run: the run failed (sampling: the sampler returned no draws)"), std::string::npos)
      << predict.err;
  EXPECT_NE(predict.err.find("sample again into run"), std::string::npos) << predict.err;
  EXPECT_FALSE(fs::exists(dir.file("pred.csv")));
}

// SIGTERM is treated as Ctrl-C: every chain finishes its draw, the files are valid, the manifest
// says "interrupted" with the draws so far, the folder is readable, and the exit code is 143.
TEST(RunFolder, SigtermStopsSampleWithAValidInterruptedRun) {
  TempDir dir;
  const int status = sample_then_signal(dir, SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by SIGTERM instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 143);
  const nlohmann::json index = manifest(dir);
  EXPECT_EQ(index.at("status"), "interrupted");
  ASSERT_EQ(index.at("chains").size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("run/chain_" + std::to_string(c + 1) + ".csv"));
    EXPECT_GT(csv.draws.rows(), 0);
    EXPECT_EQ(index.at("chains")[static_cast<std::size_t>(c)].at("draws").get<long>(), csv.draws.rows());
  }
  EXPECT_TRUE(fs::exists(dir.file("run/summary.csv")));
  const CliRun predict = occam(dir, kPredict);
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
  // The library reports the interruption in the model it reads back.
  EXPECT_EQ(load_model(dir.file("run")).summary.termination, Termination::kAborted);
}

// SIGKILL cannot be caught: the killed run leaves chain files and model.json but no manifest, and
// the earlier complete run's files are gone. Readers refuse the folder and say how to recover.
TEST(RunFolder, AKilledRunIsRefusedByReaders) {
  TempDir dir;
  ASSERT_EQ(occam(dir, kQuickSample + "20").exit_code, 0);
  const int status = sample_then_signal(dir, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(fs::exists(dir.file("run/run.json")));
  EXPECT_FALSE(fs::exists(dir.file("run/summary.csv")));
  const CliRun predict = occam(dir, kPredict);
  EXPECT_EQ(predict.exit_code, 2) << predict.err;
  EXPECT_NE(predict.err.find("occam: error: run: not a finished run: its manifest run.json is missing"),
            std::string::npos)
      << predict.err;
  EXPECT_NE(predict.err.find("sample again into run"), std::string::npos) << predict.err;
  EXPECT_FALSE(fs::exists(dir.file("pred.csv")));
  // The same through model.json, and through the library.
  EXPECT_EQ(occam(dir, "predict --model run/model.json --data " + fixture("regression_inputs.csv")).exit_code, 2);
  EXPECT_THROW(load_model(dir.file("run")), Error);
}

// A file changed after the run ended (a chain appended to by a second run, an edit) no longer
// matches the manifest: refused, naming the file.
TEST(RunFolder, AFileThatNoLongerMatchesTheManifestIsRefused) {
  TempDir dir;
  ASSERT_EQ(occam(dir, kQuickSample + "20").exit_code, 0);
  std::ofstream(dir.file("run/chain_2.csv"), std::ios::app) << "# a comment added later\n";
  const CliRun predict = occam(dir, kPredict);
  EXPECT_EQ(predict.exit_code, 2) << predict.err;
  EXPECT_NE(predict.err.find("run/chain_2.csv: does not match the run's manifest run.json"), std::string::npos)
      << predict.err;
  // A missing file likewise.
  fs::remove(dir.file("run/chain_2.csv"));
  const CliRun missing = occam(dir, kPredict);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("run/chain_2.csv: listed in the run's manifest run.json but missing"), std::string::npos)
      << missing.err;
}

// The library's save_model writes a manifest too, and a saved run reads back.
TEST(RunFolder, SavedDrawsReadBackThroughTheirManifest) {
  TempDir dir;
  ASSERT_EQ(occam(dir, kQuickSample + "20").exit_code, 0);
  const FittedModel model = load_model(dir.file("run"));
  fs::create_directory(dir.file("copy"));
  save_model(dir.file("copy/model.json"), model);
  EXPECT_EQ(nlohmann::json::parse(read_text(dir.file("copy/run.json"))).at("status"), "complete");
  const FittedModel again = load_model(dir.file("copy"));
  EXPECT_TRUE(std::get<PosteriorDraws>(again.posterior).weights == std::get<PosteriorDraws>(model.posterior).weights);
}

// SIGTERM stops a fit like Ctrl-C: nothing written, exit code 143.
TEST(RunFolder, SigtermStopsAFitAndWritesNothing) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  const int status = testing::interrupt_occam(
      {"fit", "--data", testing::fixture_path("regression_train.csv"), "--target", "y", "--hidden", "20", "--optimizer",
       "adam", "--max-iterations", "100000000", "--out", dir.file("model.json")},
      [&] { return std::chrono::steady_clock::now() - start > std::chrono::seconds(2); }, std::chrono::seconds(3),
      SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by SIGTERM instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 143);
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace occam

// `occam summary` end to end: a run summarised again prints the table `occam sample` printed;
// runs merge into one of more chains; what would corrupt a run or read a broken one is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "occam/data.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::occam;
using testing::quote;
using testing::TempDir;

const std::string kTrain = testing::fixture_path("regression_train.csv");

std::string sample_command(const std::string& out, int seed) {
  return "sample --data " + quote(kTrain) + " --target y --hidden 3 --chains 2 --warmup 100 --draws 60 --seed " +
         std::to_string(seed) + " --out " + out;
}

// The table without its first line (the run's wall time, which the files do not hold).
std::string without_first_line(const std::string& text) { return text.substr(text.find('\n') + 1); }

TEST(SummaryCli, ARunSummarisedAgainPrintsWhatSamplePrinted) {
  // A network, and a linear model, whose coefficients (unlike a network's weights) are judged.
  for (const std::string& command :
       {sample_command("run", 5),
        "sample --data " + quote(kTrain) +
            " --target y --model linear --chains 2 --warmup 100 --draws 60 --seed 5 --out run"}) {
    SCOPED_TRACE(command);
    TempDir dir;
    const CliRun sample = occam(dir, command);
    ASSERT_EQ(sample.exit_code, 0) << sample.err;
    const std::string printed = sample.out.substr(0, sample.out.find("draws written to"));
    const CliRun summary = occam(dir, "summary run --out table.csv");
    ASSERT_EQ(summary.exit_code, 0) << summary.err;
    EXPECT_EQ(summary.out.rfind("2 chains, 120 draws kept\n", 0), 0u) << summary.out;
    EXPECT_EQ(without_first_line(summary.out), without_first_line(printed));
    EXPECT_EQ(testing::read_text(dir.file("table.csv")), testing::read_text(dir.file("run/summary.csv")));
    EXPECT_EQ(command.find("linear") != std::string::npos, summary.out.find("\nw.1 ") != std::string::npos)
        << summary.out;
  }
}

TEST(SummaryCli, RunsMergeIntoOneOfMoreChains) {
  TempDir dir;
  ASSERT_EQ(occam(dir, sample_command("a", 5) + " --quiet").exit_code, 0);
  ASSERT_EQ(occam(dir, sample_command("b", 6) + " --quiet").exit_code, 0);
  const CliRun merged = occam(dir, "summary a b/model.json");
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(merged.out.rfind("4 chains, 240 draws kept", 0), 0u) << merged.out;
  EXPECT_NE(merged.out.find("chain 4 mean (sd)"), std::string::npos) << merged.out;
  EXPECT_NE(merged.out.find("\n4 "), std::string::npos) << merged.out;  // the fourth chain's statistics row

  // A run of another model (another number of hidden units: other weight columns) is refused.
  ASSERT_EQ(occam(dir, "sample --data " + quote(kTrain) +
                           " --target y --hidden 2 --chains 1 --warmup 50 --draws 20 --seed 1 --quiet --out c")
                .exit_code,
            0);
  const CliRun other = occam(dir, "summary a c");
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("c has other columns than a"), std::string::npos) << other.err;
}

TEST(SummaryCli, RefusesWhatWouldBreakARunAndRunsThatAreBroken) {
  TempDir dir;
  ASSERT_EQ(occam(dir, sample_command("run", 5) + " --quiet").exit_code, 0);
  // Writing into the run folder would change a file its manifest lists.
  const CliRun inside = occam(dir, "summary run --out run/summary.csv");
  EXPECT_EQ(inside.exit_code, 2) << inside.err;
  EXPECT_NE(inside.err.find("inside the run folder"), std::string::npos) << inside.err;
  const CliRun again = occam(dir, "summary run");
  EXPECT_EQ(again.exit_code, 0) << again.err;  // the run is untouched

  // A changed chain file, a folder that is not a run, and a bad threshold.
  {
    std::ofstream append(dir.file("run/chain_1.csv"), std::ios::app);
    append << "# edited\n";
  }
  const CliRun changed = occam(dir, "summary run");
  EXPECT_EQ(changed.exit_code, 2) << changed.err;
  EXPECT_NE(changed.err.find("chain_1.csv"), std::string::npos) << changed.err;
  std::filesystem::create_directory(dir.file("empty"));
  EXPECT_NE(occam(dir, "summary empty").exit_code, 0);
  EXPECT_EQ(occam(dir, "summary run --max-rhat 0.5").exit_code, 2);
}

}  // namespace
}  // namespace occam

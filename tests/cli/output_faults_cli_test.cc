// Output that does not reach its destination fails the command: a table printed to a full device
// or to a closed descriptor ends in exit code 3 naming standard output and the system's reason,
// never in exit 0 with the output lost. And no command writes over its own inputs or into a run
// folder, however the path is spelt.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::occam_with_stdout;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

const std::string kTrain = fixture("regression_train.csv");
const std::string kInputs = fixture("regression_inputs.csv");

// A fitted model (m.json) and a finished run (run/) to read, made once for the suite.
class OutputFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const CliRun fit = occam(*dir_, "fit --data " + kTrain + " --target y --hidden 2 --quiet --out m.json");
    ASSERT_EQ(fit.exit_code, 0) << fit.err;
    const CliRun sample =
        occam(*dir_,
              "sample --data " + kTrain + " --target y --hidden 1 --chains 2 --warmup 30 --draws 20 --quiet --out run");
    ASSERT_EQ(sample.exit_code, 0) << sample.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static const TempDir& dir() { return *dir_; }
  static std::string path(const std::string& name) { return testing::quote(dir_->file(name)); }

 private:
  static TempDir* dir_;
};
TempDir* OutputFaults::dir_ = nullptr;

// Every command that prints its result: the result lost on a full device is exit code 3.
TEST_F(OutputFaults, ATablePrintedToAFullDeviceExits3) {
  const std::vector<std::string> commands = {
      "predict --model " + path("m.json") + " --data " + kInputs,
      "compare --data " + kTrain + " --target y --hidden 1,2",
      "loo " + path("run") + " --data " + kTrain,
      "summary " + path("run"),
      "fit --data " + kTrain + " --target y --hidden 1",
      "sample --data " + kTrain + " --target y --hidden 1 --chains 1 --warmup 20 --draws 10 --out run2",
  };
  for (const std::string& command : commands) {
    TempDir here;
    const CliRun run = occam_with_stdout(here, command, ">/dev/full");
    EXPECT_EQ(run.exit_code, 3) << command << "\n" << run.err;
    EXPECT_NE(run.err.find("occam: error: cannot write standard output (/dev/full): No space left on device"),
              std::string::npos)
        << command << "\n"
        << run.err;
  }
}

TEST_F(OutputFaults, ATablePrintedToAClosedDescriptorExits3) {
  TempDir here;
  const CliRun run = occam_with_stdout(here, "predict --model " + path("m.json") + " --data " + kInputs, ">&-");
  EXPECT_EQ(run.exit_code, 3) << run.err;
  EXPECT_EQ(run.err, "occam: error: cannot write standard output (it was closed): Bad file descriptor\n");
}

TEST_F(OutputFaults, AClosedStandardOutputTakesNoFileOfTheCommand) {
  // Descriptor 1 closed: the next file opened would get its number, and a table printed to
  // standard output would land in it. The prediction file must hold exactly what it holds otherwise.
  TempDir here;
  const std::string predict = "predict --model " + path("m.json") + " --data " + kInputs + " --out pred.csv";
  const CliRun closed = occam_with_stdout(here, predict, ">&-");
  ASSERT_EQ(closed.exit_code, 0) << closed.err;
  const std::string written = read_text(here.file("pred.csv"));
  const CliRun normal = occam(here, predict);
  ASSERT_EQ(normal.exit_code, 0) << normal.err;
  EXPECT_EQ(written, read_text(here.file("pred.csv")));
}

TEST_F(OutputFaults, AFileOnAFullDeviceExits3) {
  for (const std::string& command : {"predict --model " + path("m.json") + " --data " + kInputs + " --out /dev/full",
                                     "loo " + path("run") + " --data " + kTrain + " --out /dev/full",
                                     "summary " + path("run") + " --out /dev/full"}) {
    TempDir here;
    const CliRun run = occam(here, command);
    EXPECT_EQ(run.exit_code, 3) << command << "\n" << run.err;
    EXPECT_NE(run.err.find("cannot write '/dev/full'"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("No space left on device"), std::string::npos) << run.err;
  }
}

// predict --draws run --out <a file of run>, spelt in every way that reaches it: refused (exit code
// 2) before anything is written, and the run still reads.
TEST_F(OutputFaults, PredictNeverWritesIntoItsRunFolder) {
  TempDir here;
  fs::create_symlink(dir().file("run/chain_1.csv"), here.file("link.csv"));
  fs::create_directory_symlink(dir().file("run"), here.file("run_link"));
  const std::string run = path("run");
  const std::vector<std::string> outputs = {
      "--out " + path("run/chain_1.csv"),
      "--out " + path("run/run.json"),
      "--out " + path("run/model.json"),
      "--out " + path("run/../run/predictions.csv"),
      "--out link.csv",
      "--out run_link/predictions.csv",
      "--out pred.csv --draws-out " + path("run/chain_2.csv"),
  };
  for (const std::string& out : outputs) {
    const CliRun refused = occam(here, "predict --draws " + run + " --data " + kInputs + " " + out);
    EXPECT_EQ(refused.exit_code, 2) << out << "\n" << refused.err;
    EXPECT_NE(refused.err.find("is inside the run folder"), std::string::npos) << out << "\n" << refused.err;
    EXPECT_FALSE(fs::exists(here.file("pred.csv"))) << out;
  }
  const CliRun still = occam(here, "predict --draws " + run + " --data " + kInputs + " --out pred.csv");
  EXPECT_EQ(still.exit_code, 0) << still.err;
}

TEST_F(OutputFaults, NoCommandWritesIntoARunFolder) {
  TempDir here;
  const std::vector<std::string> commands = {
      "fit --data " + kTrain + " --target y --hidden 1 --out " + path("run/model.json"),
      "fit --data " + kTrain + " --target y --hidden 1 --out m.json --report " + path("run/report.json"),
      "loo " + path("run") + " --data " + kTrain + " --out " + path("run/loo.csv"),
      "loo " + path("run/model.json") + " --data " + kTrain + " --out " + path("run/loo.csv"),
      "compare --data " + kTrain + " --target y --hidden 1 --out " + path("run/compare.csv"),
      "predict --model " + path("m.json") + " --data " + kInputs + " --out " + path("run/chain_1.csv"),
  };
  for (const std::string& command : commands) {
    const CliRun refused = occam(here, command);
    EXPECT_EQ(refused.exit_code, 2) << command << "\n" << refused.err;
    EXPECT_NE(refused.err.find("is inside the run folder"), std::string::npos) << command << "\n" << refused.err;
  }
  const CliRun still = occam(here, "predict --draws " + path("run") + " --data " + kInputs + " --out pred.csv");
  EXPECT_EQ(still.exit_code, 0) << still.err;
}

}  // namespace
}  // namespace occam

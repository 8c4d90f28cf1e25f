// What the commands that read a run folder refuse, and how: a folder that is not a run (empty,
// without model.json, holding a fitted model), a model.json of another network or likelihood
// than the one the chain files were drawn from, a damaged checkpoint, data of another likelihood.
// Each is invalid input (exit code 2) with a message naming the folder or file — never a crash, a
// prediction from the wrong model, or a numerical failure.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/run_directory.h"
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

const std::string kTrain = fixture("regression_train.csv");
const std::string kInputs = fixture("regression_inputs.csv");

std::string quick_sample(const std::string& out, const std::string& model) {
  return "sample --data " + kTrain + " --target y " + model + " --chains 2 --warmup 30 --draws 20 --quiet --out " + out;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Rewrites run.json's entry for `name` to the file's present size and checksum: the manifest
// forged along with the file, as its checksum is a check against accidents, not forgery.
void forge_manifest_entry(const std::string& run, const std::string& name) {
  const std::string text = read_text(run + "/" + name);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(internal::fnv1a64(internal::kFnvOffset, text.data(), text.size())));
  nlohmann::json index = nlohmann::json::parse(read_text(run + "/run.json"));
  for (nlohmann::json& file : index.at("files")) {
    if (file.at("name") == name) {
      file["bytes"] = text.size();
      file["fnv1a64"] = hex;
    }
  }
  write_text(run + "/run.json", index.dump(2));
}

TEST(RunFolderInput, AFolderThatIsNotARunIsRefusedAsSuch) {
  TempDir dir;
  fs::create_directory(dir.file("empty"));
  fs::create_directory(dir.file("fitted"));
  ASSERT_EQ(occam(dir, "fit --data " + kTrain + " --target y --hidden 1 --quiet --out fitted/model.json").exit_code, 0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"predict --draws empty --data " + kInputs,
       "empty: not a run folder written by occam sample (it has no model.json)"},
      {"loo empty --data " + kTrain, "empty: not a run folder written by occam sample (it has no model.json)"},
      {"summary empty", "empty: not a run folder written by occam sample (it has no model.json)"},
      {"sample --resume empty", "empty: not a run folder written by occam sample (it has no model.json)"},
      {"predict --draws fitted --data " + kInputs,
       "fitted: not a run folder written by occam sample (its model.json is an \"occam-model\" file, not a run's)"},
      {"predict --draws fitted/model.json --data " + kInputs,
       "--draws 'fitted/model.json' is not a run folder written by occam sample (it holds a laplace model: read it "
       "with --model)"},
  };
  for (const auto& [command, message] : cases) {
    const CliRun run = occam(dir, command);
    EXPECT_EQ(run.exit_code, 2) << command << "\n" << run.err;
    EXPECT_EQ(run.err, "occam: error: " + message + "\n") << command;
    EXPECT_EQ(run.out, "") << command;
  }
}

// model.json replaced by one of another network (fewer weights than the chain files hold) or of
// another likelihood (the same weights), its manifest entry forged to match: refused by the chain
// files' own record of the model they were drawn from.
TEST(RunFolderInput, AModelFileOfAnotherModelIsNotReadWithTheDraws) {
  TempDir dir;
  ASSERT_EQ(occam(dir, quick_sample("run", "--hidden 2")).exit_code, 0);
  ASSERT_EQ(occam(dir, quick_sample("small", "--hidden 1")).exit_code, 0);
  const std::string original = read_text(dir.file("run/model.json"));

  fs::copy_file(dir.file("small/model.json"), dir.file("run/model.json"), fs::copy_options::overwrite_existing);
  forge_manifest_entry(dir.file("run"), "model.json");
  CliRun predict = occam(dir, "predict --draws run --data " + kInputs);
  EXPECT_EQ(predict.exit_code, 2) << predict.err;
  EXPECT_EQ(predict.err,
            "occam: error: run/model.json: does not match the run's chain files: run/chain_1.csv was drawn "
            "from 'mlp 2-2-1 tanh, gaussian likelihood', run/model.json describes 'mlp 2-1-1 tanh, gaussian "
            "likelihood'\n");

  nlohmann::json poisson = nlohmann::json::parse(original);
  poisson["likelihood"] = {{"type", "poisson"}, {"offset", false}};
  poisson["spec"]["likelihood"] = {{"kind", "poisson"}};
  write_text(dir.file("run/model.json"), poisson.dump(2));
  forge_manifest_entry(dir.file("run"), "model.json");
  predict = occam(dir, "predict --draws run --data " + kInputs);
  EXPECT_EQ(predict.exit_code, 2) << predict.err;
  EXPECT_NE(
      predict.err.find("was drawn from 'mlp 2-2-1 tanh, gaussian likelihood', run/model.json describes 'mlp 2-2-1 "
                       "tanh, poisson likelihood'"),
      std::string::npos)
      << predict.err;

  // A likelihood that its own spec contradicts.
  poisson["spec"]["likelihood"] = {{"kind", "gaussian"}};
  write_text(dir.file("run/model.json"), poisson.dump(2));
  forge_manifest_entry(dir.file("run"), "model.json");
  predict = occam(dir, "predict --draws run --data " + kInputs);
  EXPECT_EQ(predict.exit_code, 2) << predict.err;
  EXPECT_NE(predict.err.find("its likelihood is poisson but its spec says gaussian"), std::string::npos) << predict.err;
}

// A checkpoint edited after it was written: a NaN where the chain stood, or a point where the
// density is not finite. A damaged file is invalid input naming the file and the field.
TEST(RunFolderInput, ADamagedCheckpointIsInvalidInput) {
  TempDir dir;
  const std::string run = dir.file("run");
  const std::vector<std::string> words = {"sample",
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
                                          "5000",
                                          "--init",
                                          "prior",
                                          "--checkpoint-every",
                                          "10",
                                          "--quiet",
                                          "--out",
                                          run};
  const auto checkpointed = [&] {
    for (const char* name : {"/checkpoint_1.json", "/checkpoint_2.json"}) {
      const nlohmann::json j = nlohmann::json::parse(read_text(run + name), nullptr, false);
      if (!j.is_object() || j.at("state").value("iteration", 0) < 30) return false;
    }
    return true;
  };
  // Killed early: the resumed run has thousands of iterations left (chain 2, whose checkpoint is
  // intact, runs them before the run reports chain 1's failure).
  ASSERT_TRUE(WIFSIGNALED(testing::interrupt_occam(words, checkpointed, testing::kReadyTimeout, SIGKILL)));
  const nlohmann::json saved = nlohmann::json::parse(read_text(run + "/checkpoint_1.json"));
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"nan", "run/checkpoint_1.json: chain state: 'position' holds a value that is not finite"},
           {"0x1p+1000", "chain 1: the log density is not finite at the saved point (its checkpoint is damaged)"}}) {
    nlohmann::json damaged = saved;
    damaged["state"]["position"]["values"][0] = value;
    write_text(run + "/checkpoint_1.json", damaged.dump());
    const CliRun resume = occam(dir, "sample --resume run --quiet");
    EXPECT_EQ(resume.exit_code, 2) << value << "\n" << resume.err;
    EXPECT_NE(resume.err.find(message), std::string::npos) << resume.err;
  }
}

// PSIS-LOO of a Bernoulli run: its own data (this crashed), and data whose target it cannot take.
TEST(RunFolderInput, LooOfABernoulliRunReadsItsDataAndRefusesOthers) {
  TempDir dir;
  std::string csv = "x1,x2,y\n";
  for (int i = 0; i < 40; ++i) {
    const double a = -1.0 + 0.05 * i, b = 0.7 - 0.035 * i;
    csv += std::to_string(a) + "," + std::to_string(b) + "," + (a + 0.5 * b + 0.3 * ((i * 7) % 5 - 2) > 0 ? "1" : "0") +
           "\n";
  }
  write_text(dir.file("bern.csv"), csv);
  ASSERT_EQ(occam(dir,
                  "sample --data bern.csv --target y --likelihood bernoulli --model linear --chains 2 --warmup 50 "
                  "--draws 50 --quiet --out run")
                .exit_code,
            0);
  const CliRun own = occam(dir, "loo run --data bern.csv");
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_NE(own.out.find("elpd_loo"), std::string::npos) << own.out;
  const CliRun other = occam(dir, "loo run --data " + kTrain);
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("regression_train.csv:2: column 'y' (3): the target is -1.3687; a bernoulli likelihood "
                           "expects 0 or 1"),
            std::string::npos)
      << other.err;
}

}  // namespace
}  // namespace occam

// `occam fit --evidence-loop online` and the minibatch flags: the report says what the run was
// (epochs, rounds, the optimality conditions), and a flag given where it does nothing is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::TempDir;

const std::string kFit = "fit --data " + fixture("regression_train.csv") + " --target y --hidden 6 --quiet ";

TEST(OnlineEvidenceCli, FitsAndReportsWhatTheRunWas) {
  TempDir dir;
  const CliRun run = occam(dir, kFit +
                                    "--method laplace --hessian-structure kron --evidence-loop online --optimizer sgd "
                                    "--epochs 6 --batch-size 8 --learning-rate 1e-3 --lr-schedule cosine --burn-in 2 "
                                    "--evidence-every 2 --hyper-steps 10 --report r.json --out m.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json r = nlohmann::json::parse(testing::read_text(dir.file("r.json")));
  EXPECT_EQ(r["termination"], "maximum_iterations") << r["message"];
  EXPECT_NE(r["message"].get<std::string>().find("6 epochs of sgd, 3 hyperparameter rounds"), std::string::npos)
      << r["message"];
  EXPECT_EQ(r["iterations"], 3);
  EXPECT_EQ(r["map_iterations"], 6);
  EXPECT_GT(r["optimality"]["gradient_norm"].get<double>(), r["optimality"]["gradient_tolerance"].get<double>());
}

TEST(OnlineEvidenceCli, FlagsThatDoNothingAreRefused) {
  TempDir dir;
  const struct {
    std::string args, message;
  } cases[] = {
      {"--hyper-steps 5 --hessian-structure kron", "--hyper-steps applies to --evidence-loop online only"},
      {"--epochs 5", "--epochs applies to --optimizer adam or sgd"},
      {"--learning-rate 0.1", "--learning-rate applies to --optimizer adam or sgd and to --evidence-loop online only"},
      // Accepted and dropped before the library decided which flags do something.
      {"--optimizer adam --lr-schedule cosine", "--lr-schedule applies to --evidence-loop online only"},
      {"--method map --hyper fixed --alpha 1 --beta 10 --batch-size 64",
       "--batch-size applies to --optimizer adam or sgd only"},
      {"--evidence-loop online --method map --hyper fixed --alpha 1 --beta 10",
       "--evidence-loop online needs --method laplace with --hyper evidence"},
      {"--evidence-loop online --hessian-structure full", "structure kron, diag or last-layer"},
      // The joint ascent's start on fewer rows: no ascent with --hyper fixed.
      {"--evidence-loop joint --start-rows 50 --hyper fixed --alpha 1 --beta 10",
       "--start-rows applies to --evidence-loop joint and --hyper evidence only"},
  };
  for (const auto& c : cases) {
    const CliRun run = occam(dir, kFit + c.args);
    EXPECT_EQ(run.exit_code, 2) << c.args << ": " << run.err;
    EXPECT_NE(run.err.find(c.message), std::string::npos) << c.args << ": " << run.err;
  }
}

}  // namespace
}  // namespace occam

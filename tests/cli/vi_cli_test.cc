// `occam fit --method vi` end to end: the report carries the ELBO beside the Laplace log-evidence,
// the model file is read by `occam predict` (Monte Carlo over q by default) and by the library,
// bit-identically, and bad option combinations are refused.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/data.h"
#include "occam/io.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::TempDir;
using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::quote;
using testing::read_text;

TEST(VariationalCli, FitWritesAModelThatPredictReadsAndAReportWithTheElbo) {
  for (const char* family : {"fullrank", "meanfield", "lowrank:2"}) {
    TempDir dir;
    const CliRun fit = occam(dir, std::string("fit --data ") + fixture("regression_train.csv") +
                                      " --target y --hidden 3 --method vi --family " + family +
                                      " --vi-iterations 3000 --out model.json --report report.json");
    ASSERT_EQ(fit.exit_code, 0) << fit.err;
    for (const char* line : {"termination", "ELBO", "log-evidence", "VI"}) {
      EXPECT_NE(fit.out.find(line), std::string::npos) << line << " missing from:\n" << fit.out;
    }
    const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("report.json")));
    for (const char* key : {"elbo", "elbo_std_error", "log_evidence", "beta", "train_rmse"}) {
      ASSERT_TRUE(report.contains(key) && report[key].is_number()) << key;
      EXPECT_TRUE(std::isfinite(report[key].get<double>())) << key;
    }
    EXPECT_EQ(report["options"]["method"], "vi");
    EXPECT_EQ(report["vi"]["family"], family);
    EXPECT_LT(report["train_rmse"].get<double>(), 0.3);  // y = sin(x1) + x2/2 + N(0, 0.1²)

    const std::string args = "predict --model model.json --data " + fixture("regression_test.csv");
    const CliRun first = occam(dir, args + " --out pred1.csv");
    const CliRun second = occam(dir, args + " --out pred2.csv");
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(read_text(dir.file("pred1.csv")), read_text(dir.file("pred2.csv")));
    const CliRun linearized = occam(dir, args + " --predictive linearized --out pred3.csv");
    ASSERT_EQ(linearized.exit_code, 0) << linearized.err;

    // The library reads the same file and, with the same options (Monte Carlo, seed 1), gives
    // the same numbers as the CLI printed (CSV keeps the shortest round-tripping decimal).
    const ModelFile model = load_model(dir.file("model.json"));
    ASSERT_TRUE(std::holds_alternative<GaussianVariational>(model.posterior));
    EXPECT_EQ(std::get<GaussianVariational>(model.posterior).family().name(), family);
    const Table test = read_csv(std::string(OCCAM_TEST_DATA_DIR) + "/regression_test.csv");
    PredictOptions options;
    options.method = PredictiveMethod::kMonteCarlo;
    const Prediction p = predict(model, select_columns(test, model.feature_names), options);
    const Table cli = read_csv(dir.file("pred1.csv"));
    for (Index i = 0; i < p.mean.size(); ++i) {
      EXPECT_EQ(cli.values(i, 0), p.mean[i]);
      EXPECT_EQ(cli.values(i, 1), p.std[i]);
    }
    // Monte Carlo and linearised predictives describe the same q: their means agree to within
    // a fraction of the predictive spread.
    const Table lin = read_csv(dir.file("pred3.csv"));
    for (Index i = 0; i < p.mean.size(); ++i) EXPECT_NEAR(lin.values(i, 0), p.mean[i], 0.5 * p.std[i]);

    // A damaged q is refused with a message naming the file, never predicted from.
    nlohmann::json j = nlohmann::json::parse(read_text(dir.file("model.json")));
    j["variational"]["mean"][0] = "x";
    write_file_atomic(dir.file("bad.json"), j.dump());
    const CliRun bad = occam(dir, "predict --model bad.json --data " + fixture("regression_test.csv"));
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("bad.json"), std::string::npos) << bad.err;
    j = nlohmann::json::parse(read_text(dir.file("model.json")));
    j["posterior_kind"] = "mcmc";
    write_file_atomic(dir.file("bad.json"), j.dump());
    EXPECT_NE(
        occam(dir, "predict --model bad.json --data " + fixture("regression_test.csv")).err.find("posterior_kind"),
        std::string::npos);
  }
}

TEST(VariationalCli, RefusesOptionsThatDoNotApply) {
  TempDir dir;
  const std::string base = std::string("fit --data ") + fixture("regression_train.csv") + " --target y --hidden 2";
  for (const char* bad : {" --method vi --hyper quick", " --hyper elbo", " --family meanfield",
                          " --method vi --family lowrank:0", " --method vi --mc-samples 0"}) {
    const CliRun run = occam(dir, base + bad + " --out m.json");
    EXPECT_NE(run.exit_code, 0) << bad;
    EXPECT_FALSE(run.err.empty()) << bad;
    EXPECT_FALSE(std::filesystem::exists(dir.file("m.json"))) << bad;
  }
}

}  // namespace
}  // namespace occam

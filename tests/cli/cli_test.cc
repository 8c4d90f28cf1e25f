// The occam command-line tool end to end: the built binary run on small files in temporary
// directories. fit → save → load → predict must give bit-identical numbers; every bad input must
// give one clear message naming file, line and column, a non-zero exit, and no output file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "occam/committee.h"
#include "occam/data.h"
#include "occam/heteroscedastic.h"
#include "occam/io.h"
#include "occam/predict.h"
#include "occam/rng.h"
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
namespace fs = std::filesystem;

bool bitwise_equal(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

constexpr const char* kSmallFit = "--target y --hidden 3 --seed 2";

// One fitted model shared by the tests that only read it (fits are the slow part).
class CliWithModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    fit_ = new CliRun(occam(*dir_, std::string("fit --data ") + fixture("regression_train.csv") + " " + kSmallFit +
                                       " --out model.json --report report.json"));
  }
  static void TearDownTestSuite() {
    delete fit_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(fit_->exit_code, 0) << fit_->err; }

  static std::string model_path() { return dir_->file("model.json"); }

  static TempDir* dir_;
  static CliRun* fit_;
};
TempDir* CliWithModel::dir_ = nullptr;
CliRun* CliWithModel::fit_ = nullptr;

TEST_F(CliWithModel, FitPrintsABriefReport) {
  for (const char* line : {"termination", "log-evidence", "α", "β", "γ", "train RMSE", "time"}) {
    EXPECT_NE(fit_->out.find(line), std::string::npos) << line << " missing from:\n" << fit_->out;
  }
  // stderr is not a terminal here: progress would be lines, one every 10 s; a fit this short
  // prints none, and no noise.
  EXPECT_EQ(fit_->err, "");
}

TEST_F(CliWithModel, ReportHasTheRequiredKeysWithFiniteValues) {
  const nlohmann::json report = nlohmann::json::parse(read_text(dir_->file("report.json")));
  for (const char* key :
       {"log_evidence", "beta", "gamma_total", "train_rmse", "seconds", "clipped_eigenvalues", "iterations"}) {
    ASSERT_TRUE(report.contains(key)) << key;
    ASSERT_TRUE(report[key].is_number()) << key << " = " << report[key];
    EXPECT_TRUE(std::isfinite(report[key].get<double>())) << key;
  }
  for (const char* key : {"alpha", "gamma"}) {
    ASSERT_TRUE(report[key].is_object()) << key;
    EXPECT_EQ(report[key].size(), 4u) << key;  // MacKay's four groups for one hidden layer
    for (const auto& [group, value] : report[key].items()) {
      ASSERT_TRUE(value.is_number()) << key << "." << group;
      EXPECT_TRUE(std::isfinite(value.get<double>())) << key << "." << group;
    }
  }
  EXPECT_TRUE(report["termination"].is_string());
  EXPECT_TRUE(report["message"].is_string());
  EXPECT_EQ(report["network"]["description"], "mlp 2-3-1 tanh");
  EXPECT_EQ(report["options"]["hyper"], "evidence");
  EXPECT_EQ(report["options"]["hidden"], nlohmann::json::array({3}));
  EXPECT_GT(report["train_rmse"].get<double>(), 0.0);
  EXPECT_LT(report["train_rmse"].get<double>(), 0.3);  // y = sin(x1) + x2/2 + N(0, 0.1²) is easy
}

TEST_F(CliWithModel, PredictionsAreBitIdenticalAcrossRunsAndToTheLibrary) {
  TempDir dir;
  const std::string args = "predict --model " + quote(model_path()) + " --data " + fixture("regression_test.csv");
  const CliRun first = occam(dir, args + " --out pred1.csv");
  const CliRun second = occam(dir, args + " --out pred2.csv");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const std::string csv = read_text(dir.file("pred1.csv"));
  EXPECT_EQ(csv, read_text(dir.file("pred2.csv")));
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "mean,std,lower,upper");

  const Table predictions = read_csv(dir.file("pred1.csv"));
  const Table test = read_csv(std::string(OCCAM_TEST_DATA_DIR) + "/regression_test.csv");
  ASSERT_EQ(predictions.values.rows(), test.values.rows());

  // In process, from the loaded model: the same numbers to the last bit (17 digits round-trip).
  const ModelFile model = load_model(model_path());
  const Prediction p = predict(model, select_columns(test, model.feature_names), PredictOptions{});
  EXPECT_TRUE(bitwise_equal(predictions.values.col(0), p.mean));
  EXPECT_TRUE(bitwise_equal(predictions.values.col(1), p.std));
  EXPECT_TRUE(bitwise_equal(predictions.values.col(2), p.lower));
  EXPECT_TRUE(bitwise_equal(predictions.values.col(3), p.upper));
  EXPECT_TRUE((p.lower.array() < p.mean.array()).all() && (p.mean.array() < p.upper.array()).all());

  // In the target's original units: close to the test targets (noise sd 0.1).
  const Eigen::VectorXd y = select_columns(test, {"y"}).col(0);
  EXPECT_LT(std::sqrt((y - p.mean).squaredNorm() / static_cast<double>(y.size())), 0.4);
}

TEST_F(CliWithModel, PredictNeedsOnlyTheFeatureColumnsInAnyOrder) {
  TempDir dir;
  const std::string model = quote(model_path());
  ASSERT_EQ(
      occam(dir, "predict --model " + model + " --data " + fixture("regression_test.csv") + " --out a.csv").exit_code,
      0);
  const CliRun run =
      occam(dir, "predict --model " + model + " --data " + fixture("regression_inputs.csv") + " --out b.csv");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_text(dir.file("a.csv")), read_text(dir.file("b.csv")));
}

TEST_F(CliWithModel, MonteCarloPredictiveIsSeededAndHasTheRequestedInterval) {
  TempDir dir;
  const std::string args = "predict --model " + quote(model_path()) + " --data " + fixture("regression_test.csv") +
                           " --predictive mc --samples 200 --seed 5 --level 0.8";
  ASSERT_EQ(occam(dir, args + " --out a.csv").exit_code, 0);
  ASSERT_EQ(occam(dir, args + " --out b.csv").exit_code, 0);
  EXPECT_EQ(read_text(dir.file("a.csv")), read_text(dir.file("b.csv")));
  const Table t = read_csv(dir.file("a.csv"));
  EXPECT_EQ(t.values.rows(), 15);
  EXPECT_TRUE((t.values.col(2).array() <= t.values.col(3).array()).all());
}

TEST_F(CliWithModel, PredictWithoutOutWritesToStdout) {
  TempDir dir;
  const CliRun run = occam(dir, "predict --model " + quote(model_path()) + " --data " + fixture("regression_test.csv"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.substr(0, run.out.find('\n')), "mean,std,lower,upper");
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 16);
}

// A command that must fail: its exit code, the substrings its one message must contain, and
// the output file that must not appear.
struct BadCase {
  std::string name;
  std::string args;
  int exit_code;
  std::vector<std::string> message;
};

void expect_refusal(const BadCase& c, const std::string& model) {
  SCOPED_TRACE(c.name);
  TempDir dir;
  std::string args = c.args;
  for (std::size_t at; (at = args.find("MODEL")) != std::string::npos;) args.replace(at, 5, quote(model));
  const CliRun run = occam(dir, args);
  EXPECT_EQ(run.exit_code, c.exit_code) << run.err;
  EXPECT_EQ(run.err.rfind("occam: error: ", 0), 0u) << run.err;
  for (const std::string& part : c.message) EXPECT_NE(run.err.find(part), std::string::npos) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_TRUE(dir.entries().empty()) << "files were written";  // out.*, report.json: nothing
}

TEST_F(CliWithModel, BadInputIsRefusedWithAClearMessageAndNoOutput) {
  const std::string fit = std::string("fit ") + kSmallFit + " --out out.json --report report.json --data ";
  const std::string predict = "predict --model MODEL --out out.csv --data ";
  const std::vector<BadCase> cases = {
      {"bad cell", fit + fixture("bad_cell.csv"), 2, {"bad_cell.csv:4: column 'x2' (2): 'abc' is not a number"}},
      {"ragged row", fit + fixture("ragged.csv"), 2, {"ragged.csv:3: expected 3 cells (as in the header), found 2"}},
      {"NaN", fit + fixture("nan_cell.csv"), 2, {"nan_cell.csv:5: column 'y' (3): 'NaN' is NaN"}},
      {"Inf", fit + fixture("inf_cell.csv"), 2, {"inf_cell.csv:7: column 'x1' (1): 'inf' is infinite"}},
      {"empty file", fit + fixture("empty.csv"), 2, {"empty.csv:1: the file is empty"}},
      {"header only", fit + fixture("header_only.csv"), 2, {"header_only.csv:2: no data rows"}},
      {"duplicate column",
       fit + fixture("duplicate_column.csv"),
       2,
       {"duplicate_column.csv:1: column 'x1' (3): duplicate name"}},
      {"missing file", fit + "no_such_file.csv", 3, {"cannot open 'no_such_file.csv'"}},
      {"missing target",
       std::string("fit --target z --out out.json --data ") + fixture("regression_train.csv"),
       2,
       {"regression_train.csv: no column 'z' (the target); available columns: x1, x2, y"}},
      {"no output directory",
       std::string("fit --target y --out nowhere/model.json --data ") + fixture("regression_train.csv"),
       3,
       {"nowhere/model.json"}},
      {"fixed without beta",
       fit + fixture("regression_train.csv") + " --hyper fixed --alpha 1",
       2,
       {"--hyper fixed needs both --alpha and --beta"}},
      {"usage", "fit --target y --out out.json", 1, {"--data is required"}},
      {"unknown activation", fit + fixture("regression_train.csv") + " --activation cosine", 1, {"--activation"}},
      {"predict: missing feature",
       predict + fixture("missing_feature.csv"),
       2,
       {"missing_feature.csv: no column 'x2'"}},
      {"predict: bad cell", predict + fixture("bad_cell.csv"), 2, {"bad_cell.csv:4: column 'x2' (2)"}},
      {"predict: missing model",
       "predict --model absent.json --out out.csv --data " + fixture("regression_test.csv"),
       3,
       {"cannot open 'absent.json'"}},
      {"predict: bad level", predict + fixture("regression_test.csv") + " --level 1.5", 2, {"level"}},
      {"compare: bad test file",
       "compare --target y --hidden 1 --out out.csv --data " + fixture("regression_train.csv") + " --test " +
           fixture("ragged.csv"),
       2,
       {"ragged.csv:3:"}},
  };
  for (const BadCase& c : cases) expect_refusal(c, model_path());
}

TEST_F(CliWithModel, CorruptAndFutureModelsAreRefused) {
  TempDir dir;
  nlohmann::json j = nlohmann::json::parse(read_text(model_path()));
  j["version"] = kModelFormatVersion + 1;
  std::ofstream(dir.file("future.json")) << j.dump();
  const std::string text = read_text(model_path());
  std::ofstream(dir.file("truncated.json")) << text.substr(0, text.size() / 3);

  const std::string data = " --out out.csv --data " + fixture("regression_test.csv");
  CliRun run = occam(dir, "predict --model future.json" + data);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("future.json was written by a newer occam (format version " +
                         std::to_string(kModelFormatVersion + 1) + "); this occam reads version " +
                         std::to_string(kModelFormatVersion)),
            std::string::npos)
      << run.err;
  run = occam(dir, "predict --model truncated.json" + data);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("truncated.json is not a valid occam model file"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir.file("out.csv")));
}

TEST(Cli, LinearModelWithoutIntercept) {
  TempDir dir;
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                    " --target y --model linear --no-intercept --quiet --out m.json --report r.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "");  // --quiet
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
  EXPECT_EQ(report["num_params"], 2);
  EXPECT_EQ(report["options"]["intercept"], false);
}

// --noise-model network: fit writes a model whose predictions carry σ²(x) (the library's, bit for
// bit, through the file), the report has the noise network's fit, and what cannot have a noise
// model is refused before any fit.
TEST(Cli, NoiseModelNetworkIsFittedSavedAndPredicted) {
  TempDir dir;
  {
    std::ofstream train(dir.file("train.csv"));
    train << "x,y\n";
    Rng rng(8);
    for (int n = 0; n < 200; ++n) {
      const double x = -1.0 + 2.0 * rng.uniform();
      train << x << ',' << std::sin(3.0 * x) + (0.05 + 0.125 * (x + 1.0)) * rng.normal() << '\n';
    }
    std::ofstream test(dir.file("test.csv"));
    test << "x\n-0.9\n0.9\n";
  }
  const CliRun fit = occam(dir,
                           "fit --data train.csv --target y --hidden 6 --noise-model network --out m.json "
                           "--report r.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("noise model"), std::string::npos) << fit.out;
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
  ASSERT_TRUE(report.contains("noise_model")) << report.dump();
  const CliRun predict = occam(dir, "predict --model m.json --data test.csv --out p.csv");
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const Table p = read_csv(dir.file("p.csv"));
  const Eigen::MatrixXd std_col = select_columns(p, {"std"});
  EXPECT_GT(std_col(1, 0), 2.5 * std_col(0, 0)) << "the noise at x = 0.9 is 5.75 times that at -0.9";
  const FittedModel model = load_model(dir.file("m.json"));
  const Eigen::MatrixXd X = select_columns(read_csv(dir.file("test.csv")), {"x"});
  EXPECT_TRUE(bitwise_equal(model.predict(X).std, std_col.col(0)));
  EXPECT_TRUE(bitwise_equal(noise_std(model, X), select_columns(p, {"noise_std"}).col(0)));
  EXPECT_TRUE((select_columns(p, {"noise_std"}).array() < std_col.array()).all());

  for (const char* bad : {"--method vi", "--likelihood hetero", "--model linear"}) {
    const CliRun refused =
        occam(dir, std::string("fit --data train.csv --target y --noise-model network --out n.json ") + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << ": " << refused.err;
    EXPECT_NE(refused.err.find("noise"), std::string::npos) << refused.err;
    EXPECT_FALSE(fs::exists(dir.file("n.json")));
  }
  const CliRun mc = occam(dir, "predict --model m.json --data test.csv --predictive mc");
  EXPECT_NE(mc.exit_code, 0);
  EXPECT_NE(mc.err.find("linearized"), std::string::npos) << mc.err;

  // --noise-refits: one weighted refit of the mean by default, as many as asked, and only with a
  // noise network.
  EXPECT_EQ(report.at("noise_model").at("weighted_refits"), 1) << report.dump();
  const CliRun none = occam(dir,
                            "fit --data train.csv --target y --hidden 6 --noise-model network --noise-refits 0 "
                            "--out m0.json --report r0.json");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(read_text(dir.file("r0.json"))).at("noise_model").at("weighted_refits"), 0);
  const CliRun alone = occam(dir, "fit --data train.csv --target y --hidden 6 --noise-refits 2 --out n.json");
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_NE(alone.err.find("--noise-refits"), std::string::npos) << alone.err;
  EXPECT_FALSE(fs::exists(dir.file("n.json")));
}

// --committee K: fit writes one committee file whose predictions are the library's committee's,
// bit for bit through the file, with a report per member; what cannot be a committee is refused
// before any fit.
TEST(Cli, CommitteeIsFittedSavedAndPredicted) {
  TempDir dir;
  {
    std::ofstream train(dir.file("train.csv"));
    train << "x,y\n";
    Rng rng(5);
    for (int n = 0; n < 60; ++n) {
      const double x = -2.0 + 4.0 * rng.uniform();
      train << x << ',' << std::sin(x) + 0.1 * rng.normal() << '\n';
    }
    std::ofstream test(dir.file("test.csv"));
    test << "x\n-3\n0.5\n3\n";
  }
  const CliRun fit = occam(dir,
                           "fit --data train.csv --target y --hidden 4 --seed 3 --committee 3 --threads 2 "
                           "--committee-weighting equal --out c.json --report r.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_NE(fit.out.find("committee of 3 Laplace fits, weighted by equal"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("member 3:"), std::string::npos) << fit.out;
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
  EXPECT_EQ(report["method"], "committee");
  ASSERT_EQ(report["members"].size(), 3u);
  EXPECT_TRUE(report.contains("command_line"));
  for (const nlohmann::json& member : report["members"]) EXPECT_DOUBLE_EQ(member["weight"].get<double>(), 1.0 / 3.0);

  const CliRun predict = occam(dir, "predict --model c.json --data test.csv --out p.csv --level 0.9");
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const Table p = read_csv(dir.file("p.csv"));
  EXPECT_EQ(p.columns, (std::vector<std::string>{"mean", "std", "lower", "upper"}));
  const Committee committee = load_committee(dir.file("c.json"));
  PredictOptions level;
  level.level = 0.9;
  const Prediction expected = committee.predict(read_csv(dir.file("test.csv")), level);
  EXPECT_TRUE(bitwise_equal(select_columns(p, {"mean"}), expected.mean));
  EXPECT_TRUE(bitwise_equal(select_columns(p, {"std"}), expected.std));
  EXPECT_TRUE(bitwise_equal(select_columns(p, {"lower"}), expected.lower));
  EXPECT_TRUE(bitwise_equal(select_columns(p, {"upper"}), expected.upper));
  // Member 1 is the plain fit with the same seed.
  const CliRun single = occam(dir, "fit --data train.csv --target y --hidden 4 --seed 3 --out m.json --quiet");
  ASSERT_EQ(single.exit_code, 0) << single.err;
  const Eigen::MatrixXd X = select_columns(read_csv(dir.file("test.csv")), {"x"});
  EXPECT_TRUE(bitwise_equal(load_model(dir.file("m.json")).predict(X).mean, committee.models[0].predict(X).mean));

  // --committee-dir: the members kept as they end; the same command again reads them back (the
  // report says so) and writes the same committee; another network into that folder is refused.
  const std::string kept =
      "fit --data train.csv --target y --hidden 4 --seed 3 --committee 3 --threads 2 "
      "--committee-weighting equal --committee-dir members --report rk.json --out ";
  ASSERT_EQ(occam(dir, kept + "k1.json").exit_code, 0);
  EXPECT_TRUE(fs::exists(dir.file("members/member_3.json")));
  const CliRun again = occam(dir, kept + "k2.json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const nlohmann::json read_back = nlohmann::json::parse(read_text(dir.file("rk.json")));
  for (const nlohmann::json& member : read_back["members"]) EXPECT_EQ(member["read_back"], true);
  EXPECT_TRUE(bitwise_equal(load_committee(dir.file("k2.json")).predict(X).mean, committee.predict(X).mean));
  const CliRun other = occam(dir,
                             "fit --data train.csv --target y --hidden 5 --seed 3 --committee 3 "
                             "--committee-dir members --out k3.json");
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find("spec.network.hidden"), std::string::npos) << other.err;
  EXPECT_FALSE(fs::exists(dir.file("k3.json")));

  // Exit code 2: options that parse but do not go together; 1: a value the parser refuses.
  for (const auto& [bad, code] :
       std::vector<std::pair<const char*, int>>{{"--committee 2 --method vi", 2},
                                                {"--committee 2 --noise-model network", 2},
                                                {"--committee 2 --likelihood poisson", 2},
                                                {"--committee-weighting equal", 2},
                                                {"--committee 0", 1},
                                                {"--committee 2 --committee-weighting best", 1}}) {
    const CliRun refused = occam(dir, std::string("fit --data train.csv --target y --out n.json ") + bad);
    EXPECT_EQ(refused.exit_code, code) << bad << ": " << refused.err;
    EXPECT_NE(refused.err.find("committee"), std::string::npos) << bad << ": " << refused.err;
    EXPECT_FALSE(fs::exists(dir.file("n.json")));
  }
}

TEST(Cli, FixedHyperparametersAreKept) {
  TempDir dir;
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                    " --target y --hidden 2 --hyper fixed --alpha 0.5 --beta 20 --alpha-groups single"
                                    " --quiet --report r.json");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
  EXPECT_EQ(report["beta"], 20.0);
  ASSERT_EQ(report["alpha"].size(), 1u);
  EXPECT_EQ(report["alpha"].begin().value(), 0.5);
}

// --map-trace: one CSV row per MAP iteration, written as the fit runs, that agrees with the
// report: a row for each of its MAP iterations (a step that ends its MAP as a stall too), its
// refused rows the report's refused steps, the rows of each evidence step as many as that step's
// entries in the report's trace count, and each row's objective the previous row's less its
// decrease where the step was taken.
TEST(Cli, MapTraceHasARowPerIterationThatAgreesWithTheReport) {
  TempDir dir;
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") + " " + kSmallFit +
                                    " --quiet --report r.json --map-trace trace.csv");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
  const auto split = [](const std::string& line) {
    std::vector<std::string> fields;
    std::istringstream row(line);
    std::string field;
    while (std::getline(row, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    return fields;
  };
  std::istringstream lines(read_text(dir.file("trace.csv")));
  std::string line;
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line,
            "member,noise_model,evidence_step,iteration,objective,gradient_norm,step_taken,trust_radius,step_norm,"
            "on_boundary,negative_curvature,cg_iterations,newton_decrement,predicted_decrease,actual_decrease,"
            "unresolved,seconds");
  const std::vector<std::string> names = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    const std::vector<std::string> fields = split(line);
    ASSERT_EQ(fields.size(), names.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t j = 0; j < names.size(); ++j) row[names[j]] = fields[j];
    rows.push_back(row);
  }
  const int map_iterations = report["map_iterations"].get<int>();
  const int evidence_steps = report["iterations"].get<int>();
  ASSERT_GT(map_iterations, 20);
  EXPECT_EQ(static_cast<int>(rows.size()), map_iterations);
  std::map<int, int> traced, rows_by_step;
  for (const nlohmann::json& entry : report["trace"]) {
    traced[entry["iteration"].get<int>()] += entry["map_iterations"].get<int>();
  }
  int refused = 0, last_step = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::map<std::string, std::string>& r = rows[i];
    EXPECT_EQ(r["member"], "0");       // not a committee
    EXPECT_EQ(r["noise_model"], "0");  // no noise network
    const int step = std::stoi(r["evidence_step"]);
    EXPECT_GE(step, last_step);  // the evidence step the MAP serves only grows
    last_step = step;
    ++rows_by_step[step];
    refused += r["step_taken"] == "0";
    for (const char* field : {"trust_radius", "step_norm", "cg_iterations", "newton_decrement"}) {
      EXPECT_FALSE(r[field].empty()) << field << " is empty in row " << i;
    }
    if (i + 1 < rows.size() && std::stoi(rows[i + 1]["iteration"]) == std::stoi(r["iteration"]) + 1) {
      // S before the next iteration is S after this one.
      std::map<std::string, std::string>& n = rows[i + 1];
      const double before_next =
          std::stod(n["objective"]) + (n["step_taken"] == "1" ? std::stod(n["actual_decrease"]) : 0.0);
      const double after = std::stod(r["objective"]);
      EXPECT_NEAR(before_next, after, 1e-9 * std::max(1.0, std::abs(after))) << "row " << i;
    }
  }
  EXPECT_EQ(refused, report["map_steps"]["refused"].get<int>());
  EXPECT_GT(last_step, 0);
  EXPECT_LE(last_step, evidence_steps);  // numbered as the report's trace rounds
  EXPECT_EQ(rows_by_step, traced);
}

// compare's header names the method and its own --hyper and --hessian (before, the Laplace fit's
// defaults whatever the method: "--hyper evidence" for a VI comparison).
TEST(Cli, CompareHeaderSaysTheMethodsOwnSettings) {
  TempDir dir;
  const std::string base = "compare --data " + fixture("regression_train.csv") + " --target y --hidden 1,2 ";
  for (const auto& [flags, header] :
       {std::pair{"", "--method laplace, --hyper evidence, --hessian ggn,"},
        std::pair{"--method vi --vi-iterations 200", "--method vi, --hyper elbo, --hessian ggn,"},
        std::pair{"--hessian exact", "--method laplace, --hyper evidence, --hessian exact,"}}) {
    const CliRun run = occam(dir, base + flags);
    ASSERT_EQ(run.exit_code, 0) << flags << ": " << run.err;
    const std::string first_line = run.out.substr(0, run.out.find('\n'));
    EXPECT_NE(first_line.find(header), std::string::npos) << flags << ": " << first_line;
  }
}

TEST(Cli, CompareMarksExactlyOneRow) {
  TempDir dir;
  const CliRun run =
      occam(dir, "compare --data " + fixture("regression_train.csv") + " --target y --hidden 1,2,3 --test " +
                     fixture("regression_test.csv") + " --out compare.csv");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::istringstream lines(run.out);
  int marked = 0, rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("* ", 0) == 0) ++marked;
    std::istringstream fields(line.substr(line.rfind("* ", 0) == 0 ? 2 : 0));
    std::string first;
    fields >> first;
    if (first == "1" || first == "2" || first == "3") ++rows;
  }
  EXPECT_EQ(marked, 1) << run.out;
  EXPECT_EQ(rows, 3) << run.out;
  for (const char* column : {"log-evidence", "+ symmetry", "train RMSE", "test RMSE", "test log-lik"}) {
    EXPECT_NE(run.out.find(column), std::string::npos) << column;
  }

  const Table csv = read_csv(dir.file("compare.csv"));
  ASSERT_EQ(csv.values.rows(), 3);
  EXPECT_EQ(csv.columns.front(), "hidden");
  EXPECT_EQ(csv.columns.back(), "best");
  EXPECT_EQ(csv.values.col(csv.values.cols() - 1).sum(), 1.0);
  // The marked row has the highest evidence including the symmetry term.
  const auto column = [&](const std::string& name) {
    return csv.values.col(std::find(csv.columns.begin(), csv.columns.end(), name) - csv.columns.begin());
  };
  Eigen::Index best = 0;
  column("log_evidence_symmetry").maxCoeff(&best);
  EXPECT_EQ(column("best")[best], 1.0);
  EXPECT_TRUE(column("test_log_likelihood").allFinite());
}

TEST(Cli, DemoWritesItsFiles) {
  TempDir dir;
  const CliRun run = occam(dir, "demo --out-dir out");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const char* name : {"data.csv", "test.csv", "predictions_h1.csv", "predictions_h50.csv", "prior_draws_h1.csv",
                           "prior_draws_h50.csv", "posterior_draws_h1.csv", "posterior_draws_h50.csv", "demo.gp"}) {
    EXPECT_TRUE(fs::exists(dir.path() / "out" / name)) << name;
  }
  const Table data = read_csv(dir.file("out/data.csv"));
  EXPECT_EQ(data.values.rows(), 60);
  const Table bands = read_csv(dir.file("out/predictions_h50.csv"));
  EXPECT_EQ(bands.columns, (std::vector<std::string>{"x", "mean", "std", "lower", "upper"}));
  EXPECT_TRUE((bands.values.col(3).array() < bands.values.col(4).array()).all());
  EXPECT_NE(run.out.find("50"), std::string::npos);
  if (std::system("command -v gnuplot >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(fs::exists(dir.file("out/demo.png"))) << run.out;
  }
}

TEST(Cli, DemoWithoutGnuplotSaysHowToInstallItAndStillWritesTheData) {
  TempDir dir;
  const CliRun run = occam(dir, "demo --out-dir out", "PATH=/nonexistent");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("apt-get install gnuplot-nox"), std::string::npos) << run.out;
  EXPECT_TRUE(fs::exists(dir.file("out/predictions_h1.csv")));
  EXPECT_FALSE(fs::exists(dir.file("out/demo.png")));
}

TEST(Cli, HelpDocumentsExitCodesAndExamples) {
  TempDir dir;
  CliRun run = occam(dir, "--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find("Exit codes"), std::string::npos);
  for (const char* command : {"fit", "predict", "compare", "demo"}) {
    run = occam(dir, std::string(command) + " --help");
    EXPECT_EQ(run.exit_code, 0) << command;
    EXPECT_NE(run.out.find("Example:"), std::string::npos) << command;
    EXPECT_NE(run.out.find(std::string("occam ") + command), std::string::npos) << command;
  }
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace occam

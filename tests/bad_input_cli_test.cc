// The bad-input table of docs/cli.md, one test per row: each class of bad input ends the command
// with its exit code and message, at once, and writes no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdint>
#include <regex>
#include <sstream>
#include <string>

#include "occam/io.h"
#include "testing/cli_runner.h"
#include "testing/model_files.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// The exit code, a message matching `shape` (a regular expression searched in stderr), no
// prediction file and nothing on stdout.
void expect_refused(const CliRun& run, int exit_code, const std::string& shape, const TempDir& dir,
                    const std::string& out = "out.csv") {
  EXPECT_EQ(run.exit_code, exit_code) << run.err;
  EXPECT_TRUE(std::regex_search(run.err, std::regex(shape))) << "stderr: " << run.err << "\nshape: " << shape;
  EXPECT_FALSE(fs::exists(dir.file(out))) << out << " was written";
  EXPECT_EQ(run.out, "");
}

std::string predict_with(const TempDir& dir, const std::string& model_text) {
  write_text(dir.file("model.json"), model_text);
  return "predict --model model.json --data " + fixture("regression_inputs.csv") + " --out out.csv";
}

TEST(BadInputTable, PoissonCountBeyondTheLargestDoubleExits4) {
  for (double bias : {710.0, 800.0, 1e5}) {
    TempDir dir;
    const CliRun run = occam(dir, predict_with(dir, testing::poisson_glm_model_file(bias).dump()));
    expect_refused(run, 4,
                   "^occam: error: poisson predictive: the (mean|variance) of the count for example [0-9]+ exceeds the "
                   "largest double \\(its log rate is [-0-9.e+]+ with standard deviation [-0-9.e+]+\\)",
                   dir);
  }
}

TEST(BadInputTable, PoissonCountOfTenToTheTenIsAnswered) {
  // Output bias 24: counts of about 2.6e10, where boost's incomplete gamma gave up (exit 5).
  TempDir dir;
  const CliRun run = occam(dir, predict_with(dir, testing::poisson_glm_model_file(24.0).dump()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string csv = read_text(dir.file("out.csv"));
  EXPECT_EQ(csv.find("inf"), std::string::npos);
  EXPECT_EQ(csv.find("nan"), std::string::npos);
  // Every row: lower < mean < upper, all near e^24 ≈ 2.6e10.
  std::istringstream rows(csv.substr(csv.find('\n') + 1));
  std::string line;
  int count = 0;
  while (std::getline(rows, line)) {
    double mean, sd, lower, upper;
    char comma;
    std::istringstream(line) >> mean >> comma >> sd >> comma >> lower >> comma >> upper;
    EXPECT_LT(lower, mean);
    EXPECT_GT(upper, mean);
    EXPECT_GT(lower, 1e9);
    EXPECT_LT(upper, 1e11);
    ++count;
  }
  EXPECT_GT(count, 0);
}

TEST(BadInputTable, ModelFileNumberTooLargeForADoubleExits2) {
  TempDir dir;
  std::string text = testing::poisson_glm_model_file(0.5).dump();
  text.replace(text.find("\"alpha\":1.0"), 11, "\"alpha\":1e999");
  const CliRun run = occam(dir, predict_with(dir, text));
  expect_refused(run, 2,
                 "^occam: error: model\\.json is not a valid occam model file: JSON number overflow parsing '1e999' "
                 "\\(in field 'prior\\.groups\\[0\\]\\.alpha'\\)",
                 dir);
}

TEST(BadInputTable, ModelFileFeatureListedTwiceExits2) {
  TempDir dir;
  nlohmann::json j = testing::poisson_glm_model_file(0.5);
  j["features"] = {"x2", "x2"};
  const CliRun run = occam(dir, predict_with(dir, j.dump()));
  expect_refused(run, 2,
                 "^occam: error: model\\.json is not a valid occam model file: field 'features': 'x2' is listed "
                 "twice \\(entries 1 and 2\\)",
                 dir);
}

TEST(BadInputTable, ModelFileDimensionsItsArraysCannotBackExit2) {
  TempDir dir;
  nlohmann::json j = testing::poisson_glm_model_file(0.5);
  j["prior"]["dim"] = std::int64_t{1} << 31;
  CliRun run = occam(dir, predict_with(dir, j.dump()));
  expect_refused(run, 2, "^occam: error: model\\.json is not a valid occam model file: 'prior' dim is 2147483648 but "
                         "the network has 3 parameters", dir);
  j = testing::poisson_glm_model_file(0.5);
  j["network"] = {{"type", "mlp"}, {"layers", {2, 30000, 30000, 1}}, {"activation", "tanh"}};
  run = occam(dir, predict_with(dir, j.dump()));
  expect_refused(run, 2, "'posterior' mean has 3 entries but the network needs [0-9]+", dir);
  j["network"]["layers"] = {2, 99999999999, 1};
  run = occam(dir, predict_with(dir, j.dump()));
  expect_refused(run, 2, "field 'network': mlp 2-99999999999-1: more than 2147483647 parameters", dir);
}

TEST(BadInputTable, LayerSizesBeyondTheLimitExit2) {
  TempDir dir;
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hidden 99999999999 --out out.csv");
  expect_refused(run, 2, "^occam: error: mlp 2-99999999999-1: more than 2147483647 parameters", dir);
}

TEST(BadInputTable, GridBeyondTheLimitExits2) {
  for (const char* grid : {"99999999999x99999999999", "100000x100000"}) {
    TempDir dir;
    const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                      " --target y --model linear --prior laplacian --grid " + grid + " --out out.csv");
    expect_refused(run, 2, std::string("^occam: error: the grid graph ") + grid + " has more than the 1048576 nodes a smoothing graph may have", dir);
  }
}

TEST(BadInputTable, LowRankAboveTheNumberOfWeightsExits2) {
  TempDir dir;
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                    " --target y --hidden 2 --method vi --family lowrank:99999999999 --out out.csv");
  expect_refused(run, 2, "^occam: error: low-rank family: family\\.rank = 99999999999 must lie in 1\\.\\.9 ", dir);
}

TEST(BadInputTable, NonUtf8ColumnNameExits2BeforeTheFit) {
  TempDir dir;
  write_text(dir.file("latin1.csv"), "x1,caf\xE9,y\n1,2,3\n4,5,6\n7,8,10\n");
  const CliRun run = occam(dir, "fit --data latin1.csv --target y --out out.csv");
  expect_refused(run, 2,
                 "^occam: error: latin1\\.csv:1: column 2 of the header is not valid UTF-8 \\(byte 0xE9 at offset 4\\)",
                 dir);
}

TEST(BadInputTable, NonFiniteDrawInAChainFileExits2) {
  TempDir dir;
  CliRun run = occam(dir, "sample --data " + fixture("regression_train.csv") +
                              " --target y --hidden 1 --chains 1 --warmup 30 --draws 10 --seed 1 --out run");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // Replace the second weight of the third draw with nan.
  std::string chain = read_text(dir.file("run/chain_1.csv"));
  std::istringstream lines(chain);
  std::string line, edited;
  int draw = 0, line_number = 0, nan_line = 0;
  bool header_seen = false;
  std::size_t w2_column = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (!line.empty() && line[0] != '#') {
      if (!header_seen) {
        header_seen = true;
        w2_column = static_cast<std::size_t>(std::count(line.begin(), line.begin() + line.find("w.2"), ','));
      } else if (++draw == 3) {
        std::size_t start = 0;
        for (std::size_t c = 0; c < w2_column; ++c) start = line.find(',', start) + 1;
        line.replace(start, line.find(',', start) - start, "nan");
        nan_line = line_number;
      }
    }
    edited += line + "\n";
  }
  ASSERT_GT(nan_line, 0);
  write_text(dir.file("run/chain_1.csv"), edited);
  // As if the run itself had written it: the manifest records the edited file.
  add_run_files(dir.file("run"), {"chain_1.csv"});
  run = occam(dir, "predict --draws run --data " + fixture("regression_inputs.csv") + " --out out.csv");
  expect_refused(run, 2,
                 "^occam: error: run/chain_1\\.csv:" + std::to_string(nan_line) + ":" + std::to_string(w2_column + 1) +
                     ": column 'w\\.2': 'nan' is not a finite number",
                 dir);
}

TEST(BadInputTable, AnOutputNamingAnInputExits2AndLeavesTheInputAlone) {
  // The same file however it is spelt: the path itself, a ./ spelling, a symbolic link.
  TempDir dir;
  const std::string train = read_text(testing::fixture_path("regression_train.csv"));
  ASSERT_FALSE(train.empty());
  write_text(dir.file("train.csv"), train);
  fs::create_symlink(dir.file("train.csv"), dir.file("link.csv"));
  for (const std::string out : {"train.csv", "./train.csv", "link.csv"}) {
    const CliRun fit = occam(dir, "fit --data train.csv --target y --model linear --out " + out);
    EXPECT_EQ(fit.exit_code, 2) << fit.err;
    EXPECT_TRUE(std::regex_search(fit.err, std::regex("^occam: error: --out '.*' names the same file as --data 'train\\.csv'")))
        << fit.err;
    const CliRun report = occam(dir, "fit --data train.csv --target y --model linear --report " + out);
    EXPECT_EQ(report.exit_code, 2) << report.err;
    EXPECT_EQ(read_text(dir.file("train.csv")), train) << "the input was overwritten (--out " << out << ")";
  }
  const CliRun fitted = occam(dir, "fit --data train.csv --target y --model linear --out model.json");
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  const std::string model = read_text(dir.file("model.json"));
  for (const std::string out : {"train.csv", "model.json"}) {
    const CliRun predict = occam(dir, "predict --model model.json --data train.csv --out " + out);
    EXPECT_EQ(predict.exit_code, 2) << predict.err;
    EXPECT_NE(predict.err.find("names the same file as"), std::string::npos) << predict.err;
  }
  EXPECT_EQ(read_text(dir.file("train.csv")), train);
  EXPECT_EQ(read_text(dir.file("model.json")), model);
  const CliRun compare = occam(dir, "compare --data train.csv --target y --hidden 1 --out train.csv");
  EXPECT_EQ(compare.exit_code, 2) << compare.err;
  EXPECT_EQ(read_text(dir.file("train.csv")), train);
}

TEST(BadInputTable, AnOutputDirectoryThatCannotBeMadeExits3) {
  TempDir dir;
  write_text(dir.file("a_file"), "x\n");
  for (const std::string out_dir : {"a_file", "/proc/occam-cv"}) {
    const CliRun run = occam(dir, "cv --data " + fixture("regression_train.csv") + " --target y --model linear --out-dir " + out_dir);
    EXPECT_EQ(run.exit_code, 3) << run.err;
    EXPECT_TRUE(std::regex_search(run.err, std::regex("^occam: error: cannot create the directory '" + out_dir + "'")))
        << run.err;
  }
}

TEST(BadInputTable, SeedsAndRangesAreCheckedInWords) {
  TempDir dir;
  const std::string fit = "fit --data " + fixture("regression_train.csv") + " --target y --model linear --out out.csv --seed ";
  // A negative seed used to wrap to 2⁶⁴ − 1, and every seed from 2⁶⁴ on was clamped to it.
  for (const std::string seed : {"-1", "18446744073709551616", "1e3", "x"}) {
    const CliRun run = occam(dir, fit + seed);
    EXPECT_EQ(run.exit_code, 1) << seed << ": " << run.err;
    EXPECT_TRUE(std::regex_search(run.err, std::regex("seed"))) << run.err;
    EXPECT_LT(run.err.size(), 300u) << run.err;
  }
  EXPECT_EQ(occam(dir, fit + "18446744073709551615").exit_code, 0);
  // NaN is in no range, and a range's bounds are printed as written.
  const std::string sample = "sample --data " + fixture("regression_train.csv") +
                             " --target y --hidden 1 --chains 1 --warmup 5 --draws 5 --out run ";
  for (const std::string bad : {"--step-size nan", "--target-accept nan", "--jitter nan", "--target-accept 2"}) {
    const CliRun run = occam(dir, sample + bad);
    EXPECT_EQ(run.exit_code, 1) << bad << ": " << run.err;
    EXPECT_LT(run.err.size(), 300u) << run.err;
  }
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

TEST(BadInputTable, AGlmTargetItsLikelihoodCannotTakeNamesFileLineAndColumn) {
  // Row 5 of the data is line 6 of the file; cross-validation used to count it within a fold.
  TempDir dir;
  std::string csv = "x1,x2,y\n";
  for (int n = 1; n <= 12; ++n) csv += std::to_string(n) + "," + std::to_string(n % 3) + "," + (n == 5 ? "2" : std::to_string(n % 2)) + "\n";
  write_text(dir.file("bad.csv"), csv);
  const std::string shape = "^occam: error: bad\\.csv:6: column 'y' \\(3\\): the target is 2; a bernoulli likelihood expects 0 or 1";
  expect_refused(occam(dir, "fit --data bad.csv --target y --model linear --likelihood bernoulli --out out.csv"), 2, shape, dir);
  expect_refused(occam(dir, "cv --data bad.csv --target y --model linear --likelihood bernoulli --folds 3 --out-dir cv"), 2,
                 shape, dir);
  EXPECT_FALSE(fs::exists(dir.file("cv/cv.csv")));
  const std::string counts = "x1,y\n1,3\n2,0.5\n3,1\n";
  write_text(dir.file("counts.csv"), counts);
  expect_refused(occam(dir, "fit --data counts.csv --target y --model linear --likelihood poisson --out out.csv"), 2,
                 "^occam: error: counts\\.csv:3: column 'y' \\(2\\): the target is 0\\.5; a poisson likelihood expects a "
                 "non-negative integer count",
                 dir);
}

}  // namespace
}  // namespace occam

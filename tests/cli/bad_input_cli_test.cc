// The bad-input table of docs/cli.md, one test per row: each class of bad input ends the command
// with its exit code and message, at once, and writes no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

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
  expect_refused(run, 2,
                 "^occam: error: model\\.json is not a valid occam model file: 'prior' dim is 2147483648 but "
                 "the network has 3 parameters",
                 dir);
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
  const CliRun run =
      occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hidden 99999999999 --out out.csv");
  expect_refused(run, 2, "^occam: error: mlp 2-99999999999-1: more than 2147483647 parameters", dir);
}

TEST(BadInputTable, GridBeyondTheLimitExits2) {
  for (const char* grid : {"99999999999x99999999999", "100000x100000"}) {
    TempDir dir;
    const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                      " --target y --model linear --prior laplacian --grid " + grid + " --out out.csv");
    expect_refused(run, 2,
                   std::string("^occam: error: the grid graph ") + grid +
                       " has more than the 1048576 nodes a smoothing graph may have",
                   dir);
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
    EXPECT_TRUE(
        std::regex_search(fit.err, std::regex("^occam: error: --out '.*' names the same file as --data 'train\\.csv'")))
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
    const CliRun run =
        occam(dir, "cv --data " + fixture("regression_train.csv") + " --target y --model linear --out-dir " + out_dir);
    EXPECT_EQ(run.exit_code, 3) << run.err;
    EXPECT_TRUE(std::regex_search(run.err, std::regex("^occam: error: cannot create the directory '" + out_dir + "'")))
        << run.err;
  }
}

TEST(BadInputTable, SeedsAndRangesAreCheckedInWords) {
  TempDir dir;
  const std::string fit =
      "fit --data " + fixture("regression_train.csv") + " --target y --model linear --out out.csv --seed ";
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
  for (int n = 1; n <= 12; ++n)
    csv += std::to_string(n) + "," + std::to_string(n % 3) + "," + (n == 5 ? "2" : std::to_string(n % 2)) + "\n";
  write_text(dir.file("bad.csv"), csv);
  const std::string shape =
      "^occam: error: bad\\.csv:6: column 'y' \\(3\\): the target is 2; a bernoulli likelihood expects 0 or 1";
  expect_refused(occam(dir, "fit --data bad.csv --target y --model linear --likelihood bernoulli --out out.csv"), 2,
                 shape, dir);
  expect_refused(
      occam(dir, "cv --data bad.csv --target y --model linear --likelihood bernoulli --folds 3 --out-dir cv"), 2, shape,
      dir);
  EXPECT_FALSE(fs::exists(dir.file("cv/cv.csv")));
  const std::string counts = "x1,y\n1,3\n2,0.5\n3,1\n";
  write_text(dir.file("counts.csv"), counts);
  expect_refused(
      occam(dir, "fit --data counts.csv --target y --model linear --likelihood poisson --out out.csv"), 2,
      "^occam: error: counts\\.csv:3: column 'y' \\(2\\): the target is 0\\.5; a poisson likelihood expects a "
      "non-negative integer count",
      dir);
}

// A CSV fixture with its column `name` multiplied by `factor`.
std::string scaled_fixture(const std::string& fixture_name, const std::string& name, double factor) {
  std::istringstream in(read_text(testing::fixture_path(fixture_name)));
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  std::size_t column = 0;
  std::stringstream header(line);
  for (std::string cell; std::getline(header, cell, ',') && cell != name;) ++column;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(cell);
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", std::stod(cells.at(column)) * factor);
    cells.at(column) = text;
    for (std::size_t c = 0; c < cells.size(); ++c) out += (c ? "," : "") + cells[c];
    out += "\n";
  }
  return out;
}

std::vector<double> column_of(const std::string& csv, int column) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<double> values;
  while (std::getline(in, line)) {
    std::stringstream row(line);
    std::string cell;
    for (int c = 0; c <= column; ++c) std::getline(row, cell, ',');
    values.push_back(std::stod(cell));
  }
  return values;
}

TEST(BadInputTable, NumbersBeyondADoubleOrAPrecisionSayWhy) {
  TempDir dir;
  const std::string fit = "fit --data " + fixture("regression_train.csv") + " --target y --hidden 1 --out out.csv ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--alpha 1e-320", "^occam: error: --alpha: 1e-320 is out of range: below the smallest normal double"},
      {"--beta 1e400", "^occam: error: --beta: 1e400 is out of range: beyond the largest double"},
      {"--beta 1e308", "^occam: error: --beta: 1e308 is too large for a precision \\(at most 1e100"},
      {"--alpha 1e101", "^occam: error: --alpha: 1e101 is too large for a precision \\(at most 1e100"},
  };
  for (const auto& [option, shape] : cases) expect_refused(occam(dir, fit + option), 1, shape, dir);
}

// Inputs or targets near 1e300 are data like any other once standardised: the fit on them is the
// fit on the data in ordinary units, scaled. Left unstandardised, they are refused naming the
// column; so is an offset whose exponential overflows.
TEST(BadInputTable, ValuesNearTheTopOfTheDoubleRange) {
  TempDir dir;
  write_text(dir.file("big_x.csv"), scaled_fixture("regression_train.csv", "x1", 1e300));
  write_text(dir.file("big_x_inputs.csv"), scaled_fixture("regression_inputs.csv", "x1", 1e300));
  write_text(dir.file("big_y.csv"), scaled_fixture("regression_train.csv", "y", 1e300));
  const std::string options = " --target y --model linear --out m.json --quiet";
  ASSERT_EQ(occam(dir, "fit --data " + fixture("regression_train.csv") + options).exit_code, 0);
  ASSERT_EQ(
      occam(dir, "predict --model m.json --data " + fixture("regression_inputs.csv") + " --out plain.csv").exit_code,
      0);
  const std::vector<double> plain = column_of(read_text(dir.file("plain.csv")), 0);

  CliRun run = occam(dir, "fit --data big_x.csv" + options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(occam(dir, "predict --model m.json --data big_x_inputs.csv --out big_x_pred.csv").exit_code, 0);
  const std::vector<double> big_x = column_of(read_text(dir.file("big_x_pred.csv")), 0);
  ASSERT_EQ(big_x.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i)
    EXPECT_NEAR(big_x[i], plain[i], 1e-6 * (1.0 + std::abs(plain[i]))) << i;

  run = occam(dir, "fit --data big_y.csv" + options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_EQ(occam(dir, "predict --model m.json --data " + fixture("regression_inputs.csv") + " --out big_y_pred.csv")
                .exit_code,
            0);
  const std::vector<double> big_y = column_of(read_text(dir.file("big_y_pred.csv")), 0);
  ASSERT_EQ(big_y.size(), plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i)
    EXPECT_NEAR(big_y[i] / 1e300, plain[i], 1e-6 * (1.0 + std::abs(plain[i]))) << i;

  expect_refused(
      occam(dir, "fit --data big_x.csv --target y --hidden 1 --standardize none --out out.csv"), 2,
      "^occam: error: big_x\\.csv: input column 'x1' holds -[0-9.]+e\\+300 \\(data row [0-9]+\\): unstandardised "
      "values beyond 1e\\+150 overflow a double in the fit \\(their squares are summed over the rows\\): "
      "standardise it, or rescale it \\(divide it by 1e\\+300\\)",
      dir);
  expect_refused(
      occam(dir, "fit --data big_y.csv --target y --hidden 1 --standardize inputs --out out.csv"), 2,
      "^occam: error: big_y\\.csv: the target 'y' holds -?[0-9.]+e\\+300 \\(data row [0-9]+\\): unstandardised", dir);
  write_text(dir.file("offset.csv"), "x1,log_exposure,count\n0.1,0.5,3\n0.2,1e300,4\n0.3,0.2,1\n0.4,0.1,0\n");
  expect_refused(occam(dir,
                       "fit --data offset.csv --target count --model linear --likelihood poisson --offset log_exposure "
                       "--out out.csv"),
                 2,
                 "^occam: error: offset\\.csv: the offset holds 1e\\+300 \\(data row 2\\): beyond 709 its exponential "
                 "overflows a double; an offset is the logarithm of the exposure",
                 dir);
}

TEST(BadInputTable, OptionMessagesNameWhatWentWrong) {
  TempDir dir;
  // The value of --data left out: the next option is not taken for it.
  expect_refused(occam(dir, "fit --data --target y"), 1,
                 "^occam: error: --data: '--target' is an option, not a value: --data needs its value before it", dir);
  // An unknown option is named before what it hides (--data is also missing).
  expect_refused(occam(dir, "fit --bogus 1"), 1, "^occam: error: unknown option '--bogus'\n", dir);
  // A value echoed in a message is cut to its ends, with its length.
  const CliRun long_value = occam(dir, "fit --data x.csv --target y --hidden " + std::string(100000, '7'));
  expect_refused(long_value, 1, "^occam: error: --hidden: '7{39}\\.\\.\\.7{11}' \\(100002 characters\\)", dir);
  EXPECT_LT(long_value.err.size(), 400u);
}

TEST(BadInputTable, MessagesReadRightInTheCLocale) {
  TempDir dir;
  const std::string command = "summary run --max-rhat nan";
  const CliRun c_locale = occam(dir, command, "LC_ALL=C");
  expect_refused(c_locale, 2, "must be a finite number >= 1", dir);
  EXPECT_TRUE(std::all_of(c_locale.err.begin(), c_locale.err.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x80;
  })) << c_locale.err;
  const CliRun utf8 = occam(dir, command, "LC_ALL=C.UTF-8");
  expect_refused(utf8, 2, "must be a finite number \xE2\x89\xA5 1", dir);  // ≥
}

// A name the user wrote with a combining mark (y followed by U+0302, x by U+0303), quoted back in
// a message: in the C locale the mark is spelt after its letter, not lost as '?'.
TEST(BadInputTable, ACombiningMarkReadsInTheCLocale) {
  TempDir dir;
  write_text(dir.file("marks.csv"), "x\xCC\x83,y\n0.1,1\n0.2,2\n");
  const std::string command = "fit --data marks.csv --target 'y\xCC\x82' --out m.json";
  expect_refused(occam(dir, command, "LC_ALL=C"), 2, "no column 'y-hat' \\(the target\\); available columns: x~, y",
                 dir, "m.json");
  expect_refused(occam(dir, command, "LC_ALL=C.UTF-8"), 2,
                 "no column 'y\xCC\x82' \\(the target\\); available columns: x\xCC\x83, y", dir, "m.json");
}

TEST(BadInputTable, AModelFileTooDeepOrWithTooLongANumberSaysSo) {
  TempDir dir;
  const std::string deep =
      "{\"format\": \"occam-model\", \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_refused(
      occam(dir, predict_with(dir, deep)), 2,
      "^occam: error: model\\.json is not a valid occam model file: JSON nested more than 256 levels deep at "
      "line 1, column 287; an occam file is a few levels deep",
      dir);
  nlohmann::json j = testing::poisson_glm_model_file(0.5);
  std::string text = j.dump();
  text.replace(text.find("\"alpha\":1.0"), 11, "\"alpha\":1" + std::string(10000000, '0'));
  const CliRun number = occam(dir, predict_with(dir, text));
  expect_refused(
      number, 2,
      "^occam: error: model\\.json is not a valid occam model file: JSON a number of 10000001 characters at line "
      "1, column [0-9]+, longer than any number an occam file holds \\(at most 1000\\)",
      dir);
  // A name of a megabyte, quoted in a message, is cut to its ends.
  j["features"] = {std::string(1 << 20, 'n'), "x2"};
  const CliRun name = occam(dir, predict_with(dir, j.dump()));
  expect_refused(name, 2, "no column 'n{39}\\.\\.\\.n{10}'; \\(1048579 characters\\)", dir);
  EXPECT_LT(name.err.size(), 1000u);
}

TEST(BadInputTable, AMonteCarloPredictiveBeyondMemoryExits2BeforeAllocating) {
  TempDir dir;
  std::string inputs = "x1,x2\n";
  for (int i = 0; i < 1000; ++i) inputs += std::to_string(0.001 * i) + ",0.5\n";
  write_text(dir.file("inputs.csv"), inputs);
  ASSERT_EQ(occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hidden 2 --quiet --out m.json")
                .exit_code,
            0);
  const CliRun run =
      occam(dir, "predict --model m.json --data inputs.csv --predictive mc --samples 2000000000 --out out.csv");
  expect_refused(
      run, 2,
      "^occam: error: predict: the Monte Carlo predictive would hold about [0-9.]+ TB of draws \\(2000000000 for "
      "each of 1000 rows\\), more than the [0-9.]+ [MGT]B of memory available; ask for fewer samples",
      dir);
}

// Draws of a few kilobytes are never refused for the memory available, however little the system
// reports: only draws of 64 MB or more are weighed against it. A mount namespace stands in a
// cgroup with 1000 bytes of room (memory.max over memory.current); making one needs root.
TEST(BadInputTable, ASmallMonteCarloPredictiveIsNotWeighedAgainstTheMemoryAvailable) {
  TempDir dir;
  const std::string mount = "unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/fs/cgroup'";
  if (std::system((mount + " >/dev/null 2>&1").c_str()) != 0) GTEST_SKIP() << "cannot mount in a new namespace";
  const auto with_1000_bytes_left = [&](const std::string& args) {
    const std::string script =
        "mount -t tmpfs none /sys/fs/cgroup && echo 1000 >/sys/fs/cgroup/memory.max && "
        "echo 0 >/sys/fs/cgroup/memory.current && exec " +
        testing::quote(OCCAM_CLI_PATH) + " " + args;
    return testing::run_program("unshare", dir, "-m --propagation private sh -c " + testing::quote(script));
  };
  std::string inputs = "x1,x2\n";
  for (int i = 0; i < 1000; ++i) inputs += std::to_string(0.001 * i) + ",0.5\n";
  write_text(dir.file("inputs.csv"), inputs);
  ASSERT_EQ(occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hidden 2 --quiet --out m.json")
                .exit_code,
            0);
  // 80 MB of draws are weighed, and refused: the stand-in is what the check reads.
  expect_refused(
      with_1000_bytes_left("predict --model m.json --data inputs.csv --predictive mc --samples 10000 --out out.csv"), 2,
      "^occam: error: predict: the Monte Carlo predictive would hold about 80 MB of draws \\(10000 for each of "
      "1000 rows\\), more than the 1 kB of memory available",
      dir);
  // 12 kB are not.
  const CliRun small = with_1000_bytes_left("predict --model m.json --data " + fixture("regression_inputs.csv") +
                                            " --predictive mc --samples 100 --out out.csv");
  EXPECT_EQ(small.exit_code, 0) << small.err;
  EXPECT_TRUE(fs::exists(dir.file("out.csv")));
}

// A model file whose numbers overflow the prediction (a huge weight, a tiny Cholesky factor, a huge
// target scale): the
// prediction is not written as inf or nan; the command fails naming the example.
TEST(BadInputTable, APredictionThatOverflowsExits4) {
  TempDir dir;
  ASSERT_EQ(
      occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --model linear --quiet --out m.json")
          .exit_code,
      0);
  const nlohmann::json fitted = nlohmann::json::parse(read_text(dir.file("m.json")));
  for (const std::string edit : {"mean", "cholesky", "y_scale"}) {
    nlohmann::json j = fitted;
    if (edit == "mean") j["posterior"]["mean"][0] = std::numeric_limits<double>::max();
    if (edit == "cholesky") j["posterior"]["precision_cholesky_lower_packed"][0] = 1e-300;  // a variance of 1e600
    if (edit == "y_scale") j["standardizer"]["y_scale"] = 1e308;
    write_text(dir.file("huge.json"), j.dump());
    const CliRun run =
        occam(dir, "predict --model huge.json --data " + fixture("regression_inputs.csv") + " --out out.csv");
    expect_refused(
        run, 4,
        "^occam: error: predict: the predictive distribution of example [0-9]+ is not finite \\(mean [-0-9.a-z+]+, "
        "std [-0-9.a-z+]+\\): the model's numbers \\(its weights, their covariance or the standardizer's "
        "scales\\) overflow a double",
        dir);
  }
}

}  // namespace
}  // namespace occam

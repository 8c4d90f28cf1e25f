// CSV reading (every error with its file, line and column), datasets, standardisation and the
// whole-or-nothing file write.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/data.h"
#include "occam/model_spec.h"
#include "occam/status.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::TempDir;

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The Error read_csv throws on `text`, which must be of `kind`.
Error csv_error(const std::string& text, ErrorKind kind = ErrorKind::kInvalidInput, std::string* path_out = nullptr) {
  TempDir dir;
  const std::string path = write_text(dir, "train.csv", text);
  if (path_out != nullptr) *path_out = path;
  try {
    read_csv(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e;
  }
  ADD_FAILURE() << "read_csv accepted:\n" << text;
  return Error(kind, "");
}

bool bitwise_equal(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(ReadCsv, ParsesHeaderAndNumbers) {
  TempDir dir;
  const Table t = read_csv(write_text(dir, "t.csv", "a,b,c\n1,2.5,-3e2\n+4, .5 ,1e-3\n"));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t.values.rows(), 2);
  ASSERT_EQ(t.values.cols(), 3);
  EXPECT_EQ(t.values(0, 2), -300.0);
  EXPECT_EQ(t.values(1, 0), 4.0);
  EXPECT_EQ(t.values(1, 1), 0.5);
  EXPECT_EQ(t.values(1, 2), 1e-3);
}

TEST(ReadCsv, ToleratesCrLfWhitespaceBomAndTrailingBlankLines) {
  TempDir dir;
  const Table t = read_csv(write_text(dir, "t.csv", "\xEF\xBB\xBF x , \"y\"\r\n 1 ,\t2\r\n3,4\r\n\r\n  \n"));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"x", "y"}));
  ASSERT_EQ(t.values.rows(), 2);
  EXPECT_EQ(t.values(0, 1), 2.0);
  EXPECT_EQ(t.values(1, 0), 3.0);
}

TEST(ReadCsv, LastLineWithoutNewline) {
  TempDir dir;
  const Table t = read_csv(write_text(dir, "t.csv", "x\n1\n2"));
  EXPECT_EQ(t.values.rows(), 2);
  EXPECT_EQ(t.values(1, 0), 2.0);
}

TEST(ReadCsv, UnderflowIsATinyNumberNotAnError) {
  TempDir dir;
  const Table t = read_csv(write_text(dir, "t.csv", "x\n1e-400\n4.9e-324\n"));
  EXPECT_EQ(t.values(0, 0), 0.0);
  EXPECT_GT(t.values(1, 0), 0.0);
}

TEST(ReadCsv, MissingFileIsAnIoError) {
  TempDir dir;
  const std::string path = dir.file("absent.csv");
  try {
    read_csv(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ReadCsv, DirectoryIsAnIoError) {
  TempDir dir;
  try {
    read_csv(dir.path().string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find("directory"), std::string::npos) << e.what();
  }
}

TEST(ReadCsv, EmptyFile) {
  std::string path;
  const Error e = csv_error("", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":1: the file is empty; expected a header row of column names and data rows");
  EXPECT_NE(std::string(csv_error("\n \r\n").what()).find(":1: the file is empty"), std::string::npos);
}

TEST(ReadCsv, HeaderOnly) {
  std::string path;
  const Error e = csv_error("x,y\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: no data rows after the header");
}

TEST(ReadCsv, DuplicateColumn) {
  std::string path;
  const Error e = csv_error("x1,x2,x1\n1,2,3\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":1: column 'x1' (3): duplicate name (also column 1)");
}

TEST(ReadCsv, EmptyColumnName) {
  std::string path;
  const Error e = csv_error("x1,,y\n1,2,3\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":1: column 2 of the header has no name");
}

TEST(ReadCsv, RaggedRow) {
  std::string path;
  Error e = csv_error("a,b,c\n1,2,3\n4,5\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":3: expected 3 cells (as in the header), found 2");
  e = csv_error("a,b\n1,2\n3,4,5\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":3: expected 2 cells (as in the header), found 3");
}

TEST(ReadCsv, NonNumericCell) {
  std::string path;
  const Error e = csv_error("y,x1,x2\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n1,2,abc\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":7: column 'x2' (3): 'abc' is not a number");
}

TEST(ReadCsv, NumberWithTrailingGarbage) {
  std::string path;
  Error e = csv_error("a,b\n1,2.5x\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: column 'b' (2): '2.5x' is not a number");
  e = csv_error("a,b\n1,1 2\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: column 'b' (2): '1 2' is not a number");
  e = csv_error("a,b\n0x10,2\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: column 'a' (1): '0x10' is not a number");
}

TEST(ReadCsv, LongCellIsShortenedInTheMessage) {
  std::string path;
  const Error e = csv_error("a\n" + std::string(100, 'z') + "\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: column 'a' (1): '" + std::string(40, 'z') + "...' is not a number");
}

TEST(ReadCsv, EmptyCell) {
  std::string path;
  const Error e = csv_error("a,b\n1,\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: column 'b' (2): empty cell is not a number");
}

TEST(ReadCsv, NanAndInfinity) {
  std::string path;
  Error e = csv_error("a,b\n1,2\nNaN,2\n", ErrorKind::kInvalidInput, &path);
  EXPECT_NE(std::string(e.what()).find(path + ":3: column 'a' (1): 'NaN' is NaN"), std::string::npos) << e.what();
  e = csv_error("a,b\n1,inf\n", ErrorKind::kInvalidInput, &path);
  EXPECT_NE(std::string(e.what()).find(path + ":2: column 'b' (2): 'inf' is infinite"), std::string::npos) << e.what();
  e = csv_error("a,b\n1,-Infinity\n", ErrorKind::kInvalidInput, &path);
  EXPECT_NE(std::string(e.what()).find(":2: column 'b' (2): '-Infinity' is infinite"), std::string::npos) << e.what();
  e = csv_error("a,b\n1,1e400\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":2: column 'b' (2): '1e400' is too large for a double");
}

TEST(ReadCsv, BlankLineInsideTheData) {
  std::string path;
  const Error e = csv_error("a\n1\n\n2\n", ErrorKind::kInvalidInput, &path);
  EXPECT_EQ(std::string(e.what()), path + ":3: empty line inside the data");
}

Table example_table() {
  Table t;
  t.path = "train.csv";
  t.columns = {"x1", "y", "x2"};
  t.values.resize(3, 3);
  t.values << 1, 10, 100,  //
      2, 20, 200,          //
      3, 30, 300;
  return t;
}

TEST(MakeDataset, TargetAndFeaturesInFileOrder) {
  const Dataset d = make_dataset(example_table(), "y");
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(d.target_name, "y");
  EXPECT_EQ(d.X.col(0), Eigen::Vector3d(1, 2, 3));
  EXPECT_EQ(d.X.col(1), Eigen::Vector3d(100, 200, 300));
  EXPECT_EQ(d.Y.col(0), Eigen::Vector3d(10, 20, 30));
}

TEST(MakeDataset, MissingTargetNamesFileColumnAndAvailableColumns) {
  try {
    make_dataset(example_table(), "z");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), "train.csv: no column 'z' (the target); available columns: x1, y, x2");
  }
}

TEST(MakeDataset, HintsAtAMissingHeaderRow) {
  TempDir dir;
  const Table t = read_csv(write_text(dir, "t.csv", "1.5,2\n3,4\n"));
  try {
    make_dataset(t, "y");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(the file seems to have no header row)"), std::string::npos) << e.what();
  }
}

TEST(MakeDataset, TargetAsTheOnlyColumn) {
  Table t;
  t.path = "t.csv";
  t.columns = {"y"};
  t.values = Eigen::MatrixXd::Ones(2, 1);
  EXPECT_THROW(make_dataset(t, "y"), Error);
}

TEST(SelectColumns, InTheOrderGiven) {
  const Eigen::MatrixXd X = select_columns(example_table(), {"x2", "x1"});
  EXPECT_EQ(X.col(0), Eigen::Vector3d(100, 200, 300));
  EXPECT_EQ(X.col(1), Eigen::Vector3d(1, 2, 3));
}

TEST(SelectColumns, MissingColumn) {
  try {
    select_columns(example_table(), {"x1", "x3"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()), "train.csv: no column 'x3'; available columns: x1, y, x2");
  }
}

TEST(Standardize, ParseAndName) {
  for (const auto s : {Standardize::kBoth, Standardize::kInputs, Standardize::kNone, Standardize::kCenter}) {
    EXPECT_EQ(parse_standardize(to_string(s)), s);
  }
  try {
    parse_standardize("all");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'all'"), std::string::npos);
  }
}

Dataset example_dataset() {
  Dataset d;
  d.X.resize(4, 2);
  d.X << 1, 5,  //
      2, 5,     //
      3, 5,     //
      6, 5;     // the second column is constant
  d.Y.resize(4, 1);
  d.Y << 1, -1, 3, 5;
  d.feature_names = {"a", "b"};
  d.target_name = "y";
  return d;
}

TEST(Standardizer, ZeroMeanUnitScaleAndConstantColumnKeepsScaleOne) {
  const Dataset d = example_dataset();
  const Standardizer s = Standardizer::fit(d, Standardize::kBoth);
  const Eigen::MatrixXd Z = s.transform_inputs(d.X);
  EXPECT_NEAR(Z.col(0).mean(), 0.0, 1e-15);
  EXPECT_NEAR(Z.col(0).squaredNorm() / 4.0, 1.0, 1e-14);
  EXPECT_EQ(s.x_scale[1], 1.0);
  EXPECT_TRUE(Z.col(1).isZero());
  EXPECT_TRUE(Z.allFinite());
  const Eigen::MatrixXd T = s.transform_targets(d.Y);
  EXPECT_NEAR(T.mean(), 0.0, 1e-15);
  EXPECT_NEAR(T.squaredNorm() / 4.0, 1.0, 1e-14);
  // Back to the original units.
  for (Eigen::Index n = 0; n < 4; ++n) EXPECT_NEAR(s.target_location(T(n, 0)), d.Y(n, 0), 1e-14);
  EXPECT_DOUBLE_EQ(s.target_scale(1.0), s.y_scale);
}

TEST(Standardizer, ConstantColumnWithRoundingNoiseKeepsScaleOne) {
  Dataset d;
  d.X = Eigen::MatrixXd::Constant(7, 1, 0.1);  // the mean of 0.1 seven times is not exactly 0.1
  d.Y = Eigen::MatrixXd::Constant(7, 1, 1.0 / 3.0);
  const Standardizer s = Standardizer::fit(d, Standardize::kBoth);
  EXPECT_EQ(s.x_scale[0], 1.0);
  EXPECT_EQ(s.y_scale, 1.0);
}

TEST(Standardizer, InputsOnlyAndNone) {
  const Dataset d = example_dataset();
  const Standardizer inputs = Standardizer::fit(d, Standardize::kInputs);
  EXPECT_EQ(inputs.x_mean.size(), 2);
  EXPECT_EQ(inputs.y_mean, 0.0);
  EXPECT_EQ(inputs.y_scale, 1.0);
  EXPECT_EQ(inputs.transform_targets(d.Y), d.Y);
  const Standardizer none = Standardizer::fit(d, Standardize::kNone);
  EXPECT_EQ(none.x_mean.size(), 0);
  EXPECT_EQ(none.transform_inputs(d.X), d.X);
  EXPECT_EQ(none.transform_targets(d.Y), d.Y);
}

TEST(Standardizer, CenterMovesInputsAndTargetToZeroMeanAndKeepsTheirScales) {
  const Dataset d = example_dataset();
  const Standardizer s = Standardizer::fit(d, Standardize::kCenter);
  EXPECT_TRUE(s.standardizes_targets());
  EXPECT_EQ(s.x_scale, Eigen::VectorXd::Ones(2));
  EXPECT_EQ(s.y_scale, 1.0);
  EXPECT_EQ(s.y_mean, 2.0);
  const Eigen::MatrixXd Z = s.transform_inputs(d.X);
  EXPECT_EQ(Z.col(0), (Eigen::VectorXd(4) << -2, -1, 0, 3).finished());
  EXPECT_TRUE(Z.col(1).isZero());
  EXPECT_EQ(s.transform_targets(d.Y), (Eigen::MatrixXd(4, 1) << -1, -3, 1, 3).finished());
}

TEST(ModelSpec, CenterIsForRealValuedTargetsOnly) {
  ModelSpec spec;
  spec.standardize = Standardize::kCenter;
  EXPECT_NO_THROW(spec.validate());
  spec.likelihood.kind = LikelihoodKind::kPoisson;
  EXPECT_THROW(spec.validate(), Error);
}

TEST(Standardizer, WrongNumberOfColumns) {
  const Standardizer s = Standardizer::fit(example_dataset(), Standardize::kBoth);
  EXPECT_THROW(s.transform_inputs(Eigen::MatrixXd::Zero(2, 3)), Error);
}

TEST(Standardizer, JsonRoundTripIsBitIdentical) {
  Dataset d = example_dataset();
  d.X(0, 0) = 0.1;
  d.Y(1, 0) = 1.0 / 3.0;
  for (const auto mode : {Standardize::kBoth, Standardize::kInputs, Standardize::kNone, Standardize::kCenter}) {
    const Standardizer s = Standardizer::fit(d, mode);
    // Through text, as in a model file.
    const Standardizer r = Standardizer::from_json(nlohmann::json::parse(s.to_json().dump()));
    EXPECT_EQ(r.mode, s.mode);
    ASSERT_EQ(r.x_mean.size(), s.x_mean.size());
    for (Eigen::Index i = 0; i < s.x_mean.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(r.x_mean[i], s.x_mean[i]));
      EXPECT_TRUE(bitwise_equal(r.x_scale[i], s.x_scale[i]));
    }
    EXPECT_TRUE(bitwise_equal(r.y_mean, s.y_mean));
    EXPECT_TRUE(bitwise_equal(r.y_scale, s.y_scale));
  }
}

TEST(Standardizer, FromJsonRefusesBadDescriptions) {
  const nlohmann::json good = Standardizer::fit(example_dataset(), Standardize::kBoth).to_json();
  auto bad = good;
  bad["x_scale"][0] = 0.0;
  EXPECT_THROW(Standardizer::from_json(bad), Error);
  bad = good;
  bad["x_scale"].erase(0);
  EXPECT_THROW(Standardizer::from_json(bad), Error);
  bad = good;
  bad.erase("y_scale");
  EXPECT_THROW(Standardizer::from_json(bad), Error);
  bad = good;
  bad["mode"] = "sideways";
  EXPECT_THROW(Standardizer::from_json(bad), Error);
  bad = good;
  bad["x_mean"][1] = "one";
  EXPECT_THROW(Standardizer::from_json(bad), Error);
  EXPECT_THROW(Standardizer::from_json(nlohmann::json::array()), Error);
}

TEST(WriteFileAtomic, WritesAndReplacesLeavingNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  write_file_atomic(path, "first\n");
  write_file_atomic(path, "second\n");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "second\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.txt"});
}

TEST(WriteFileAtomic, MissingDirectoryIsAnIoErrorAndCreatesNothing) {
  TempDir dir;
  const std::string path = dir.file("no/such/dir/out.txt");
  try {
    write_file_atomic(path, "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(WriteFileAtomic, FailedRenameRemovesTheTemporaryFile) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("taken"));
  std::filesystem::create_directory(dir.file("taken/inside"));  // a non-empty directory cannot be replaced
  EXPECT_THROW(write_file_atomic(dir.file("taken"), "x"), Error);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"taken"});
}

TEST(FormatCsv, SeventeenDigitsReadBackExactly) {
  Eigen::MatrixXd values(3, 3);
  values << 0.1, 1.0 / 3.0, -2.5e-300,   //
      1e300, -0.0, 123456789.123456789,  //
      std::numeric_limits<double>::denorm_min(), std::nextafter(1.0, 2.0), -7.0;
  const std::string csv = format_csv({"a", "b", "c"}, values);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "a,b,c");
  EXPECT_NE(csv.find("0.10000000000000001,"), std::string::npos) << csv;
  TempDir dir;
  const Table t = read_csv(write_text(dir, "v.csv", csv));
  ASSERT_EQ(t.values.rows(), 3);
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(t.values.data()[i], values.data()[i])) << i;
  }
}

TEST(FormatCsv, HeaderMustMatchColumns) { EXPECT_THROW(format_csv({"a"}, Eigen::MatrixXd::Zero(1, 2)), Error); }

}  // namespace
}  // namespace occam

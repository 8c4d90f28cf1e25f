// Inputs a user or a file can give the library that are not valid: each is refused at once with
// an Error of the right kind naming the field (and the file, line and column where there is one),
// before anything of an absurd size is allocated.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/io.h"
#include "occam/limits.h"
#include "occam/linear.h"
#include "occam/mcmc/draws_predict.h"
#include "occam/mcmc/stan_csv.h"
#include "occam/mlp.h"
#include "occam/prior.h"
#include "occam/status.h"
#include "occam/vi.h"
#include "testing/model_files.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::TempDir;

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// Runs `f`, which must throw an occam::Error of `kind` whose message contains every one of `parts`.
void expect_error(const std::function<void()>& f, ErrorKind kind, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << e.what();
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an occam::Error: " << e.what();
  }
}

// --- Sizes -------------------------------------------------------------------------------------

TEST(SizeLimits, NetworksTooLargeToIndexAreRefusedBeforeAnyOverflow) {
  expect_error([] { (void)Mlp(2, {99999999999}, Activation::kTanh); }, ErrorKind::kInvalidArgument,
               {"2-99999999999-1", "parameters"});
  // Each layer fits an Index, their product does not: the count must not wrap around.
  const Index big = Index{1} << 40;
  expect_error([&] { (void)Mlp(big, {big, big}, Activation::kTanh); }, ErrorKind::kInvalidArgument, {"parameters"});
  expect_error(
      [&] {
        (void)Mlp(3, {Index{1} << 62, 3}, Activation::kRelu);
      },
      ErrorKind::kInvalidArgument, {"parameters"});
  expect_error([&] { (void)Linear(big, big); }, ErrorKind::kInvalidArgument, {"parameters"});
  // The largest allowed network is still a network.
  EXPECT_EQ(Mlp(1, {}, Activation::kTanh, kMaxParameters / 2).num_params(), kMaxParameters / 2 * 2);
}

TEST(SizeLimits, GraphsTooLargeAreRefusedBeforeAllocating) {
  expect_error([] { grid_graph(99999999999, 99999999999); }, ErrorKind::kInvalidArgument,
               {"99999999999x99999999999", "nodes"});
  expect_error([] { parse_grid("100000x100000"); }, ErrorKind::kInvalidArgument, {"100000x100000"});
  expect_error([] { grid_graph(kMaxGraphNodes, 2); }, ErrorKind::kInvalidArgument, {"nodes"});
  expect_error([] { chain_graph(kMaxGraphNodes + 1); }, ErrorKind::kInvalidArgument,
               {std::to_string(kMaxGraphNodes + 1)});
  EXPECT_EQ(grid_graph(3, 4).nodes, 12);
}

TEST(SizeLimits, PriorBlocksOutsideTheParametersAreRefused) {
  // offset + size overflows an Index: refused by comparison, not by the overflowing sum.
  const Index huge = Index{1} << 62;
  expect_error(
      [&] {
        (void)Prior(4, {{"g", {{huge, huge}}}}, Eigen::VectorXd::Ones(1));
      },
      ErrorKind::kInvalidArgument, {"'g'", "outside"});
  // A dimension the blocks do not cover is refused before dim entries are allocated.
  expect_error(
      [] {
        (void)Prior(Index{1} << 31, {{"g", {{0, 4}}}}, Eigen::VectorXd::Ones(1));
      },
      ErrorKind::kInvalidArgument, {"2147483648"});
  expect_error(
      [] {
        (void)Prior(4, {{"g", {{0, 3}}}}, Eigen::VectorXd::Ones(1));
      },
      ErrorKind::kInvalidArgument, {"cover 3"});
  // Smoothing whose nodes × copies overflows.
  Prior prior(4, {{"g", {{0, 4}}}}, Eigen::VectorXd::Ones(1));
  Smoothing s;
  s.graph = chain_graph(2);
  s.copies = Index{1} << 62;
  expect_error([&] { prior.set_smoothing(s); }, ErrorKind::kInvalidArgument, {"does not fit"});
}

TEST(SizeLimits, LowRankAboveTheNumberOfWeightsIsRefused) {
  Rng rng(1);
  expect_error(
      [&] {
        (void)GaussianVariational({FamilyKind::kLowRank, 99999999999}, Eigen::VectorXd::Zero(5), 1.0, &rng);
      },
      ErrorKind::kInvalidArgument, {"family.rank", "99999999999"});
  const nlohmann::json j = {{"family", "lowrank:4611686018427387904"},
                            {"mean", {0.0, 0.0}},
                            {"factor_column_major", {0.0, 0.0}},
                            {"log_diagonal_sd", {0.0, 0.0}}};
  expect_error([&] { GaussianVariational::from_json(j); }, ErrorKind::kInvalidInput, {"rank"});
}

// --- Model files ---------------------------------------------------------------------------------

TEST(ModelFileInput, TheValidExampleLoads) {
  TempDir dir;
  write_text(dir.file("m.json"), testing::poisson_glm_model_file(0.5).dump());
  EXPECT_NO_THROW(load_model(dir.file("m.json")));
}

TEST(ModelFileInput, NumberTooLargeForADoubleNamesFileAndField) {
  TempDir dir;
  std::string text = testing::poisson_glm_model_file(0.5).dump();
  const std::string alpha = "\"alpha\":1.0";
  ASSERT_NE(text.find(alpha), std::string::npos);
  text.replace(text.find(alpha), alpha.size(), "\"alpha\":1e400");
  write_text(dir.file("big.json"), text);
  expect_error([&] { load_model(dir.file("big.json")); }, ErrorKind::kInvalidInput,
               {dir.file("big.json"), "prior.groups[0].alpha", "1e400"});
}

TEST(ModelFileInput, FeatureListedTwiceIsRefused) {
  TempDir dir;
  nlohmann::json j = testing::poisson_glm_model_file(0.5);
  j["features"] = {"x1", "x1"};
  write_text(dir.file("twice.json"), j.dump());
  expect_error([&] { load_model(dir.file("twice.json")); }, ErrorKind::kInvalidInput,
               {dir.file("twice.json"), "'features'", "'x1' is listed twice"});
}

TEST(ModelFileInput, AbsurdDimensionsAreRefusedBeforeAllocating) {
  TempDir dir;
  const auto refused = [&](const nlohmann::json& j, const std::vector<std::string>& parts) {
    write_text(dir.file("m.json"), j.dump());
    expect_error([&] { load_model(dir.file("m.json")); }, ErrorKind::kInvalidInput, parts);
  };
  nlohmann::json j = testing::poisson_glm_model_file(0.5);
  // prior.dim of 2³¹ (8 GB of group indices) and 1e15 (not even an integer a double holds exactly).
  j["prior"]["dim"] = Index{1} << 31;
  refused(j, {"'prior' dim is 2147483648", "3 parameters"});
  j["prior"]["dim"] = 1e15;
  refused(j, {"'prior' dim"});
  j["prior"]["dim"] = 18446744073709551615ULL;
  refused(j, {"'prior' dim"});
  // Layers whose product overflows, and layers of a network far larger than the file's arrays.
  j = testing::poisson_glm_model_file(0.5);
  j["network"] = {{"type", "mlp"}, {"layers", {4294967296LL, 4294967296LL, 1}}, {"activation", "tanh"}};
  refused(j, {"'network'", "parameters"});
  j["network"] = {{"type", "mlp"}, {"layers", {2, 20000, 20000, 1}}, {"activation", "tanh"}};
  refused(j, {"mean has 3 entries", "needs " + std::to_string(Mlp(2, {20000, 20000}, Activation::kTanh).num_params())});
  // Prior blocks whose offset + size overflows, and blocks outside the parameters.
  j = testing::poisson_glm_model_file(0.5);
  j["prior"]["groups"][0]["blocks"] = {{4611686018427387904LL, 4611686018427387904LL}};
  refused(j, {"'prior'", "'blocks offset' must be an integer in 0..2147483647"});
  j["prior"]["groups"][0]["blocks"] = {{2, 2147483647}};
  refused(j, {"'prior'", "outside the 3 parameters"});
}

// --- CSV data ------------------------------------------------------------------------------------

TEST(CsvInput, NonUtf8ColumnNameIsRefusedAtLoad) {
  TempDir dir;
  write_text(dir.file("bad.csv"), "x1,caf\xE9,y\n1,2,3\n4,5,6\n");
  expect_error([&] { read_csv(dir.file("bad.csv")); }, ErrorKind::kInvalidInput,
               {dir.file("bad.csv") + ":1:", "column 2", "UTF-8", "0xE9"});
  // Overlong forms and surrogates are not UTF-8 either; real UTF-8 is fine.
  write_text(dir.file("overlong.csv"), "x\xC0\xAF,y\n1,2\n");
  EXPECT_THROW(read_csv(dir.file("overlong.csv")), Error);
  write_text(dir.file("surrogate.csv"), "x\xED\xA0\x80,y\n1,2\n");
  EXPECT_THROW(read_csv(dir.file("surrogate.csv")), Error);
  write_text(dir.file("good.csv"), "caf\xC3\xA9,\xE6\x97\xA5,\xF0\x9F\x98\x80\n1,2,3\n");
  EXPECT_EQ(read_csv(dir.file("good.csv")).columns[0], "caf\xC3\xA9");
}

TEST(CsvInput, NonUtf8ClassLabelIsRefusedAtLoad) {
  TempDir dir;
  write_text(dir.file("labels.csv"), "x,label\n1,cat\n2,d\xFFg\n");
  expect_error([&] { read_csv(dir.file("labels.csv"), "label"); }, ErrorKind::kInvalidInput,
               {dir.file("labels.csv") + ":3:", "'label'", "UTF-8"});
}

// --- Chain CSV files -------------------------------------------------------------------------------

TEST(ChainCsvInput, NonFiniteDrawOfAModelQuantityNamesFileLineAndColumn) {
  TempDir dir;
  const std::string header = "# a comment\nlp__,accept_stat__,energy__,w.1,w.2,beta\n";
  write_text(dir.file("nan.csv"), header + "-1.5,0.9,3,0.1,0.2,4\n-1.6,0.8,2,0.3,nan,4\n");
  expect_error([&] { mcmc::read_stan_csv(dir.file("nan.csv")); }, ErrorKind::kInvalidInput,
               {dir.file("nan.csv") + ":4:5:", "'w.2'", "'nan'"});
  write_text(dir.file("inf.csv"), header + "-1.5,0.9,3,0.1,0.2,inf\n");
  expect_error([&] { mcmc::read_stan_csv(dir.file("inf.csv")); }, ErrorKind::kInvalidInput, {":3:6:", "'beta'"});
  write_text(dir.file("overflow.csv"), header + "-1.5,0.9,3,1e400,0.2,4\n");
  expect_error([&] { mcmc::read_stan_csv(dir.file("overflow.csv")); }, ErrorKind::kInvalidInput, {":3:4:", "'w.1'"});
  // The sampler's own columns may be non-finite; a draw of 1e-400 underflows to a number.
  write_text(dir.file("ok.csv"), header + "-inf,nan,inf,1e-400,0.2,4\n");
  const mcmc::StanCsv csv = mcmc::read_stan_csv(dir.file("ok.csv"));
  EXPECT_EQ(csv.draws.rows(), 1);
  EXPECT_EQ(csv.draws(0, 3), 0.0);
}

TEST(ChainCsvInput, DrawsPredictiveRefusesNonFiniteWeights) {
  const Linear net(1);
  const GaussianLikelihood lik(1.0);
  Eigen::MatrixXd weights(2, 2);
  weights << 0.1, 0.2, std::nan(""), 0.3;
  expect_error([&] { mcmc::predict_from_draws(net, lik, weights, Eigen::VectorXd(), Eigen::MatrixXd::Ones(3, 1), {}); },
               ErrorKind::kInvalidArgument, {"draw 2"});
}

// --- Output files ----------------------------------------------------------------------------------

TEST(OutputFile, APipeOrDeviceIsWrittenInPlaceNotReplaced) {
  // `--out /dev/null` used to rename a regular file over the device node. A FIFO stands in for it
  // here (no privileges needed): it must still be a FIFO afterwards and carry the contents.
  TempDir dir;
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  write_file_atomic(fifo, "through the pipe\n");
  struct stat status {};
  ASSERT_EQ(::stat(fifo.c_str(), &status), 0);
  EXPECT_TRUE(S_ISFIFO(status.st_mode));
  char buffer[64] = {};
  const ssize_t n = ::read(reader, buffer, sizeof buffer - 1);
  ::close(reader);
  EXPECT_EQ(std::string(buffer, n > 0 ? static_cast<std::size_t>(n) : 0), "through the pipe\n");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"pipe"});  // no temporary left beside it
}

TEST(OutputFile, ASymbolicLinkIsFollowed) {
  TempDir dir;
  write_text(dir.file("target.csv"), "old\n");
  std::filesystem::create_symlink("target.csv", dir.file("link.csv"));
  write_file_atomic(dir.file("link.csv"), "new\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.csv")));
  std::ifstream in(dir.file("target.csv"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "new");
}

}  // namespace
}  // namespace occam

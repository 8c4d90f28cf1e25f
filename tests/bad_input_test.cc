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
  expect_error([] { (void)Mlp(2, {99999999999}, Activation::kTanh); }, ErrorKind::kInvalidArgument, {"2-99999999999-1", "parameters"});
  // Each layer fits an Index, their product does not: the count must not wrap around.
  const Index big = Index{1} << 40;
  expect_error([&] { (void)Mlp(big, {big, big}, Activation::kTanh); }, ErrorKind::kInvalidArgument, {"parameters"});
  expect_error([&] { (void)Mlp(3, {Index{1} << 62, 3}, Activation::kRelu); }, ErrorKind::kInvalidArgument, {"parameters"});
  expect_error([&] { (void)Linear(big, big); }, ErrorKind::kInvalidArgument, {"parameters"});
  // The largest allowed network is still a network.
  EXPECT_EQ(Mlp(1, {}, Activation::kTanh, kMaxParameters / 2).num_params(), kMaxParameters / 2 * 2);
}

TEST(SizeLimits, GraphsTooLargeAreRefusedBeforeAllocating) {
  expect_error([] { grid_graph(99999999999, 99999999999); }, ErrorKind::kInvalidArgument, {"99999999999x99999999999", "nodes"});
  expect_error([] { parse_grid("100000x100000"); }, ErrorKind::kInvalidArgument, {"100000x100000"});
  expect_error([] { grid_graph(kMaxGraphNodes, 2); }, ErrorKind::kInvalidArgument, {"nodes"});
  expect_error([] { chain_graph(kMaxGraphNodes + 1); }, ErrorKind::kInvalidArgument, {std::to_string(kMaxGraphNodes + 1)});
  EXPECT_EQ(grid_graph(3, 4).nodes, 12);
}

TEST(SizeLimits, PriorBlocksOutsideTheParametersAreRefused) {
  // offset + size overflows an Index: refused by comparison, not by the overflowing sum.
  const Index huge = Index{1} << 62;
  expect_error([&] { (void)Prior(4, {{"g", {{huge, huge}}}}, Eigen::VectorXd::Ones(1)); }, ErrorKind::kInvalidArgument,
               {"'g'", "outside"});
  // A dimension the blocks do not cover is refused before dim entries are allocated.
  expect_error([] { (void)Prior(Index{1} << 31, {{"g", {{0, 4}}}}, Eigen::VectorXd::Ones(1)); }, ErrorKind::kInvalidArgument,
               {"2147483648"});
  expect_error([] { (void)Prior(4, {{"g", {{0, 3}}}}, Eigen::VectorXd::Ones(1)); }, ErrorKind::kInvalidArgument, {"cover 3"});
  // Smoothing whose nodes × copies overflows.
  Prior prior(4, {{"g", {{0, 4}}}}, Eigen::VectorXd::Ones(1));
  Smoothing s;
  s.graph = chain_graph(2);
  s.copies = Index{1} << 62;
  expect_error([&] { prior.set_smoothing(s); }, ErrorKind::kInvalidArgument, {"does not fit"});
}

TEST(SizeLimits, LowRankAboveTheNumberOfWeightsIsRefused) {
  Rng rng(1);
  expect_error([&] { (void)GaussianVariational({FamilyKind::kLowRank, 99999999999}, Eigen::VectorXd::Zero(5), 1.0, &rng); },
               ErrorKind::kInvalidArgument, {"family.rank", "99999999999"});
  const nlohmann::json j = {{"family", "lowrank:4611686018427387904"},
                            {"mean", {0.0, 0.0}},
                            {"factor_column_major", {0.0, 0.0}},
                            {"log_diagonal_sd", {0.0, 0.0}}};
  expect_error([&] { GaussianVariational::from_json(j); }, ErrorKind::kInvalidInput, {"rank"});
}

}  // namespace
}  // namespace occam

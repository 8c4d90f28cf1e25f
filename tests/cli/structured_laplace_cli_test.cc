// occam fit --hessian-structure: each structure fits, reports which Laplace approximation its
// evidence and gradient belong to, writes a model `occam predict` reads, and — the point of the
// structures — fits a network of ~72,000 weights without a W × W matrix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "occam/rng.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::read_text;
using testing::TempDir;

TEST(HessianStructureCli, EachStructureFitsReportsItselfAndPredicts) {
  for (const std::string structure : {"diag", "last-layer", "kron", "lowrank:5"}) {
    SCOPED_TRACE(structure);
    TempDir dir;
    const CliRun fit =
        occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hidden 3 --hessian-structure " +
                       structure + " --out model.json --report report.json");
    ASSERT_EQ(fit.exit_code, 0) << fit.err;
    EXPECT_NE(fit.out.find("d log Z_" + structure + "/d log theta"), std::string::npos) << fit.out;
    EXPECT_NE(fit.out.find("(" + structure + " Laplace; with the symmetry term"), std::string::npos) << fit.out;
    const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("report.json")));
    EXPECT_EQ(report.at("optimality").at("hessian_structure"), structure);
    EXPECT_EQ(report.at("optimality").at("loop"), "outer");
    EXPECT_EQ(report.at("optimality").at("hyper_gradient_kind"), "mode_held");
    // lowrank:K says how its Lanczos iteration ended; the others have none.
    EXPECT_EQ(report.at("optimality").contains("lanczos"), structure == "lowrank:5");
    if (structure == "lowrank:5") {
      EXPECT_GE(report.at("optimality").at("lanczos").at("steps").get<int>(), 5);
      EXPECT_TRUE(report.at("optimality").at("lanczos").at("converged").get<bool>());
    }
    const nlohmann::json model = nlohmann::json::parse(read_text(dir.file("model.json")));
    EXPECT_EQ(model.at("posterior").at("hessian_structure"), structure);
    for (const std::string predictive : {"linearized", "mc"}) {
      const CliRun predict = occam(dir, "predict --model model.json --data " + fixture("regression_inputs.csv") +
                                            " --predictive " + predictive + " --out p.csv");
      EXPECT_EQ(predict.exit_code, 0) << predict.err;
      EXPECT_GT(read_text(dir.file("p.csv")).size(), 0u);
    }
  }
}

TEST(HessianStructureCli, RefusesAnUnknownStructureAndAVariationalFit) {
  TempDir dir;
  const CliRun bad =
      occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hessian-structure kfac");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("full, diag, last-layer, kron"), std::string::npos) << bad.err;
  const CliRun vi =
      occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --method vi --hessian-structure diag");
  EXPECT_NE(vi.exit_code, 0);
  EXPECT_NE(vi.err.find("structure"), std::string::npos) << vi.err;
  // lowrank:K needs a positive integer K, at most W (here 3 hidden units on the fixture's inputs).
  for (const std::string bad : {"lowrank:0", "lowrank:", "lowrank:x", "lowrank:100000"}) {
    SCOPED_TRACE(bad);
    const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                      " --target y --hidden 3 --hessian-structure " + bad + " --out m.json");
    EXPECT_NE(run.exit_code, 0);
    EXPECT_NE(run.err.find("lowrank:K"), std::string::npos) << run.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("m.json")));
  }
  const CliRun help = occam(dir, "fit --help");
  EXPECT_NE(help.out.find("--hessian-structure"), std::string::npos);
}

// A 2 × 256 tanh network on 20 inputs (W = 71,425; one W × W matrix is 40.8 GB) on 1000 rows, with
// the address space of the process capped at 3 GB: a structured fit that formed any W × W matrix
// would fail to allocate it (lowrank:10's Lanczos basis is at most 120 vectors of W, 69 MB). The
// full structure on the same problem is refused by the memory estimate before it allocates.
TEST(HessianStructureCli, SeventyThousandWeightsFitWithoutAWByWMatrix) {
  TempDir dir;
  {
    std::ofstream csv(dir.file("big.csv"));
    for (int j = 1; j <= 20; ++j) csv << "x" << j << ",";
    csv << "y\n";
    Rng rng(1);
    for (int n = 0; n < 1000; ++n) {
      double y = 0.0;
      for (int j = 1; j <= 20; ++j) {
        const double x = rng.normal();
        y += std::sin(static_cast<double>(j) * x) / j;
        csv << x << ",";
      }
      csv << y + 0.1 * rng.normal() << "\n";
    }
  }
  const std::string fit =
      "fit --data big.csv --target y --hidden 256,256 --max-iterations 5 --hyper fixed --alpha 1 --beta 10 ";
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer reserves terabytes of address space for its shadow memory, which no ulimit -v
  // allows (it aborts at start); its own resident-memory limit keeps the fit far below the 39 GB of
  // a W × W matrix instead (the shadow and the quarantine count in it, hence more than 3 GB).
  const std::string memory_cap = "ASAN_OPTIONS=hard_rss_limit_mb=6000";
#else
  const std::string memory_cap = "ulimit -v 3000000 &&";
#endif
  for (const std::string structure : {"diag", "last-layer", "kron", "lowrank:10"}) {
    SCOPED_TRACE(structure);
    const CliRun run = testing::run_program(
        OCCAM_CLI_PATH, dir, fit + "--hessian-structure " + structure + " --report r.json --quiet", memory_cap);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("r.json")));
    EXPECT_EQ(report.at("optimality").at("hessian_structure"), structure);
    EXPECT_TRUE(report.at("log_evidence").is_number());
  }
  const CliRun full = occam(dir, fit + "--max-memory 3G");
  EXPECT_NE(full.exit_code, 0);
  EXPECT_NE(full.err.find("W × W"), std::string::npos) << full.err;
}

}  // namespace
}  // namespace occam

// The structured Laplace approximations (diag, last-layer, kron, lowrank:K) and their evidence loop with the
// rows spread over processes and threads: every factor is a sum of per-block terms added in a fixed
// order, so the approximation, its log-evidence and the evidence-maximal α, β are those of one
// process, bit for bit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/cli_runner.h"
#include "testing/mpi_check.h"
#include "testing/sharded_posterior.h"
#include "testing/thread_group.h"
#include "testing/toy_csv.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::shard_of;
using testing::ThreadGroup;
using testing::ToyData;
constexpr Index kBlockRows = testing::kShardBlockRows;

const HessianStructure kStructures[] = {{HessianStructureKind::kDiagonal},
                                        {HessianStructureKind::kLastLayer},
                                        {HessianStructureKind::kKronecker},
                                        {HessianStructureKind::kLowRank, 5}};

// The structure's approximation at w and its log-evidence, every number to the last bit.
std::string approximation(const Posterior& p, const Eigen::VectorXd& w, const HessianStructure& structure) {
  const LaplaceApproximation q = laplace(p, w, HessianKind::kGgn, structure);
  nlohmann::json j = q.to_json();
  j["log_evidence"] = log_evidence(p, q);
  return j.dump();
}

// The evidence loop with the structure from the seeded start: w, α, β, log Z and the optimality
// conditions, every number to the last bit.
std::string evidence_fit(Posterior* p, const HessianStructure& structure) {
  EvidenceOptions options;
  options.structure = structure;
  options.map.optimizer = Optimizer::kLbfgs;
  options.map.max_iterations = 300;
  options.max_outer_iterations = 6;
  Eigen::VectorXd w = testing::shard_start(*p);
  const EvidenceResult r = fit_evidence(p, options, &w);
  EXPECT_GE(r.summary.outer_iterations, 3);
  nlohmann::json j;
  j["w"] = std::vector<double>(w.data(), w.data() + w.size());
  j["alpha"] = std::vector<double>(r.summary.alpha.data(), r.summary.alpha.data() + r.summary.alpha.size());
  j["beta"] = r.summary.beta;
  j["log_evidence"] = r.summary.log_evidence;
  j["gradient_norm"] = r.summary.gradient_norm;
  j["hyper_gradient_norm"] = r.summary.hyper_gradient_norm;
  j["gamma_total"] = r.summary.gamma_total;
  j["termination"] = to_string(r.summary.termination);
  return j.dump();
}

// body(posterior) on K simulated processes with `threads` threads each; every process must get
// the same answer, which is returned.
std::string on_processes(const ToyData& d, int K, int threads, const std::function<std::string(Posterior*)>& body) {
  ThreadGroup group(K);
  std::vector<std::string> results(K);
  group.run([&](const Communicator& comm) {
    const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), K);
    Posterior p = shard_of(d, first, last, &comm, threads);
    results[comm.rank()] = body(&p);
  });
  for (int r = 1; r < K; ++r) EXPECT_EQ(results[r], results[0]) << "rank " << r << " of " << K;
  return results[0];
}

TEST(StructuredLaplaceParallel, ApproximationsAreThoseOfOneProcessBitForBit) {
  const ToyData d = testing::shard_test_data();
  Posterior one = shard_of(d, 0, d.X.rows(), nullptr, 1);
  const Eigen::VectorXd w = testing::shard_map(one);
  for (const HessianStructure& structure : kStructures) {
    const std::string expected = approximation(one, w, structure);
    for (int K : {1, 2, 3}) {
      for (int threads : {1, 2}) {
        EXPECT_EQ(on_processes(d, K, threads, [&](Posterior* p) { return approximation(*p, w, structure); }), expected)
            << to_string(structure) << ", " << K << " processes, " << threads << " threads";
      }
    }
  }
}

TEST(StructuredLaplaceParallel, EvidenceLoopReachesTheHyperparametersOfOneProcessBitForBit) {
  const ToyData d = testing::shard_test_data();
  for (const HessianStructure& structure : kStructures) {
    Posterior one = shard_of(d, 0, d.X.rows(), nullptr, 1);
    const std::string expected = evidence_fit(&one, structure);
    for (int K : {2, 3}) {
      EXPECT_EQ(on_processes(d, K, 2, [&](Posterior* p) { return evidence_fit(p, structure); }), expected)
          << to_string(structure) << ", " << K << " processes";
    }
  }
}

// Blocks of rows change only the rounding: the structures summed over 64-row blocks agree with one
// block of all rows to rounding, and are not the same bits (the blocks really are summed apart).
TEST(StructuredLaplaceParallel, BlocksChangeOnlyTheRounding) {
  const ToyData d = testing::shard_test_data();
  const Posterior blocked = shard_of(d, 0, d.X.rows(), nullptr, 1),
                  whole = shard_of(d, 0, d.X.rows(), nullptr, 1, 4096);
  const Eigen::VectorXd w = testing::shard_start(blocked);
  for (const HessianStructure& structure : kStructures) {
    const LaplaceApproximation a = laplace(blocked, w, HessianKind::kGgn, structure);
    const LaplaceApproximation b = laplace(whole, w, HessianKind::kGgn, structure);
    EXPECT_NEAR(a.log_det_precision(), b.log_det_precision(), 1e-12 * std::abs(b.log_det_precision()));
    const Eigen::VectorXd va = a.covariance_diagonal(), vb = b.covariance_diagonal();
    EXPECT_LE((va - vb).norm(), 1e-11 * vb.norm()) << to_string(structure);
    EXPECT_FALSE(bitwise_equal(va, vb)) << to_string(structure);
  }
}

// What still needs every row in one process says so: the full curvature and the hyperparameters
// integrated out.
TEST(StructuredLaplaceParallel, FullCurvatureAndIntegratedHyperparametersRefuseASpreadPosterior) {
  const ToyData d = testing::shard_test_data();
  ThreadGroup group(2);
  std::vector<std::string> messages(2);
  group.run([&](const Communicator& comm) {
    const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), 2);
    Posterior p = shard_of(d, first, last, &comm, 1);
    const Eigen::VectorXd w = testing::shard_start(p);
    try {
      laplace(p, w, HessianKind::kGgn, HessianStructure{HessianStructureKind::kFull});
    } catch (const Error& e) {
      messages[comm.rank()] += e.what();
    }
    EvidenceOptions integrate;
    integrate.strategy = HyperStrategy::kIntegrate;
    integrate.map.optimizer = Optimizer::kLbfgs;
    Eigen::VectorXd w2 = w;
    EXPECT_THROW(fit_evidence(&p, integrate, &w2), Error);
  });
  for (const std::string& m : messages) EXPECT_NE(m.find("spread over 2 processes"), std::string::npos) << m;
}

#ifdef OCCAM_MPIRUN
// A model file without what differs between two runs of one fit: how long it took and the command.
std::string model_without_timing(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(testing::read_text(path));
  const std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& node) {
    if (node.is_object()) {
      node.erase("seconds");
      node.erase("command_line");
    }
    if (node.is_structured()) {
      for (nlohmann::json& child : node) strip(child);
    }
  };
  strip(j);
  return j.dump();
}

// `mpirun -n K occam fit --method laplace --hessian-structure kron|last-layer|lowrank:4` writes the model of
// one process (10,000 rows: three blocks of 4096), --threads 2 too; `full` is refused, saying why.
TEST(StructuredLaplaceParallel, MpirunFitWritesTheModelOfOneProcess) {
  testing::TempDir dir;
  testing::write_csv(dir.file("train.csv"), testing::linear_data(10000, 3, 0.3, 11));
  for (const std::string structure : {"kron", "last-layer", "lowrank:4"}) {
    const std::string fit = "fit --data " + testing::quote(dir.file("train.csv")) +
                            " --target y --hidden 6,6 --method laplace --hessian-structure " + structure +
                            " --hyper fixed --alpha 0.5 --beta 20 --optimizer lbfgs --max-iterations 40";
    const testing::CliRun one = testing::occam(dir, fit + " --out one.json");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const std::string expected = model_without_timing(dir.file("one.json"));
    EXPECT_NE(expected.find("\"log_evidence\""), std::string::npos);
    for (const auto& [K, threads] : {std::pair{2, 1}, std::pair{3, 2}}) {
      const std::string out = "spread" + std::to_string(K) + ".json";
      const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(K) +
                                  testing::quote(OCCAM_CLI_PATH) + " " + fit + " --threads " + std::to_string(threads) +
                                  " --out " + out + " > out.txt 2> err.txt";
      ASSERT_EQ(std::system(command.c_str()), 0) << testing::read_text(dir.file("err.txt"));
      EXPECT_EQ(model_without_timing(dir.file(out)), expected) << structure << ", " << K << " processes";
    }
  }
  const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(2) +
                              testing::quote(OCCAM_CLI_PATH) +
                              " fit --data train.csv --target y --hidden 3 --method laplace --evidence-loop joint > "
                              "out.txt 2> err.txt";
  EXPECT_NE(std::system(command.c_str()), 0);
  EXPECT_NE(testing::read_text(dir.file("err.txt")).find("--hessian-structure diag, kron, last-layer or lowrank:K"),
            std::string::npos)
      << testing::read_text(dir.file("err.txt"));
}

// The online evidence loop under mpirun: Adam's minibatches gathered and summed by chunks, the
// rounds' kron curvature over all rows; the model of one process for 2 processes of one thread and
// 3 of two. The default loop (auto) takes it there with kron, as the report says.
TEST(StructuredLaplaceParallel, MpirunOnlineFitWritesTheModelOfOneProcess) {
  testing::TempDir dir;
  testing::write_csv(dir.file("train.csv"), testing::linear_data(10000, 3, 0.3, 11));
  const std::string fit = "fit --data " + testing::quote(dir.file("train.csv")) +
                          " --target y --hidden 6,6 --method laplace --hessian-structure kron --evidence-loop online "
                          "--optimizer adam --epochs 4 --burn-in 2 --evidence-every 1 --hyper-steps 5";
  const testing::CliRun one = testing::occam(dir, fit + " --out one.json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::string expected = model_without_timing(dir.file("one.json"));
  EXPECT_NE(expected.find("\"log_evidence\""), std::string::npos);
  for (const auto& [K, threads] : {std::pair{2, 1}, std::pair{3, 2}}) {
    const std::string out = "online" + std::to_string(K) + ".json";
    const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(K) +
                                testing::quote(OCCAM_CLI_PATH) + " " + fit + " --threads " + std::to_string(threads) +
                                " --out " + out + " > out.txt 2> err.txt";
    ASSERT_EQ(std::system(command.c_str()), 0) << testing::read_text(dir.file("err.txt"));
    EXPECT_EQ(model_without_timing(dir.file(out)), expected) << K << " processes";
  }
  const std::string automatic = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(2) +
                                testing::quote(OCCAM_CLI_PATH) +
                                " fit --data train.csv --target y --hidden 3 --method laplace --out auto.json"
                                " > out.txt 2> err.txt";
  ASSERT_EQ(std::system(automatic.c_str()), 0) << testing::read_text(dir.file("err.txt"));
  const std::string printed = testing::read_text(dir.file("out.txt"));
  EXPECT_NE(printed.find("loop          online: the rows are spread over processes"), std::string::npos) << printed;
}
#endif

}  // namespace
}  // namespace occam

// A posterior whose rows are spread over processes (DataShard): its value, gradient, Hessian-vector
// products, L-BFGS MAP, minibatch Adam and online evidence loop have the same bits on 1, 2 or 3
// processes and any number of threads.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "inference/curvature/curvature.h"
#include "occam/laplace.h"
#include "occam/evidence.h"
#include "occam/map.h"
#include "occam/minibatch_map.h"
#include "occam/posterior.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/cli_runner.h"
#include "testing/mpi_check.h"
#include "testing/thread_group.h"
#include "testing/sharded_posterior.h"
#include "testing/toy_csv.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::ThreadGroup;
using testing::ToyData;
using testing::write_csv;

using testing::shard_of;
using testing::shard_start;
constexpr Index kBlockRows = testing::kShardBlockRows;

ToyData data() { return testing::shard_test_data(); }

// Everything one process computes: log p, ∇ log p, log p(D|w), the GGN and exact Hessian-vector
// products, and the L-BFGS MAP from the seeded start, in one vector.
Eigen::VectorXd everything(const Posterior& p) {
  const Eigen::VectorXd w = shard_start(p);
  double log_p = 0.0;
  Eigen::VectorXd grad;
  EXPECT_TRUE(p.evaluate(w, &log_p, &grad));
  const Eigen::VectorXd v = Eigen::VectorXd::LinSpaced(w.size(), -1.0, 1.0);
  const Eigen::VectorXd ggn = p.data_hessian_vp(w, v, HessianKind::kGgn),
                        exact = p.data_hessian_vp(w, v, HessianKind::kExact);
  MapSummary s;
  const Eigen::VectorXd map = testing::shard_map(p, &s);
  EXPECT_GT(s.iterations, 20);
  Eigen::VectorXd all(2 + 4 * w.size());
  all << log_p, p.log_likelihood(w), grad, ggn, exact, map;
  return all;
}

Eigen::VectorXd spread(const ToyData& d, int K, int threads) {
  ThreadGroup group(K);
  std::vector<Eigen::VectorXd> results(K);
  group.run([&](const Communicator& comm) {
    const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), K);
    results[comm.rank()] = everything(shard_of(d, first, last, &comm, threads));
  });
  for (int r = 1; r < K; ++r) EXPECT_TRUE(bitwise_equal(results[r], results[0])) << "rank " << r << " of " << K;
  return results[0];
}

TEST(DataShard, ProcessesAndThreadsGiveTheBitsOfOneProcess) {
  const ToyData d = data();
  const Eigen::VectorXd one = everything(shard_of(d, 0, d.X.rows(), nullptr, 1));
  for (int K : {1, 2, 3}) {
    for (int threads : {1, 2}) {
      EXPECT_TRUE(bitwise_equal(spread(d, K, threads), one)) << K << " processes, " << threads << " threads";
    }
  }
}

TEST(DataShard, BlocksChangeOnlyTheRoundingOfTheSums) {
  const ToyData d = data();
  const Posterior blocked = shard_of(d, 0, d.X.rows(), nullptr, 1),
                  whole = shard_of(d, 0, d.X.rows(), nullptr, 1, 4096);
  const Eigen::VectorXd w = shard_start(blocked), v = Eigen::VectorXd::LinSpaced(w.size(), -1.0, 1.0);
  double a = 0.0, b = 0.0;
  Eigen::VectorXd ga, gb;
  ASSERT_TRUE(blocked.evaluate(w, &a, &ga));
  ASSERT_TRUE(whole.evaluate(w, &b, &gb));
  EXPECT_NEAR(a, b, 1e-12 * std::abs(b));
  EXPECT_LE((ga - gb).norm(), 1e-12 * gb.norm());
  const Eigen::VectorXd ha = blocked.data_hessian_vp(w, v, HessianKind::kExact),
                        hb = whole.data_hessian_vp(w, v, HessianKind::kExact);
  EXPECT_LE((ha - hb).norm(), 1e-12 * hb.norm());
  EXPECT_FALSE(bitwise_equal(ga, gb));  // the blocks are really summed apart
}

TEST(DataShard, EnginesThatNeedEveryRowRefuseASpreadPosterior) {
  const ToyData d = data();
  ThreadGroup group(2);
  std::vector<std::string> messages(2);
  group.run([&](const Communicator& comm) {
    const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), 2);
    const Posterior p = shard_of(d, first, last, &comm, 1);
    Eigen::VectorXd w = shard_start(p);
    try {
      MapOptions lm;
      lm.optimizer = Optimizer::kLevenbergMarquardt;
      find_map(p, lm, &w);
    } catch (const Error& e) {
      messages[comm.rank()] += e.what();
    }
    EXPECT_THROW(internal::Curvature(p, w), Error);
    EXPECT_THROW(p.data_hessian(w, HessianKind::kGgn), Error);
  });
  for (const std::string& m : messages) EXPECT_NE(m.find("spread over 2 processes"), std::string::npos) << m;
}

// Adam on minibatches (batches of 50 rows: chunks of 32 and 18), and the online evidence loop with
// kron on top of it, reach one process's weights and hyperparameters bit for bit on 1, 2 and 3
// processes of 1 and 2 threads: every process draws the same batches, gathers their rows and adds
// the chunks along the fixed-order tree. A stop asked of one process alone stops every process at
// the same step.
struct MinibatchResult {
  Eigen::VectorXd map, online;  // the Adam weights; the online loop's weights, then α, β
  int aborted_steps = -1;       // steps done when one process asked to stop
};

MinibatchResult minibatch_fits(const Posterior& p, bool ask_stop) {
  MinibatchResult r;
  MinibatchOptions adam;
  adam.epochs = 3;
  adam.batch_size = 50;
  adam.learning_rate = 1e-2;
  adam.seed = 9;
  r.map = shard_start(p);
  const MinibatchSummary s = find_map_minibatch(p, adam, &r.map);
  EXPECT_EQ(s.steps, 3 * 20);
  Posterior copy(p.network().clone(), p.likelihood().clone(), p.prior(), p.X(), p.Y(), p.shard());
  EvidenceOptions online;
  online.loop = EvidenceLoop::kOnline;
  online.structure = parse_hessian_structure("kron");
  online.online.minibatch = adam;
  online.online.minibatch.epochs = 4;
  online.online.burn_in = 2;
  online.online.evidence_every = 1;
  online.online.hyper_steps = 5;
  Eigen::VectorXd w = shard_start(copy);
  const EvidenceResult e = fit_evidence(&copy, online, &w);
  EXPECT_EQ(e.summary.outer_iterations, 3);
  r.online.resize(w.size() + e.summary.alpha.size() + 1);
  r.online << w, e.summary.alpha, e.summary.beta;
  if (ask_stop) {
    // Process 1 (or the only one) asks to stop at its 7th report; the others never ask.
    MinibatchOptions stop = adam;
    stop.steps_between_reports = 1;
    int reports = 0;
    const bool asker = !p.distributed() || p.shard().communicator->rank() == 1;
    stop.callback = [&](const MapIteration&) {
      return asker && ++reports == 7 ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    };
    Eigen::VectorXd v = shard_start(p);
    const MinibatchSummary t = find_map_minibatch(p, stop, &v);
    EXPECT_EQ(t.termination, Termination::kAborted);
    r.aborted_steps = static_cast<int>(t.steps);
  }
  return r;
}

TEST(DataShard, MinibatchMapAndOnlineEvidenceGiveTheBitsOfOneProcess) {
  const ToyData d = data();
  const MinibatchResult one = minibatch_fits(shard_of(d, 0, d.X.rows(), nullptr, 1), true);
  EXPECT_EQ(one.aborted_steps, 7);
  for (int K : {1, 2, 3}) {
    for (int threads : {1, 2}) {
      ThreadGroup group(K);
      std::vector<MinibatchResult> results(K);
      group.run([&](const Communicator& comm) {
        const auto [first, last] = RowBlocks{.num_rows = d.X.rows(), .block_rows = kBlockRows}.rows_of(comm.rank(), K);
        results[comm.rank()] = minibatch_fits(shard_of(d, first, last, &comm, threads), true);
      });
      for (int r = 0; r < K; ++r) {
        EXPECT_TRUE(bitwise_equal(results[r].map, one.map)) << K << " processes, " << threads << " threads, rank " << r;
        EXPECT_TRUE(bitwise_equal(results[r].online, one.online))
            << K << " processes, " << threads << " threads, rank " << r;
        EXPECT_EQ(results[r].aborted_steps, 7) << K << " processes, rank " << r;
      }
    }
  }
}

TEST(DataShard, ShardsOffBlockBoundariesOrMissingRowsAreRefused) {
  const ToyData d = data();
  EXPECT_THROW(shard_of(d, 0, 500, nullptr, 1), Error);  // one process must hold every row
  ThreadGroup group(2);
  group.run([&](const Communicator& comm) {
    EXPECT_THROW(shard_of(d, comm.rank() == 0 ? 0 : 100, comm.rank() == 0 ? 100 : 1000, &comm, 1),
                 Error);  // 100 % 64 ≠ 0
  });
}

#ifdef OCCAM_MPI_CHECK
using testing::bits;
using testing::mpi_check_lines;

// The same over real processes: `mpirun -n K` for K = 1, 2, 3, each process with two threads.
TEST(DataShard, MpiProcessesReachTheMapOfOneProcessBitForBit) {
  const ToyData d = data();
  const std::string expected = bits(testing::shard_map(shard_of(d, 0, d.X.rows(), nullptr, 1)));
  for (int K : {1, 2, 3}) {
    std::string output;
    const std::vector<std::string> lines = mpi_check_lines(K, "map 2", &output);
    EXPECT_EQ(static_cast<int>(lines.size()), K) << output;
    for (const std::string& line : lines) EXPECT_EQ(line, expected) << K << " processes";
  }
}
#endif

// `occam fit --method map` on one process: the MAP weights at --alpha, --beta, which predict; an
// --hyper that would set α and β another way is refused.
TEST(DataShard, FitMethodMapWritesAPointEstimateAndRefusesAnotherHyper) {
  testing::TempDir dir;
  const ToyData d = testing::linear_data(200, 2, 0.3, 3);
  write_csv(dir.file("train.csv"), d);
  const testing::CliRun fit = testing::occam(
      dir, "fit --data train.csv --target y --hidden 3 --method map --hyper fixed --alpha 0.5 --beta 20 --out m.json");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  EXPECT_TRUE(nlohmann::json::parse(testing::read_text(dir.file("m.json"))).contains("point"));
  const testing::CliRun predict = testing::occam(dir, "predict --model m.json --data train.csv --out p.csv");
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
  const testing::CliRun refused =
      testing::occam(dir, "fit --data train.csv --target y --hidden 3 --method map --hyper evidence");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--method map fits the weights at --alpha and --beta"), std::string::npos) << refused.err;
}

#ifdef OCCAM_MPIRUN
// `mpirun -n K occam fit --method map` spreads the rows over K processes: the model file is the one
// process's, byte for byte, for K = 2, 3 (10,000 rows: three blocks of 4096), and only process 0
// prints and writes.
TEST(DataShard, MpirunFitWritesTheModelOfOneProcess) {
  testing::TempDir dir;
  const ToyData d = testing::linear_data(10000, 3, 0.3, 11);
  write_csv(dir.file("train.csv"), d);
  const std::string fit =
      "fit --data " + testing::quote(dir.file("train.csv")) +
      " --target y --hidden 6,6 --method map --hyper fixed --alpha 0.5 --beta 20 --optimizer lbfgs --max-iterations 60";
  const testing::CliRun one = testing::occam(dir, fit + " --out one.json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto weights = [](const std::string& path) {
    const nlohmann::json j = nlohmann::json::parse(testing::read_text(path));
    return j.contains("point") ? j["point"].dump() : std::string("no point estimate in ") + path;
  };
  for (int K : {2, 3}) {
    const std::string out = "spread" + std::to_string(K) + ".json";
    const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(K) +
                                testing::quote(OCCAM_CLI_PATH) + " " + fit + " --out " + out + " > out.txt 2> err.txt";
    ASSERT_EQ(std::system(command.c_str()), 0) << testing::read_text(dir.file("err.txt"));
    EXPECT_EQ(weights(dir.file(out)), weights(dir.file("one.json"))) << K << " processes";
    const std::string printed = testing::read_text(dir.file("out.txt"));
    EXPECT_EQ(printed.find("model written to"), printed.rfind("model written to"))
        << "printed by more than one process:\n"
        << printed;
  }
  // Another method than map is refused under mpirun, by every process, with the reason.
  const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(2) +
                              testing::quote(OCCAM_CLI_PATH) +
                              " fit --data train.csv --target y --hidden 3 --method laplace --evidence-loop joint > "
                              "out.txt 2> err.txt";
  EXPECT_NE(std::system(command.c_str()), 0);
  EXPECT_NE(testing::read_text(dir.file("err.txt")).find("only --method map"), std::string::npos)
      << testing::read_text(dir.file("err.txt"));
}
#endif

}  // namespace
}  // namespace occam

// SGLD and SGHMC with the rows spread over processes (SamplingMethod::parallel): every process
// draws the same minibatches, gathers their rows and sums the batch's chunks along the fixed-order
// tree, so that every process makes one process's draws bit for bit and process 0 writes one
// process's run folder, for 1, 2 and 3 processes (simulated by threads, tests/testing/
// thread_group.h) of 1 and 2 threads each, and under real mpirun (the CLI tests below); a stop
// asked of one process stops all at the same iteration and the run resumes on another number.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/fit.h"
#include "occam/mcmc/stochastic_density.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/cli_runner.h"
#include "testing/mpi_check.h"
#include "testing/spread_runs.h"
#include "testing/temp_dir.h"
#include "testing/thread_group.h"
#include "testing/toy_csv.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::read_text;
using testing::TempDir;
using testing::ThreadGroup;

constexpr Index kBlockRows = 64;
constexpr int kChains = 2;
// Not a multiple of the chunk: chunks of 32 and 18 rows.
constexpr int kBatch = 50;
static_assert(kBatch % mcmc::kMinibatchChunkRows != 0 && kBatch > mcmc::kMinibatchChunkRows);

// 600 rows: ten blocks of 64 and one of 24, dealt 3/4/4 to three processes; 12 batches an epoch.
Dataset data() { return testing::spread_data(); }
ModelSpec spec() { return testing::spread_spec(); }

// 2 chains of 72 iterations (6 epochs) from the prior, α and β by Gibbs every epoch, the pointwise
// log-likelihoods and checkpoints; SGLD with RMSprop, SGHMC with cyclical steps and an exploration
// stage.
SamplingMethod sg(mcmc::SamplerKind kind, const std::string& run_directory, const Communicator* comm, int threads = 1) {
  SamplingMethod m;
  m.sampler.method = kind;
  m.sampler.chains = kChains;
  m.sampler.num_warmup = 24;
  m.sampler.num_draws = 48;
  m.sampler.seed = 7;
  m.sampler.checkpoint_every = 10;
  m.sampler.initial_step_size = kind == mcmc::SamplerKind::kSgld ? 2e-4 : 5e-3;
  m.sampler.stochastic_gradient.batch_size = kBatch;
  m.sampler.stochastic_gradient.friction = 20.0;
  if (kind == mcmc::SamplerKind::kSgld) {
    m.sampler.stochastic_gradient.rmsprop = true;
  } else {
    m.sampler.stochastic_gradient.cycles = 2;
    m.sampler.stochastic_gradient.exploration = 0.2;
  }
  m.chains.gibbs = true;
  m.chains.init = mcmc::InitKind::kPrior;
  m.chains.log_lik = true;
  m.run_directory = run_directory;
  m.parallel = {.communicator = comm, .block_rows = kBlockRows, .threads = threads};
  return m;
}

class SpreadStochasticGradients : public ::testing::TestWithParam<mcmc::SamplerKind> {
 protected:
  static void SetUpTestSuite() { dir_ = new TempDir; }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  // One process's run (no communicator), made once per sampler.
  static const FittedModel& reference(mcmc::SamplerKind kind) {
    const std::string run = reference_run(kind);
    static std::map<mcmc::SamplerKind, FittedModel> made;
    const auto found = made.find(kind);
    if (found != made.end()) return found->second;
    return made.emplace(kind, fit(spec(), data(), sg(kind, run, nullptr))).first->second;
  }
  static std::string reference_run(mcmc::SamplerKind kind) {
    return dir_->file(std::string("one_") + mcmc::to_string(kind));
  }
  static TempDir* dir_;
};
TempDir* SpreadStochasticGradients::dir_ = nullptr;

TEST_P(SpreadStochasticGradients, EveryProcessMakesTheDrawsOfOneProcess) {
  const mcmc::SamplerKind kind = GetParam();
  const FittedModel& one = reference(kind);
  const mcmc::SamplerSummary& s = *one.summary.sampler;
  ASSERT_EQ(s.draws.size(), static_cast<std::size_t>(kChains));
  // β moved under Gibbs (E_D summed over every row), and the chains moved.
  const Eigen::MatrixXd beta = s.column("beta");
  EXPECT_GT(beta.maxCoeff() - beta.minCoeff(), 0.0);
  const Eigen::MatrixXd w = s.column("w.1");
  EXPECT_GT(w.maxCoeff() - w.minCoeff(), 0.0);
  // Every column but energy__ (nan: there is no Hamiltonian) is finite.
  for (const Eigen::MatrixXd& chain : s.draws) {
    EXPECT_TRUE(chain.leftCols(mcmc::kNumSamplerColumns - 1).allFinite());
    EXPECT_TRUE(chain.rightCols(chain.cols() - mcmc::kNumSamplerColumns).allFinite());
  }
  EXPECT_EQ(s.columns.back(), "log_lik.600");
  for (int K : {1, 2, 3}) {
    for (int threads : {1, 2}) {
      const std::string what = std::string(mcmc::to_string(kind)) + ", " + std::to_string(K) + " processes, " +
                               std::to_string(threads) + " threads";
      TempDir dir;
      const std::vector<FittedModel> models = testing::spread_fit(
          K, spec(), data(), [&](const Communicator& comm) { return sg(kind, dir.file("run"), &comm, threads); });
      for (int r = 0; r < K; ++r)
        testing::expect_same_draws(models[static_cast<std::size_t>(r)], one, what + ", process " + std::to_string(r));
      testing::expect_same_folder(dir.file("run"), reference_run(kind), kChains);
    }
  }
}

// A stop asked of one process (its callback) stops every process at the same iteration; the run
// then resumes on another number of processes and ends with one process's files.
TEST_P(SpreadStochasticGradients, AStopOnOneProcessStopsAllAndTheRunResumesOnAnotherNumber) {
  const mcmc::SamplerKind kind = GetParam();
  const FittedModel& one = reference(kind);
  TempDir dir;
  const std::string run = dir.file("run");
  testing::expect_stop_and_resume(
      spec(), data(), run, 33, [&](const Communicator& comm) { return sg(kind, run, &comm); }, one, reference_run(kind),
      kChains);
}

INSTANTIATE_TEST_SUITE_P(Samplers, SpreadStochasticGradients,
                         ::testing::Values(mcmc::SamplerKind::kSgld, mcmc::SamplerKind::kSghmc),
                         [](const ::testing::TestParamInfo<mcmc::SamplerKind>& info) {
                           return std::string(mcmc::to_string(info.param));
                         });

#ifdef OCCAM_MPIRUN
// `mpirun -n K occam …` (or occam alone for K = 1) in `dir`, its output in out.txt and err.txt; the
// exit status.
int run_occam(const TempDir& dir, int K, const std::string& args) {
  const std::string launcher = K > 1 ? testing::mpirun(K) : std::string();
  const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + launcher +
                              testing::quote(OCCAM_CLI_PATH) + " " + args + " > out.txt 2> err.txt";
  return std::system(command.c_str());
}

// 9000 rows: blocks of 4096, 4096 and 808 rows, so that every minibatch of 50 has rows on two or
// three processes. SGHMC from the prior with α and β by Gibbs.
TEST(MpirunStochasticGradients, SghmcChainFilesAreOneProcesssByteForByte) {
  TempDir dir;
  testing::write_csv(dir.file("train.csv"), testing::linear_data(9000, 3, 0.3, 11));
  const auto args = [&](const std::string& out) {
    return "sample --data train.csv --target y --hidden 3 --method sghmc --step-size 0.002 --friction 50 --batch-size 50"
           " --hyper gibbs --gibbs-every 1 --init prior --chains 2 --warmup 100 --draws 300 --seed 5 --quiet"
           " --checkpoint-every 50 --out " +
           out;
  };
  ASSERT_EQ(run_occam(dir, 1, args("one")), 0) << read_text(dir.file("err.txt"));
  for (int K : {2, 3}) {
    const std::string out = "spread" + std::to_string(K);
    ASSERT_EQ(run_occam(dir, K, args(out)), 0) << read_text(dir.file("err.txt"));
    for (int c = 1; c <= 2; ++c) {
      const std::string a = testing::chain_file(dir.file("one"), c), b = testing::chain_file(dir.file(out), c);
      EXPECT_GT(a.size(), 1000u);
      EXPECT_TRUE(a == b) << out << ": chain_" << c << ".csv differs from one process's";
    }
    EXPECT_EQ(read_text(dir.file(out + "/summary.csv")), read_text(dir.file("one/summary.csv")));
    EXPECT_EQ(nlohmann::json::parse(read_text(dir.file(out + "/run.json"))).at("status"), "complete");
  }
}
#endif

}  // namespace
}  // namespace occam

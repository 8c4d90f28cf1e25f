// Sampling a posterior whose rows are spread over processes (SamplingMethod::parallel): every
// process runs every chain in lockstep and makes the draws of one process, bit for bit, for 1, 2
// and 3 processes (simulated here by threads, tests/testing/thread_group.h, and run for real under
// mpirun by the CLI tests below); only process 0 writes the run folder; a stop asked of one process
// stops all at the same iteration and the run resumes on another number of processes; what needs
// every row in one process is refused by name.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/fit.h"
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
namespace fs = std::filesystem;

constexpr Index kBlockRows = 64;
constexpr int kChains = 2;

// 600 rows: ten blocks of 64 and one of 24, dealt 3/4/4 to three processes.
Dataset data() { return testing::spread_data(); }
ModelSpec spec() { return testing::spread_spec(); }

// NUTS with step-size and diagonal-metric adaptation, 2 chains from L-BFGS MAP fits, α and β by
// Gibbs, the pointwise log-likelihoods and checkpoints: everything a chain does that could tell
// processes apart.
SamplingMethod nuts(const std::string& run_directory, const Communicator* comm, int threads = 1) {
  SamplingMethod m;
  m.sampler.chains = kChains;
  m.sampler.num_warmup = 60;
  m.sampler.num_draws = 30;
  m.sampler.seed = 7;
  m.sampler.nuts.max_depth = 5;
  m.sampler.checkpoint_every = 10;
  m.chains.gibbs = true;
  m.chains.init = mcmc::InitKind::kMap;
  m.chains.map_optimizer = Optimizer::kLbfgs;
  m.chains.map_max_iterations = 150;
  m.chains.log_lik = true;
  m.run_directory = run_directory;
  m.parallel = {.communicator = comm, .block_rows = kBlockRows, .threads = threads};
  return m;
}

class SpreadSampling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    reference_ = new FittedModel(fit(spec(), data(), nuts(dir_->file("one"), nullptr)));
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete dir_;
  }
  static std::string reference_run() { return dir_->file("one"); }
  static TempDir* dir_;
  static FittedModel* reference_;
};
TempDir* SpreadSampling::dir_ = nullptr;
FittedModel* SpreadSampling::reference_ = nullptr;

TEST_F(SpreadSampling, NutsWithGibbsGivesTheDrawsOfOneProcessOnEveryProcess) {
  const mcmc::SamplerSummary& s = *reference_->summary.sampler;
  ASSERT_EQ(s.draws.size(), static_cast<std::size_t>(kChains));
  // β moved under Gibbs (a β that never moved would not show that E_D is summed over every row).
  const Eigen::MatrixXd beta = s.column("beta");
  EXPECT_GT(beta.maxCoeff() - beta.minCoeff(), 0.0);
  EXPECT_EQ(s.columns.back(), "log_lik.600");
  for (int K : {1, 2, 3}) {
    for (int threads : {1, 2}) {
      const std::string what = std::to_string(K) + " processes, " + std::to_string(threads) + " threads";
      TempDir dir;
      const std::vector<FittedModel> models = testing::spread_fit(
          K, spec(), data(), [&](const Communicator& comm) { return nuts(dir.file("run"), &comm, threads); });
      for (int r = 0; r < K; ++r)
        testing::expect_same_draws(models[static_cast<std::size_t>(r)], *reference_,
                                   what + ", process " + std::to_string(r));
      testing::expect_same_folder(dir.file("run"), reference_run(), kChains);
    }
  }
}

// A stop asked of one process (its callback) stops every process at the same iteration; the run
// then resumes on another number of processes and ends with one process's files.
TEST_F(SpreadSampling, AStopOnOneProcessStopsAllAndTheRunResumesOnAnotherNumber) {
  TempDir dir;
  const std::string run = dir.file("run");
  testing::expect_stop_and_resume(
      spec(), data(), run, 75, [&](const Communicator& comm) { return nuts(run, &comm); }, *reference_, reference_run(),
      kChains);
}

// What needs every row in one process is refused on every process, by the field's name, before any
// file is written.
TEST(SpreadSamplingRefusals, MethodsThatNeedEveryRowAreRefusedByName) {
  const Dataset d = data();
  const std::vector<std::pair<std::string, std::function<void(SamplingMethod*)>>> cases = {
      {"SamplingMethod.laplace_metric", [](SamplingMethod* m) { m->laplace_metric = true; }},
      {"NetworkModelOptions.init laplace", [](SamplingMethod* m) { m->chains.init = mcmc::InitKind::kLaplace; }},
      {"NetworkModelOptions.map_optimizer lm",
       [](SamplingMethod* m) { m->chains.map_optimizer = Optimizer::kLevenbergMarquardt; }},
  };
  for (const auto& [field, change] : cases) {
    TempDir dir;
    ThreadGroup group(2);
    std::vector<std::string> messages(2);
    group.run([&](const Communicator& comm) {
      SamplingMethod m = nuts(dir.file("run"), &comm);
      change(&m);
      try {
        fit(spec(), d, m);
      } catch (const Error& e) {
        messages[static_cast<std::size_t>(comm.rank())] = e.what();
      }
    });
    for (const std::string& message : messages) {
      EXPECT_NE(message.find(field), std::string::npos) << message;
      EXPECT_NE(message.find("spread over 2 processes"), std::string::npos) << message;
    }
    EXPECT_FALSE(fs::exists(dir.file("run")));
  }
}

// A folder process 0 cannot write fails the run on every process, which would otherwise wait for
// process 0 in the first sum.
TEST(SpreadSamplingRefusals, AFolderProcessZeroCannotWriteFailsEveryProcess) {
  TempDir dir;
  std::ofstream(dir.file("file")) << "not a folder";
  const Dataset d = data();
  ThreadGroup group(2);
  std::vector<std::string> messages(2);
  group.run([&](const Communicator& comm) {
    try {
      fit(spec(), d, nuts(dir.file("file/run"), &comm));
    } catch (const Error& e) {
      messages[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  EXPECT_NE(messages[0].find("cannot create the directory"), std::string::npos) << messages[0];
  // Process 1 throws process 0's error, naming it.
  EXPECT_EQ(messages[1], messages[0]);
  EXPECT_NE(messages[1].find("(on process 0)"), std::string::npos) << messages[1];
}

#ifdef OCCAM_MPIRUN
// `mpirun -n K occam sample` in `dir`, its stdout and stderr in out.txt and err.txt; the exit status.
int mpirun_occam(const TempDir& dir, int K, const std::string& args, const std::string& env = "") {
  const std::string command = "cd " + testing::quote(dir.path().string()) + " && " + env + " " + testing::mpirun(K) +
                              testing::quote(OCCAM_CLI_PATH) + " " + args + " > out.txt 2> err.txt";
  return std::system(command.c_str());
}

// The iterations chain k's checkpoint (1-based) has recorded; 0 while there is none.
int checkpointed(const std::string& run, int chain) {
  const nlohmann::json j =
      nlohmann::json::parse(read_text(run + "/checkpoint_" + std::to_string(chain) + ".json"), nullptr, false);
  return j.is_object() && j.contains("state") ? j.at("state").value("iteration", 0) : 0;
}

// The processes whose parent is `parent` (mpirun's ranks: Open MPI gives each a process group of
// its own).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // /proc/<pid>/stat: pid (comm) state ppid …; comm may hold spaces, so read after its ')'.
    const std::string stat = read_text(entry.path().string() + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      children.push_back(static_cast<pid_t>(std::stoi(name)));
    }
  }
  return children;
}

// 9000 rows: blocks of 4096, 4096 and 808 rows, so that two and three processes each sum rows of
// their own. NUTS from L-BFGS MAP fits (the optimiser of the MAP init named, as one process would
// otherwise choose Levenberg–Marquardt), α and β by Gibbs.
class MpirunSample : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    testing::write_csv(dir_->file("train.csv"), testing::linear_data(9000, 3, 0.3, 11));
    one_ = new testing::CliRun(testing::occam(*dir_, args("one")));
  }
  static void TearDownTestSuite() {
    delete one_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(one_->exit_code, 0) << one_->err; }

  static std::string args(const std::string& out, int checkpoint_every = 5) {
    return "sample --data " + testing::quote(dir_->file("train.csv")) +
           " --target y --hidden 3 --chains 2 --warmup 60 --draws 30 --max-depth 4 --seed 5 --init-optimizer lbfgs --quiet"
           " --checkpoint-every " +
           std::to_string(checkpoint_every) + " --out " + out;
  }
  // The run in dir/out has one process's chain files and summary table, byte for byte.
  static void expect_one_process_files(const std::string& out) {
    for (int c = 1; c <= 2; ++c) {
      const std::string a = testing::chain_file(dir_->file("one"), c), b = testing::chain_file(out, c);
      EXPECT_GT(a.size(), 1000u);
      EXPECT_TRUE(a == b) << out << ": chain_" << c << ".csv differs from one process's";
    }
    EXPECT_EQ(read_text(out + "/summary.csv"), read_text(dir_->file("one/summary.csv")));
    EXPECT_EQ(nlohmann::json::parse(read_text(out + "/run.json")).at("status"), "complete");
  }

  static TempDir* dir_;
  static testing::CliRun* one_;
};
TempDir* MpirunSample::dir_ = nullptr;
testing::CliRun* MpirunSample::one_ = nullptr;

TEST_F(MpirunSample, ChainFilesAreOneProcesssByteForByte) {
  for (int K : {2, 3}) {
    const std::string out = "spread" + std::to_string(K);
    // A progress line at every iteration.
    ASSERT_EQ(mpirun_occam(*dir_, K, args(out) + " --progress lines", "OCCAM_PROGRESS_INTERVAL=0.000001"), 0)
        << read_text(dir_->file("err.txt"));
    expect_one_process_files(dir_->file(out));
    // Process 0 alone reports progress (stderr): chain 1's first iteration once (the chains run one
    // after another).
    const std::string err = read_text(dir_->file("err.txt")),
                      first = "chain 1: iteration 1 of 90 (1%), chain 2: iteration 0 of 90";
    EXPECT_NE(err.find(first), std::string::npos) << err;
    EXPECT_EQ(err.find(first), err.rfind(first)) << err;
    // `occam summary` reads the folder as one process's (but for the chains' seconds, in the table
    // that follows the diagnostics).
    const testing::CliRun a = testing::occam(*dir_, "summary " + out), b = testing::occam(*dir_, "summary one");
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const auto diagnostics = [](const std::string& text) { return text.substr(0, text.find("\nchain   step size")); };
    EXPECT_GT(diagnostics(a.out).size(), 500u);
    EXPECT_EQ(diagnostics(a.out), diagnostics(b.out));
  }
}

// Killed (SIGKILL to mpirun and its processes) in the middle of chain 1, the run resumes under
// another number of processes and ends with one process's files.
TEST_F(MpirunSample, AKilledRunResumesUnderAnotherNumberOfProcesses) {
  TempDir dir;
  const std::string run = dir.file("run");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string command = "cd " + testing::quote(dir.path().string()) + " && exec env " + testing::mpirun(2) +
                                testing::quote(OCCAM_CLI_PATH) + " " + args("run", 1) + " > /dev/null 2>&1";
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + testing::kReadyTimeout;
  int status = 0;
  bool ended = false;
  while (std::chrono::steady_clock::now() < deadline && checkpointed(run, 1) < 40) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(ended) << "the run ended before it was killed";
  // kill -9 of every process of the run at once, mpirun last (sh and env exec'd it: pid is mpirun's).
  const std::vector<pid_t> ranks = children_of(pid);
  EXPECT_EQ(ranks.size(), 2u);
  for (const pid_t rank : ranks) ::kill(rank, SIGKILL);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  // Gone or a zombie: writing nothing more.
  const auto running = [](pid_t p) {
    const std::string stat = read_text("/proc/" + std::to_string(p) + "/stat");
    const std::size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
  };
  for (const pid_t rank : ranks) {
    for (int i = 0; i < 1000 && running(rank); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_FALSE(running(rank));
  }
  ASSERT_FALSE(fs::exists(run + "/run.json"));
  ASSERT_LT(checkpointed(run, 1), 90);
  ASSERT_EQ(mpirun_occam(dir, 3, "sample --resume run --quiet"), 0) << read_text(dir.file("err.txt"));
  expect_one_process_files(run);
}
#endif

}  // namespace
}  // namespace occam

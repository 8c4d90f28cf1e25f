// What a user sees of a long fit's limits: --on-interrupt keeps the best state of a stopped fit
// only when asked, --max-memory (and the memory available) refuses a fit too large before it
// allocates, and --progress lines keeps a log that is not a terminal informed.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "occam/fit.h"
#include "occam/status.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using testing::CliRun;
using testing::fixture;
using testing::occam;
using testing::read_text;
using testing::TempDir;
namespace fs = std::filesystem;

// A variational fit that would run for hours, stopped by `signal` once its ELBO iterations show
// in the progress lines (the MAP start is over: there is a q to keep).
int stop_a_variational_fit(const TempDir& dir, const std::string& on_interrupt, int signal = SIGINT) {
  ::setenv("OCCAM_PROGRESS_INTERVAL", "0.05", 1);
  const std::string log = dir.file("progress.log");
  const int status = testing::interrupt_occam(
      {"fit",
       "--data",
       testing::fixture_path("regression_train.csv"),
       "--target",
       "y",
       "--hidden",
       "3",
       "--method",
       "vi",
       "--family",
       "meanfield",
       "--vi-iterations",
       "100000000",
       "--vi-tolerance",
       "0",
       "--progress",
       "lines",
       "--on-interrupt",
       on_interrupt,
       "--out",
       dir.file("model.json"),
       "--report",
       dir.file("report.json")},
      [&] { return read_text(log).find(": VI ") != std::string::npos; }, testing::kReadyTimeout, signal, log);
  ::unsetenv("OCCAM_PROGRESS_INTERVAL");
  return status;
}

TEST(OnInterrupt, SaveWritesTheBestStateSoFarMarkedAborted) {
  TempDir dir;
  const int status = stop_a_variational_fit(dir, "save");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  ASSERT_TRUE(fs::exists(dir.file("model.json")));
  const nlohmann::json report = nlohmann::json::parse(read_text(dir.file("report.json")));
  EXPECT_EQ(report.at("termination"), "aborted");
  const nlohmann::json model = nlohmann::json::parse(read_text(dir.file("model.json")));
  EXPECT_EQ(model.at("summary").at("termination"), "aborted");
  EXPECT_EQ(model.at("posterior_kind"), "vi");
  EXPECT_NE(read_text(dir.file("progress.log")).find("the best state so far was written to"), std::string::npos);
  // The saved model predicts.
  const CliRun predict =
      occam(dir, "predict --model model.json --data " + fixture("regression_inputs.csv") + " --out p.csv");
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
  EXPECT_TRUE(fs::exists(dir.file("p.csv")));
}

TEST(OnInterrupt, DiscardIsTheDefaultAndWritesNothing) {
  for (const std::string choice : {"discard", ""}) {
    SCOPED_TRACE(choice);
    TempDir dir;
    // An empty choice leaves the option out: the default.
    ::setenv("OCCAM_PROGRESS_INTERVAL", "0.05", 1);
    std::vector<std::string> args = {"fit",
                                     "--data",
                                     testing::fixture_path("regression_train.csv"),
                                     "--target",
                                     "y",
                                     "--hidden",
                                     "3",
                                     "--method",
                                     "vi",
                                     "--family",
                                     "meanfield",
                                     "--vi-iterations",
                                     "100000000",
                                     "--vi-tolerance",
                                     "0",
                                     "--progress",
                                     "lines",
                                     "--out",
                                     dir.file("model.json")};
    if (!choice.empty()) args.insert(args.end(), {"--on-interrupt", choice});
    const std::string log = dir.file("progress.log");
    const int status = testing::interrupt_occam(
        args, [&] { return read_text(log).find(": VI ") != std::string::npos; }, testing::kReadyTimeout, SIGTERM, log);
    ::unsetenv("OCCAM_PROGRESS_INTERVAL");
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 143);
    EXPECT_EQ(dir.entries().size(), 1u) << "more than the log was written";
    EXPECT_NE(read_text(log).find("--on-interrupt save keeps the best state so far"), std::string::npos)
        << read_text(log);
  }
}

// A Laplace fit stopped inside its first MAP run: the library ends on the point the MAP reached
// (with the Laplace approximation there), and save writes it, marked aborted, with the reason;
// predict uses it. (Its first progress line comes while Adam is still in the first MAP.)
TEST(OnInterrupt, SaveInTheFirstMapRunWritesThatPointMarkedAborted) {
  TempDir dir;
  ::setenv("OCCAM_PROGRESS_INTERVAL", "0.05", 1);
  const std::string log = dir.file("progress.log");
  const int status = testing::interrupt_occam(
      {"fit", "--data", testing::fixture_path("regression_train.csv"), "--target", "y", "--hidden", "50", "--optimizer",
       "adam", "--max-iterations", "100000000", "--progress", "lines", "--on-interrupt", "save", "--out",
       dir.file("model.json")},
      // Adam's progress line counts epochs ("epoch 3 of 100000000: ..."): the first MAP run is under way.
      [&] { return read_text(log).find(": epoch ") != std::string::npos; }, testing::kReadyTimeout, SIGINT, log);
  ::unsetenv("OCCAM_PROGRESS_INTERVAL");
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  ASSERT_TRUE(fs::exists(dir.file("model.json"))) << read_text(log);
  const nlohmann::json summary = nlohmann::json::parse(read_text(dir.file("model.json"))).at("summary");
  EXPECT_EQ(summary.at("termination"), "aborted");
  EXPECT_FALSE(summary.at("message").get<std::string>().empty());
  const CliRun predict = occam(dir, "predict --model model.json --data " + fixture("regression_inputs.csv"));
  EXPECT_EQ(predict.exit_code, 0) << predict.err;
}

// Two inputs and 3000 hidden units: W = 12001, 8.6 GB of W × W matrices for the Laplace fit. The
// old program grew towards it for minutes; now the fit is refused at once, naming the size, its
// largest term and the options that avoid it.
TEST(MaxMemory, ATooLargeFitIsRefusedBeforeItStarts) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") +
                                    " --target y --hidden 3000 --max-memory 1G --out model.json");
  // A guard against the old behaviour (minutes of allocation), not a measurement of speed.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_TRUE(std::regex_search(
      run.err,
      std::regex("^occam: error: this fit needs about 8\\.6[0-9] GB: W × W matrices of the Laplace approximation "
                 "\\(7\\.5 × 12001²\\), 8\\.6[0-9] GB; .*more than the 1\\.07 GB --max-memory allows; to need less "
                 "use fewer hidden units \\(--hidden\\) or inputs, or 'occam sample' with --metric diag.*, or raise "
                 "--max-memory\n$")))
      << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_FALSE(fs::exists(dir.file("model.json")));
  // The same network by MCMC with a dense metric: the metrics are the largest term.
  const CliRun sample = occam(dir, "sample --data " + fixture("regression_train.csv") +
                                       " --target y --hidden 3000 --metric dense --chains 4 --max-memory 4G --out run");
  EXPECT_EQ(sample.exit_code, 2) << sample.err;
  EXPECT_NE(sample.err.find("dense metrics (3 × 12001² per chain, 4 chains)"), std::string::npos) << sample.err;
  EXPECT_NE(sample.err.find("to need less use --metric diag, or fewer --chains"), std::string::npos) << sample.err;
  EXPECT_FALSE(fs::exists(dir.file("run")));
}

// Without --max-memory the limit is the memory available: a network of 8 million weights (a
// W × W matrix of 512 TB) is refused on any machine.
TEST(MaxMemory, TheDefaultLimitIsTheMemoryAvailable) {
  TempDir dir;
  const CliRun run = occam(dir, "fit --data " + fixture("regression_train.csv") + " --target y --hidden 2000000");
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("of memory available; to need less use fewer hidden units"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("or --max-memory none to try anyway"), std::string::npos) << run.err;
}

TEST(MaxMemory, SizesAreReadWithTheirUnits) {
  TempDir dir;
  const std::string fit = "fit --data " + fixture("regression_train.csv") + " --target y --model linear --max-memory ";
  for (const std::string ok : {"512M", "4G", "1.5g", "1000000000", "2GB", "0", "none"}) {
    EXPECT_EQ(occam(dir, fit + ok).exit_code, 0) << ok;
  }
  for (const std::string bad : {"12Q", "-1G", "G", "nan", "inf", "1e400", "0.5", ""}) {
    const CliRun run = occam(dir, fit + "'" + bad + "'");
    EXPECT_EQ(run.exit_code, 1) << bad << ": " << run.err;
    EXPECT_NE(run.err.find("--max-memory"), std::string::npos) << run.err;
  }
}

// The library refuses too, with its own names: fit() checks MemoryLimit before it allocates.
TEST(MaxMemory, TheLibraryRefusesThroughTheMethodsLimit) {
  ModelSpec spec;
  spec.network.hidden = {3000};
  Dataset data;
  data.X = Eigen::MatrixXd::Random(20, 2);
  data.Y = Eigen::MatrixXd::Random(20, 1);
  LaplaceMethod method;
  method.memory.max_bytes = 1e9;
  try {
    fit(spec, data, method);
    FAIL() << "a fit of 8.6 GB was not refused under a 1 GB limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("more than the 1 GB allowed (MemoryLimit.max_bytes)"), std::string::npos)
        << e.what();
  }
  VariationalMethod vi;
  vi.memory.max_bytes = 1e9;
  vi.variational.family = parse_variational_family("fullrank");
  EXPECT_THROW(fit(spec, data, vi), Error);
  CrossValidatedMethod cv;
  cv.cv.alphas = {0.1, 1.0};
  cv.cv.memory.max_bytes = 1e9;
  EXPECT_THROW(fit(spec, data, cv), Error);
}

// stderr is a pipe: a line every OCCAM_PROGRESS_INTERVAL seconds with the time and the
// iteration; --progress none and --quiet print none.
TEST(ProgressLines, ALogThatIsNotATerminalGetsALineEveryInterval) {
  TempDir dir;
  const std::string fit =
      "fit --data " + fixture("regression_train.csv") +
      " --target y --hidden 20 --optimizer adam --max-iterations 20000 --hyper fixed --alpha 1 --beta 10";
  const CliRun piped = occam(dir, fit + " 2>&1 | cat", "OCCAM_PROGRESS_INTERVAL=0.05");
  // Adam's epochs: countable, so each line has the epochs planned (and an ETA once it can tell).
  const std::regex line(
      "occam: [0-9]+\\.[0-9] s: epoch [0-9]+ of 20000: S [-0-9.e+]+ \\(minibatch mean\\)(, full-batch "
      "\\|grad\\| [0-9.e+-]+)?(, ETA [0-9hms]+)?\n");
  const auto lines =
      std::distance(std::sregex_iterator(piped.out.begin(), piped.out.end(), line), std::sregex_iterator());
  EXPECT_GE(lines, 2) << piped.out;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << "a bar in a log";
  for (const std::string quiet : {" --progress none", " --quiet"}) {
    const CliRun run = occam(dir, fit + quiet + " 2>&1 | cat", "OCCAM_PROGRESS_INTERVAL=0.05");
    EXPECT_EQ(run.out.find("occam: "), std::string::npos) << quiet << ": " << run.out;
  }
  // Sampling: the iterations of every chain.
  const CliRun sample =
      occam(dir,
            "sample --data " + fixture("regression_train.csv") +
                " --target y --hidden 2 --chains 2 --warmup 200 --draws 2000 --quiet --progress lines "
                "--out run 2>&1 | cat",
            "OCCAM_PROGRESS_INTERVAL=0.05");
  EXPECT_TRUE(
      std::regex_search(sample.out, std::regex("occam: [0-9.]+ s: chain 1: iteration [0-9]+ of 2200 \\([0-9]+%\\), "
                                               "chain 2: iteration [0-9]+ of 2200")))
      << sample.out;
}

// A cross-validation grid is refused before it is allocated when its count is absurd, and its
// bounds must be finite.
TEST(CvGrid, AGridOfBillionsOfPointsOrInfiniteBoundsIsRefused) {
  TempDir dir;
  for (const std::string grid : {"1e-3:1e3:2000000000", "1e-3:1e3:10001", "1:inf:3"}) {
    const CliRun run = occam(dir, "cv --data " + fixture("regression_train.csv") +
                                      " --target y --model linear --out-dir cv --alphas " + grid);
    EXPECT_EQ(run.exit_code, 2) << grid << ": " << run.err;
    EXPECT_NE(run.err.find("COUNT from 2 to 10000"), std::string::npos) << run.err;
    EXPECT_FALSE(fs::exists(dir.file("cv/cv.csv")));
  }
}

}  // namespace
}  // namespace occam

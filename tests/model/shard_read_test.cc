// Each process reading only its own rows of the training file (read_training_data with a
// Communicator): the rows, the class labels, the standardisation and the fitted model are one
// process's with the whole file, bit for bit, on 1, 2 or 3 processes; a bad row on any process is
// an error on every process.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "occam/data.h"
#include "occam/fit.h"
#include "occam/io.h"
#include "occam/model_spec.h"
#include "occam/status.h"
#include "core/parallel/agreement.h"
#include "testing/bitwise.h"
#include "testing/cli_runner.h"
#include "testing/mpi_check.h"
#include "testing/temp_dir.h"
#include "testing/thread_group.h"
#include "testing/toy_csv.h"
#include "testing/toy_data.h"

namespace occam {
namespace {

using testing::bitwise_equal;
using testing::ThreadGroup;

// An odd number of rows, so that the columns of the whole data's matrix start at every alignment
// (Standardizer::fit over processes must reduce each as fit() does where it lies).
constexpr Index kRows = 1001;
constexpr Index kBlockRows = 64;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The message of what `f` throws ("" when it throws nothing).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Every process's result of body(communicator), in rank order.
template <typename T>
std::vector<T> on_processes(int K, const std::function<T(const Communicator&)>& body) {
  std::vector<T> results(static_cast<std::size_t>(K));
  ThreadGroup group(K);
  group.run([&](const Communicator& comm) { results[static_cast<std::size_t>(comm.rank())] = body(comm); });
  return results;
}

TEST(CsvRows, AnyRangeOfRowsIsWhatReadCsvReadsOfIt) {
  testing::TempDir dir;
  const std::string path = dir.file("t.csv");
  // A byte-order mark, CR-LF line ends, words in the label column and trailing blank lines.
  write_text(path, "\xEF\xBB\xBFx,label,y\r\n1,a,2\r\n3,b,4\r\n5,a,+6\r\n7,c,8e0\r\n9,b,10\r\n \r\n\r\n");
  const Table whole = read_csv(path, "label");
  ASSERT_EQ(count_csv_rows(path), 5);
  for (Index first = 0; first <= 5; ++first) {
    for (Index last = first; last <= 5; ++last) {
      const Table part = read_csv_rows(path, "label", first, last);
      EXPECT_EQ(part.columns, whole.columns);
      EXPECT_EQ(part.first_row, first);
      ASSERT_EQ(part.values.rows(), last - first);
      ASSERT_EQ(part.values.cols(), 3);
      if (last > first) {
        EXPECT_TRUE(bitwise_equal(part.values, whole.values.middleRows(first, last - first)));
      }
      EXPECT_EQ(part.labels, std::vector<std::string>(whole.labels.begin() + first, whole.labels.begin() + last));
    }
  }
  EXPECT_NE(error_of([&] { read_csv_rows(path, "label", 0, 6); }).find("has 5 data rows"), std::string::npos);
  EXPECT_NE(error_of([&] { read_csv_rows(path, "label", 3, 2); }).find("not a range"), std::string::npos);
}

TEST(CsvRows, AProblemIsReportedWhereReadCsvReportsItAndOnlyByTheRowsThatHoldIt) {
  testing::TempDir dir;
  const std::string path = dir.file("t.csv");
  write_text(path, "x,y\n1,2\n3,4\n5,oops\n7,8\n\n9,10\n");
  const std::string whole = error_of([&] { read_csv(path); });
  EXPECT_NE(whole.find("t.csv:4: column 'y' (2): 'oops' is not a number"), std::string::npos) << whole;
  EXPECT_EQ(error_of([&] { read_csv_rows(path, "", 1, 4); }), whole);
  EXPECT_EQ(error_of([&] { read_csv_rows(path, "", 0, 2); }), "");
  EXPECT_NE(error_of([&] { read_csv_rows(path, "", 3, 6); }).find("t.csv:6: empty line inside the data"),
            std::string::npos);
  EXPECT_EQ(count_csv_rows(path), 6);  // an interior blank line is a row (and an error where it is read)

  // A file without rows or without a header: the same errors as read_csv.
  for (const std::string& text : {std::string(""), std::string("\n \n"), std::string("x,y\n\n"),
                                  std::string(",y\n1,2\n"), std::string("x,x\n1,2\n")}) {
    write_text(path, text);
    const std::string expected = error_of([&] { read_csv(path); });
    ASSERT_NE(expected, "") << text;
    EXPECT_EQ(error_of([&] { count_csv_rows(path); }), expected) << text;
    // A header without rows is read_csv's error only when rows are counted (a blank line 2 is
    // then a trailing line, not a row).
    if (text != "x,y\n\n") {
      EXPECT_EQ(error_of([&] { read_csv_rows(path, "", 0, 1); }), expected) << text;
    }
  }
  EXPECT_NE(error_of([&] { count_csv_rows(dir.file("missing.csv")); }).find("cannot open"), std::string::npos);
}

// A table of kRows rows: inputs x1..x3, a numeric class column c whose class 7 appears only in the
// last rows (process 0 of 3 never sees it), and a count column n.
std::string write_table(const testing::TempDir& dir) {
  const testing::ToyData d = testing::linear_data(kRows, 3, 0.3, 5);
  std::ofstream csv(dir.file("train.csv"));
  csv.precision(17);
  csv << "x1,x2,x3,y,c,n\n";
  for (Index i = 0; i < kRows; ++i) {
    const int c = i >= kRows - 10 ? 7 : static_cast<int>(i % 3);
    csv << d.X(i, 0) << ',' << d.X(i, 1) << ',' << d.X(i, 2) << ',' << d.Y(i, 0) << ',' << c << ',' << i % 5 << '\n';
  }
  return dir.file("train.csv");
}

ModelSpec gaussian_spec() {
  ModelSpec s;
  s.network.hidden = {4};
  return s;
}

TEST(ShardRead, EachProcessHoldsItsRowsAndTheClassesOfAllRows) {
  testing::TempDir dir;
  const std::string path = write_table(dir);
  ModelSpec categorical = gaussian_spec();
  categorical.likelihood.kind = LikelihoodKind::kCategorical;
  for (const ModelSpec& spec : {gaussian_spec(), categorical}) {
    const std::string target = spec.likelihood.kind == LikelihoodKind::kCategorical ? "c" : "y";
    const Dataset whole = read_training_data(path, target, spec);
    for (int K : {1, 2, 3}) {
      const std::vector<Dataset> parts = on_processes<Dataset>(
          K, [&](const Communicator& comm) { return read_training_data(path, target, spec, comm, kBlockRows); });
      Index next = 0;
      for (const Dataset& part : parts) {
        EXPECT_EQ(part.total_rows, kRows);
        EXPECT_EQ(part.first_row, next);
        EXPECT_TRUE(bitwise_equal(part.X, whole.X.middleRows(next, part.X.rows())));
        EXPECT_TRUE(bitwise_equal(part.Y, whole.Y.middleRows(next, part.X.rows())));
        EXPECT_EQ(part.class_labels, whole.class_labels);
        EXPECT_EQ(part.feature_names, whole.feature_names);
        next += part.X.rows();
      }
      EXPECT_EQ(next, kRows);
      if (K == 3) {
        EXPECT_LT(parts[0].X.rows(), kRows / 2);
      }
    }
  }
  EXPECT_EQ(read_training_data(path, "c", categorical).class_labels, (std::vector<std::string>{"0", "1", "2", "7"}));
}

TEST(ShardRead, ABadRowOnOneProcessIsAnErrorOnEveryProcess) {
  testing::TempDir dir;
  const std::string path = write_table(dir);
  std::string text = read_text(path);
  // The last data line, held by the last process: a count the Poisson likelihood refuses.
  text.replace(text.rfind(',') + 1, std::string::npos, "-1\n");
  write_text(path, text);
  ModelSpec poisson = gaussian_spec();
  poisson.likelihood.kind = LikelihoodKind::kPoisson;
  poisson.network.hidden.clear();
  const std::string expected = error_of([&] { read_training_data(path, "n", poisson); });
  ASSERT_NE(expected.find("train.csv:" + std::to_string(kRows + 1) + ":"), std::string::npos) << expected;
  const std::vector<std::string> messages = on_processes<std::string>(3, [&](const Communicator& comm) {
    return error_of([&] { read_training_data(path, "n", poisson, comm, kBlockRows); });
  });
  for (const std::string& m : messages) EXPECT_EQ(m, expected + " (on process 2)");
}

// Eight columns of different locations and scales over kRows rows: the columns of the whole
// matrix start 8·kRows·j bytes apart, so at every alignment.
TEST(ShardRead, TheStandardizationIsThatOfTheWholeDataBitForBit) {
  const testing::ToyData d = testing::linear_data(kRows, 8, 0.3, 5);
  Dataset whole;
  whole.X = d.X;
  for (Index j = 0; j < whole.X.cols(); ++j)
    whole.X.col(j) = whole.X.col(j) * (1.0 + 3.0 * j) + Eigen::VectorXd::Constant(kRows, 10.0 * j);
  whole.Y = d.Y;
  for (const Standardize mode : {Standardize::kBoth, Standardize::kInputs, Standardize::kCenter}) {
    const Standardizer expected = Standardizer::fit(whole, mode);
    for (int K : {1, 2, 3}) {
      const std::vector<Standardizer> got = on_processes<Standardizer>(K, [&](const Communicator& comm) {
        const auto [first, last] = RowBlocks{.num_rows = kRows, .block_rows = kBlockRows}.rows_of(comm.rank(), K);
        Dataset mine;
        mine.X = whole.X.middleRows(first, last - first);
        mine.Y = whole.Y.middleRows(first, last - first);
        mine.total_rows = kRows;
        mine.first_row = first;
        return Standardizer::fit(mine, mode, comm);
      });
      for (const Standardizer& s : got) {
        EXPECT_TRUE(bitwise_equal(s.x_mean, expected.x_mean)) << to_string(mode) << ", " << K << " processes";
        EXPECT_TRUE(bitwise_equal(s.x_scale, expected.x_scale)) << to_string(mode) << ", " << K << " processes";
        EXPECT_EQ(s.y_mean, expected.y_mean);
        EXPECT_EQ(s.y_scale, expected.y_scale);
      }
    }
  }
}

// A model file without what differs between two runs of one fit: how long it took.
std::string model_text(const FittedModel& model, const testing::TempDir& dir, const std::string& name) {
  save_model(dir.file(name), model);
  nlohmann::json j = nlohmann::json::parse(read_text(dir.file(name)));
  const std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& node) {
    if (node.is_object()) node.erase("seconds");
    if (node.is_structured()) {
      for (nlohmann::json& child : node) strip(child);
    }
  };
  strip(j);
  return j.dump();
}

TEST(ShardRead, FitsFromEachProcesssRowsAreTheFitOfTheWholeFile) {
  testing::TempDir dir;
  const std::string path = write_table(dir);
  const ModelSpec spec = gaussian_spec();
  const auto laplace = [](const Communicator* comm, int threads) {
    LaplaceMethod m;
    m.evidence.structure = parse_hessian_structure("kron");
    m.evidence.map.optimizer = Optimizer::kLbfgs;
    m.evidence.map.max_iterations = 60;
    m.evidence.max_outer_iterations = 4;  // enough re-estimations of α and β to compare
    m.parallel = {.communicator = comm, .block_rows = kBlockRows, .threads = threads};
    return m;
  };
  const std::string expected =
      model_text(fit(spec, read_training_data(path, "y", spec), laplace(nullptr, 1)), dir, "one.json");
  EXPECT_NE(expected.find("\"train_rmse\""), std::string::npos);
  for (const auto& [K, threads] : {std::pair{2, 1}, std::pair{3, 2}}) {
    const std::vector<std::string> models = on_processes<std::string>(K, [&](const Communicator& comm) {
      const Dataset mine = read_training_data(path, "y", spec, comm, kBlockRows);
      const std::string file = "process_" + std::to_string(comm.rank()) + ".json";
      return model_text(fit(spec, mine, laplace(&comm, threads)), dir, file);
    });
    for (const std::string& m : models) EXPECT_EQ(m, expected) << K << " processes";
  }
  // A share given with another deal of the rows than the method's is refused, saying which.
  const std::vector<std::string> messages = on_processes<std::string>(2, [&](const Communicator& comm) {
    const Dataset mine = read_training_data(path, "y", spec, comm, kBlockRows);
    LaplaceMethod other = laplace(&comm, 1);
    other.parallel.block_rows = 100;  // 11 blocks: process 0 is dealt rows [0, 500), not [0, 512)
    return error_of([&] { fit(spec, mine, other); });
  });
  EXPECT_NE(messages[1].find("is dealt rows"), std::string::npos) << messages[1];
}

// Sampling from each process's rows: the run folder of one process with the whole file (the data's
// fingerprint, the monitored rows, the pointwise log-likelihoods).
TEST(ShardRead, SamplingFromEachProcesssRowsWritesTheRunOfTheWholeFile) {
  testing::TempDir dir;
  const std::string path = write_table(dir);
  const ModelSpec spec = gaussian_spec();
  const auto nuts = [&](const std::string& run, const Communicator* comm) {
    SamplingMethod m;
    m.sampler.chains = 1;
    m.sampler.num_warmup = 30;
    m.sampler.num_draws = 20;
    m.sampler.seed = 3;
    m.sampler.nuts.max_depth = 4;
    m.sampler.checkpoint_every = 10;
    m.chains.gibbs = true;
    m.chains.init = mcmc::InitKind::kMap;
    m.chains.map_optimizer = Optimizer::kLbfgs;
    m.chains.map_max_iterations = 100;
    m.chains.log_lik = true;
    m.run_directory = dir.file(run);
    m.parallel = {.communicator = comm, .block_rows = kBlockRows, .threads = 1};
    return m;
  };
  fit(spec, read_training_data(path, "y", spec), nuts("one", nullptr));
  on_processes<int>(3, [&](const Communicator& comm) {
    fit(spec, read_training_data(path, "y", spec, comm, kBlockRows), nuts("three", &comm));
    return 0;
  });
  const std::string chain = read_text(dir.file("one/chain_1.csv"));
  EXPECT_GT(chain.size(), 1000u);
  EXPECT_TRUE(chain == read_text(dir.file("three/chain_1.csv"))) << "chain_1.csv differs from one process's";
  EXPECT_EQ(read_text(dir.file("three/model.json")), read_text(dir.file("one/model.json")));
  // The fingerprint a resume checks: the settings and a checksum of every row of the data.
  const auto fingerprint = [&](const std::string& run) {
    return nlohmann::json::parse(read_text(dir.file(run + "/checkpoint_1.json"))).at("run");
  };
  EXPECT_EQ(fingerprint("three").at("data").at("rows"), kRows);
  EXPECT_EQ(fingerprint("three"), fingerprint("one"));
}

TEST(Agreement, EveryProcessThrowsTheFirstFailuresMessageOrNoneThrows) {
  const std::vector<std::string> fine = on_processes<std::string>(
      3, [](const Communicator& comm) { return error_of([&] { internal::agree_on_failure(comm, nullptr); }); });
  EXPECT_EQ(fine, (std::vector<std::string>{"", "", ""}));
  const std::vector<std::string> failed = on_processes<std::string>(3, [](const Communicator& comm) {
    std::exception_ptr failure;
    if (comm.rank() > 0)
      failure = std::make_exception_ptr(Error(ErrorKind::kIo, "disk " + std::to_string(comm.rank())));
    return error_of([&] { internal::agree_on_failure(comm, failure); });
  });
  EXPECT_EQ(failed, std::vector<std::string>(3, "disk 1 (on process 1)"));
  const std::vector<std::string> words = {"", "é", std::string("a\0b", 3)};
  const std::vector<std::vector<std::string>> gathered =
      on_processes<std::vector<std::string>>(2, [&](const Communicator& comm) {
        return internal::allgather_strings(comm, comm.rank() == 0 ? words : std::vector<std::string>{"x"});
      });
  for (const auto& g : gathered) EXPECT_EQ(g, (std::vector<std::string>{"", "é", std::string("a\0b", 3), "x"}));
}

#ifdef OCCAM_MPIRUN
// Under mpirun each process of `occam fit` and `occam sample` reads only its rows: a bad cell in the
// last rows stops every process with the file's line, printed once, and writes nothing.
TEST(ShardRead, MpirunReportsABadRowOfAnyProcessOnceAndWritesNothing) {
  testing::TempDir dir;
  testing::write_csv(dir.file("train.csv"), testing::linear_data(9001, 3, 0.3, 11));
  std::string text = read_text(dir.file("train.csv"));
  text.replace(text.rfind(',') + 1, std::string::npos, "bad\n");
  write_text(dir.file("train.csv"), text);
  for (const std::string& command :
       {std::string("fit --data train.csv --target y --hidden 3 --method map --out m.json"),
        std::string("sample --data train.csv --target y --hidden 3 --method nuts --out run --warmup 10 --draws 10")}) {
    const std::string run = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(3) +
                            testing::quote(OCCAM_CLI_PATH) + " " + command + " > out.txt 2> err.txt";
    EXPECT_NE(std::system(run.c_str()), 0) << command;
    const std::string err = read_text(dir.file("err.txt"));
    const std::string line = "train.csv:9002: column 'y' (4): 'bad' is not a number";
    ASSERT_NE(err.find(line), std::string::npos) << err;
    EXPECT_EQ(err.find(line), err.rfind(line)) << "printed more than once:\n" << err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("m.json")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("run/chain_1.csv")));
  }
}

// Commands that do not spread their rows are refused under mpirun, once, before they read anything.
TEST(ShardRead, MpirunRefusesCommandsThatRunAsOneProcess) {
  testing::TempDir dir;
  testing::write_csv(dir.file("train.csv"), testing::linear_data(100, 2, 0.3, 11));
  const std::string run = "cd " + testing::quote(dir.path().string()) + " && " + testing::mpirun(2) +
                          testing::quote(OCCAM_CLI_PATH) + " cv --data train.csv --target y > out.txt 2> err.txt";
  EXPECT_NE(std::system(run.c_str()), 0);
  const std::string err = read_text(dir.file("err.txt"));
  const std::string message = "occam cv runs as one process";
  ASSERT_NE(err.find(message), std::string::npos) << err;
  EXPECT_EQ(err.find(message), err.rfind(message)) << "printed more than once:\n" << err;
  EXPECT_EQ(read_text(dir.file("out.txt")), "");
}
#endif

}  // namespace
}  // namespace occam

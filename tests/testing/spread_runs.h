// spread_runs.h — a sampling fit run on K processes stood in for by threads (thread_group.h), and
// the comparisons of its draws and run folder with one process's.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/fit.h"
#include "occam/status.h"
#include "testing/bitwise.h"
#include "testing/cli_runner.h"
#include "testing/thread_group.h"
#include "testing/toy_data.h"

namespace occam::testing {

// 600 rows of linear data with three inputs: ten blocks of 64 rows and one of 24, dealt 3/4/4 to
// three processes.
inline Dataset spread_data() {
  const ToyData d = linear_data(600, 3, 0.3, 11);
  Dataset data;
  data.X = d.X;
  data.Y = d.Y;
  data.feature_names = {"x1", "x2", "x3"};
  data.target_name = "y";
  return data;
}

// A network of one hidden layer of 4 tanh units, the rest the defaults.
inline ModelSpec spread_spec() {
  ModelSpec s;
  s.network.hidden = {4};
  return s;
}

inline std::string chain_file(const std::string& run, int chain) {
  return read_text(run + "/chain_" + std::to_string(chain) + ".csv");
}

// What a run folder holds that must not depend on the processes: the chain files and model.json;
// run.json says the run is complete.
inline void expect_same_folder(const std::string& run, const std::string& reference, int chains) {
  for (int c = 1; c <= chains; ++c) {
    const std::string a = chain_file(reference, c), b = chain_file(run, c);
    EXPECT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == b) << run << ": chain_" << c << ".csv differs from one process's";
  }
  EXPECT_EQ(read_text(run + "/model.json"), read_text(reference + "/model.json"));
  EXPECT_EQ(nlohmann::json::parse(read_text(run + "/run.json")).at("status"), "complete");
}

// Every process's fit of `data` (each given all of it), in rank order; no process may throw.
inline std::vector<FittedModel> spread_fit(int K, const ModelSpec& spec, const Dataset& data,
                                           const std::function<SamplingMethod(const Communicator&)>& method,
                                           const std::function<FitCallback(const Communicator&)>& callback = {}) {
  ThreadGroup group(K);
  std::vector<FittedModel> models(static_cast<std::size_t>(K));
  std::vector<std::string> errors(static_cast<std::size_t>(K));
  group.run([&](const Communicator& comm) {
    try {
      models[static_cast<std::size_t>(comm.rank())] =
          fit(spec, data, method(comm), callback ? callback(comm) : FitCallback{});
    } catch (const Error& e) {
      errors[static_cast<std::size_t>(comm.rank())] = e.what();
    }
  });
  for (int r = 0; r < K; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "process " << r << " of " << K;
  return models;
}

// The same draws, bit for bit, in every chain (and some in each, where the run was complete).
inline void expect_same_draws(const FittedModel& a, const FittedModel& reference, const std::string& what,
                              bool complete = true) {
  ASSERT_TRUE(a.summary.sampler && reference.summary.sampler) << what;
  const auto& d = a.summary.sampler->draws;
  const auto& e = reference.summary.sampler->draws;
  ASSERT_EQ(d.size(), e.size()) << what;
  for (std::size_t c = 0; c < d.size(); ++c) {
    if (complete) {
      EXPECT_GT(d[c].rows(), 0) << what;
    }
    EXPECT_TRUE(bitwise_equal(d[c], e[c])) << what << ", chain " << c + 1;
  }
}

// A stop asked of process 1 of 2 at `iteration` of chain 1 (its callback) stops both there, with
// the run folder "interrupted"; the run then resumes on 3 processes and ends with the draws of
// `reference` and the folder `reference_run`. `method` samples into `run`.
inline void expect_stop_and_resume(const ModelSpec& spec, const Dataset& data, const std::string& run, int iteration,
                                   const std::function<SamplingMethod(const Communicator&)>& method,
                                   const FittedModel& reference, const std::string& reference_run, int chains) {
  const std::vector<FittedModel> stopped =
      spread_fit(2, spec, data, method, [iteration](const Communicator& comm) -> FitCallback {
        if (comm.rank() != 1) return {};
        return [iteration](const FitProgress& p) {
          return p.chain == 0 && p.iteration == iteration ? CallbackReturn::kAbort : CallbackReturn::kContinue;
        };
      });
  for (const FittedModel& m : stopped) {
    ASSERT_TRUE(m.summary.sampler);
    EXPECT_TRUE(m.summary.sampler->interrupted);
    EXPECT_EQ(m.summary.sampler->chains[0].iterations, iteration);
    EXPECT_EQ(m.summary.sampler->chains[1].iterations, 0);
    expect_same_draws(m, stopped[0], "stopped run", /*complete=*/false);
  }
  EXPECT_EQ(nlohmann::json::parse(read_text(run + "/run.json")).at("status"), "interrupted");
  const std::vector<FittedModel> resumed = spread_fit(3, spec, data, [&](const Communicator& comm) {
    SamplingMethod m = method(comm);
    m.resume = true;
    return m;
  });
  for (int r = 0; r < 3; ++r)
    expect_same_draws(resumed[static_cast<std::size_t>(r)], reference, "resumed, process " + std::to_string(r));
  expect_same_folder(run, reference_run, chains);
}

}  // namespace occam::testing

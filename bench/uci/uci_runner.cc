#include "uci/uci_runner.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

namespace occam::uci {

std::vector<Task> Plan::tasks() const {
  std::vector<Task> out;
  for (int k : splits) {
    for (std::size_t d = 0; d < datasets.size(); ++d) {
      if (k >= datasets[d].num_splits) continue;
      for (std::size_t m = 0; m < methods.size(); ++m) out.push_back({static_cast<int>(d), k, static_cast<int>(m)});
    }
  }
  return out;
}

std::string Plan::label(const Task& t) const {
  return datasets[static_cast<std::size_t>(t.dataset)].name + " split " + std::to_string(t.split) + " " +
         methods[static_cast<std::size_t>(t.method)]->name;
}

bool Plan::done(const ResultsFile& results, const Task& t) const {
  return results.contains(datasets[static_cast<std::size_t>(t.dataset)].name, t.split,
                          methods[static_cast<std::size_t>(t.method)]->name);
}

void write_predictions(const std::string& path, const Eigen::VectorXd& y, const MethodOutput& output) {
  const std::string partial = path + ".partial";
  std::FILE* f = std::fopen(partial.c_str(), "w");
  if (f == nullptr) throw Error(ErrorKind::kIo, "cannot write predictions to " + partial);
  bool ok = std::fprintf(f, "test_row,y,mean,std\n") > 0;
  for (Eigen::Index i = 0; i < y.size() && ok; ++i) {
    ok =
        std::fprintf(f, "%lld,%.17g,%.17g,%.17g\n", static_cast<long long>(i), y[i], output.mean[i], output.std[i]) > 0;
  }
  ok = std::fclose(f) == 0 && ok;
  std::error_code ec;
  if (ok) std::filesystem::rename(partial, path, ec);
  if (!ok || ec) throw Error(ErrorKind::kIo, "cannot write predictions to " + path);
}

TaskOutcome run_task(const Plan& plan, const Task& task) {
  const UciDataset& d = plan.datasets[static_cast<std::size_t>(task.dataset)];
  const UciMethod& method = *plan.methods[static_cast<std::size_t>(task.method)];
  const UciSplit split = load_split(d, task.split);
  MethodSettings settings = plan.settings;
  settings.hidden_units = d.hidden_units;
  TaskOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    const MethodOutput output = method.run(split, settings);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + output.reused_seconds;
    const SplitMetrics metrics = score(output, split.test.Y.col(0));
    outcome.ok = true;
    outcome.row = {d.name,          task.split,         method.name, metrics.rmse,
                   metrics.test_ll, metrics.coverage95, seconds,     output.termination};
    outcome.detail = output.detail;
    if (!plan.predictions_dir.empty()) {
      write_predictions(
          plan.predictions_dir + "/" + d.name + "_" + std::to_string(task.split) + "_" + method.name + ".csv",
          split.test.Y.col(0), output);
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kNumerical) throw;
    outcome.detail = e.what();
    outcome.error_kind = e.kind();
  }
  return outcome;
}

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kInvalidInput:
      return 2;
    case ErrorKind::kIo:
      return 3;
    case ErrorKind::kNumerical:
      return 4;
  }
  return 5;
}

}  // namespace occam::uci

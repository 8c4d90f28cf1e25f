// uci_runner.h — the benchmark's rows as tasks: the plan a command line asks for, the (dataset,
// split, method) tasks in split-major order, and one task run to its results row. The serial
// loop (uci_benchmark.cc) and the MPI workers (uci_mpi.cc) run the same tasks, so a row does not
// depend on which process made it.
#pragma once

#include <string>
#include <vector>

#include "occam/status.h"
#include "uci/uci_data.h"
#include "uci/uci_methods.h"
#include "uci/uci_results.h"

namespace occam::uci {

struct Task {
  int dataset = 0;  // index into Plan::datasets
  int split = 0;
  int method = 0;  // index into Plan::methods
};

struct Plan {
  std::vector<UciDataset> datasets;
  std::vector<const UciMethod*> methods;
  std::vector<int> splits;
  MethodSettings settings;
  // When set, each task also writes its test predictions to
  // <predictions_dir>/<dataset>_<split>_<method>.csv (write_predictions): for looking into
  // calibration row by row, e.g. bench/uci/calibration.py.
  std::string predictions_dir;
  // Every task the plan covers, split-major (split 0 of every data set, then split 1, ...), so
  // that an interrupted run has breadth over data sets before depth over splits.
  std::vector<Task> tasks() const;
  std::string label(const Task& task) const;  // "yacht split 3 laplace"
  bool done(const ResultsFile& results, const Task& task) const;
};

struct TaskOutcome {
  bool ok = false;
  ResultRow row;       // when ok
  std::string detail;  // a few words for the log (when ok), or the error (when not)
  ErrorKind error_kind = ErrorKind::kNumerical;
};

// Writes `test_row,y,mean,std` (the test rows in the split's order; %.17g) to `path`, through a
// temporary file renamed into place, so that an interrupted run leaves no half-written file.
// Throws Error(kIo).
void write_predictions(const std::string& path, const Eigen::VectorXd& y, const MethodOutput& output);

// Fits and scores one task. A fit that fails numerically is an outcome (ok = false: a rerun tries
// it again); any other error is thrown.
TaskOutcome run_task(const Plan& plan, const Task& task);

// The exit code of the occam tool for an error kind: 2 invalid input or argument, 3 I/O,
// 4 numerical, 5 anything else.
int exit_code(ErrorKind kind);

}  // namespace occam::uci

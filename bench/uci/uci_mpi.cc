#include "uci/uci_mpi.h"

#include <mpi.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>
#include <vector>

#include "uci/uci_numerics.h"

namespace occam::uci {
namespace {

// Message tags. Workers send kReady once, then kRow or kFailed per task; rank 0 answers each with
// kTask (the task's index in Plan::tasks()) or kStop.
enum Tag : int { kReady = 1, kRow = 2, kFailed = 3, kTask = 4, kStop = 5 };

// A row as text, its numbers in hexadecimal floating point so that they cross exactly.
std::string encode(const TaskOutcome& o) {
  if (!o.ok) return std::to_string(static_cast<int>(o.error_kind)) + "\n" + o.detail;
  char numbers[160];
  std::snprintf(numbers, sizeof numbers, "%a\n%a\n%a\n%a\n", o.row.rmse, o.row.test_ll, o.row.coverage95,
                o.row.seconds);
  return o.row.dataset + "\n" + std::to_string(o.row.split) + "\n" + o.row.method + "\n" + numbers + o.row.termination +
         "\n" + o.detail;
}

TaskOutcome decode(const std::string& text, bool ok) {
  std::istringstream in(text);
  std::string line;
  TaskOutcome o;
  o.ok = ok;
  if (!ok) {
    std::getline(in, line);
    o.error_kind = static_cast<ErrorKind>(std::stoi(line));
    std::getline(in, o.detail, '\0');
    return o;
  }
  std::getline(in, o.row.dataset);
  std::getline(in, line);
  o.row.split = std::stoi(line);
  std::getline(in, o.row.method);
  double* numbers[4] = {&o.row.rmse, &o.row.test_ll, &o.row.coverage95, &o.row.seconds};
  for (double* v : numbers) {
    std::getline(in, line);
    *v = std::strtod(line.c_str(), nullptr);
  }
  std::getline(in, o.row.termination);
  std::getline(in, o.detail, '\0');
  return o;
}

// Receives the next message for this rank from anyone, polling with a short sleep rather than
// spinning (Open MPI's blocking receive keeps a core busy).
std::pair<MPI_Status, std::string> receive_any() {
  MPI_Status status;
  int arrived = 0;
  while (true) {
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
    if (arrived) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string text(static_cast<std::size_t>(length), '\0');
  MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return {status, text};
}

int deal(const Plan& plan, const std::string& out_path, int size) {
  ResultsFile results(out_path, build_provenance());
  const std::vector<Task> tasks = plan.tasks();
  std::vector<int> pending;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!plan.done(results, tasks[i])) pending.push_back(static_cast<int>(i));
  }
  const int skipped = static_cast<int>(tasks.size() - pending.size());
  std::fprintf(stderr, "rank 0: %zu rows to make over %d workers (%d already there)\n", pending.size(), size - 1,
               skipped);
  std::size_t next = 0;
  int active = size - 1, made = 0, failed = 0, fatal_code = 0;
  while (active > 0) {
    auto [status, text] = receive_any();
    const int worker = status.MPI_SOURCE;
    if (status.MPI_TAG == kRow || status.MPI_TAG == kFailed) {
      const TaskOutcome o = decode(text, status.MPI_TAG == kRow);
      if (o.ok) {
        results.append(o.row);
        ++made;
        std::fprintf(stderr,
                     "[%d/%zu] %s split %d %s (rank %d): rmse %.4g, test LL %.4f, coverage %.3f, %.1f s, %s; %s\n",
                     made, pending.size(), o.row.dataset.c_str(), o.row.split, o.row.method.c_str(), worker, o.row.rmse,
                     o.row.test_ll, o.row.coverage95, o.row.seconds, o.row.termination.c_str(), o.detail.c_str());
      } else if (o.error_kind == ErrorKind::kNumerical) {
        ++failed;  // no row: a rerun tries it again
        std::fprintf(stderr, "rank %d: a row FAILED: %s\n", worker, o.detail.c_str());
      } else {
        // Anything else (a file that cannot be read, a bad argument) would fail every row: stop dealing.
        std::fprintf(stderr, "occam_uci: rank %d: %s\n", worker, o.detail.c_str());
        fatal_code = exit_code(o.error_kind);
      }
    }
    if (next < pending.size() && fatal_code == 0) {
      const int task = pending[next++];
      MPI_Send(&task, 1, MPI_INT, worker, kTask, MPI_COMM_WORLD);
    } else {
      MPI_Send(nullptr, 0, MPI_INT, worker, kStop, MPI_COMM_WORLD);
      --active;
    }
  }
  std::fprintf(stderr, "done: %d rows in %s (%d already there, %d failed)\n", results.size(), out_path.c_str(), skipped,
               failed);
  if (fatal_code != 0) return fatal_code;
  return failed > 0 ? exit_code(ErrorKind::kNumerical) : 0;
}

void work(const Plan& plan) {
  const std::vector<Task> tasks = plan.tasks();
  MPI_Send(nullptr, 0, MPI_CHAR, 0, kReady, MPI_COMM_WORLD);
  while (true) {
    MPI_Status status;
    int arrived = 0;
    while (!arrived) {
      MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
      if (!arrived) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    int index = -1;
    MPI_Recv(&index, status.MPI_TAG == kTask ? 1 : 0, MPI_INT, 0, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (status.MPI_TAG == kStop) return;
    TaskOutcome outcome;
    try {
      outcome = run_task(plan, tasks.at(static_cast<std::size_t>(index)));
    } catch (const Error& e) {
      outcome.ok = false;
      outcome.error_kind = e.kind();
      outcome.detail = e.what();
    } catch (const std::exception& e) {
      outcome.ok = false;
      outcome.error_kind = static_cast<ErrorKind>(-1);
      outcome.detail = std::string("internal error: ") + e.what();
    }
    const std::string text = encode(outcome);
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, outcome.ok ? kRow : kFailed, MPI_COMM_WORLD);
  }
}

}  // namespace

bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

int run_with_mpi(const Plan& plan, const std::string& out_path, int* argc, char*** argv) {
  MPI_Init(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int code = 0;
  if (size < 2) {
    if (rank == 0)
      std::fprintf(stderr, "occam_uci: mpirun gave one process; rank 0 only deals rows, so give it two or more\n");
    code = 2;
  } else if (rank == 0) {
    try {
      code = deal(plan, out_path, size);
    } catch (const Error& e) {
      std::fprintf(stderr, "occam_uci: %s\n", e.what());
      code = exit_code(e.kind());
      MPI_Abort(MPI_COMM_WORLD, code);  // the workers wait for work that will not come
    }
  } else {
    work(plan);
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}

}  // namespace occam::uci

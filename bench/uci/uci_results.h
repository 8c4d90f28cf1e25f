// uci_results.h — the benchmark's results CSV: one row per (dataset, split, method), appended as
// soon as it is known, so that an interrupted run loses at most the row in progress and a restart
// skips every row already there. Its first line, "# " and the build's provenance (program,
// commit, compiler and flags, numerics: uci_numerics.h), says what made the rows; a file is only
// appended to by the same build, so that no file mixes rows of two builds.
//
//   occam::uci::ResultsFile results("results.csv", build_provenance());  // creates it, or reads it
//   if (!results.contains("yacht", 0, "laplace")) results.append(row);
#pragma once

#include <set>
#include <string>
#include <tuple>

namespace occam::uci {

struct ResultRow {
  std::string dataset;
  int split = 0;
  std::string method;
  double rmse = 0.0;
  double test_ll = 0.0;
  double coverage95 = 0.0;
  double seconds = 0.0;
  std::string termination;
};

// A run folder (--run-dir) holds one build's work, as a results file holds one build's rows: the
// folder's provenance.txt records the build that first used it, and a folder of another build (or
// one with content but no record, written before builds were recorded) is refused with
// Error(kInvalidInput), so that no row reads back a chain or a committee member another build made.
// Creates the record in an empty folder.
void claim_run_folder(const std::string& folder, const std::string& provenance);

class ResultsFile {
 public:
  // The header every results file has.
  static constexpr const char* kHeader = "dataset,split,method,rmse,test_ll,coverage95,seconds,termination";

  // Opens `path`: a new (or empty) file gets the provenance line and the header; an existing one
  // must have both, the same provenance (else Error(kInvalidInput), naming the two builds), and
  // its rows are remembered. A last line cut short by an interrupted write is dropped.
  ResultsFile(std::string path, std::string provenance);

  bool contains(const std::string& dataset, int split, const std::string& method) const;
  int size() const { return static_cast<int>(done_.size()); }
  // Appends one line and flushes it to the file. Throws Error(kIo).
  void append(const ResultRow& row);

 private:
  std::string path_;
  std::string provenance_;
  std::set<std::tuple<std::string, int, std::string>> done_;
};

}  // namespace occam::uci

// uci_results.h — the benchmark's results CSV: one row per (dataset, split, method), appended as
// soon as it is known, so that an interrupted run loses at most the row in progress and a restart
// skips every row already there.
//
//   occam::uci::ResultsFile results("results.csv");   // creates it with a header, or reads it
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

class ResultsFile {
 public:
  // The header every results file has.
  static constexpr const char* kHeader = "dataset,split,method,rmse,test_ll,coverage95,seconds,termination";

  // Opens `path`: a new file gets the header; an existing one must have it (else Error(kInvalidInput))
  // and its rows are remembered. A last line cut short by an interrupted write is dropped.
  explicit ResultsFile(std::string path);

  bool contains(const std::string& dataset, int split, const std::string& method) const;
  int size() const { return static_cast<int>(done_.size()); }
  // Appends one line and flushes it to the file. Throws Error(kIo).
  void append(const ResultRow& row);

 private:
  std::string path_;
  std::set<std::tuple<std::string, int, std::string>> done_;
};

}  // namespace occam::uci

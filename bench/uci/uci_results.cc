#include "uci/uci_results.h"

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <vector>

#include "occam/data.h"
#include "occam/status.h"

namespace occam::uci {
namespace {

std::vector<std::string> split_commas(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

}  // namespace

ResultsFile::ResultsFile(std::string path, std::string provenance)
    : path_(std::move(path)), provenance_(std::move(provenance)) {
  const std::string start = "# " + provenance_ + "\n" + kHeader + "\n";
  if (!std::filesystem::exists(path_)) {
    write_file_atomic(path_, start);
    return;
  }
  std::string text = read_file(path_);
  if (text.empty()) {  // e.g. made by `touch`: start it
    write_file_atomic(path_, start);
    return;
  }
  if (text.back() != '\n') {
    // An append interrupted mid-line: drop the partial row, so the restart redoes it.
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    write_file_atomic(path_, text.empty() ? start : text);
    if (text.empty()) return;
  }
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  if (line == kHeader) {
    throw Error(ErrorKind::kInvalidInput, path_ +
                                              ":1: written by an occam_uci that did not record its build, so its rows "
                                              "cannot be told from this build's; choose another --out");
  }
  if (line.rfind("# ", 0) != 0 || !std::getline(lines, line) || line != kHeader) {
    throw Error(ErrorKind::kInvalidInput, path_ +
                                              ": not a results file of this benchmark (expected a '# ' provenance "
                                              "line, then the header '" +
                                              std::string(kHeader) + "'); choose another --out");
  }
  const std::string recorded = text.substr(2, text.find('\n') - 2);
  if (recorded != provenance_) {
    throw Error(ErrorKind::kInvalidInput, path_ + ":1: its rows were made by another build or setting (" + recorded +
                                              "), this program is " + provenance_ +
                                              "; a file never mixes the two: choose another --out");
  }
  int number = 2;
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    const std::vector<std::string> cells = split_commas(line);
    int split = -1;
    try {
      split = std::stoi(cells.size() > 1 ? cells[1] : "");
    } catch (const std::exception&) {
    }
    if (cells.size() != 8 || split < 0) {
      throw Error(ErrorKind::kInvalidInput, path_ + ":" + std::to_string(number) +
                                                ": expected 8 cells (dataset,split,method,...) with a split number");
    }
    done_.emplace(cells[0], split, cells[2]);
  }
}

bool ResultsFile::contains(const std::string& dataset, int split, const std::string& method) const {
  return done_.count({dataset, split, method}) > 0;
}

void ResultsFile::append(const ResultRow& r) {
  char line[512];
  const int n = std::snprintf(line, sizeof line, "%s,%d,%s,%.17g,%.17g,%.17g,%.3f,%s\n", r.dataset.c_str(), r.split,
                              r.method.c_str(), r.rmse, r.test_ll, r.coverage95, r.seconds, r.termination.c_str());
  if (n <= 0 || n >= static_cast<int>(sizeof line)) throw Error(ErrorKind::kInvalidArgument, "results row too long");
  // One write of the whole line, then flush and close: a crash leaves whole rows or a cut last line.
  std::FILE* f = std::fopen(path_.c_str(), "a");
  if (f == nullptr) throw Error(ErrorKind::kIo, "cannot append to " + path_);
  const bool ok = std::fwrite(line, 1, static_cast<std::size_t>(n), f) == static_cast<std::size_t>(n);
  if (std::fclose(f) != 0 || !ok) throw Error(ErrorKind::kIo, "cannot append to " + path_);
  done_.emplace(r.dataset, r.split, r.method);
}

void claim_run_folder(const std::string& folder, const std::string& provenance) {
  const std::filesystem::path record = std::filesystem::path(folder) / "provenance.txt";
  std::error_code ec;
  if (!std::filesystem::exists(record, ec)) {
    // Fits there, other than another process's record on its way (write_file_atomic's temporary,
    // renamed into place: processes started together into one new folder).
    bool holds_fits = false;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
      holds_fits = holds_fits || entry.path().filename().string().rfind(".provenance.txt.tmp.", 0) != 0;
    }
    if (holds_fits || ec) {
      throw Error(ErrorKind::kInvalidInput, "--run-dir " + folder +
                                                ": holds fits but no record of the build that made them "
                                                "(provenance.txt); a row never mixes builds: choose another --run-dir");
    }
    write_file_atomic(record.string(), provenance + "\n");
    return;
  }
  std::string recorded = read_file(record.string());
  while (!recorded.empty() && (recorded.back() == '\n' || recorded.back() == '\r')) recorded.pop_back();
  if (recorded != provenance) {
    throw Error(ErrorKind::kInvalidInput, "--run-dir " + folder + ": its fits were made by another build or setting (" +
                                              recorded + "), this program is " + provenance +
                                              "; a row never mixes the two: choose another --run-dir");
  }
}

}  // namespace occam::uci

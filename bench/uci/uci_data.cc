#include "uci/uci_data.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "occam/status.h"

namespace occam::uci {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void bad_input(const std::string& path, std::size_t line, const std::string& what) {
  throw Error(ErrorKind::kInvalidInput, path + ":" + std::to_string(line) + ": " + what);
}

// Every whitespace-separated token of a file as numbers, row by row (blank lines skipped).
std::vector<std::vector<double>> read_rows(const std::string& path) {
  const std::string text = read_file(path);  // throws Error(kIo) naming the path
  std::vector<std::vector<double>> rows;
  std::istringstream lines(text);
  std::string line;
  std::size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::vector<double> row;
    const char* p = line.c_str();
    while (true) {
      while (*p == ' ' || *p == '\t' || *p == '\r') ++p;
      if (*p == '\0') break;
      char* end = nullptr;
      errno = 0;
      const double value = std::strtod(p, &end);
      if (end == p || (*end != '\0' && *end != ' ' && *end != '\t' && *end != '\r')) {
        const char* stop = p;
        while (*stop != '\0' && *stop != ' ' && *stop != '\t') ++stop;
        bad_input(path, number, std::string("'").append(p, stop).append("' is not a number"));
      }
      if (!std::isfinite(value)) bad_input(path, number, "non-finite value");
      row.push_back(value);
      p = end;
    }
    if (!row.empty()) rows.push_back(std::move(row));
  }
  if (rows.empty()) throw Error(ErrorKind::kInvalidInput, path + ": no numbers in the file");
  return rows;
}

// A file of non-negative integers, one or more per line, in file order.
std::vector<Eigen::Index> read_indices(const std::string& path) {
  std::vector<Eigen::Index> out;
  const std::vector<std::vector<double>> rows = read_rows(path);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (double v : rows[r]) {
      if (v < 0 || v != std::floor(v)) {
        throw Error(ErrorKind::kInvalidInput, path + ": '" + std::to_string(v) + "' is not a 0-based index");
      }
      out.push_back(static_cast<Eigen::Index>(v));
    }
  }
  return out;
}

Eigen::Index read_single_index(const std::string& path) {
  const std::vector<Eigen::Index> v = read_indices(path);
  if (v.size() != 1)
    throw Error(ErrorKind::kInvalidInput, path + ": expected one number, found " + std::to_string(v.size()));
  return v[0];
}

Dataset take_rows(const UciDataset& d, const std::vector<Eigen::Index>& rows) {
  Dataset out;
  out.X.resize(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(d.features.size()));
  out.Y.resize(static_cast<Eigen::Index>(rows.size()), 1);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto r = static_cast<Eigen::Index>(i);
    for (std::size_t j = 0; j < d.features.size(); ++j)
      out.X(r, static_cast<Eigen::Index>(j)) = d.data(rows[i], d.features[j]);
    out.Y(r, 0) = d.data(rows[i], d.target);
  }
  for (Eigen::Index j : d.features) out.feature_names.push_back(std::string("x").append(std::to_string(j)));
  out.target_name = std::string("y").append(std::to_string(d.target));
  return out;
}

}  // namespace

Eigen::MatrixXd read_whitespace_matrix(const std::string& path) {
  const std::vector<std::vector<double>> rows = read_rows(path);
  const std::size_t cols = rows.front().size();
  Eigen::MatrixXd m(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(cols));
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].size() != cols) {
      throw Error(ErrorKind::kInvalidInput, path + ": row " + std::to_string(r + 1) + " has " +
                                                std::to_string(rows[r].size()) + " numbers, the first row " +
                                                std::to_string(cols));
    }
    for (std::size_t c = 0; c < cols; ++c) m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) = rows[r][c];
  }
  return m;
}

UciDataset load_dataset(const std::string& data_dir, const std::string& name) {
  UciDataset d;
  d.name = name;
  d.dir = (fs::path(data_dir) / name).string();
  if (!fs::is_directory(d.dir)) {
    throw Error(ErrorKind::kIo, "no data set '" + name + "' in " + data_dir + " (no directory " + d.dir + ")");
  }
  const auto file = [&](const std::string& f) { return (fs::path(d.dir) / f).string(); };
  d.data = read_whitespace_matrix(file("data.txt"));
  d.features = read_indices(file("index_features.txt"));
  d.target = read_single_index(file("index_target.txt"));
  d.num_splits = static_cast<int>(read_single_index(file("n_splits.txt")));
  d.hidden_units = read_single_index(file("n_hidden.txt"));
  for (Eigen::Index j : d.features) {
    if (j >= d.data.cols()) {
      throw Error(ErrorKind::kInvalidInput, file("index_features.txt") + ": column " + std::to_string(j) +
                                                " is out of range (data.txt has " + std::to_string(d.data.cols()) +
                                                " columns)");
    }
  }
  if (d.target >= d.data.cols()) {
    throw Error(ErrorKind::kInvalidInput, file("index_target.txt") + ": column " + std::to_string(d.target) +
                                              " is out of range (data.txt has " + std::to_string(d.data.cols()) +
                                              " columns)");
  }
  if (d.num_splits < 1 || d.hidden_units < 1) {
    throw Error(ErrorKind::kInvalidInput, d.dir + ": n_splits.txt and n_hidden.txt must hold positive numbers");
  }
  return d;
}

UciSplit load_split(const UciDataset& d, int k) {
  if (k < 0 || k >= d.num_splits) {
    throw Error(ErrorKind::kInvalidArgument, d.name + " has splits 0.." + std::to_string(d.num_splits - 1) +
                                                 "; there is no split " + std::to_string(k));
  }
  const auto file = [&](const std::string& f) { return (fs::path(d.dir) / f).string(); };
  const std::string train_path = file("index_train_" + std::to_string(k) + ".txt");
  const std::string test_path = file("index_test_" + std::to_string(k) + ".txt");
  const std::vector<Eigen::Index> train = read_indices(train_path);
  const std::vector<Eigen::Index> test = read_indices(test_path);
  std::vector<char> used(static_cast<std::size_t>(d.data.rows()), 0);
  for (const auto* part : {&train, &test}) {
    const std::string& path = part == &train ? train_path : test_path;
    for (Eigen::Index r : *part) {
      if (r >= d.data.rows()) {
        throw Error(ErrorKind::kInvalidInput, path + ": row " + std::to_string(r) + " is out of range (data.txt has " +
                                                  std::to_string(d.data.rows()) + " rows)");
      }
      if (used[static_cast<std::size_t>(r)]++) {
        throw Error(ErrorKind::kInvalidInput, path + ": row " + std::to_string(r) + " appears twice in split " +
                                                  std::to_string(k) + " (train and test must be disjoint)");
      }
    }
  }
  UciSplit s;
  s.dataset = d.name;
  s.index = k;
  s.train = take_rows(d, train);
  s.test = take_rows(d, test);
  return s;
}

std::vector<std::string> list_datasets(const std::string& data_dir) {
  if (!fs::is_directory(data_dir)) throw Error(ErrorKind::kIo, "data directory " + data_dir + " does not exist");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(data_dir)) {
    if (entry.is_directory() && fs::exists(entry.path() / "data.txt"))
      names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace occam::uci

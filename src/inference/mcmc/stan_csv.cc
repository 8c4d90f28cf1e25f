#include "occam/mcmc/stan_csv.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <fstream>

#include "occam/data.h"
#include "occam/status.h"

namespace occam::mcmc {
namespace {

std::string number(double v) {
  char buffer[32];
  // 17 significant digits: the draws round-trip exactly (predict reads them back).
  const int n = std::snprintf(buffer, sizeof buffer, "%.17g", v);
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace

StanCsvWriter::StanCsvWriter(const std::string& path, const std::vector<std::string>& config) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    throw Error(ErrorKind::kIo, "cannot write '" + path + "': " + std::strerror(errno));
  }
  std::string text;
  for (const std::string& line : config) text += "# " + line + "\n";
  write(text);
}

StanCsvWriter::StanCsvWriter(const std::string& path, std::uintmax_t bytes, long long rows) : path_(path), rows_(rows) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot read '" + path + "': " + ec.message());
  if (size < bytes) {
    throw Error(ErrorKind::kInvalidInput, path + ": " + std::to_string(size) + " bytes, fewer than the " +
                                              std::to_string(bytes) + " its checkpoint records");
  }
  std::filesystem::resize_file(path, bytes, ec);
  if (ec) throw Error(ErrorKind::kIo, "cannot cut '" + path + "' back to its checkpoint: " + ec.message());
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) throw Error(ErrorKind::kIo, "cannot write '" + path + "': " + std::strerror(errno));
  bytes_ = bytes;
}

void StanCsvWriter::sync() {
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) {
    throw Error(ErrorKind::kIo, "cannot write '" + path_ + "': " + std::strerror(errno));
  }
}

StanCsvWriter::~StanCsvWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void StanCsvWriter::write(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() || std::fflush(file_) != 0) {
    throw Error(ErrorKind::kIo, "cannot write '" + path_ + "': " + std::strerror(errno));
  }
  bytes_ += text.size();
}

void StanCsvWriter::begin(const std::vector<std::string>& columns) {
  std::string header;
  for (std::size_t i = 0; i < columns.size(); ++i) header += (i ? "," : "") + columns[i];
  write(header + "\n");
}

void StanCsvWriter::adaptation_done(double step_size, const Metric& metric) {
  std::string text = "# Adaptation terminated\n# Step size = " + number(step_size) + "\n";
  if (metric.kind() == MetricKind::kDense) {
    text += "# Elements of inverse mass matrix:\n";
    const Eigen::MatrixXd& m = metric.inverse_mass_matrix();
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      text += "# ";
      for (Eigen::Index j = 0; j < m.cols(); ++j) text += (j ? ", " : "") + number(m(i, j));
      text += "\n";
    }
  } else {
    text += "# Diagonal elements of inverse mass matrix:\n# ";
    const Eigen::VectorXd m = metric.inverse_mass_diagonal();
    for (Eigen::Index i = 0; i < m.size(); ++i) text += (i ? ", " : "") + number(m[i]);
    text += "\n";
  }
  write(text);
}

void StanCsvWriter::trajectory_length_done(double trajectory_length) {
  write("# Trajectory length L = " + number(trajectory_length) + "\n");
}

void StanCsvWriter::draw(const Eigen::VectorXd& row, bool /*warmup*/) {
  std::string line;
  line.reserve(static_cast<std::size_t>(row.size()) * 24);
  for (Eigen::Index i = 0; i < row.size(); ++i) {
    if (i) line += ',';
    // The integer-valued sampler columns as integers, as Stan writes them.
    if (i >= 3 && i <= 5) {
      line += std::to_string(static_cast<long long>(row[i]));
    } else {
      line += number(row[i]);
    }
  }
  line += '\n';
  write(line);
  ++rows_;
}

void StanCsvWriter::end(const ChainSummary& s) {
  // No elapsed times here (CmdStan closes its files with them): they differ between any two runs,
  // and a chain file must be the same bytes for the same seed, options and data, whether the run
  // went through at once or was resumed (docs/mcmc.md, "Resuming a run"). The times are in
  // chains.csv and the run's summary. An interrupted chain says where it stopped.
  if (s.interrupted) write("# \n#  Interrupted after " + std::to_string(s.iterations) + " iterations\n# \n");
}

Eigen::Index StanCsv::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<Eigen::Index>(i);
  }
  throw Error(ErrorKind::kInvalidInput, path + ": no column '" + name + "'");
}

StanCsv read_stan_csv(const std::string& path) {
  const std::string text = read_file(path);
  StanCsv csv;
  csv.path = path;
  std::vector<double> values;
  std::vector<bool> model_quantity;  // per column: not one of the sampler's own (…__)
  std::size_t line_number = 0, rows = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;  // a last line cut short: ignored
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line.front() == '#') {
      line.remove_prefix(1);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      csv.comments.emplace_back(line);
      continue;
    }
    std::vector<std::string_view> cells;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = line.find(',', start);
      cells.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (csv.columns.empty()) {
      for (auto c : cells) {
        csv.columns.emplace_back(c);
        model_quantity.push_back(!csv.columns.back().ends_with("__"));
      }
      continue;
    }
    if (cells.size() != csv.columns.size()) {
      throw Error(ErrorKind::kInvalidInput, path + ":" + std::to_string(line_number) + ": " +
                                                std::to_string(cells.size()) + " cells, expected " +
                                                std::to_string(csv.columns.size()));
    }
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const auto where = [&] {
        return path + ":" + std::to_string(line_number) + ":" + std::to_string(i + 1) + ": column '" + csv.columns[i] +
               "': ";
      };
      double v = 0.0;
      const char* end = cells[i].data() + cells[i].size();
      const auto result = std::from_chars(cells[i].data(), end, v);
      const std::string cell(cells[i]);
      if (result.ec == std::errc::result_out_of_range && result.ptr == end) {
        v = std::strtod(cell.c_str(), nullptr);  // an underflow is a tiny number, an overflow ±inf
      } else if (result.ec != std::errc() || result.ptr != end) {
        if (cell == "inf" || cell == "-inf" || cell == "nan" || cell == "-nan") {
          v = std::strtod(cell.c_str(), nullptr);
        } else {
          throw Error(ErrorKind::kInvalidInput, where() + "'" + cell + "' is not a number");
        }
      }
      // The sampler's own columns (…__) may hold inf or nan; a draw of the model's quantities may not.
      if (!std::isfinite(v) && model_quantity[i]) {
        throw Error(ErrorKind::kInvalidInput,
                    where() + "'" + cell + "' is not a finite number; every draw of a model quantity must be finite");
      }
      values.push_back(v);
    }
    ++rows;
  }
  if (csv.columns.empty()) throw Error(ErrorKind::kInvalidInput, path + ": no header row (is it a Stan CSV file?)");
  csv.draws = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      values.data(), static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(csv.columns.size()));
  return csv;
}

}  // namespace occam::mcmc

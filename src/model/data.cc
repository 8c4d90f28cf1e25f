// data.cc — CSV tables, datasets, standardisation and whole-or-nothing file writes.
//
// The CSV reader is deliberately strict: a model trained on a silently mangled table is worse
// than no model, so every cell must be a finite number and every problem is reported with the
// file, line and column a user needs to fix it.

#include "occam/data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <unordered_map>

#include "occam/predict.h"
#include "occam/status.h"
#include "occam/types.h"
#include "core/utf8.h"

namespace occam {

using Eigen::Index;

namespace {

constexpr std::string_view kWhitespace = " \t";

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(kWhitespace);
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(kWhitespace);
  return s.substr(first, last - first + 1);
}

// Splits on every comma (no quoting: occam's tables are numeric), trimming each cell.
std::vector<std::string_view> split_cells(std::string_view line) {
  std::vector<std::string_view> cells;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    cells.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cells;
}

// A header cell may be written "name" (as spreadsheets and pandas do when quoting everything).
std::string_view unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return trim(s.substr(1, s.size() - 2));
  return s;
}

std::string location(const std::string& path, std::size_t line) { return path + ":" + std::to_string(line) + ": "; }

std::string column_label(const std::vector<std::string>& columns, std::size_t index) {
  return "column '" + columns[index] + "' (" + std::to_string(index + 1) + ")";
}

// Names and labels go into model files and reports (JSON, which is UTF-8).
void require_utf8(std::string_view text, const std::string& what) {
  std::size_t bad = 0;
  if (internal::valid_utf8(text, &bad)) return;
  char byte[8];
  std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(text[bad]));
  throw Error(ErrorKind::kInvalidInput, what + " is not valid UTF-8 (byte " + byte + " at offset " +
                                            std::to_string(bad + 1) + "); save the file as UTF-8");
}

// Parses the whole of `cell` as a finite double, or explains in `why` what is wrong with it.
// std::from_chars is locale-independent and exact; it rejects a leading '+', which we allow.
bool parse_number(std::string_view cell, double* value, std::string* why) {
  // A long cell (a whole line pasted into one, binary junk) is shortened in the message.
  const auto quoted = [cell] {
    constexpr std::size_t kShown = 40;
    return std::string("'")
        .append(cell.size() <= kShown ? std::string(cell) : std::string(cell.substr(0, kShown)) + "...")
        .append("'");
  };
  if (cell.empty()) {
    *why = "empty cell is not a number";
    return false;
  }
  std::string_view digits = cell;
  if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-' && digits[1] != '+') digits.remove_prefix(1);
  const char* begin = digits.data();
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(begin, end, *value);
  if (ec == std::errc::invalid_argument || ptr != end) {
    *why = quoted() + " is not a number";
    return false;
  }
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports overflow and underflow alike; strtod tells them apart. An underflow
    // is a legitimate (tiny) number, an overflow is infinite.
    const std::string copy(digits);
    *value = std::strtod(copy.c_str(), nullptr);
    if (std::isinf(*value)) {
      *why = quoted() + " is too large for a double";
      return false;
    }
  }
  if (std::isnan(*value)) {
    *why = quoted() + " is NaN; every cell must be a finite number (remove or impute missing values first)";
    return false;
  }
  if (std::isinf(*value)) {
    *why = quoted() + " is infinite; every cell must be a finite number";
    return false;
  }
  return true;
}

// The names, comma-separated; of a wide table the first few and how many there are.
std::string join(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 20;
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) out += (out.empty() ? "" : ", ") + names[i];
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size()) + " columns)";
  return out;
}

std::string missing_column_message(const Table& table, const std::string& name, const char* role) {
  std::string message =
      table.path + ": no column '" + name + "'" + role + "; available columns: " + join(table.columns);
  // Names that are all numbers are the first data row, read as a header.
  const bool numeric_names = std::all_of(table.columns.begin(), table.columns.end(), [](const std::string& c) {
    double value;
    std::string why;
    return parse_number(c, &value, &why);
  });
  if (numeric_names) message += " (the file seems to have no header row)";
  return message;
}

// A JSON array of numbers as a vector; `what` names the field in errors.
Eigen::VectorXd vector_from_json(const nlohmann::json& j, const char* what) {
  if (!j.is_array()) throw Error(ErrorKind::kInvalidInput, std::string("standardizer: '") + what + "' is not an array");
  Eigen::VectorXd v(static_cast<Index>(j.size()));
  for (std::size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number()) {
      throw Error(ErrorKind::kInvalidInput,
                  std::string("standardizer: '") + what + "' entry " + std::to_string(i) + " is not a number");
    }
    v[static_cast<Index>(i)] = j[i].get<double>();
  }
  return v;
}

double number_from_json(const nlohmann::json& j, const char* what) {
  if (!j.contains(what) || !j.at(what).is_number()) {
    throw Error(ErrorKind::kInvalidInput, std::string("standardizer: missing or non-numeric '") + what + "'");
  }
  return j.at(what).get<double>();
}

// Mean and population standard deviation of a column, the standard deviation replaced by 1 for
// a (numerically) constant column so that transforming by it never divides by zero. Values near
// the top of the double range (1e300) overflow the plain sums; those are taken again over the
// column scaled by its largest magnitude (only then, so that ordinary data keep their bits).
void location_scale(const Eigen::Ref<const Eigen::VectorXd>& column, double* mean, double* scale) {
  *mean = column.mean();
  if (!std::isfinite(*mean)) {
    const double top = column.cwiseAbs().maxCoeff();
    *mean = top * (column / top).mean();
  }
  double sd = std::sqrt((column.array() - *mean).square().mean());
  if (!std::isfinite(sd)) {
    const Eigen::ArrayXd deviation = column.array() - *mean;
    const double top = deviation.abs().maxCoeff();
    sd = top * std::sqrt((deviation / top).square().mean());
  }
  // Two-pass residuals of a constant column are rounding noise of order ulp(mean).
  const double noise_floor = 1e-12 * std::max(1.0, std::abs(*mean));
  *scale = (std::isfinite(sd) && sd > noise_floor) ? sd : 1.0;
}

}  // namespace

namespace {

// The row and value of a column's largest magnitude.
std::pair<Index, double> largest(const Eigen::Ref<const Eigen::VectorXd>& column) {
  Index row = 0;
  column.cwiseAbs().maxCoeff(&row);
  return {row, column[row]};
}

std::string shortest(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", v);
  return buffer;
}

}  // namespace

void check_value_scales(const Dataset& data, Standardize mode, bool real_valued_targets) {
  const std::string file = data.source.empty() ? std::string() : data.source + ": ";
  const auto check = [&](const Eigen::Ref<const Eigen::VectorXd>& column, const std::string& what, bool scaled) {
    if (column.size() == 0) return;
    const auto [row, value] = largest(column);
    if (std::abs(value) <= (scaled ? kMaxStandardizedMagnitude : kMaxUnscaledMagnitude)) return;
    const std::string where =
        file + what + " holds " + shortest(value) + " (data row " + std::to_string(data.first_row + row + 1) + ")";
    const std::string rescale =
        "rescale it (divide it by " + shortest(std::pow(10.0, std::floor(std::log10(std::abs(value))))) + ")";
    if (scaled) {
      throw Error(ErrorKind::kInvalidInput,
                  where + ", too near the largest double (1.8e308) to be centred: " + rescale);
    }
    throw Error(ErrorKind::kInvalidInput, where + ": unstandardised values beyond " + shortest(kMaxUnscaledMagnitude) +
                                              " overflow a double in the fit (their squares are summed over the rows): "
                                              "standardise it, or " +
                                              rescale);
  };
  const bool inputs_scaled = mode == Standardize::kBoth || mode == Standardize::kInputs;
  for (Index j = 0; j < data.X.cols(); ++j) {
    const auto k = static_cast<std::size_t>(j);
    check(data.X.col(j),
          "input column '" + (k < data.feature_names.size() ? data.feature_names[k] : std::to_string(j + 1)) + "'",
          inputs_scaled);
  }
  if (real_valued_targets && data.Y.cols() > 0) {
    check(data.Y.col(0), "the target '" + data.target_name + "'", mode == Standardize::kBoth);
  }
  if (data.offset.size() > 0) {
    const auto [row, value] = largest(data.offset);
    if (std::abs(value) > kMaxOffsetMagnitude) {
      throw Error(
          ErrorKind::kInvalidInput,
          file + "the offset holds " + shortest(value) + " (data row " + std::to_string(data.first_row + row + 1) +
              "): beyond " + shortest(kMaxOffsetMagnitude) +
              " its exponential overflows a double; an offset is "
              "the logarithm of the exposure (log time, log population), not the exposure itself: give its logarithm");
    }
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorKind::kIo, "cannot read '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(ErrorKind::kIo, "cannot read '" + path + "': " + std::strerror(errno));
  return std::move(buffer).str();
}

Table read_csv(const std::string& path) { return read_csv(path, std::string()); }

namespace {

// The header row's names, checked: none empty, valid UTF-8, no duplicates. `line` is line 1 of
// the file without a byte-order mark.
std::vector<std::string> parse_header(const std::string& path, std::string_view line) {
  std::vector<std::string> columns;
  for (std::string_view cell : split_cells(line)) columns.emplace_back(unquote(cell));
  // Duplicates by a hash of the names seen: a header of 10⁶ columns is read in linear time.
  std::unordered_map<std::string_view, std::size_t> first;
  first.reserve(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].empty()) {
      throw Error(ErrorKind::kInvalidInput,
                  location(path, 1) + "column " + std::to_string(c + 1) + " of the header has no name");
    }
    require_utf8(columns[c], location(path, 1) + "column " + std::to_string(c + 1) + " of the header");
    const auto [previous, inserted] = first.emplace(columns[c], c);
    if (!inserted) {
      throw Error(ErrorKind::kInvalidInput, location(path, 1) + column_label(columns, c) +
                                                ": duplicate name (also column " +
                                                std::to_string(previous->second + 1) + ")");
    }
  }
  return columns;
}

void throw_empty_file(const std::string& path) {
  throw Error(ErrorKind::kInvalidInput,
              location(path, 1) + "the file is empty; expected a header row of column names and data rows");
}

void throw_no_rows(const std::string& path) {
  throw Error(ErrorKind::kInvalidInput, location(path, 2) + "no data rows after the header");
}

// One data line of the table: its cells appended to `values` (row-major) and, in the label
// column, its text to table->labels. Every problem names the file, line and column.
void parse_data_line(Table* table, std::size_t label_index, std::size_t line_number, std::string_view line,
                     std::vector<double>* values) {
  const std::string& path = table->path;
  const std::size_t num_columns = table->columns.size();
  if (trim(line).empty()) {
    throw Error(ErrorKind::kInvalidInput, location(path, line_number) + "empty line inside the data");
  }
  const std::vector<std::string_view> cells = split_cells(line);
  if (cells.size() != num_columns) {
    throw Error(ErrorKind::kInvalidInput, location(path, line_number) + "expected " + std::to_string(num_columns) +
                                              " cells (as in the header), found " + std::to_string(cells.size()));
  }
  std::string why;
  for (std::size_t c = 0; c < num_columns; ++c) {
    double value = 0.0;
    if (c == label_index) {
      if (cells[c].empty()) {
        throw Error(ErrorKind::kInvalidInput,
                    location(path, line_number) + column_label(table->columns, c) + ": empty class label");
      }
      table->labels.emplace_back(unquote(cells[c]));
      require_utf8(table->labels.back(),
                   location(path, line_number) + column_label(table->columns, c) + ": the class label");
      values->push_back(0.0);
      continue;
    }
    if (!parse_number(cells[c], &value, &why)) {
      throw Error(ErrorKind::kInvalidInput, location(path, line_number) + column_label(table->columns, c) + ": " + why);
    }
    values->push_back(value);
  }
}

// The header's names, and the index of the label column (columns.size() when there is none).
std::size_t set_header(Table* table, std::string_view header_line, const std::string& label_column) {
  table->columns = parse_header(table->path, header_line);
  for (std::size_t c = 0; c < table->columns.size() && !label_column.empty(); ++c) {
    if (table->columns[c] == label_column) {
      table->label_column = label_column;
      return c;
    }
  }
  return table->columns.size();
}

void set_values(Table* table, const std::vector<double>& values, std::size_t num_rows) {
  table->values = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
      values.data(), static_cast<Index>(num_rows), static_cast<Index>(table->columns.size()));
}

// A file's physical lines one at a time (CR-LF tolerated, a byte-order mark dropped from line 1),
// without holding the file: the streaming counterpart of read_csv's split.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      throw Error(ErrorKind::kIo, "cannot read '" + path + "': it is a directory");
    in_.open(path, std::ios::binary);
    if (!in_) throw Error(ErrorKind::kIo, "cannot open '" + path + "': " + std::strerror(errno));
  }
  // The next line (1-based number `number()`), or false at the end of the file.
  bool next(std::string* line) {
    if (!std::getline(in_, *line)) {
      if (in_.bad()) throw Error(ErrorKind::kIo, "cannot read '" + path_ + "': " + std::strerror(errno));
      return false;
    }
    ++number_;
    if (number_ == 1 && line->compare(0, 3, "\xEF\xBB\xBF") == 0) line->erase(0, 3);
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  }
  std::size_t number() const { return number_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::size_t number_ = 0;
};

}  // namespace

Table read_csv(const std::string& path, const std::string& label_column) {
  // A line at a time (the file itself is never held): a table of 10⁶ rows is a few hundred MB of text.
  LineReader reader(path);
  std::string line;
  if (!reader.next(&line) || trim(line).empty()) {
    count_csv_rows(path);  // an empty file, or a header without names: its own message
  }
  Table table;
  table.path = path;
  const std::size_t label_index = set_header(&table, line, label_column);
  // Row-major while parsing (the file's order), then one copy into the column-major matrix.
  std::vector<double> values;
  std::size_t num_rows = 0, first_blank = 0;  // a run of blank lines is an error only if a row follows it
  while (reader.next(&line)) {
    if (trim(line).empty()) {
      if (first_blank == 0) first_blank = reader.number();
      continue;
    }
    if (first_blank != 0) parse_data_line(&table, label_index, first_blank, "", &values);  // throws
    parse_data_line(&table, label_index, reader.number(), line, &values);
    ++num_rows;
  }
  if (num_rows == 0) throw_no_rows(path);
  set_values(&table, values, num_rows);
  return table;
}

Index count_csv_rows(const std::string& path) {
  LineReader reader(path);
  std::string header, line;
  std::size_t last_filled = 0;  // the last line that is not blank: later ones are not rows
  if (reader.next(&header) && !trim(header).empty()) last_filled = 1;
  while (reader.next(&line)) {
    if (!trim(line).empty()) last_filled = reader.number();
  }
  // read_csv's checks, in its order.
  if (last_filled == 0) throw_empty_file(path);
  parse_header(path, header);
  if (last_filled == 1) throw_no_rows(path);
  return static_cast<Index>(last_filled - 1);
}

Table read_csv_rows(const std::string& path, const std::string& label_column, Index first, Index last) {
  if (first < 0 || last < first) {
    throw Error(ErrorKind::kInvalidArgument, "read_csv_rows: rows [" + std::to_string(first) + ", " +
                                                 std::to_string(last) + ") of '" + path + "' is not a range of rows");
  }
  LineReader reader(path);
  std::string line;
  if (!reader.next(&line) || trim(line).empty()) {
    count_csv_rows(path);  // throws what read_csv says of a file without a header
  }
  Table table;
  table.path = path;
  table.first_row = first;
  const std::size_t label_index = set_header(&table, line, label_column);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(last - first) * table.columns.size());
  Index row = 0;
  for (; row < last && reader.next(&line); ++row) {
    if (row < first) continue;  // another process's row: its own reader checks it
    if (trim(line).empty()) {
      // Blank lines at the end of the file are not rows; one followed by a row is an error.
      const std::size_t blank = reader.number();
      std::string after;
      bool more = false;
      while (!more && reader.next(&after)) more = !trim(after).empty();
      if (!more) break;
      parse_data_line(&table, label_index, blank, line, &values);  // throws: an empty line inside the data
    }
    parse_data_line(&table, label_index, reader.number(), line, &values);
  }
  if (row < last) {
    throw Error(ErrorKind::kInvalidArgument, "read_csv_rows: '" + path + "' has " + std::to_string(row) +
                                                 " data rows, fewer than the " + std::to_string(last) + " asked for");
  }
  set_values(&table, values, static_cast<std::size_t>(last - first));
  return table;
}

Dataset make_dataset(const Table& table, const std::string& target) {
  Dataset data;
  data.target_name = target;
  Index target_index = -1;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c] == target) {
      target_index = static_cast<Index>(c);
    } else {
      data.feature_names.push_back(table.columns[c]);
    }
  }
  if (target_index < 0) throw Error(ErrorKind::kInvalidInput, missing_column_message(table, target, " (the target)"));
  if (data.feature_names.empty()) {
    throw Error(ErrorKind::kInvalidInput,
                table.path + ": the target '" + target + "' is the only column; there are no input columns");
  }
  data.X = select_columns(table, data.feature_names);
  data.Y = table.values.col(target_index);
  return data;
}

Eigen::MatrixXd select_columns(const Table& table, const std::vector<std::string>& names) {
  // Columns found by a hash of their names, not a scan per name: linear in the table's width.
  std::unordered_map<std::string_view, Index> index;
  index.reserve(table.columns.size());
  for (std::size_t c = 0; c < table.columns.size(); ++c) index.emplace(table.columns[c], static_cast<Index>(c));
  Eigen::MatrixXd selected(table.values.rows(), static_cast<Index>(names.size()));
  for (std::size_t k = 0; k < names.size(); ++k) {
    const auto it = index.find(names[k]);
    if (it == index.end()) throw Error(ErrorKind::kInvalidInput, missing_column_message(table, names[k], ""));
    selected.col(static_cast<Index>(k)) = table.values.col(it->second);
  }
  return selected;
}

Standardize parse_standardize(std::string_view name) { return enum_names<Standardize>().parse(name); }

const char* to_string(Standardize s) { return enum_names<Standardize>().name(s); }

Standardizer Standardizer::fit(const Dataset& data, Standardize mode) {
  if (data.X.rows() == 0) throw Error(ErrorKind::kInvalidArgument, "Standardizer::fit: the data set has no rows");
  Standardizer s;
  s.mode = mode;
  if (mode == Standardize::kNone) return s;

  const Index D = data.X.cols();
  s.x_mean.resize(D);
  s.x_scale.resize(D);
  for (Index d = 0; d < D; ++d) location_scale(data.X.col(d), &s.x_mean[d], &s.x_scale[d]);

  if (s.standardizes_targets()) {
    if (data.Y.cols() != 1 || data.Y.rows() != data.X.rows()) {
      throw Error(ErrorKind::kInvalidArgument, "Standardizer::fit: targets must be one column with one row per input");
    }
    location_scale(data.Y.col(0), &s.y_mean, &s.y_scale);
  }
  if (mode == Standardize::kCenter) {  // the means alone
    s.x_scale.setOnes();
    s.y_scale = 1.0;
  }
  return s;
}

Standardizer Standardizer::fit(const Dataset& shard, Standardize mode, const Communicator& processes) {
  const Index total = shard.num_rows();
  if (total == 0) throw Error(ErrorKind::kInvalidArgument, "Standardizer::fit: the data set has no rows");
  Standardizer s;
  s.mode = mode;
  if (mode == Standardize::kNone) return s;
  if (s.standardizes_targets() && (shard.Y.cols() != 1 || shard.Y.rows() != shard.X.rows())) {
    throw Error(ErrorKind::kInvalidArgument, "Standardizer::fit: targets must be one column with one row per input");
  }
  // fit() reduces each column where it lies in the whole data's matrix (column d of X starts d·m
  // values into it, Y's at its start), and Eigen's vectorised sum starts at the first aligned
  // value: the gathered column is placed at the same offset from an aligned start (8 values is
  // every SIMD width) so that its sum takes the same path and has the same bits.
  Eigen::VectorXd buffer(total + 8);
  const auto whole = [&](const Eigen::Ref<const Eigen::VectorXd>& mine, Index offset) {
    const std::vector<double> all = processes.allgather(std::vector<double>(mine.data(), mine.data() + mine.size()));
    if (static_cast<Index>(all.size()) != total) {
      throw Error(ErrorKind::kInvalidArgument, "Standardizer::fit: the processes hold " + std::to_string(all.size()) +
                                                   " rows, not the data set's " + std::to_string(total));
    }
    Eigen::Map<Eigen::VectorXd> column(buffer.data() + offset, total);
    column = Eigen::Map<const Eigen::VectorXd>(all.data(), total);
    return column;
  };
  const Index D = shard.X.cols();
  s.x_mean.resize(D);
  s.x_scale.resize(D);
  for (Index d = 0; d < D; ++d) location_scale(whole(shard.X.col(d), (d * total) % 8), &s.x_mean[d], &s.x_scale[d]);
  if (s.standardizes_targets()) location_scale(whole(shard.Y.col(0), 0), &s.y_mean, &s.y_scale);
  if (mode == Standardize::kCenter) {
    s.x_scale.setOnes();
    s.y_scale = 1.0;
  }
  return s;
}

Eigen::MatrixXd Standardizer::transform_inputs(const Eigen::MatrixXd& X) const {
  if (x_mean.size() == 0) return X;
  if (X.cols() != x_mean.size()) {
    throw Error(ErrorKind::kInvalidArgument, "Standardizer: inputs have " + std::to_string(X.cols()) +
                                                 " columns, the standardizer was fitted on " +
                                                 std::to_string(x_mean.size()));
  }
  return (X.rowwise() - x_mean.transpose()).array().rowwise() / x_scale.transpose().array();
}

Eigen::MatrixXd Standardizer::transform_targets(const Eigen::MatrixXd& Y) const {
  return (Y.array() - y_mean) / y_scale;
}

Eigen::MatrixXd Standardizer::targets_to_original(const Eigen::MatrixXd& T) const {
  return (y_mean + y_scale * T.array()).matrix();
}

void Standardizer::to_original(Prediction* p) const {
  p->mean = (y_mean + y_scale * p->mean.array()).matrix();
  p->std = (y_scale * p->std.array()).matrix();
  p->lower = (y_mean + y_scale * p->lower.array()).matrix();
  p->upper = (y_mean + y_scale * p->upper.array()).matrix();
  if (p->draws.size() > 0) p->draws = targets_to_original(p->draws);
}

nlohmann::json Standardizer::to_json() const {
  return {{"mode", occam::to_string(mode)},
          {"x_mean", std::vector<double>(x_mean.data(), x_mean.data() + x_mean.size())},
          {"x_scale", std::vector<double>(x_scale.data(), x_scale.data() + x_scale.size())},
          {"y_mean", y_mean},
          {"y_scale", y_scale}};
}

Standardizer Standardizer::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error(ErrorKind::kInvalidInput, "standardizer: not a JSON object");
  if (!j.contains("mode") || !j.at("mode").is_string()) {
    throw Error(ErrorKind::kInvalidInput, "standardizer: missing or non-string 'mode'");
  }
  Standardizer s;
  try {
    s.mode = parse_standardize(j.at("mode").get<std::string>());
  } catch (const Error& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("standardizer: ") + e.what());
  }
  s.x_mean = vector_from_json(j.value("x_mean", nlohmann::json::array()), "x_mean");
  s.x_scale = vector_from_json(j.value("x_scale", nlohmann::json::array()), "x_scale");
  s.y_mean = number_from_json(j, "y_mean");
  s.y_scale = number_from_json(j, "y_scale");

  if (s.x_mean.size() != s.x_scale.size()) {
    throw Error(ErrorKind::kInvalidInput, "standardizer: 'x_mean' has " + std::to_string(s.x_mean.size()) +
                                              " entries but 'x_scale' has " + std::to_string(s.x_scale.size()));
  }
  if ((s.mode == Standardize::kNone) != (s.x_mean.size() == 0)) {
    throw Error(ErrorKind::kInvalidInput,
                std::string("standardizer: mode '") + occam::to_string(s.mode) + "' does not match 'x_mean'");
  }
  if (!s.x_mean.allFinite() || !std::isfinite(s.y_mean)) {
    throw Error(ErrorKind::kInvalidInput, "standardizer: a mean is not finite");
  }
  if (!s.x_scale.allFinite() || !(s.x_scale.array() > 0.0).all() || !std::isfinite(s.y_scale) || !(s.y_scale > 0.0)) {
    throw Error(ErrorKind::kInvalidInput, "standardizer: every scale must be positive and finite");
  }
  return s;
}

namespace {

// Writes all of `contents` to fd, retrying on EINTR; false (errno set) on an error.
bool write_all(int fd, const std::string& contents) {
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  return true;
}

// Writes to a device, a pipe or a socket as it is: there is no file to replace.
void write_in_place(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorKind::kIo, "cannot write '" + path + "': " + std::strerror(errno));
  if (!write_all(fd, contents)) {
    const int saved = errno;
    ::close(fd);
    throw Error(ErrorKind::kIo, "cannot write '" + path + "': " + std::strerror(saved));
  }
  // Some devices and file systems report a failed write only when the file is closed.
  if (::close(fd) != 0 && errno != EINTR)
    throw Error(ErrorKind::kIo, "cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  struct stat first {
  }, second{};
  return ::stat(a.c_str(), &first) == 0 && ::stat(b.c_str(), &second) == 0 && first.st_dev == second.st_dev &&
         first.st_ino == second.st_ino;
}

void write_file_atomic(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  // Renaming onto a path replaces whatever the path names. For a device, a pipe or a socket
  // (`--out /dev/null`, /dev/stdout, a FIFO) that would put a regular file in place of the device
  // node, so those are written in place; a symbolic link is followed, so that the file it points
  // to is replaced rather than the link.
  struct stat status {};
  if (::stat(path.c_str(), &status) == 0 && !S_ISREG(status.st_mode)) {
    if (S_ISDIR(status.st_mode)) throw Error(ErrorKind::kIo, "cannot write '" + path + "': it is a directory");
    write_in_place(path, contents);
    return;
  }
  std::error_code ec;
  fs::path target(path);
  if (fs::is_symlink(target, ec)) {
    const fs::path resolved = fs::canonical(target, ec);
    if (!ec) target = resolved;
  }
  if (target.filename().empty()) throw Error(ErrorKind::kIo, "cannot write '" + path + "': not a file name");
  const fs::path directory = target.parent_path().empty() ? fs::path(".") : target.parent_path();

  // The temporary lives beside the target so that rename() is atomic (same file system). It is
  // created with O_EXCL and mode 0666 so the umask applies as it would to the file itself.
  static std::atomic<unsigned> counter{0};
  fs::path temp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "." + std::string&&.
    std::string name = ".";
    name += target.filename().string();
    name += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    temp = directory / name;
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw Error(ErrorKind::kIo, "cannot write '" + path + "': " + std::strerror(errno));

  const auto fail = [&](const char* what) {
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw Error(ErrorKind::kIo, "cannot write '" + path + "' (" + what + "): " + std::strerror(saved));
  };

  if (!write_all(fd, contents)) fail("write");
  // Data on disk before the rename makes it visible: a crash leaves the old file or the new one.
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    fd = -1;
    fail("close");
  }
  fd = -1;
  if (::rename(temp.c_str(), target.c_str()) != 0) fail("rename");

  // Persist the directory entry too; failure here cannot undo the write, so it is not an error.
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

std::string format_csv(const std::vector<std::string>& header, const Eigen::MatrixXd& values) {
  if (!header.empty() && static_cast<Index>(header.size()) != values.cols()) {
    throw Error(ErrorKind::kInvalidArgument, "format_csv: " + std::to_string(header.size()) + " names for " +
                                                 std::to_string(values.cols()) + " columns");
  }
  std::string out;
  out.reserve(static_cast<std::size_t>(values.size()) * 24 + 64);
  if (!header.empty()) {
    for (std::size_t c = 0; c < header.size(); ++c) {
      if (c > 0) out += ',';
      out += header[c];
    }
    out += '\n';
  }
  char buffer[32];
  for (Index r = 0; r < values.rows(); ++r) {
    for (Index c = 0; c < values.cols(); ++c) {
      if (c > 0) out += ',';
      // 17 significant digits: every double reads back as exactly itself.
      const int n = std::snprintf(buffer, sizeof buffer, "%.17g", values(r, c));
      out.append(buffer, static_cast<std::size_t>(n));
    }
    out += '\n';
  }
  return out;
}

}  // namespace occam

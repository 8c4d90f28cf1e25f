// data.h — reading CSV tables, choosing inputs and target, and standardisation.
//
// Every malformed input is refused with one message naming the file, line and column.
//
//   occam::Table t = occam::read_csv("train.csv");
//   occam::Dataset d = occam::make_dataset(t, "y");
//   occam::Standardizer s = occam::Standardizer::fit(d, occam::Standardize::kBoth);
#pragma once

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "occam/parallel.h"

namespace occam {

struct Prediction;  // predict.h

struct Table {
  std::string path;
  std::vector<std::string> columns;
  Eigen::MatrixXd values;  // rows × columns, every cell finite
  // With read_csv(path, label_column): that column's cells as text (class labels, which may be
  // words); its entries in `values` are 0.
  std::string label_column;
  std::vector<std::string> labels;
  // The file's data row that values.row(0) is (read_csv_rows; 0 for read_csv): row r of the file is
  // its line r + 2, for messages.
  Eigen::Index first_row = 0;
};

// Reads a comma-separated file with a header row of unique column names and numeric cells.
// Throws Error(kIo) if the file cannot be read and Error(kInvalidInput), naming file, line and
// column, on an empty file, a ragged row, a cell that is not a number, NaN or Inf.
Table read_csv(const std::string& path);
// The same, except that the cells of `label_column` (if the file has it) may be any non-empty
// text and are kept in Table::labels.
Table read_csv(const std::string& path, const std::string& label_column);

// The number of data rows of a CSV file as read_csv counts them (trailing blank lines are not
// rows), reading its lines without parsing their cells. Checks the header as read_csv does and
// throws its errors for an empty file, a bad header or a file without data rows.
Eigen::Index count_csv_rows(const std::string& path);
// Rows [first, last) of a CSV file's data rows (row 0 is the line after the header), as read_csv
// would read them — the same checks, and messages that name the file's own lines — without
// parsing or holding the other rows: one process's share of a file whose rows are spread over
// processes. Table::first_row is `first`. Throws read_csv's errors for the header and those rows,
// and Error(kInvalidArgument) when the range is negative or reversed or the file has fewer than `last` rows.
Table read_csv_rows(const std::string& path, const std::string& label_column, Eigen::Index first, Eigen::Index last);

struct Dataset {
  Eigen::MatrixXd X;  // m × D
  Eigen::MatrixXd Y;  // m × 1 (categorical targets: class indices into class_labels)
  std::vector<std::string> feature_names;
  std::string target_name;
  // Categorical targets: the label of each class index, in the data's order (numbers sorted as
  // numbers, then words); empty otherwise.
  std::vector<std::string> class_labels;
  // A column added to the linear predictor (the Poisson likelihood's log exposure), one entry per
  // row; empty when there is none. It is not an input.
  Eigen::VectorXd offset;
  std::string source;  // where the rows came from (a file path), for reports; may be empty
  // One process's share when the rows are spread over processes (read_training_data with a
  // Communicator): X and Y hold rows [first_row, first_row + X.rows()) of a data set of total_rows
  // rows, as RowBlocks deals them. total_rows = 0: X and Y hold every row.
  Eigen::Index total_rows = 0;
  Eigen::Index first_row = 0;
  bool is_shard() const { return total_rows > 0; }
  Eigen::Index num_rows() const { return is_shard() ? total_rows : X.rows(); }  // over every process
};

// The target column by name and every other column as an input, in file order. Throws
// Error(kInvalidInput) naming the file and the missing column.
Dataset make_dataset(const Table& table, const std::string& target);
// The named columns, in the order given (e.g. a model's features in a prediction file).
Eigen::MatrixXd select_columns(const Table& table, const std::vector<std::string>& names);

// kCenter moves inputs and target to zero mean and keeps their scales: the prior then acts on
// the weights in the data's own units, and a linear model without an intercept term has the flat
// intercept of scikit-learn's BayesianRidge (which centres X and y the same way).
enum class Standardize { kBoth, kInputs, kNone, kCenter };
Standardize parse_standardize(std::string_view name);  // "both" | "inputs" | "none" | "center"
const char* to_string(Standardize s);

// Affine maps to zero mean and unit standard deviation (a constant column keeps scale 1), fitted
// on training data and stored in the model so predictions come back in the original units.
struct Standardizer {
  Standardize mode = Standardize::kNone;
  Eigen::VectorXd x_mean, x_scale;  // empty when inputs are not standardised
  double y_mean = 0.0, y_scale = 1.0;

  static Standardizer fit(const Dataset& data, Standardize mode);
  // The same from every process's share of the rows (Dataset::is_shard), called by every process
  // together: the same bits as fit() on the whole data, on any number of processes. Each column
  // is gathered whole in turn (one column of m values at a time) and reduced as fit() reduces it.
  static Standardizer fit(const Dataset& shard, Standardize mode, const Communicator& processes);
  Eigen::MatrixXd transform_inputs(const Eigen::MatrixXd& X) const;
  Eigen::MatrixXd transform_targets(const Eigen::MatrixXd& Y) const;
  bool standardizes_targets() const { return mode == Standardize::kBoth || mode == Standardize::kCenter; }
  // Back to the original units: y = y_mean + y_scale·t; a standard deviation scales by y_scale.
  double target_location(double t) const { return y_mean + y_scale * t; }
  double target_scale(double s) const { return y_scale * s; }
  // The same for every entry of a matrix of targets (or of network outputs, function draws).
  Eigen::MatrixXd targets_to_original(const Eigen::MatrixXd& T) const;
  // A prediction made in standardised units, in place: mean, lower and upper by the affine map,
  // std by the scale, predictive draws likewise (y_scale > 0 keeps the bounds in order).
  // Class probabilities are untouched.
  void to_original(Prediction* p) const;

  nlohmann::json to_json() const;
  static Standardizer from_json(const nlohmann::json& j);
};

// The magnitudes a fit can take (doubles overflow beyond about 1.8e308). A value the fit sees as
// it is — an input under Standardize::kNone or kCenter, a real-valued target not standardised —
// must stay within kMaxUnscaledMagnitude, so that sums of squares over the rows (E_D, the
// curvature) stay finite; one that is standardised within kMaxStandardizedMagnitude, so that its
// distance to the mean does; a log-link offset within kMaxOffsetMagnitude, the log of the largest
// double. check_value_scales throws Error(kInvalidInput) naming the column, its largest value and
// what to do (standardise, rescale, give the offset's logarithm); `real_valued_targets`: a Gaussian
// or heteroscedastic likelihood, whose target enters E_D squared.
inline constexpr double kMaxUnscaledMagnitude = 1e150;
inline constexpr double kMaxStandardizedMagnitude = 1e307;
inline constexpr double kMaxOffsetMagnitude = 709.0;
void check_value_scales(const Dataset& data, Standardize mode, bool real_valued_targets);

// The whole file as bytes. Throws Error(kIo) naming the path when it is a directory or unreadable.
std::string read_file(const std::string& path);
// True when both paths exist and name the same file (same device and inode), whatever their
// spelling: a relative path, a symbolic link, a hard link.
bool same_file(const std::string& a, const std::string& b);
// Writes a file whole or not at all: to a temporary file beside it, then rename. Throws Error(kIo).
void write_file_atomic(const std::string& path, const std::string& contents);
// A CSV with the given header; values printed with 17 significant digits (exact round trip).
std::string format_csv(const std::vector<std::string>& header, const Eigen::MatrixXd& values);

}  // namespace occam

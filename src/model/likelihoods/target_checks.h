// target_checks.h — shared checks of target matrices, each naming the first bad row (1-based).
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <sstream>
#include <string>

#include "occam/status.h"

namespace occam::internal {

inline std::string number_text(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

inline void require_target_columns(const char* family, const Eigen::MatrixXd& Y, Eigen::Index expected,
                                   const char* what) {
  if (Y.cols() != expected) {
    throw Error(ErrorKind::kInvalidInput, std::string(family) + " likelihood: expected " + std::to_string(expected) +
                                              " target column" + (expected == 1 ? "" : "s") + " (" + what + "), got " +
                                              std::to_string(Y.cols()));
  }
}

// A target the likelihood cannot take, with its row, so that a caller who knows where the rows
// came from (make_training_data: a file's lines) can name the file, line and column instead.
class InvalidTarget : public Error {
 public:
  InvalidTarget(const char* family, Eigen::Index row, double value, const std::string& expected)
      : Error(ErrorKind::kInvalidInput, std::string(family) + " likelihood: target in row " + std::to_string(row + 1) +
                                            " is " + number_text(value) + "; expected " + expected),
        row(row),
        problem("the target is " + number_text(value) + "; a " + family + " likelihood expects " + expected) {}
  Eigen::Index row;     // 0-based
  std::string problem;  // without the row
};

[[noreturn]] inline void bad_target(const char* family, Eigen::Index row, double value, const std::string& expected) {
  throw InvalidTarget(family, row, value, expected);
}

}  // namespace occam::internal

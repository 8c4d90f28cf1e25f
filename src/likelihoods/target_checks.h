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

[[noreturn]] inline void bad_target(const char* family, Eigen::Index row, double value, const std::string& expected) {
  throw Error(ErrorKind::kInvalidInput, std::string(family) + " likelihood: target in row " + std::to_string(row + 1) +
                                            " is " + number_text(value) + "; expected " + expected);
}

}  // namespace occam::internal

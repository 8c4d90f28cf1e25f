// toy_csv.h — a generated data set (toy_data.h) as a CSV file, for the command-line tests.
#pragma once

#include <fstream>
#include <string>

#include "testing/toy_data.h"

namespace occam::testing {

// d as a CSV file: inputs x1 … xD, then y, every number to the last bit.
inline void write_csv(const std::string& path, const ToyData& d) {
  std::ofstream csv(path);
  csv.precision(17);
  for (Eigen::Index j = 0; j < d.X.cols(); ++j) csv << 'x' << j + 1 << ',';
  csv << "y\n";
  for (Eigen::Index i = 0; i < d.X.rows(); ++i) {
    for (Eigen::Index j = 0; j < d.X.cols(); ++j) csv << d.X(i, j) << ',';
    csv << d.Y(i, 0) << '\n';
  }
}

}  // namespace occam::testing

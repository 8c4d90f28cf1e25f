// bitwise.h — exact equality of matrices, to the bit (a loaded model must predict as the saved one).
#pragma once

#include <Eigen/Core>
#include <cstring>

namespace occam::testing {

inline bool bitwise_equal(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0;
}

}  // namespace occam::testing

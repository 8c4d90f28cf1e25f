// bitwise.h — exact equality of matrices, to the bit (a loaded model must predict as the saved one).
#pragma once

#include <Eigen/Core>
#include <cstring>

namespace occam::testing {

// Two empty matrices are equal without a memcmp: their data() may be null, and memcmp of a null
// pointer is undefined even for zero bytes (UBSan reports it).
inline bool bitwise_equal(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(double) * static_cast<std::size_t>(a.size())) == 0);
}

}  // namespace occam::testing

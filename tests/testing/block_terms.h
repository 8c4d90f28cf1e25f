// block_terms.h — per-block terms whose sum depends on the order of addition: magnitudes from
// 1e-8 to 1e8 and both signs, so that adding them in another order changes the low bits.
#pragma once

#include <Eigen/Core>
#include <cmath>

#include "occam/rng.h"

namespace occam::testing {

inline Eigen::VectorXd block_term(Eigen::Index block, Eigen::Index size = 4) {
  Rng rng(20261123, static_cast<std::uint64_t>(block));
  Eigen::VectorXd v(size);
  for (Eigen::Index k = 0; k < size; ++k) v(k) = rng.normal() * std::pow(10.0, 16.0 * rng.uniform() - 8.0);
  return v;
}

}  // namespace occam::testing

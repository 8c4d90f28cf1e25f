#include "occam/rng.h"

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <boost/random/uniform_int_distribution.hpp>

namespace occam {

Rng::Rng(std::uint64_t seed, std::uint64_t stream) : engine_(seed, stream) {}

double Rng::uniform() { return boost::random::uniform_01<double>()(engine_); }

double Rng::normal() { return boost::random::normal_distribution<double>()(engine_); }

Eigen::VectorXd Rng::normal_vector(Eigen::Index n) {
  Eigen::VectorXd z(n);
  boost::random::normal_distribution<double> dist;
  for (Eigen::Index i = 0; i < n; ++i) z[i] = dist(engine_);
  return z;
}

std::uint64_t Rng::uniform_int(std::uint64_t n) {
  return boost::random::uniform_int_distribution<std::uint64_t>(0, n - 1)(engine_);
}

}  // namespace occam

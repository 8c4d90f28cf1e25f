#include "occam/rng.h"

#include <utility>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_01.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "occam/status.h"

namespace occam {

Rng::Rng(std::uint64_t seed, std::uint64_t stream) : seed_(seed), stream_(stream), engine_(seed, stream) {}

// The steps, a 128-bit number, as 32 hexadecimal digits (PCG's own reader of 128-bit numbers
// does not compile with every standard library).
std::string Rng::save() const {
  const pcg_extras::pcg128_t steps = engine_ - pcg64(seed_, stream_);
  char text[96];
  std::snprintf(text, sizeof text, "%llu %llu %016llx%016llx", static_cast<unsigned long long>(seed_),
                static_cast<unsigned long long>(stream_), static_cast<unsigned long long>(steps >> 64),
                static_cast<unsigned long long>(steps & ~std::uint64_t{0}));
  return text;
}

void Rng::restore(const std::string& text) {
  unsigned long long seed = 0, stream = 0;
  char digits[33] = {};
  int used = 0;
  if (std::sscanf(text.c_str(), "%llu %llu %32[0-9a-f]%n", &seed, &stream, digits, &used) != 3 ||
      static_cast<std::size_t>(used) != text.size() || std::strlen(digits) != 32) {
    throw Error(ErrorKind::kInvalidArgument, "random stream state '" + text + "' is not 'seed stream steps'");
  }
  if (seed != seed_ || stream != stream_) {
    throw Error(ErrorKind::kInvalidArgument, "random stream state '" + text + "' belongs to seed " +
                                                 std::to_string(seed) + ", stream " + std::to_string(stream) +
                                                 ", not seed " + std::to_string(seed_) + ", stream " +
                                                 std::to_string(stream_));
  }
  const auto half = [&](int offset) {
    return static_cast<pcg_extras::pcg128_t>(std::strtoull(std::string(digits + offset, 16).c_str(), nullptr, 16));
  };
  engine_ = pcg64(seed_, stream_);
  engine_.advance((half(0) << 64) | half(16));
}

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

void Rng::shuffle(std::vector<Eigen::Index>* order) {
  for (auto i = static_cast<Eigen::Index>(order->size()) - 1; i > 0; --i) {
    std::swap((*order)[static_cast<std::size_t>(i)], (*order)[uniform_int(static_cast<std::uint64_t>(i) + 1)]);
  }
}

}  // namespace occam

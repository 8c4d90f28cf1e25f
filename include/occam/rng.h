// rng.h — seeded, splittable random streams with platform-independent output.
//
// PCG64 streams (one per chain or per task) with Boost.Random's distributions, whose output,
// unlike std::normal_distribution's, is the same with every standard library.
//
//   occam::Rng rng(/*seed=*/1, /*stream=*/0);
//   double z = rng.normal();
//   Eigen::VectorXd v = rng.normal_vector(10);
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <pcg_random.hpp>
#include <string>
#include <vector>

namespace occam {

class Rng {
 public:
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0);

  double uniform();  // U(0, 1)
  double normal();   // N(0, 1)
  Eigen::VectorXd normal_vector(Eigen::Index n);
  std::uint64_t uniform_int(std::uint64_t n);  // uniform on {0, ..., n-1}
  // Permutes *order in place (Fisher–Yates: for i from the last down to 1, swap i with
  // uniform_int(i + 1)), so that the result depends on *order and the stream's state alone.
  void shuffle(std::vector<Eigen::Index>* order);

  pcg64& engine() { return engine_; }

  // The stream's position exactly, as text ("seed stream steps": how far it has moved from
  // Rng(seed, stream)), and back: restore() moves this stream there in O(log steps). Throws
  // Error(kInvalidArgument) for text of another seed or stream, or not of this form.
  std::string save() const;
  void restore(const std::string& text);

 private:
  std::uint64_t seed_, stream_;
  pcg64 engine_;
};

}  // namespace occam

// Small generated data sets for tests (no files needed).
#pragma once

#include <Eigen/Core>
#include <cmath>

#include <memory>
#include <vector>

#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/rng.h"

namespace occam::testing {

struct ToyData {
  Eigen::MatrixXd X;
  Eigen::MatrixXd Y;
};

// Linear data y = Xw + 0.5 + noise with D inputs.
inline ToyData linear_data(Eigen::Index m, Eigen::Index D, double noise_sd, std::uint64_t seed) {
  Rng rng(seed);
  ToyData d{Eigen::MatrixXd(m, D), Eigen::MatrixXd(m, 1)};
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < D; ++j) d.X(i, j) = rng.normal();
  Eigen::VectorXd w(D);
  for (Eigen::Index j = 0; j < D; ++j) w[j] = rng.normal();
  for (Eigen::Index i = 0; i < m; ++i) d.Y(i, 0) = d.X.row(i).dot(w) + 0.5 + noise_sd * rng.normal();
  return d;
}

// 1-D regression with a gap: x in [−1, −0.3] ∪ [0.3, 1], y = sin(3x) + noise.
inline ToyData gap_data(Eigen::Index m, double noise_sd, std::uint64_t seed) {
  Rng rng(seed);
  ToyData d{Eigen::MatrixXd(m, 1), Eigen::MatrixXd(m, 1)};
  for (Eigen::Index i = 0; i < m; ++i) {
    const double u = rng.uniform();
    const double x = i % 2 == 0 ? -1.0 + 0.7 * u : 0.3 + 0.7 * u;
    d.X(i, 0) = x;
    d.Y(i, 0) = std::sin(3.0 * x) + noise_sd * rng.normal();
  }
  return d;
}

// Four inputs x ~ U(−1, 1)⁴, y = sin(2x₁) + x₂x₃ + ½ tanh(3x₄) + noise: a smooth target that a
// small network fits to nearly the noise, so that β·m is large and most weights sloppy.
inline ToyData smooth_data(Eigen::Index m, double noise_sd, std::uint64_t seed) {
  Rng rng(seed);
  ToyData d{Eigen::MatrixXd(m, 4), Eigen::MatrixXd(m, 1)};
  for (Eigen::Index i = 0; i < m; ++i) {
    for (Eigen::Index j = 0; j < 4; ++j) d.X(i, j) = 2.0 * rng.uniform() - 1.0;
    d.Y(i, 0) =
        std::sin(2.0 * d.X(i, 0)) + d.X(i, 1) * d.X(i, 2) + 0.5 * std::tanh(3.0 * d.X(i, 3)) + noise_sd * rng.normal();
  }
  return d;
}

// A 1-D-input, one-hidden-layer tanh network with a Gaussian likelihood on d, and its seeded
// initial weights.
struct TanhNetwork {
  Posterior posterior;
  Eigen::VectorXd w;
};

inline TanhNetwork tanh_network(const ToyData& d, Eigen::Index hidden, AlphaGroups groups, double alpha, double beta,
                                std::uint64_t seed) {
  auto net = std::make_unique<Mlp>(d.X.cols(), std::vector<Eigen::Index>{hidden}, Activation::kTanh, 1);
  Rng rng(seed);
  Eigen::VectorXd w = net->initial_params(rng);
  Prior prior = Prior::from_network(*net, groups, alpha);
  return {Posterior(std::move(net), std::make_unique<GaussianLikelihood>(beta), std::move(prior), d.X, d.Y), w};
}

}  // namespace occam::testing

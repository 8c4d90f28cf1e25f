// tanh_teacher.h — a small regression whose teacher is one tanh unit: y = tanh(x₁ − x₂/2) + 0.1ε
// on `rows` rows of three standard normal inputs (seeded), the targets standardised, and a 3-H-1
// tanh network with MacKay's four prior groups at α = 1, β = 10. The teacher needs no biases, so
// the evidence prunes the hidden ones (evidence_pruning_test.cc); a MAP from a random start takes
// tens of Newton iterations (evidence_trial_floor_test.cc).
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "occam/likelihood.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"

namespace occam::testing {

inline Posterior tanh_teacher_posterior(std::uint64_t seed, Index rows, Index hidden) {
  Rng rng(seed);
  const Index D = 3;
  Eigen::MatrixXd X(rows, D), Y(rows, 1);
  for (Index n = 0; n < rows; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    Y(n, 0) = std::tanh(X(n, 0) - 0.5 * X(n, 1)) + 0.1 * rng.normal();
  }
  Y.array() -= Y.mean();
  Y /= std::sqrt(Y.squaredNorm() / static_cast<double>(rows));
  auto net = std::make_unique<Mlp>(D, std::vector<Index>{hidden}, Activation::kTanh, 1);
  Prior prior = make_prior(*net, PriorSpec{});
  return Posterior(std::move(net), std::make_unique<GaussianLikelihood>(10.0), std::move(prior), X, Y);
}

}  // namespace occam::testing

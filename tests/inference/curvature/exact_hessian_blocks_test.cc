// The exact Hessian solved by blocks and rows (src/inference/evidence/exact_hessian.h,
// solve_exact_hessian_by_blocks): ∇∇S = (P + R) + ZᵀZ with P + R block diagonal for a network of
// one hidden layer, solved by the Woodbury identity over the rows, against ∇∇S formed in full
// (Posterior::data_hessian) and solved by Cholesky, or by LU where it is indefinite.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/LU>
#include <memory>
#include <optional>
#include <vector>

#include "inference/evidence/exact_hessian.h"
#include "occam/likelihood.h"
#include "occam/map.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "testing/tanh_teacher.h"

namespace occam {
namespace {

// A 4-H-1 tanh network with MacKay's groups (α = 1, or the prior of `spec`) on `rows` rows of a
// noisy logistic teacher.
Posterior classifier(Index rows, std::vector<Index> hidden, std::uint64_t seed = 5, const PriorSpec& spec = {}) {
  Rng rng(seed);
  const Index D = 4;
  Eigen::MatrixXd X(rows, D), Y(rows, 1);
  for (Index n = 0; n < rows; ++n) {
    for (Index j = 0; j < D; ++j) X(n, j) = rng.normal();
    const double p = 1.0 / (1.0 + std::exp(-(2.0 * X(n, 0) - X(n, 1) + std::sin(2.0 * X(n, 2)))));
    Y(n, 0) = rng.uniform() < p ? 1.0 : 0.0;
  }
  auto net = std::make_unique<Mlp>(D, hidden, Activation::kTanh, 1);
  Prior prior = make_prior(*net, spec);
  return Posterior(std::move(net), std::make_unique<BernoulliLikelihood>(), std::move(prior), X, Y);
}

Eigen::MatrixXd exact_hessian(const Posterior& posterior, const Eigen::VectorXd& w) {
  Eigen::MatrixXd H = posterior.data_hessian(w, HessianKind::kExact);
  posterior.prior().add_precision_to(&H);
  return H;
}

Eigen::MatrixXd right_hand_sides(Index W, Index k) {
  Rng rng(11);
  Eigen::MatrixXd B(W, k);
  for (Index j = 0; j < k; ++j) B.col(j) = rng.normal_vector(W);
  return B;
}

Eigen::VectorXd map_of(const Posterior& posterior) {
  Rng init(2);
  Eigen::VectorXd w = posterior.network().initial_params(init);
  MapOptions options;
  options.gradient_tolerance = 1e-10;
  find_map(posterior, options, &w);
  return w;
}

double relative_error(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) { return (a - b).norm() / b.norm(); }

TEST(ExactHessianByBlocks, EqualsTheFactoredHessianAtAMinimum) {
  const Posterior posterior = classifier(40, {20});  // W = 121 ≥ 2n = 80
  const Eigen::VectorXd w = map_of(posterior);
  const Eigen::MatrixXd H = exact_hessian(posterior, w);
  ASSERT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H, Eigen::EigenvaluesOnly).eigenvalues()[0], 0.0);
  const Eigen::MatrixXd B = right_hand_sides(w.size(), 5);
  bool indefinite = true;
  const std::optional<Eigen::MatrixXd> U = evidence::solve_exact_hessian_by_blocks(posterior, w, B, false, &indefinite);
  ASSERT_TRUE(U.has_value());
  EXPECT_FALSE(indefinite);
  EXPECT_LT(relative_error(*U, H.llt().solve(B)), 1e-10);
}

TEST(ExactHessianByBlocks, EqualsTheFactoredHessianForAGaussianNetwork) {
  const Posterior posterior = testing::tanh_teacher_posterior(3, 25, 12);  // W = 61 ≥ 2n = 50
  const Eigen::VectorXd w = map_of(posterior);
  const Eigen::MatrixXd H = exact_hessian(posterior, w);
  const Eigen::MatrixXd B = right_hand_sides(w.size(), 3);
  const std::optional<Eigen::MatrixXd> U = evidence::solve_exact_hessian_by_blocks(posterior, w, B, false);
  ASSERT_TRUE(U.has_value());
  EXPECT_LT(relative_error(*U, H.llt().solve(B)), 1e-10);
}

// D = P + R's blocks come from the network (Mlp::curvature_blocks) where P is diagonal — ridge,
// MacKay's groups, ARD — and from D formed in full and its connected sets where it is not (graph
// smoothing couples a unit's input weights, still within the unit's block): the same answers.
TEST(ExactHessianByBlocks, EqualsTheFactoredHessianForEveryPrior) {
  for (const PriorKind kind : {PriorKind::kRidge, PriorKind::kGroups, PriorKind::kArd, PriorKind::kLaplacian}) {
    SCOPED_TRACE(to_string(kind));
    PriorSpec spec;
    spec.kind = kind;
    spec.alpha = 0.5;
    spec.smoothing = 2.0;
    if (kind == PriorKind::kLaplacian) spec.graph = chain_graph(4);
    const Posterior posterior = classifier(40, {20}, 5, spec);
    const Eigen::VectorXd w = map_of(posterior);
    const Eigen::MatrixXd H = exact_hessian(posterior, w);
    ASSERT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H, Eigen::EigenvaluesOnly).eigenvalues()[0], 0.0);
    const Eigen::MatrixXd B = right_hand_sides(w.size(), 3);
    const std::optional<Eigen::MatrixXd> U = evidence::solve_exact_hessian_by_blocks(posterior, w, B, false);
    ASSERT_TRUE(U.has_value());
    EXPECT_LT(relative_error(*U, H.llt().solve(B)), 1e-10);
  }
}

// Away from a minimum ∇∇S is indefinite: the pivots say so; the solve is refused unless an
// indefinite one is asked for, and then it is LU's.
TEST(ExactHessianByBlocks, CountsNegativeEigenvaluesAndSolvesAnIndefiniteHessianOnlyWhenAsked) {
  const Posterior posterior = classifier(40, {20});
  Rng rng(4);
  const Eigen::VectorXd w = 3.0 * rng.normal_vector(posterior.dim());
  const Eigen::MatrixXd H = exact_hessian(posterior, w);
  ASSERT_LT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(H, Eigen::EigenvaluesOnly).eigenvalues()[0], 0.0);
  const Eigen::MatrixXd B = right_hand_sides(w.size(), 4);
  bool indefinite = false;
  EXPECT_FALSE(evidence::solve_exact_hessian_by_blocks(posterior, w, B, false, &indefinite).has_value());
  EXPECT_TRUE(indefinite);
  const std::optional<Eigen::MatrixXd> U = evidence::solve_exact_hessian_by_blocks(posterior, w, B, true, &indefinite);
  ASSERT_TRUE(U.has_value());
  EXPECT_TRUE(indefinite);
  EXPECT_LT(relative_error(*U, H.partialPivLu().solve(B)), 1e-9);
}

// Two hidden layers couple every unit of one layer with every unit of the next (no small blocks),
// and with more than half as many rows as weights the full factor is about as cheap: both decline.
TEST(ExactHessianByBlocks, DeclinesWhereTheBlocksOrTheRowsGiveNoGain) {
  const Posterior deep = classifier(40, {12, 12});  // W = 60 + 156 + 13 = 229 > 40, one block of all hidden weights
  const Eigen::VectorXd w_deep = map_of(deep);
  EXPECT_FALSE(evidence::solve_exact_hessian_by_blocks(deep, w_deep, right_hand_sides(w_deep.size(), 2), true));
  const Posterior tall = classifier(61, {20});  // 2n = 122 > W = 121
  const Eigen::VectorXd w_tall = map_of(tall);
  EXPECT_FALSE(evidence::solve_exact_hessian_by_blocks(tall, w_tall, right_hand_sides(w_tall.size(), 2), true));
}

}  // namespace
}  // namespace occam

// The dense kernels of src/core/linalg.h (OpenBLAS + LAPACKE, or Eigen) against Eigen's own dense
// routines, and the same bits whatever the thread count.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <string>
#include <tuple>

#include "core/linalg.h"
#include "occam/linear_algebra.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {
namespace {

using Eigen::Index;

Eigen::MatrixXd random_matrix(Index rows, Index cols, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::MatrixXd M(rows, cols);
  for (Index j = 0; j < cols; ++j)
    for (Index i = 0; i < rows; ++i) M(i, j) = rng.normal();
  return M;
}

// Restores one thread, the default, whatever a test did.
class LinearAlgebra : public ::testing::Test {
 protected:
  void TearDown() override { set_linear_algebra_threads(1); }
};

TEST_F(LinearAlgebra, KernelsAgreeWithEigen) {
  const Index n = 300, k = 700;
  const Eigen::MatrixXd Z = random_matrix(k, n, 1);  // k × n
  Eigen::MatrixXd M = Eigen::MatrixXd::Constant(n, n, 7.0);
  M.triangularView<Eigen::Upper>().setZero();
  internal::rank_update_upper(Z, &M);  // upper += ZᵀZ, lower untouched
  const Eigen::MatrixXd ZtZ = Z.transpose() * Z;
  EXPECT_LT(
      (Eigen::MatrixXd(M.triangularView<Eigen::Upper>()) - Eigen::MatrixXd(ZtZ.triangularView<Eigen::Upper>())).norm(),
      1e-12 * ZtZ.norm());
  const Eigen::MatrixXd lower_after = M.triangularView<Eigen::StrictlyLower>();
  const Eigen::MatrixXd lower_before = Eigen::MatrixXd::Constant(n, n, 7.0).triangularView<Eigen::StrictlyLower>();
  EXPECT_TRUE(lower_after == lower_before);

  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(n, n);
  const Eigen::MatrixXd U = Z.transpose();  // n × k
  internal::rank_update_lower(U, &K);
  EXPECT_LT((Eigen::MatrixXd(K.triangularView<Eigen::Lower>()) -
             Eigen::MatrixXd((U * U.transpose()).triangularView<Eigen::Lower>()))
                .norm(),
            1e-12 * ZtZ.norm());

  // Cholesky in place leaves the strictly upper triangle as it was.
  Eigen::MatrixXd A = ZtZ;
  A.diagonal().array() += 1.0;
  Eigen::MatrixXd F = A;
  F.triangularView<Eigen::StrictlyUpper>().setConstant(-3.0);
  ASSERT_TRUE(internal::cholesky_lower_in_place(&F));
  const Eigen::MatrixXd L = A.llt().matrixL();
  EXPECT_LT((Eigen::MatrixXd(F.triangularView<Eigen::Lower>()) - L).norm(), 1e-12 * L.norm());
  const Eigen::MatrixXd upper_after = F.triangularView<Eigen::StrictlyUpper>();
  const Eigen::MatrixXd upper_before = Eigen::MatrixXd::Constant(n, n, -3.0).triangularView<Eigen::StrictlyUpper>();
  EXPECT_TRUE(upper_after == upper_before);
  Eigen::MatrixXd not_definite = -A;
  EXPECT_FALSE(internal::cholesky_lower_in_place(&not_definite));

  Eigen::MatrixXd X = random_matrix(n, 5, 2);
  const Eigen::MatrixXd X0 = X;
  internal::triangular_solve_lower(F, false, X);
  EXPECT_LT((L * X - X0).norm(), 1e-10 * X0.norm());
  internal::triangular_solve_lower(F, true, X);
  EXPECT_LT((X - A.llt().solve(X0)).norm(), 1e-10 * X.norm());

  Eigen::VectorXd values;
  Eigen::MatrixXd vectors;
  ASSERT_TRUE(internal::symmetric_eigen(A, &values, &vectors));
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(A, Eigen::EigenvaluesOnly);
  EXPECT_LT((values - eig.eigenvalues()).norm(), 1e-11 * eig.eigenvalues().norm());
  EXPECT_LT((vectors * values.asDiagonal() * vectors.transpose() - A).norm(), 1e-11 * A.norm());
  EXPECT_LT((vectors.transpose() * vectors - Eigen::MatrixXd::Identity(n, n)).norm(), 1e-12 * n);
}

TEST_F(LinearAlgebra, ResultsDoNotDependOnTheThreadCount) {
  // Sizes above OpenBLAS's thresholds for splitting work across threads.
  const Index n = 600;
  const Eigen::MatrixXd Z = random_matrix(1500, n, 3);
  auto run = [&](int threads) {
    set_linear_algebra_threads(threads);
    EXPECT_EQ(linear_algebra_threads(), threads);
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(n, n);
    internal::rank_update_upper(Z, &A);
    A.triangularView<Eigen::StrictlyLower>() = A.transpose();
    A.diagonal().array() += 1.0;
    Eigen::MatrixXd F = A;
    internal::cholesky_lower_in_place(&F);
    Eigen::MatrixXd X = Eigen::MatrixXd::Identity(n, n);
    internal::triangular_solve_lower(F, false, X);
    Eigen::VectorXd values;
    Eigen::MatrixXd vectors;
    internal::symmetric_eigen(A, &values, &vectors);
    return std::tuple{A, Eigen::MatrixXd(F.triangularView<Eigen::Lower>()), X, values, vectors};
  };
  const auto one = run(1), two = run(2);
  EXPECT_TRUE(std::get<0>(one) == std::get<0>(two));
  EXPECT_TRUE(std::get<1>(one) == std::get<1>(two));
  EXPECT_TRUE(std::get<2>(one) == std::get<2>(two));
  EXPECT_TRUE(std::get<3>(one) == std::get<3>(two));
  EXPECT_TRUE(std::get<4>(one) == std::get<4>(two));
}

TEST_F(LinearAlgebra, ThreadCountIsValidatedAndBackendNamed) {
  EXPECT_THROW(set_linear_algebra_threads(0), Error);
  const std::string backend = linear_algebra_backend();
  EXPECT_TRUE(backend == "openblas" || backend == "eigen");
  EXPECT_EQ(linear_algebra_threads(), 1);
}

}  // namespace
}  // namespace occam

// gauss_hermite.h — Gauss–Hermite rules for expectations under a normal distribution.
#pragma once

#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <cmath>

namespace occam::internal {

// Nodes x_i and weights w_i (Σ w_i = 1) with E g(Z) ≈ Σ w_i g(x_i) for Z ~ N(0, 1), exact for
// polynomials of degree < 2n. Golub & Welsch (1969): the nodes are the eigenvalues of the Jacobi
// matrix of the probabilists' Hermite polynomials (off-diagonal √k), the weights the squared
// first components of its normalised eigenvectors.
struct GaussHermite {
  Eigen::VectorXd nodes, weights;
  explicit GaussHermite(int n) {
    Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, n);
    for (int k = 1; k < n; ++k) J(k, k - 1) = J(k - 1, k) = std::sqrt(static_cast<double>(k));
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(J);
    nodes = eig.eigenvalues();
    weights = eig.eigenvectors().row(0).transpose().array().square();
  }
};

}  // namespace occam::internal

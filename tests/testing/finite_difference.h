// Central finite differences, the reference that analytic derivatives are checked against.
//
//   auto f = [&](const Eigen::VectorXd& x) { return x.squaredNorm(); };
//   Eigen::VectorXd g = occam::testing::fd_gradient(f, x);
//   EXPECT_LT(occam::testing::relative_error(analytic, g), 1e-6);
//
// Each step is h = step·max(1, |x_i|) (central differences have error O(h²) from truncation and
// O(ε/h) from rounding; step ≈ 1e-5 balances them for well-scaled problems). A function may
// return a scalar, a vector or a matrix; matrices are flattened column-major.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace occam::testing {

namespace internal {
inline Eigen::VectorXd flatten(double y) { return Eigen::VectorXd::Constant(1, y); }
template <class Derived>
Eigen::VectorXd flatten(const Eigen::DenseBase<Derived>& y) {
  Eigen::MatrixXd m = y;
  return Eigen::Map<const Eigen::VectorXd>(m.data(), m.size());
}
}  // namespace internal

// The directional derivative (f(x + hv) − f(x − hv)) / 2h of a scalar, vector or matrix function,
// with h = step·max(1, ‖x‖∞)/max(1, ‖v‖∞).
template <class F>
Eigen::VectorXd fd_directional(F&& f, const Eigen::VectorXd& x, const Eigen::VectorXd& v, double step = 1e-5) {
  const double h = step * std::max(1.0, x.cwiseAbs().maxCoeff()) / std::max(1.0, v.cwiseAbs().maxCoeff());
  return (internal::flatten(f(x + h * v)) - internal::flatten(f(x - h * v))) / (2.0 * h);
}

// The Jacobian ∂f/∂x (one row per entry of f, one column per entry of x).
template <class F>
Eigen::MatrixXd fd_jacobian(F&& f, const Eigen::VectorXd& x, double step = 1e-5) {
  Eigen::MatrixXd J;
  Eigen::VectorXd xp = x, xm = x;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double h = step * std::max(1.0, std::abs(x[i]));
    xp[i] = x[i] + h;
    xm[i] = x[i] - h;
    const Eigen::VectorXd column = (internal::flatten(f(xp)) - internal::flatten(f(xm))) / (2.0 * h);
    if (i == 0) J.resize(column.size(), x.size());
    J.col(i) = column;
    xp[i] = xm[i] = x[i];
  }
  return J;
}

// The gradient of a scalar function.
template <class F>
Eigen::VectorXd fd_gradient(F&& f, const Eigen::VectorXd& x, double step = 1e-5) {
  return fd_jacobian(f, x, step).row(0).transpose();
}

// The Hessian of a scalar function from central differences of its analytic gradient g(x).
template <class G>
Eigen::MatrixXd fd_hessian_from_gradient(G&& g, const Eigen::VectorXd& x, double step = 1e-5) {
  return fd_jacobian(g, x, step);
}

// max_i |a_i − b_i| / (|b_i| + floor·max_j |b_j|): relative per entry, with entries far below the
// largest judged against floor·max instead of themselves (their finite differences carry the
// absolute rounding error of the large ones). b is the reference; 0 when a == b, and infinite
// when the shapes differ or an entry is not finite.
template <class A, class B>
double relative_error(const Eigen::DenseBase<A>& a, const Eigen::DenseBase<B>& b, double floor = 1e-3) {
  const Eigen::MatrixXd x = a.derived().template cast<double>(), y = b.derived().template cast<double>();
  if (x.rows() != y.rows() || x.cols() != y.cols()) return INFINITY;
  if (!x.allFinite() || !y.allFinite()) return INFINITY;
  const double scale = floor * y.cwiseAbs().maxCoeff();
  double worst = 0.0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double diff = std::abs(x.data()[i] - y.data()[i]);
    if (diff > 0.0) worst = std::max(worst, diff / (std::abs(y.data()[i]) + scale));
  }
  return worst;
}

}  // namespace occam::testing

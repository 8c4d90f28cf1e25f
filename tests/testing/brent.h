// Brent's one-dimensional maximiser (golden section with parabolic steps; Brent 1973, ch. 5), the
// reference that the evidence engine's hyperparameters are checked against.
//
//   double x = occam::testing::brent_maximize(f, -5.0, 5.0, 1e-10);
#pragma once

#include <cmath>
#include <limits>

namespace occam::testing {

// The argmax of f on [a, b] to within about tolerance·|x| + √ε (f unimodal there).
template <class F>
double brent_maximize(F&& f, double a, double b, double tolerance, int max_iterations = 500) {
  const double golden = 0.5 * (3.0 - std::sqrt(5.0));
  const double eps = std::sqrt(std::numeric_limits<double>::epsilon());
  double x = a + golden * (b - a), w = x, v = x;
  double fx = -f(x), fw = fx, fv = fx;  // minimise −f
  double d = 0.0, e = 0.0;
  for (int it = 0; it < max_iterations; ++it) {
    const double middle = 0.5 * (a + b);
    const double tol1 = tolerance * std::abs(x) + eps * 1e-3, tol2 = 2.0 * tol1;
    if (std::abs(x - middle) <= tol2 - 0.5 * (b - a)) break;
    bool golden_step = true;
    if (std::abs(e) > tol1) {
      // A parabola through (v, fv), (w, fw), (x, fx).
      double r = (x - w) * (fx - fv), q = (x - v) * (fx - fw), p = (x - v) * q - (x - w) * r;
      q = 2.0 * (q - r);
      if (q > 0.0) p = -p;
      q = std::abs(q);
      const double previous = e;
      e = d;
      if (std::abs(p) < std::abs(0.5 * q * previous) && p > q * (a - x) && p < q * (b - x)) {
        d = p / q;
        const double u = x + d;
        if (u - a < tol2 || b - u < tol2) d = middle > x ? tol1 : -tol1;
        golden_step = false;
      }
    }
    if (golden_step) {
      e = (x >= middle ? a : b) - x;
      d = golden * e;
    }
    const double u = std::abs(d) >= tol1 ? x + d : x + (d > 0.0 ? tol1 : -tol1);
    const double fu = -f(u);
    if (fu <= fx) {
      (u >= x ? a : b) = x;
      v = w, fv = fw;
      w = x, fw = fx;
      x = u, fx = fu;
    } else {
      (u < x ? a : b) = u;
      if (fu <= fw || w == x) {
        v = w, fv = fw;
        w = u, fw = fu;
      } else if (fu <= fv || v == x || v == w) {
        v = u, fv = fu;
      }
    }
  }
  return x;
}

}  // namespace occam::testing

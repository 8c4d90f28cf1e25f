// A plain Nelder–Mead simplex maximiser (Nelder & Mead 1965, with the standard coefficients):
// an optimiser that shares no code with the library, for checking its fixed points.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

namespace occam::testing {

inline Eigen::VectorXd nelder_mead_maximize(const std::function<double(const Eigen::VectorXd&)>& f,
                                            const Eigen::VectorXd& start, double step, int iterations) {
  const Eigen::Index n = start.size();
  std::vector<Eigen::VectorXd> x(static_cast<std::size_t>(n + 1), start);
  for (Eigen::Index i = 0; i < n; ++i) x[static_cast<std::size_t>(i + 1)][i] += step;
  std::vector<double> v(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) v[i] = -f(x[i]);
  std::vector<std::size_t> order(x.size());
  for (int it = 0; it < iterations; ++it) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[order.size() - 2];
    Eigen::VectorXd centroid = Eigen::VectorXd::Zero(n);
    for (std::size_t i = 0; i + 1 < order.size(); ++i) centroid += x[order[i]];
    centroid /= static_cast<double>(n);
    const Eigen::VectorXd reflected = centroid + (centroid - x[worst]);
    const double fr = -f(reflected);
    if (fr < v[best]) {
      const Eigen::VectorXd expanded = centroid + 2.0 * (centroid - x[worst]);
      const double fe = -f(expanded);
      if (fe < fr) {
        x[worst] = expanded;
        v[worst] = fe;
      } else {
        x[worst] = reflected;
        v[worst] = fr;
      }
    } else if (fr < v[second]) {
      x[worst] = reflected;
      v[worst] = fr;
    } else {
      const Eigen::VectorXd contracted = centroid + 0.5 * (x[worst] - centroid);
      const double fc = -f(contracted);
      if (fc < v[worst]) {
        x[worst] = contracted;
        v[worst] = fc;
      } else {
        for (std::size_t i = 0; i < x.size(); ++i) {
          if (i == best) continue;
          x[i] = x[best] + 0.5 * (x[i] - x[best]);
          v[i] = -f(x[i]);
        }
      }
    }
  }
  const auto best = std::min_element(v.begin(), v.end()) - v.begin();
  return x[static_cast<std::size_t>(best)];
}

}  // namespace occam::testing

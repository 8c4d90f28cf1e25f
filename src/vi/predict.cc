// predict.cc (vi) — the predictive distribution from a variational posterior q = N(m, V).

#include <algorithm>
#include <cmath>
#include <vector>

#include "occam/status.h"
#include "occam/vi.h"

namespace occam {
namespace {

// The empirical p-quantile of sorted values (Hyndman & Fan 1996, type 7), as predict.cc uses.
double quantile_sorted(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

Prediction predict(const Network& network, const Likelihood& likelihood, const GaussianVariational& q,
                   const Eigen::MatrixXd& X, const PredictOptions& options) {
  options.validate();
  if (network.num_outputs() != 1) {
    throw Error(ErrorKind::kInvalidArgument, "predict: only single-output networks are supported here, this one has " +
                                                 std::to_string(network.num_outputs()) + " outputs");
  }
  if (X.cols() != network.num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the network takes " + std::to_string(network.num_inputs()) +
                                                 " inputs but the data have " + std::to_string(X.cols()));
  }
  if (q.dim() != network.num_params()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the posterior has " + std::to_string(q.dim()) +
                                                 " parameters but the network " + std::to_string(network.num_params()));
  }
  const Index n = X.rows();
  Prediction p;
  if (options.method == PredictiveMethod::kLinearized) {
    // f ≈ f(x; m) + gᵀ(w − m), w ~ N(m, V): var f = gᵀVg.
    Eigen::VectorXd f_mean(n), f_var(n), var;
    Eigen::MatrixXd F, J;
    for (Index start = 0; start < n; start += options.batch_rows) {
      const Index rows = std::min(options.batch_rows, n - start);
      const auto Xb = X.middleRows(start, rows);
      network.forward(q.mean(), Xb, &F);
      network.jacobian(q.mean(), Xb, &J);
      f_mean.segment(start, rows) = F.col(0);
      f_var.segment(start, rows) = q.quadratic_form(J.transpose());
    }
    likelihood.predictive(f_mean, f_var, options.level, &p.mean, &var, &p.lower, &p.upper);
    p.std = var.cwiseSqrt();
    return p;
  }
  // ∫ p(y|x, w) q(w) dw by simple Monte Carlo: w_s ~ q, y_s ~ p(y | f(x; w_s)); the same stream
  // as the Laplace predictive, so equal seeds give comparable draws.
  const int S = options.samples;
  Rng rng(options.seed, /*stream=*/0x70726564);
  Eigen::MatrixXd draws(n, S), F;
  for (int s = 0; s < S; ++s) {
    network.forward(q.sample(rng), X, &F);
    for (Index i = 0; i < n; ++i) draws(i, s) = likelihood.sample(F(i, 0), rng);
  }
  p.mean = draws.rowwise().mean();
  p.std = ((draws.colwise() - p.mean).rowwise().squaredNorm() / static_cast<double>(S - 1)).cwiseSqrt();
  p.lower.resize(n);
  p.upper.resize(n);
  std::vector<double> row(static_cast<std::size_t>(S));
  for (Index i = 0; i < n; ++i) {
    for (int s = 0; s < S; ++s) row[static_cast<std::size_t>(s)] = draws(i, s);
    std::sort(row.begin(), row.end());
    p.lower[i] = quantile_sorted(row, 0.5 - 0.5 * options.level);
    p.upper[i] = quantile_sorted(row, 0.5 + 0.5 * options.level);
  }
  return p;
}

}  // namespace occam

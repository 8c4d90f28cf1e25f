#include "occam/receptive_field.h"

#include <cmath>
#include <numbers>

#include "occam/likelihood.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {

void ReceptiveFieldOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("ReceptiveFieldOptions", field, value, rule);
  };
  if (rows < 1) fail("rows", static_cast<double>(rows), "must be at least 1");
  if (cols < 2) fail("cols", static_cast<double>(cols), "must be at least 2");
  if (samples < 2) fail("samples", static_cast<double>(samples), "must be at least 2");
  if (!(baseline_rate > 0.0)) fail("baseline_rate", baseline_rate, "must be positive");
  if (!(filter_gain > 0.0)) fail("filter_gain", filter_gain, "must be positive");
}

ReceptiveField simulate_receptive_field(const ReceptiveFieldOptions& options) {
  options.validate();
  const Index R = options.rows, C = options.cols, D = R * C;
  ReceptiveField rf;
  rf.graph = R == 1 ? chain_graph(C) : grid_graph(R, C);
  rf.filter.resize(D);
  // A Gabor patch centred on the grid: envelope width a fifth of the side, two cycles across it.
  for (Index r = 0; r < R; ++r) {
    for (Index c = 0; c < C; ++c) {
      const double u = (static_cast<double>(c) - 0.5 * (C - 1)) / C;
      const double v = R == 1 ? 0.0 : (static_cast<double>(r) - 0.5 * (R - 1)) / R;
      rf.filter[r * C + c] =
          std::exp(-(u * u + v * v) / (2.0 * 0.2 * 0.2)) * std::cos(2.0 * std::numbers::pi * 2.0 * (u + 0.5 * v));
    }
  }
  rf.filter *= options.filter_gain / rf.filter.norm();  // sd of kᵀx for x ~ N(0, I) is ‖k‖
  rf.intercept = std::log(options.baseline_rate);
  Rng rng(options.seed);
  const PoissonLikelihood poisson;
  rf.X.resize(options.samples, D);
  rf.Y.resize(options.samples, 1);
  for (Index n = 0; n < options.samples; ++n) {
    for (Index d = 0; d < D; ++d) rf.X(n, d) = rng.normal();
    rf.Y(n, 0) = poisson.sample(rf.intercept + rf.X.row(n).dot(rf.filter), rng);
  }
  return rf;
}

}  // namespace occam

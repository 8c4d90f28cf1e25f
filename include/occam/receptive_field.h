// receptive_field.h — a simulated neuron for the GLM demo and tests: Poisson spike counts whose
// log-rate is a smooth receptive field k applied to a white-noise stimulus.
//
//   occam::ReceptiveField rf = occam::simulate_receptive_field({.rows = 1, .cols = 40, .samples = 400});
//   // rf.X (m × D stimuli), rf.Y (m × 1 counts), rf.filter (D): fit a Poisson GLM to X, Y.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "occam/prior.h"

namespace occam {

struct ReceptiveFieldOptions {
  Eigen::Index rows = 1;  // 1: a 1-D filter of `cols` taps; else a rows × cols 2-D filter
  Eigen::Index cols = 40;
  Eigen::Index samples = 400;  // m stimulus frames
  double baseline_rate = 1.0;  // expected count per frame at a zero stimulus
  double filter_gain = 0.6;    // sd of the filter response kᵀx over white-noise stimuli
  std::uint64_t seed = 1;
  void validate() const;
};

struct ReceptiveField {
  Eigen::MatrixXd X;       // m × D white-noise stimuli, N(0, 1) per pixel
  Eigen::MatrixXd Y;       // m × 1 spike counts ~ Poisson(exp(b + kᵀx))
  Eigen::VectorXd filter;  // the true k (D), row-major over the grid
  double intercept = 0.0;  // the true b
  Graph graph;             // the chain or grid the filter lives on
};

// k is a Gabor patch (a Gaussian envelope times a cosine), smooth on the grid's scale.
ReceptiveField simulate_receptive_field(const ReceptiveFieldOptions& options);

}  // namespace occam

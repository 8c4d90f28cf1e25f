// prior_pieces.h — the prior precision P = Σ_j θ_j P_j taken apart into its P_j, for the
// derivatives of the evidence in log θ_j (M_j = θ_j P_j appears in every one of them).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "occam/prior.h"

namespace occam::evidence {

// A hyperparameter's P_j: the identity on its group's parameters (`indices`, dense empty), or
// the graph Laplacian of a smoothed group, a dense block at `offset`.
struct PriorPiece {
  std::vector<Index> indices;
  Eigen::MatrixXd dense;
  Index offset = 0;
};

// One piece per Prior::hyperparameters() entry.
std::vector<PriorPiece> prior_pieces(const Prior& prior);

// P_j v.
Eigen::VectorXd apply_piece(const PriorPiece& piece, const Eigen::VectorXd& v);

}  // namespace occam::evidence

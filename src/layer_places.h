// layer_places.h (internal) — where each dense layer of a network lies in the parameter vector θ,
// for the code that works with a layer's factors (its inputs and its output sensitivities) instead
// of the full Jacobian: the weighted Jacobian of the Woodbury form (weighted_jacobian.h) and the
// Gauss–Newton matrix from the layers (curvature_kernels.h).
#pragma once

#include <optional>
#include <vector>

#include "occam/network.h"

namespace occam::internal {

// A dense layer's weights are the out × in matrix of unit c and input column j; unit_major: weight
// (c, j) at weight_offset + c + j·out (an Mlp's column-major W_l), otherwise at weight_offset + j +
// c·in (a Linear's column-major B, inputs × outputs). Its biases, when it has them, at
// bias_offset + c.
struct LayerPlace {
  Index in = 0, out = 0;
  Index weight_offset = 0;
  bool unit_major = true;
  Index bias_offset = -1;  // -1: no biases
  Index weight_index(Index c, Index j) const { return weight_offset + (unit_major ? c + j * out : j + c * in); }
  // The parameter of unit c's input j, where input j = in is the bias (the constant input 1).
  Index parameter_index(Index c, Index j) const { return j < in ? weight_index(c, j) : bias_offset + c; }
  bool has_biases() const { return bias_offset >= 0; }
};

// The layers of an Mlp or a Linear, from the input side; nullopt for any other network.
std::optional<std::vector<LayerPlace>> layer_places(const Network& network);

}  // namespace occam::internal

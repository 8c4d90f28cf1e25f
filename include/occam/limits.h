// limits.h — the largest sizes occam accepts, checked before anything is allocated from them.
//
// Sizes reach the library from a user (hidden layer sizes, a grid, a low-rank R) and from files (a
// model file's layers, prior blocks and smoothing graph). Each is checked against these limits,
// with every product of sizes formed so that it cannot overflow, before memory is allocated: an
// absurd size is an Error naming the field and the size, never a signed overflow or an allocation
// without bound. What a fit will allocate at sizes within these limits is estimated by memory.h.
//
//   occam::Mlp net(2, {99999999999}, occam::Activation::kTanh);
//   // throws Error(kInvalidArgument): "mlp 2-99999999999-1: 399999999997 parameters, more than ..."
#pragma once

#include <Eigen/Core>

namespace occam {

// Parameters of one network (W). A parameter vector is then at most 16 GB, and every product of
// two sizes (W², m·W) stays within a 64-bit Index.
inline constexpr Eigen::Index kMaxParameters = (Eigen::Index{1} << 31) - 1;

// Nodes of a smoothing graph (one per network input): a 1024 × 1024 grid. Its edge list is then
// at most about 50 MB; the Laplacian prior's dense eigendecomposition needs nodes² doubles on top.
inline constexpr Eigen::Index kMaxGraphNodes = Eigen::Index{1} << 20;

}  // namespace occam

// symmetry.cc — the hidden-unit symmetry term of a network's evidence, over the units the data
// determine.
//
// The Laplace approximation sees one mode; a network with H interchangeable tanh units has H!·2^H
// that give the same function (MacKay 1992b, §4), and its evidence is the sum over them. A unit
// the evidence has pruned — every outgoing weight held at its prior by a large α — is not such a
// mode: permuting it with another pruned unit, or flipping its sign, moves within the same broad
// region of weight space the Laplace approximation already covers. Counting it would let a bigger
// network win a comparison on the symmetry term alone.
#include <cmath>
#include <numbers>

#include "occam/evidence.h"
#include "occam/mlp.h"

namespace occam {

std::vector<Index> well_determined_hidden_units(const Posterior& posterior, const LaplaceApproximation& q) {
  const auto* mlp = dynamic_cast<const Mlp*>(&posterior.network());
  if (mlp == nullptr) return {};
  const std::vector<Index>& sizes = mlp->layer_sizes();  // {D, H_1, ..., K}
  const Eigen::VectorXd variance = q.covariance_diagonal();
  const Eigen::VectorXd precision = posterior.prior().precision_diagonal();
  // θ is laid out layer by layer: W_l (out × in, column-major) then b_l (mlp.h).
  std::vector<Index> offsets(sizes.size(), 0);
  for (std::size_t l = 1; l < sizes.size(); ++l) {
    offsets[l] = (l == 1 ? 0 : offsets[l - 1] + sizes[l - 1] * sizes[l - 2] + sizes[l - 1]);
  }
  std::vector<Index> units;
  for (std::size_t h = 1; h + 1 < sizes.size(); ++h) {
    // Unit j's outgoing weights are column j of W_{h+1}.
    const Index next = sizes[h + 1];
    Index count = 0;
    for (Index j = 0; j < sizes[h]; ++j) {
      double best = 0.0;
      for (Index r = 0; r < next; ++r) {
        const Index i = offsets[h + 1] + j * next + r;
        best = std::max(best, 1.0 - precision[i] * variance[i]);
      }
      if (best >= 0.5) ++count;
    }
    units.push_back(count);
  }
  return units;
}

double symmetry_log_factor(const Network& network, const std::vector<Index>& units_per_layer) {
  const auto* mlp = dynamic_cast<const Mlp*>(&network);
  if (mlp == nullptr) return 0.0;
  // The sign flip is a symmetry for tanh (odd) and for the logistic sigmoid (σ(−a) = 1 − σ(a),
  // absorbed by the next layer's bias), as in symmetry_log_factor(const Network&).
  const bool sign_flip = mlp->activation() == Activation::kTanh || mlp->activation() == Activation::kSigmoid;
  double log_factor = 0.0;
  for (const Index units : units_per_layer) {
    const double H = static_cast<double>(units);
    log_factor += std::lgamma(H + 1.0) + (sign_flip ? H * std::numbers::ln2 : 0.0);
  }
  return log_factor;
}

}  // namespace occam

// symmetry.cc — the hidden-unit symmetry term of a network's evidence, over the units the data
// determine.
//
// The Laplace approximation sees one mode; a network with H interchangeable tanh units has H!·2^H
// that give the same function (MacKay 1992b, §4), and its evidence is the sum over them. A unit
// the evidence has pruned — every outgoing weight held at its prior by a large α — is not such a
// mode: permuting it with another pruned unit, or flipping its sign, moves within the same broad
// region of weight space the Laplace approximation already covers. Counting it would let a bigger
// network win a comparison on the symmetry term alone.
#include <algorithm>

#include "occam/evidence.h"

namespace occam {

std::vector<Index> well_determined_hidden_units(const Posterior& posterior, const LaplaceApproximation& q) {
  const std::vector<DenseLayer> layers = posterior.network().dense_layers();
  if (layers.size() < 2) return {};
  const Eigen::VectorXd variance = q.covariance_diagonal();
  const Eigen::VectorXd precision = posterior.prior().precision_diagonal();
  std::vector<Index> units;
  for (std::size_t h = 0; h + 1 < layers.size(); ++h) {
    // Unit j of hidden layer h feeds input j of the next layer: its outgoing weights.
    const DenseLayer& next = layers[h + 1];
    Index count = 0;
    for (Index j = 0; j < layers[h].out; ++j) {
      double best = 0.0;
      for (Index r = 0; r < next.out; ++r) {
        const Index i = next.weight_index(r, j);
        best = std::max(best, 1.0 - precision[i] * variance[i]);
      }
      if (best >= 0.5) ++count;
    }
    units.push_back(count);
  }
  return units;
}

double symmetry_log_factor(const Network& network, const std::vector<Index>& units_per_layer) {
  return network.symmetry_log_factor(units_per_layer);
}

}  // namespace occam

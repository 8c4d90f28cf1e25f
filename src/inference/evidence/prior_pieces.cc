#include "inference/evidence/prior_pieces.h"

namespace occam::evidence {

std::vector<PriorPiece> prior_pieces(const Prior& prior) {
  std::vector<PriorPiece> pieces(static_cast<std::size_t>(prior.num_hyperparameters()));
  for (Index i = 0; i < prior.dim(); ++i) pieces[static_cast<std::size_t>(prior.group_of()[i])].indices.push_back(i);
  if (const auto& s = prior.smoothing()) {
    // L = D − A Kronecker-expanded over the copies, in the group's layout (prior.h, Smoothing).
    PriorPiece& piece = pieces.back();
    const Index nodes = s->graph.nodes, copies = s->copies;
    piece.offset = prior.groups()[static_cast<std::size_t>(s->group)].blocks[0].offset;
    piece.indices.clear();
    piece.dense = Eigen::MatrixXd::Zero(nodes * copies, nodes * copies);
    const Eigen::MatrixXd L = Eigen::MatrixXd(graph_laplacian(s->graph));
    for (Index c = 0; c < copies; ++c) {
      for (Index a = 0; a < nodes; ++a) {
        for (Index b = 0; b < nodes; ++b) {
          const Index i = s->node_major ? a * copies + c : c * nodes + a;
          const Index j = s->node_major ? b * copies + c : c * nodes + b;
          piece.dense(i, j) = L(a, b);
        }
      }
    }
  }
  return pieces;
}

Eigen::VectorXd apply_piece(const PriorPiece& piece, const Eigen::VectorXd& v) {
  Eigen::VectorXd out = Eigen::VectorXd::Zero(v.size());
  if (piece.dense.size() == 0) {
    for (Index i : piece.indices) out[i] = v[i];
  } else {
    const Index size = piece.dense.rows();
    out.segment(piece.offset, size).noalias() = piece.dense * v.segment(piece.offset, size);
  }
  return out;
}

}  // namespace occam::evidence

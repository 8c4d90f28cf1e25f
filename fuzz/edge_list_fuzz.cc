// The edge-list loader of the graph-Laplacian prior (`--edges`): the first byte sets the number
// of nodes (the network's inputs), the rest is the file. Any bytes are either a graph whose
// Laplacian is a valid one (symmetric, rows summing to zero, non-negative diagonal) or an
// occam::Error.
#include <Eigen/SparseCore>
#include <cmath>

#include "fuzz_input.h"
#include "occam/prior.h"
#include "occam/status.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Eigen::Index nodes = 1 + data[0] % 64;
  const occam::fuzz::InputFile file(data + 1, size - 1);
  try {
    const occam::Graph graph = occam::read_edge_list(file.path(), nodes);
    occam::fuzz::require(graph.nodes == nodes && !graph.edges.empty());
    const Eigen::SparseMatrix<double> L = occam::graph_laplacian(graph);
    const Eigen::MatrixXd dense(L);
    occam::fuzz::require(dense.allFinite());
    occam::fuzz::require((dense - dense.transpose()).cwiseAbs().maxCoeff() == 0.0);
    occam::fuzz::require((dense.diagonal().array() >= 0.0).all());
    const double scale = dense.cwiseAbs().maxCoeff();
    occam::fuzz::require(
        (dense.rowwise().sum().cwiseAbs().array() <= 1e-12 * scale * static_cast<double>(nodes)).all());
  } catch (const occam::Error&) {
  }
  return 0;
}

// sharded_posterior.h — a small network posterior whose rows are spread over processes, shared by
// tests/model/data_shard_test.cc and the MPI check program (tests/mpi/mpi_check.cc).
#pragma once

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "occam/map.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "testing/toy_data.h"

namespace occam::testing {

constexpr Eigen::Index kShardBlockRows = 64;

inline ToyData shard_test_data() { return linear_data(1000, 3, 0.3, 11); }  // 16 blocks, the last of 40 rows

// A 3-input, 2 × 6 tanh network with a Gaussian likelihood on rows [first, last) of d.
inline Posterior shard_of(const ToyData& d, Eigen::Index first, Eigen::Index last, const Communicator* comm,
                          int threads, Eigen::Index block_rows = kShardBlockRows) {
  auto net = std::make_unique<Mlp>(d.X.cols(), std::vector<Eigen::Index>{6, 6}, Activation::kTanh, 1);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 0.5);
  return Posterior(
      std::move(net), std::make_unique<GaussianLikelihood>(20.0), std::move(prior), d.X.middleRows(first, last - first),
      d.Y.middleRows(first, last - first),
      {.communicator = comm, .num_rows = d.X.rows(), .first_row = first, .block_rows = block_rows, .threads = threads});
}

inline Eigen::VectorXd shard_start(const Posterior& p) {
  Rng rng(5);
  return dynamic_cast<const Mlp&>(p.network()).initial_params(rng);
}

inline Eigen::VectorXd shard_map(const Posterior& p, MapSummary* summary = nullptr) {
  Eigen::VectorXd w = shard_start(p);
  MapOptions options;
  options.optimizer = Optimizer::kLbfgs;
  options.max_iterations = 200;
  const MapSummary s = find_map(p, options, &w);
  if (summary != nullptr) *summary = s;
  return w;
}

// This process's share of the test data, and the L-BFGS MAP all processes of comm reach together.
inline Eigen::VectorXd sharded_map(const Communicator* comm, int threads) {
  const ToyData d = shard_test_data();
  const auto [first, last] =
      RowBlocks{.num_rows = d.X.rows(), .block_rows = kShardBlockRows}.rows_of(comm->rank(), comm->size());
  return shard_map(shard_of(d, first, last, comm, threads));
}

}  // namespace occam::testing

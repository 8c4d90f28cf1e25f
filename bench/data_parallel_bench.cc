// data_parallel_bench — what the fixed-order sums over row blocks cost and what threads gain, on
// the scale benchmark's network: 20 inputs, two hidden layers of 256 tanh units, one Gaussian output
// (W = 71,425), m = 100,000 synthetic rows.
//
//   BM_Evaluate/block_rows/threads   one Posterior::evaluate (log p and its gradient) with the rows
//                                    summed in blocks of block_rows (100000: one block, the sum of
//                                    one pass) on `threads` threads
//
//   BM_Structure/structure/threads  one structured Laplace approximation at w (1: diag, 2: kron,
//                                    3: last-layer; the factors are sums over blocks of 4096 rows),
//                                    to compare with one evaluation: the MAP's cost per iteration
//
// Counters: exchanged_MB is what one process of two would all-gather per evaluation at m = 10⁶ (its
// cover's nodes of W + 1 doubles, include/occam/parallel.h), against 0.57 MB for a plain all-reduce
// of one gradient; nodes is the number of those nodes.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "occam/laplace.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/rng.h"
#include "core/parallel/fixed_order_sum.h"

namespace {

using Eigen::Index;

constexpr Index kRows = 100000, kInputs = 20;

struct Problem {
  Eigen::MatrixXd X, Y;
  Eigen::VectorXd w;
};

const Problem& problem() {
  static const Problem p = [] {
    occam::Rng rng(17);
    Problem p{Eigen::MatrixXd(kRows, kInputs), Eigen::MatrixXd(kRows, 1), {}};
    for (Index j = 0; j < kInputs; ++j)
      for (Index i = 0; i < kRows; ++i) p.X(i, j) = rng.normal();
    for (Index i = 0; i < kRows; ++i) p.Y(i, 0) = std::tanh(p.X(i, 0) + p.X(i, 1)) + 0.1 * rng.normal();
    const occam::Mlp net(kInputs, {256, 256}, occam::Activation::kTanh, 1);
    p.w = net.initial_params(rng);
    return p;
  }();
  return p;
}

void BM_Evaluate(benchmark::State& state) {
  const Problem& p = problem();
  auto net = std::make_unique<occam::Mlp>(kInputs, std::vector<Index>{256, 256}, occam::Activation::kTanh, 1);
  occam::Prior prior = occam::Prior::from_network(*net, occam::AlphaGroups::kDefault, 1.0);
  const occam::Posterior posterior(std::move(net), std::make_unique<occam::GaussianLikelihood>(10.0), std::move(prior),
                                   p.X, p.Y,
                                   {.block_rows = state.range(0), .threads = static_cast<int>(state.range(1))});
  double log_p = 0.0;
  Eigen::VectorXd grad;
  for (auto _ : state) {
    posterior.evaluate(p.w, &log_p, &grad);
    benchmark::DoNotOptimize(grad.data());
  }
  const occam::RowBlocks blocks{.num_rows = 1000000, .block_rows = state.range(0)};
  const occam::internal::FixedOrderSum tree(blocks.num_blocks());
  const auto [first, last] = blocks.blocks_of(0, 2);
  const auto nodes = static_cast<double>(tree.cover(first, last).size());
  state.counters["nodes"] = nodes;
  state.counters["exchanged_MB"] = nodes * static_cast<double>(p.w.size() + 1 + 3) * 8.0 / 1e6;
  state.counters["log_p"] = log_p;
}

BENCHMARK(BM_Evaluate)
    ->ArgNames({"block_rows", "threads"})
    ->Args({kRows, 1})
    ->Args({4096, 1})
    ->Args({4096, 2})
    ->Iterations(3)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Structure(benchmark::State& state) {
  const Problem& p = problem();
  auto net = std::make_unique<occam::Mlp>(kInputs, std::vector<Index>{256, 256}, occam::Activation::kTanh, 1);
  occam::Prior prior = occam::Prior::from_network(*net, occam::AlphaGroups::kDefault, 1.0);
  const occam::Posterior posterior(std::move(net), std::make_unique<occam::GaussianLikelihood>(10.0), std::move(prior),
                                   p.X, p.Y, {.block_rows = 4096, .threads = static_cast<int>(state.range(1))});
  const occam::HessianStructureKind kinds[] = {occam::HessianStructureKind::kDiagonal,
                                               occam::HessianStructureKind::kKronecker,
                                               occam::HessianStructureKind::kLastLayer};
  const occam::HessianStructure structure{kinds[state.range(0) - 1]};
  for (auto _ : state) {
    const occam::LaplaceApproximation q = occam::laplace(posterior, p.w, occam::HessianKind::kGgn, structure);
    benchmark::DoNotOptimize(q.log_det_precision());
  }
}

BENCHMARK(BM_Structure)
    ->ArgNames({"structure", "threads"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({3, 1})
    ->Args({2, 2})
    ->Iterations(2)
    ->Repetitions(2)
    ->ReportAggregatesOnly(true)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

// memory.h — the memory a fit will allocate, estimated from its sizes before it allocates any.
//
// Most of a fit's memory grows with the square of the number of weights W: the Laplace
// approximation and Levenberg–Marquardt hold W × W matrices (the curvature, its Cholesky factor,
// the inverse behind γ), a full-rank variational q its W × W factor and a dense MCMC metric one per
// chain. Two inputs and 3000 hidden units make W = 12001, 1.15 GB per matrix. A front end asks
// estimate_fit_memory() before it builds anything and refuses, through check_fit_memory(), with a
// message naming the size and the options that avoid it.
//
//   occam::FitMemoryRequest r{.params = net.num_params(), .rows = X.rows(), .inputs = X.cols()};
//   occam::MemoryEstimate e = occam::estimate_fit_memory(r);
//   occam::check_fit_memory(e, occam::available_memory());  // throws Error(kInvalidArgument)
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "occam/vi.h"

namespace occam {

// Which engine runs, as far as its memory is concerned.
enum class FitMemoryKind {
  kPoint,        // MAP weights by L-BFGS or Adam only (no Laplace approximation): vectors of W
  kLaplace,      // MAP, the Laplace approximation and the evidence loop: W × W matrices
  kVariational,  // a Laplace start (W × W), then q by the ELBO: its factor (family) and Adam moments
  kSampling,     // MCMC: per chain a W-vector state (W × W with a dense metric) and the draws kept
};

struct FitMemoryRequest {
  Eigen::Index params = 0;       // W
  Eigen::Index rows = 0;         // m, the training rows
  Eigen::Index inputs = 0;       // D
  Eigen::Index outputs = 1;      // K, the network's outputs
  Eigen::Index graph_nodes = 0;  // a laplacian prior's graph (its dense eigendecomposition); 0: none
  FitMemoryKind kind = FitMemoryKind::kLaplace;
  VariationalFamily family;   // kVariational
  bool dense_metric = false;  // kSampling: a W × W metric per chain
  int chains = 1;             // kSampling: chains held at once
  Eigen::Index draws = 0;     // kSampling: draws kept per chain
  // kSampling: the columns of a kept draw (sampler columns, weights, hyperparameters, monitored
  // outputs, pointwise log-likelihoods); 0: W + 7, the sampler's and the weights' only.
  Eigen::Index draw_columns = 0;
  // A structured Laplace approximation: the vectors of W it holds at once (lowrank:K's Lanczos
  // basis, min(W, 2K + 100)); 0: none.
  Eigen::Index curvature_vectors = 0;
  // A structured Laplace approximation's dense blocks: kron's Kronecker factors (Σ over the layers of
  // in² + out² entries, 4 copies: the sums over the rows, Q and G, their eigenvectors, the biases'
  // eigenvectors) or last-layer's p × p precision (p², p its weights; 3 copies: the curvature, A and
  // its Cholesky factor); 0: none.
  Eigen::Index curvature_block_entries = 0;
  double curvature_block_copies = 0.0;
  // A committee (committee.h): fits run at once (each holds what one fit holds) and the members'
  // Laplace factors kept (a W × W triangle each, dense form); 1 and 0 for one fit.
  int fits_at_once = 1;
  int models_kept = 0;
};

// What a term of the estimate holds, so that a front end can name its own options for it.
enum class MemoryTermKind {
  kData,
  kSmoothingGraph,
  kLaplace,
  kJacobian,
  kLbfgs,
  kFullRank,
  kLowRank,
  kMeanField,
  kDenseMetric,
  kDraws,
  kCurvatureVectors,
  kCurvatureBlocks,
  kCommittee
};

struct MemoryTerm {
  std::string what;  // e.g. "W × W matrices of the Laplace approximation (7.5 × 12001²)"
  double bytes = 0.0;
  MemoryTermKind kind = MemoryTermKind::kData;
};

struct MemoryEstimate {
  double bytes = 0.0;             // the peak: the sum of the terms
  std::vector<MemoryTerm> terms;  // largest first
  std::string avoid;              // the options that avoid the largest term, in library terms
  // "about 8.7 GB: W × W matrices of the Laplace approximation (7.5 × 12001²), 8.64 GB; ..."
  std::string describe() const;
};

// The peak memory of the fit, term by term. The number of W × W matrices each engine holds at once
// is read off the engines (docs/cli.md gives the measurement it was checked against); terms below
// a megabyte are left out. Throws Error(kInvalidArgument) on a negative size.
MemoryEstimate estimate_fit_memory(const FitMemoryRequest& request);

// Throws Error(kInvalidArgument) naming the estimate, its largest term, the limit and the options
// that avoid it when estimate.bytes exceeds limit_bytes; a limit ≤ 0 means no limit. `limit_name`
// says where the limit comes from ("available", "MemoryLimit.max_bytes").
void check_fit_memory(const MemoryEstimate& estimate, double limit_bytes, const std::string& limit_name = "available");

// How much memory a fit may take: fit() (fit.h) estimates its peak from the sizes alone and
// refuses, with check_fit_memory(), before it allocates anything of that size.
struct MemoryLimit {
  // Bytes. 0: the memory available when the fit starts (available_memory(); no check where that
  // cannot be read); negative: no limit.
  double max_bytes = 0.0;
  // The limit in bytes (≤ 0: none) and its name for a message.
  double resolve() const;
  std::string name() const;
};

// Bytes this process can still allocate without swapping: MemAvailable of /proc/meminfo, or the
// room left under the cgroup's memory.max when that is smaller; 0 when neither can be read.
double available_memory();

// "12 MB", "1.2 GB", ...
std::string format_bytes(double bytes);

}  // namespace occam

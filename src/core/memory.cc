// memory.cc — the memory a fit will allocate, from its sizes.
//
// Each engine's terms are counted from what it holds at its peak. The counts of W × W matrices are
// the peak resident memory of `occam fit` at two sizes, less the part that does not grow with W²
// (docs/cli.md, "Memory", has the command); they change when the engines do.

#include "occam/memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "occam/status.h"

namespace occam {
namespace {

constexpr double kDouble = sizeof(double);

// W × W matrices alive at once at the peak of MAP by Levenberg–Marquardt, the Laplace
// approximation and the evidence loop (the data Hessian H, A = H + P and its Cholesky factor, the
// factor kept in the LaplaceApproximation, L⁻¹ behind diag(A⁻¹) and γ, and the copies made on the
// way): 7.1 measured, rounded up.
constexpr double kLaplaceSquares = 7.5;
// The same for the Laplace approximation at fixed α, β that a variational fit starts from: 4.2 to
// 4.4 measured.
constexpr double kVariationalStartSquares = 4.5;
// A full-rank q on top: its factor L, the gradient with respect to it and Adam's moments over its
// W(W+1)/2 free entries: 6.4 measured.
constexpr double kFullRankSquares = 6.5;
// A dense MCMC metric per chain: the inverse mass matrix, its Cholesky factor and the running
// covariance that warm-up adapts it from.
constexpr double kDenseMetricSquares = 3.0;
// Rows of the Jacobian formed at once (posterior.cc's blocks of the data Hessian).
constexpr double kJacobianBlockRows = 2048.0;
// L-BFGS keeps this many pairs of W-vectors (MapOptions::lbfgs_memory's default).
constexpr double kLbfgsPairs = 10.0;
// Terms below this are not worth a line.
constexpr double kNegligible = 1 << 20;

std::string square(const char* what, double count, Eigen::Index n) {
  std::ostringstream s;
  s << what << " (" << count << " × " << n << "²)";
  return s.str();
}

}  // namespace

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000.0 && u < 6) {
    bytes /= 1000.0;
    ++u;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, u == 0 ? "%.0f %s" : "%.3g %s", bytes, units[u]);
  return buffer;
}

std::string MemoryEstimate::describe() const {
  std::string out = "about " + format_bytes(bytes);
  for (std::size_t i = 0; i < terms.size(); ++i) {
    out += (i == 0 ? ": " : "; ") + terms[i].what + ", " + format_bytes(terms[i].bytes);
  }
  return out;
}

MemoryEstimate estimate_fit_memory(const FitMemoryRequest& r) {
  if (r.params < 0 || r.rows < 0 || r.inputs < 0 || r.curvature_vectors < 0 || r.outputs < 0 || r.graph_nodes < 0 ||
      r.chains < 0 || r.draws < 0 || r.draw_columns < 0) {
    throw Error(ErrorKind::kInvalidArgument, "estimate_fit_memory: sizes must not be negative");
  }
  // In doubles: sizes up to 2⁶³ square without overflow or wrap-around.
  const double W = static_cast<double>(r.params), m = static_cast<double>(r.rows);
  const double D = static_cast<double>(r.inputs), K = static_cast<double>(r.outputs);
  const double n = static_cast<double>(r.graph_nodes), chains = std::max(1, r.chains);
  const double at_once = std::max(1, r.fits_at_once);
  const std::string times = r.fits_at_once > 1 ? ", " + std::to_string(r.fits_at_once) + " fits at once" : "";
  MemoryEstimate e;
  using T = MemoryTermKind;
  const auto add = [&](std::string what, double bytes, MemoryTermKind kind) {
    e.terms.push_back({std::move(what), bytes, kind});
  };

  add("the data (m × (D + K))", m * (D + K) * kDouble, T::kData);
  if (n > 0)
    add(square("the smoothing graph's dense Laplacian and its eigendecomposition", 2, r.graph_nodes),
        2.0 * n * n * kDouble, T::kSmoothingGraph);
  const bool laplace = r.kind == FitMemoryKind::kLaplace || r.kind == FitMemoryKind::kVariational;
  if (laplace) {
    const double squares = r.kind == FitMemoryKind::kLaplace ? kLaplaceSquares : kVariationalStartSquares;
    add(square("W × W matrices of the Laplace approximation", squares, r.params) + times,
        at_once * squares * W * W * kDouble, T::kLaplace);
    add("Jacobian rows formed at once (min(m, 2048)·K × W)" + times,
        at_once * std::min(m, kJacobianBlockRows) * K * W * kDouble, T::kJacobian);
  } else {
    add("L-BFGS history (20 vectors of W)", 2.0 * kLbfgsPairs * W * kDouble, T::kLbfgs);
  }
  if (r.models_kept > 0) {
    add(square("the committee's kept Laplace factors", r.models_kept, r.params),
        static_cast<double>(r.models_kept) * W * W * kDouble, T::kCommittee);
  }
  if (r.curvature_vectors > 0) {
    add("the low-rank curvature's Lanczos basis (" + std::to_string(r.curvature_vectors) + " vectors of W)",
        static_cast<double>(r.curvature_vectors) * W * kDouble, T::kCurvatureVectors);
  }
  if (r.curvature_block_entries > 0) {
    std::ostringstream what;
    what << "the structured curvature's dense blocks (" << r.curvature_block_copies << " × "
         << r.curvature_block_entries << " entries)";
    add(what.str(), r.curvature_block_copies * static_cast<double>(r.curvature_block_entries) * kDouble,
        T::kCurvatureBlocks);
  }
  if (r.kind == FitMemoryKind::kVariational) {
    switch (r.family.kind) {
      case FamilyKind::kFullRank:
        add(square("the full-rank q's factor, its gradient and Adam's moments", kFullRankSquares, r.params),
            kFullRankSquares * W * W * kDouble, T::kFullRank);
        break;
      case FamilyKind::kLowRank:
        add("the low-rank q's factor B, its gradient and Adam's moments (4 × W × R)",
            4.0 * W * static_cast<double>(std::max<Eigen::Index>(r.family.rank, 1)) * kDouble, T::kLowRank);
        break;
      case FamilyKind::kMeanField:
        add("the mean-field q, its gradient and Adam's moments (8 × W)", 8.0 * W * kDouble, T::kMeanField);
        break;
    }
  }
  if (r.kind == FitMemoryKind::kSampling) {
    if (r.dense_metric) {
      std::ostringstream what;
      what << "dense metrics (" << kDenseMetricSquares << " × " << r.params << "² per chain, " << chains << " chains)";
      add(what.str(), chains * kDenseMetricSquares * W * W * kDouble, T::kDenseMetric);
    }
    // Twice the kept rows: a chain's store grows by doubling (the old rows are copied into the new
    // block), and the weights are then copied out of it for prediction.
    const double columns = r.draw_columns > 0 ? static_cast<double>(r.draw_columns) : W + 7.0;
    std::ostringstream what;
    what << "the draws kept, twice while they are stored and pooled (2 × chains × draws × " << columns << " columns)";
    add(what.str(), 2.0 * chains * static_cast<double>(r.draws) * columns * kDouble, T::kDraws);
  }

  e.terms.erase(
      std::remove_if(e.terms.begin(), e.terms.end(), [](const MemoryTerm& t) { return t.bytes < kNegligible; }),
      e.terms.end());
  std::sort(e.terms.begin(), e.terms.end(), [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes > b.bytes; });
  for (const MemoryTerm& t : e.terms) e.bytes += t.bytes;

  // The way out of the largest term, named by the options that decide it.
  if (!e.terms.empty()) {
    switch (e.terms.front().kind) {
      case T::kLaplace:
        e.avoid =
            "a network with fewer weights (fewer hidden units or inputs), or a method without a W × W matrix: "
            "MAP weights by L-BFGS or Adam (MapOptions::optimizer) or MCMC with a diagonal metric";
        if (r.fits_at_once > 1) e.avoid += ", or fewer fits at once (CommitteeOptions::threads)";
        break;
      case T::kFullRank:
        e.avoid = "VariationalOptions::family mean-field or low-rank (lowrank:R), which hold W and W × R numbers";
        break;
      case T::kDenseMetric:
        e.avoid = "a diagonal metric (SamplerOptions::metric) or fewer chains at once";
        break;
      case T::kDraws:
        e.avoid = "fewer draws, thinning (SamplerOptions::thin) or fewer chains";
        break;
      case T::kSmoothingGraph:
        e.avoid = "a smaller smoothing graph (fewer inputs) or another prior";
        break;
      case T::kCurvatureVectors:
        e.avoid = "a smaller K in lowrank:K, or the kron, diag or last-layer structure";
        break;
      case T::kCurvatureBlocks:
        e.avoid = "fewer hidden units (kron's factor of a layer is its width squared) or the diag structure";
        break;
      case T::kCommittee:
        e.avoid = "fewer committee members (CommitteeOptions::members) or a network with fewer weights";
        break;
      default:
        e.avoid = "fewer rows or fewer weights";
    }
  }
  return e;
}

void check_fit_memory(const MemoryEstimate& estimate, double limit_bytes, const std::string& limit_name) {
  if (!(limit_bytes > 0.0) || estimate.bytes <= limit_bytes) return;
  throw Error(ErrorKind::kInvalidArgument, "this fit needs " + estimate.describe() + ", more than the " +
                                               format_bytes(limit_bytes) + " " + limit_name + "; to need less use " +
                                               estimate.avoid);
}

double MemoryLimit::resolve() const {
  if (max_bytes > 0.0) return max_bytes;
  return max_bytes == 0.0 ? available_memory() : 0.0;
}

std::string MemoryLimit::name() const { return max_bytes > 0.0 ? "allowed (MemoryLimit.max_bytes)" : "available"; }

double available_memory() {
  double available = 0.0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kb = 0.0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemAvailable:") {
      available = kb * 1024.0;
      break;
    }
  }
  // A container's limit (cgroup v2) may be tighter than the machine's free memory.
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  double current = 0.0;
  if (max_file >> max_text && max_text != "max" && current_file >> current) {
    const double room = std::max(0.0, std::strtod(max_text.c_str(), nullptr) - current);
    available = available > 0.0 ? std::min(available, room) : room;
  }
  return available;
}

}  // namespace occam

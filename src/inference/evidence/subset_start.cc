// subset_start.cc — EvidenceOptions::start_rows: the joint ascent first on a sample of the rows.
//
// On many rows the ascent's cost is in its MAP iterations, each one a Gauss–Newton curvature over
// all m rows (m·W² multiply-adds where m ≥ W), and most of them are spent far from the maximum: the
// first MAP from the random start travels a long way in small steps (protein, split 0: 805
// iterations, 28% of the fit), and the early ascent steps walk θ from its default start. Neither
// needs all the rows: the maximum of the evidence on n of them, drawn at random, should lie near
// the maximum on all m when n is several times W — the noise level β is a property of each row, the
// prior's α_g = γ_g/2E_W,g moves only as the number of well-determined parameters does — and its
// mode is a mode of a posterior a few times wider. So the ascent runs first on the sample (each
// iteration m/n times cheaper), and then on all rows from the w and θ it reached: a continuation
// in the number of rows, as the dynamic sample sizes of Byrd, Chin, Nocedal & Wu (2012, "Sample
// size selection in optimization methods for machine learning", Math. Programming 134) grow the
// sample as the iterate nears the solution. The second stage is the whole ascent, with its own
// stopping tests: the sample changes where the fit starts, never what converged means. Measured on
// the large UCI splits, where it starts is also which maximum it finds — lower on protein and power,
// higher on kin8nm (docs/BENCHMARKS.md, "A start on fewer rows, measured") — so it is an option,
// off by default.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "inference/evidence/engine.h"

namespace occam::evidence {

Posterior sample_rows(const Posterior& posterior, Index n, Rng* rng) {
  std::vector<Index> order(static_cast<std::size_t>(posterior.num_data()));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<Index>(i);
  for (Index i = 0; i < n; ++i) {  // a partial Fisher–Yates shuffle: the first n places
    const auto j = i + static_cast<Index>(rng->uniform_int(static_cast<std::uint64_t>(posterior.num_data() - i)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  order.resize(static_cast<std::size_t>(n));
  std::sort(order.begin(), order.end());
  return Posterior(posterior.network().clone(), posterior.likelihood().clone(), posterior.prior(),
                   posterior.X()(order, Eigen::all), posterior.Y()(order, Eigen::all));
}

void start_on_subset(Run& run) {
  const Index n = run.options.start_rows;
  if (n <= 0 || n >= run.posterior.num_data() || run.posterior.distributed()) return;
  const auto start = std::chrono::steady_clock::now();
  Rng rng(run.options.map.seed, kSubsetStartStream);
  Posterior sample = sample_rows(run.posterior, n, &rng);
  EvidenceOptions options = run.options;
  options.start_rows = 0;
  if (run.options.callback) {  // the sample's rounds, marked as such, to the user's callback
    options.callback = [&run, n](const EvidenceIteration& iteration) {
      EvidenceIteration marked = iteration;
      marked.sample_rows = n;
      return run.options.callback(marked);
    };
  }
  Eigen::VectorXd w = run.w;
  const EvidenceResult result = fit_evidence(&sample, options, &w);

  EvidenceSummary::SubsetStart& s = run.summary.subset_start;
  s.rows = n;
  s.termination = result.summary.termination;
  s.outer_iterations = result.summary.outer_iterations;
  s.map_iterations = result.summary.map_iterations;
  s.log_evidence = result.summary.log_evidence;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A sample whose fit failed leaves the start as it was; any other end (converged or not, or
  // stopped by the callback) is the start the option asks for, and where a stopped fit reports
  // from, so that nothing the sample reached is lost.
  if (s.termination == Termination::kFailure) return;
  run.w = w;
  set_all_hyperparameters(&run.posterior, all_hyperparameters(sample));
  if (s.termination == Termination::kAborted) {
    run.aborted = true;
    run.summary.message = "stopped by the callback during the start on " + std::to_string(n) +
                          " rows, before the ascent on all " + std::to_string(run.posterior.num_data());
  }
}

}  // namespace occam::evidence

// fit_progress.cc — what a fit reports while it runs, as one line for a person (FitProgress, fit.h).

#include <cmath>
#include <cstdio>
#include <string>

#include "occam/evidence.h"
#include "occam/fit.h"
#include "occam/map.h"
#include "occam/vi.h"

namespace occam {

std::string FitProgress::describe() const {
  if (member >= 0) {
    FitProgress inner = *this;
    inner.member = -1;
    const std::string line = inner.describe();
    return line.empty() ? line : "member " + std::to_string(member + 1) + ": " + line;
  }
  if (noise_model) {
    FitProgress inner = *this;
    inner.noise_model = false;
    const std::string line = inner.describe();
    return line.empty() ? line : "noise: " + line;
  }
  char line[200];
  if (evidence != nullptr && evidence->sample_rows > 0) {
    FitProgress inner = *this;
    EvidenceIteration on_all_rows = *evidence;
    on_all_rows.sample_rows = 0;
    inner.evidence = &on_all_rows;
    return "sample of " + std::to_string(evidence->sample_rows) + " rows: " + inner.describe();
  }
  if (evidence != nullptr) {
    std::snprintf(line, sizeof line, "round %d: log-evidence %.6g, gamma %.4g, beta %.4g%s", evidence->iteration,
                  evidence->log_evidence, evidence->gamma.sum(), evidence->beta,
                  evidence->accepted ? "" : " (lower: undone, step halved)");
  } else if (map != nullptr && map->total > 0) {
    // The full-batch gradient norm is known only after a check (NaN before one).
    const int n = std::snprintf(line, sizeof line, "epoch %d of %d: S %.6g (minibatch mean)", map->iteration,
                                map->total, map->objective);
    if (std::isfinite(map->gradient_norm) && n > 0 && n < static_cast<int>(sizeof line)) {
      std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), ", full-batch |grad| %.1e",
                    map->gradient_norm);
    }
  } else if (map != nullptr) {
    std::snprintf(line, sizeof line, "MAP %d: S %.6g, |grad| %.1e", map->iteration, map->objective, map->gradient_norm);
  } else if (variational != nullptr) {
    std::snprintf(line, sizeof line, "VI %d: ELBO %.6g, relative change %.2e", variational->iteration,
                  variational->elbo, variational->relative_change);
  } else if (chain >= 0) {
    std::snprintf(line, sizeof line, "chain %d: iteration %d of %d", chain + 1, iteration, total);
  } else if (grid_point >= 0) {
    std::snprintf(line, sizeof line, "grid point %d of %d", iteration, total);
  } else {
    return {};
  }
  return line;
}

}  // namespace occam

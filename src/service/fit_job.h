// fit_job.h (internal) — what the fit pipeline (fit.cc) hands the job of one method, and what the
// job hands back: the progress callback as each engine's iteration callback, and the posterior
// with its summary.
#pragma once

#include "occam/fit.h"

namespace occam::internal {

// Forwards every engine's iterations to the one FitCallback.
class Progress {
 public:
  explicit Progress(const FitCallback& callback) : callback_(callback) {}
  CallbackReturn operator()(const FitProgress& p) const { return callback_ ? callback_(p) : CallbackReturn::kContinue; }
  void attach(MapOptions* options) const {
    options->callback = [this](const MapIteration& it) { return (*this)(of_map(it)); };
  }
  void attach(EvidenceOptions* options) const {
    attach(&options->map);
    options->callback = [this](const EvidenceIteration& it) {
      FitProgress p;
      p.evidence = &it;
      p.iteration = it.iteration;
      return (*this)(p);
    };
  }
  void attach(VariationalOptions* options) const {
    options->callback = [this](const VariationalIteration& it) {
      FitProgress p;
      p.variational = &it;
      p.iteration = it.iteration;
      return (*this)(p);
    };
  }
  static FitProgress of_map(const MapIteration& it) {
    FitProgress p;
    p.map = &it;
    p.iteration = it.iteration;
    p.total = it.total;  // minibatch: the epochs planned
    return p;
  }

 private:
  const FitCallback& callback_;
};

// What a method's job returns to the pipeline.
struct Outcome {
  WeightPosterior posterior;
  FitSummary summary;
  double seconds_before = 0.0;  // a fit resumed from a checkpoint: the seconds it had counted
};

// The sampling job (sampling_run.cc): the chains of `method` over `posterior`, their run folder
// written as they go. `model` is the fit's model so far; the run folder's model.json is made from
// it before the first draw.
Outcome run_sampling(const SamplingMethod& method, Posterior* posterior, const Progress& progress,
                     const ModelSpec& spec, const Dataset& data, const Standardizer& standardizer, FittedModel* model);

}  // namespace occam::internal

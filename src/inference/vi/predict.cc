// predict.cc (vi) — the predictive distribution from a variational posterior q = N(m, V).

#include "occam/vi.h"
#include "inference/predict_belief.h"

namespace occam {

Prediction predict(const Network& network, const Likelihood& likelihood, const GaussianVariational& q,
                   const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  internal::WeightBelief belief;
  belief.mean = &q.mean();
  belief.factor_transpose = [&q](const Eigen::MatrixXd& G) { return q.factor_transpose(G); };
  belief.sample = [&q](Rng& rng) { return q.sample(rng); };
  // q is fitted to the nonlinear network: its own predictive averages over draws of w.
  PredictOptions chosen = options;
  if (chosen.method == PredictiveMethod::kAuto) chosen.method = PredictiveMethod::kMonteCarlo;
  return internal::predict_from_belief(network, likelihood, belief, X, chosen, offset);
}

}  // namespace occam

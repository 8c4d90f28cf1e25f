// fit_and_predict.cc — the engines below the fit service (docs/library.md): a Bayesian neural network whose
// learned by the evidence framework, and its predictive error bars.
//
// Build: cmake --build build --target example_fit_and_predict; run: ./build/example_fit_and_predict

#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <vector>

#include "occam/evidence.h"
#include "occam/likelihood.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "occam/status.h"

int main() {
  using Eigen::Index;
  try {
    // 1. Data: y = sin(πx) + N(0, 0.1²), with no inputs in (−0.3, 0.3).
    const Index m = 40;
    occam::Rng data_rng(/*seed=*/1);
    Eigen::MatrixXd X(m, 1), Y(m, 1);
    for (Index n = 0; n < m; ++n) {
      X(n, 0) = n % 2 == 0 ? -1.0 + 0.7 * data_rng.uniform() : 0.3 + 0.7 * data_rng.uniform();
      Y(n, 0) = std::sin(std::numbers::pi * X(n, 0)) + 0.1 * data_rng.normal();
    }

    // 2. The posterior p(w | D, α, β) ∝ p(D | w, β) p(w | α): network × likelihood × prior.
    auto network = std::make_unique<occam::Mlp>(/*inputs=*/1, std::vector<Index>{10}, occam::Activation::kTanh);
    occam::Rng init_rng(/*seed=*/2);
    Eigen::VectorXd w = network->initial_params(init_rng);
    // One α per weight group (MacKay 1992b); 1.0 and β = 10 are only starting values.
    occam::Prior prior = occam::Prior::from_network(*network, occam::AlphaGroups::kDefault, /*alpha=*/1.0);
    occam::Posterior posterior(std::move(network), std::make_unique<occam::GaussianLikelihood>(/*beta=*/10.0),
                               std::move(prior), X, Y);

    // 3. MAP weights and α, β by the evidence: w holds w_MAP afterwards.
    occam::EvidenceOptions options;  // MacKay's re-estimation loop with the Gauss–Newton Hessian
    const occam::EvidenceResult result = occam::fit_evidence(&posterior, options, &w);
    std::printf("%s\n\n", result.summary.brief_report().c_str());

    // 4. The linearised predictive N(f(x; w_MAP), gᵀA⁻¹g + 1/β), beyond the data as well.
    const Eigen::MatrixXd grid = Eigen::VectorXd::LinSpaced(13, -1.5, 1.5);
    const occam::Prediction p =
        occam::predict(posterior.network(), posterior.likelihood(), result.laplace, grid, occam::PredictOptions{});
    std::printf("%8s %10s %10s   95%% interval\n", "x", "mean", "std");
    for (Index i = 0; i < grid.rows(); ++i) {
      std::printf("%8.2f %10.4f %10.4f   [%.3f, %.3f]\n", grid(i, 0), p.mean[i], p.std[i], p.lower[i], p.upper[i]);
    }
  } catch (const occam::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

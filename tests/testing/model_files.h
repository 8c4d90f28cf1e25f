// Small model files written out in full, for tests of loading, refusing and predicting.
#pragma once

#include <nlohmann/json.hpp>

namespace occam::testing {

// A Poisson GLM on two inputs (x1, x2) with an intercept whose posterior mean is `bias`: the
// predicted count is about e^bias, so large biases reach the rates a double can or cannot hold.
inline nlohmann::json poisson_glm_model_file(double bias) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "format": "occam-model", "version": 1,
    "network": {"type": "linear", "inputs": 2, "outputs": 1, "intercept": true},
    "likelihood": {"type": "poisson", "offset": false},
    "prior": {"dim": 3, "groups": [{"name": "weights", "size": 2, "alpha": 1.0, "blocks": [[0, 2]]},
                                   {"name": "intercept", "size": 1, "alpha": 1.0, "blocks": [[2, 1]]}]},
    "standardizer": {"mode": "none", "x_mean": [], "x_scale": [], "y_mean": 0.0, "y_scale": 1.0},
    "features": ["x1", "x2"], "target": "count",
    "posterior": {"mean": [0.1, -0.2, 0.0], "precision_cholesky_lower_packed": [30.0, 1.0, 2.0, 30.0, 0.5, 40.0],
                  "log_det_precision": 20.4, "clipped_eigenvalues": 0},
    "summary": {}})");
  j["posterior"]["mean"][2] = bias;
  return j;
}

}  // namespace occam::testing

// io.h — the model file: everything needed to predict, as versioned JSON.
//
// {"format": "occam-model", "version": 1, "network": ..., "likelihood": ..., "prior": ...,
//  "standardizer": ..., "features": [...], "target": ..., "posterior": {mean, cholesky}, "summary": ...}
// A variational fit has "posterior_kind": "vi" and "variational": {family, mean, factor} in place
// of "posterior"; a file without "posterior_kind" is a Laplace one.
// Written atomically; doubles round-trip exactly, so a loaded model predicts bit-identically.
//
//   occam::save_model("model.json", model);
//   occam::ModelFile m = occam::load_model("model.json");
//   occam::Prediction p = occam::predict(m, X_test, occam::PredictOptions{});
#pragma once

#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/network.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/vi.h"

namespace occam {

inline constexpr int kModelFormatVersion = 1;

struct ModelFile {
  std::unique_ptr<Network> network;
  std::unique_ptr<Likelihood> likelihood;
  Prior prior;
  Standardizer standardizer;
  std::vector<std::string> feature_names;
  std::string target_name;
  std::string offset_name;         // poisson: the column added to the linear predictor ("" if none)
  LaplaceApproximation posterior;  // N(w_MAP, A⁻¹) in standardised units (empty for a VI fit)
  std::optional<GaussianVariational> variational;  // q = N(m, V) of a VI fit, in standardised units
  nlohmann::json summary;          // the fit's report, kept for reference
};

// Throws Error(kIo) when the file cannot be written; nothing is left half-written.
void save_model(const std::string& path, const ModelFile& model);
// Throws Error(kIo) when unreadable, Error(kInvalidInput) when corrupt or of a newer version.
ModelFile load_model(const std::string& path);

// The predictive distribution at inputs X in their original units (columns in the order of
// model.feature_names), from the Laplace posterior or, for a VI fit, from q: X is standardised as in training and the result is mapped back, so mean,
// std and interval are in the target's original units (mean -> y_mean + y_scale * mean, std and
// the bounds likewise). Throws Error(kInvalidArgument) when X has the wrong number of columns.
// `offset` (one per row) is required exactly when the model has an offset column.
Prediction predict(const ModelFile& model, const Eigen::MatrixXd& X, const PredictOptions& options,
                   const Eigen::VectorXd* offset = nullptr);

}  // namespace occam

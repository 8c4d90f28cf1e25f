// heteroscedastic.h — regression whose noise level depends on the inputs, by the evidence
// framework in two stages: the mean network, then a network for the log noise variance fitted to
// the mean's leverage-corrected residuals.
//
//   stage 1  the mean f(x) by LaplaceMethod with one noise level β (the `laplace` fit): w_MAP, α,
//            β and the Laplace approximation N(w_MAP, A⁻¹);
//   stage 2  a second network s(x) = log σ²(x), fitted by the evidence framework (its own MAP, α
//            and Laplace approximation) to e_n = r_n/√(1 − h_n) through the likelihood
//            e_n ~ N(0, e^{s(x_n)}), where r_n = y_n − f(x_n) and h_n = β g_nᵀA⁻¹g_n (g_n = ∂f/∂w
//            at x_n) is row n's leverage;
//   predict  y | x ~ N(f(x), gᵀA⁻¹g + e^{s(x)}).
//
// Why the correction. The fitted mean absorbs part of each row's noise: in the linearised model
// E r_n² = σ_n²(1 − h_n), and Σ_n h_n = tr(βJᵀJA⁻¹) = γ, so the rows the mean fits most closely
// (high leverage) are those whose residuals under-state their noise most. MacKay's
// β = (m − γ)/2E_D is the same correction for one noise level; here it is made row by row, which is
// REML's answer for a variance function (the derivative of the Laplace log-evidence in a row's log
// noise variance is ½(β_n r_n² − (1 − h_n)), zero where e_n² = σ_n²). Fitting s to the raw
// residuals makes the intervals too narrow exactly where the mean fits best.
//
// Why two networks and not one network with two outputs (the `hetero` likelihood): there the MAP
// fits mean and variance together, and where the mean interpolates a row its variance is driven
// towards zero, whose Fisher weight 1/σ² then pins the mean to that row — a collapse that the same
// correction, made inside the joint fit, does not stop (docs/heteroscedastic.md has the runs).
// Here the residuals are fixed data for stage 2, whose Fisher weight in s is the constant ½.
//
// Limits: the mean is fitted with one β (ordinary, not weighted, least squares), so its own
// uncertainty gᵀA⁻¹g is the homoscedastic fit's; and the noise network's uncertainty about s(x) is
// not propagated (the plug-in e^{s(x)}, as the hetero likelihood's predictive, and for its reason).
//
//   occam::HeteroscedasticModel m = occam::fit_heteroscedastic(spec, data, occam::LaplaceMethod{});
//   occam::Prediction p = m.predict(X_test);   // mean, std and 95% interval, original units
//   Eigen::VectorXd sigma = m.noise_std(X_test);
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>

#include "occam/evidence.h"
#include "occam/fit.h"
#include "occam/fitted_model.h"
#include "occam/laplace.h"
#include "occam/network.h"
#include "occam/predict.h"
#include "occam/prior.h"

namespace occam {

struct HeteroscedasticOptions {
  // The noise network's evidence fit (α by the evidence, its MAP optimiser and budget). Its
  // strategy must be kEvidence or kFixed; kFixed keeps `noise_alpha`.
  EvidenceOptions noise;
  // The noise network's hidden layers; empty: the same as the mean network's (spec.network).
  std::vector<Index> noise_hidden;
  double noise_alpha = 1.0;  // the noise network's α, every group: the start (kEvidence) or the value (kFixed)
  void validate() const;     // throws Error(kInvalidArgument) naming the bad field
};

struct HeteroscedasticModel {
  FittedModel mean;                          // stage 1: the `laplace` fit, with its β
  std::unique_ptr<Network> noise_network;    // s(x) = log σ²(x), σ in the standardised target's units
  Prior noise_prior;                         // at the fitted α
  LaplaceApproximation noise_posterior;      // of the noise network's weights
  EvidenceSummary noise_summary;             // the noise network's evidence fit
  Eigen::VectorXd leverage;                  // h_n per training row (Σ h_n = γ of the mean fit)
  double seconds = 0.0;

  HeteroscedasticModel() = default;
  HeteroscedasticModel(HeteroscedasticModel&&) noexcept = default;
  HeteroscedasticModel& operator=(HeteroscedasticModel&&) noexcept = default;

  // The predictive at X (original units): mean f(x), variance gᵀA⁻¹g + σ²(x), the Gaussian
  // central interval at options.level. Only the linearised predictive (options.method kAuto or
  // kLinearized). Throws Error(kInvalidArgument) on a column mismatch or another method.
  Prediction predict(const Eigen::MatrixXd& X, const PredictOptions& options = {}) const;
  // σ(x), the noise standard deviation the model predicts, in the target's original units.
  Eigen::VectorXd noise_std(const Eigen::MatrixXd& X) const;

  // Both stages' terminations, log-evidences and hyperparameters, for a person.
  std::string brief_report() const;
};

// Fits both stages. The spec's likelihood must be gaussian, its network an mlp, the data one
// process's whole (not a shard) and without an offset; `method` fits the mean (its strategy should
// set β: kEvidence, kQuick or kIntegrate — kFixed keeps the spec's β). The callback sees the mean's
// iterations, then the noise network's with FitProgress::noise_model set. kAbort keeps each stage's
// best state: during the mean's fit, the noise network stays at its start (one noise level for
// every x, σ² = mean e_n²) and both summaries say kAborted. Errors: Error(kInvalidArgument) for a
// spec or options it cannot fit, Error(kNumerical) when either stage leaves no usable result.
HeteroscedasticModel fit_heteroscedastic(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                         const HeteroscedasticOptions& options = {},
                                         const FitCallback& callback = {});

// The leverages h_n = β g_nᵀA⁻¹g_n of a fitted Gaussian Laplace model at its training inputs X
// (original units): the diagonal of the linearised model's hat matrix. Σ_n h_n = γ when A is the
// Gauss–Newton matrix over these rows.
Eigen::VectorXd training_leverage(const FittedModel& model, const Eigen::MatrixXd& X);

}  // namespace occam

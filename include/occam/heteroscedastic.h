// heteroscedastic.h — regression whose noise level depends on the inputs, by the evidence
// framework: the mean network, a network for the log noise variance fitted to the mean's
// leverage-corrected residuals, then the mean refitted with the precisions that network gives.
//
//   stage 1  the mean f(x) by LaplaceMethod with one noise level β (the `laplace` fit): w_MAP, α,
//            β and the Laplace approximation N(w_MAP, A⁻¹);
//   stage 2  a second network s(x) = log σ²(x), fitted by the evidence framework (its own MAP, α
//            and Laplace approximation) to e_n = r_n/√(1 − h_n) through the likelihood
//            e_n ~ N(0, e^{s(x_n)}), where r_n = y_n − f(x_n) and h_n = β g_nᵀA⁻¹g_n (g_n = ∂f/∂w
//            at x_n) is row n's leverage;
//   stage 3  (weighted_refits times, 1 by default) the mean again from its mode, by weighted least
//            squares y_n ~ N(f(x_n), 1/(βω_n)) with ω_n ∝ e^{−s(x_n)} (mean 1; GaussianLikelihood
//            with row weights), α and β by the evidence; then the noise network again, from its
//            fit, on the refit's corrected residuals, h_n = βω_n g_nᵀA⁻¹g_n;
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
// correction, made inside the joint fit, does not stop (docs/heteroscedastic.md).
// Here the residuals are fixed data for stage 2, whose Fisher weight in s is the constant ½.
//
// Why the refit. Fitted with one β, the mean weights its noisiest rows as if they were as precise as
// its quietest: A = βJᵀJ + P then over-states the mean's own variance gᵀA⁻¹g where the noise is low
// and under-states it where the noise is high, and the residuals the noise network sees are shaped by
// a fit that ignored the noise. Weighted by 1/σ²(x_n) — the likelihood the model claims — both follow
// the noise (the test TheWeightedRefitGivesTheMeanTheVarianceOfItsErrorsWhereTheNoiseIsLow).
//
// Limits: the noise network's uncertainty about s(x) is not propagated (the plug-in e^{s(x)}, as
// the hetero likelihood's predictive, and for its reason), and the weights are those of the previous
// noise fit, not re-estimated jointly with the mean.
//
// The result is a FittedModel like any other — the mean's Laplace fit, with the noise network in
// FittedModel::noise and its evidence summary in summary.noise_evidence — so predict(), save_model
// and load_model (io.h), the command line (`occam fit --noise-model network`) and the Python module
// take it as they take any model.
//
//   occam::FittedModel m = occam::fit_heteroscedastic(spec, data, occam::LaplaceMethod{});
//   occam::Prediction p = m.predict(X_test);   // mean, std and 95% interval, original units
//   Eigen::VectorXd sigma = occam::noise_std(m, X_test);
#pragma once

#include <Eigen/Core>
#include <vector>

#include "occam/evidence.h"
#include "occam/fit.h"
#include "occam/fitted_model.h"

namespace occam {

// HeteroscedasticOptions, the noise model's options, are declared in fit.h beside LaplaceMethod,
// whose noise_model field holds them.

// Throws Error(kInvalidArgument) unless fit_heteroscedastic can fit this spec (a gaussian
// likelihood, an mlp): the check it makes first, for callers that want it before reading data.
void check_heteroscedastic_spec(const ModelSpec& spec);

// The noise network's evidence fit as the mean's: the same MAP optimiser, iteration budget,
// Hessian and number of hyperparameter steps (the command line and the benchmark use it).
HeteroscedasticOptions heteroscedastic_options_like(const LaplaceMethod& method);

// Fits both stages. The spec's likelihood must be gaussian, its network an mlp, the data one
// process's whole (not a shard) and without an offset; `method` fits the mean (its strategy should
// set β: kEvidence, kQuick or kIntegrate — kFixed keeps the spec's β). The callback sees the mean's
// iterations, then the noise network's with FitProgress::noise_model set. kAbort keeps each stage's
// best state: during the mean's fit, the noise network stays at its start (one noise level for
// every x, σ² = mean e_n²) and the summary says kAborted. summary.termination is the mean's when it
// did not converge, else the noise network's. Errors: Error(kInvalidArgument) for a spec or
// options it cannot fit, Error(kNumerical) when either stage leaves no usable result.
FittedModel fit_heteroscedastic(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                const HeteroscedasticOptions& options = {}, const FitCallback& callback = {});

// Stages 2 and 3 from a mean already fitted: `mean` is the Laplace fit of a gaussian mlp on `data`
// by `method` (fit(spec, data, method), or that fit read back: read_committee_member(folder, 0, ...),
// committee.h), which then stands for stage 1, so that a noise model costs only its own fits. The
// result is what fit_heteroscedastic(mean.spec, data, method, options, callback) returns when its
// stage 1 gives `mean`; its seconds count the mean's own fitting time. Error(kInvalidArgument) for a
// mean that is not such a fit or was fitted on another number of rows (when its summary says).
FittedModel fit_heteroscedastic(FittedModel mean, const Dataset& data, const LaplaceMethod& method,
                                const HeteroscedasticOptions& options = {}, const FitCallback& callback = {});
// σ(x), the noise standard deviation a Gaussian model predicts at inputs X (original units): its
// noise model's, or 1/√β at every x. Throws Error(kInvalidArgument) for other likelihoods.
Eigen::VectorXd noise_std(const FittedModel& model, const Eigen::MatrixXd& X);

// The leverages h_n = β g_nᵀA⁻¹g_n of a fitted Gaussian Laplace model at its training inputs X
// (original units): the diagonal of the linearised model's hat matrix. Σ_n h_n = γ when A is the
// Gauss–Newton matrix over these rows.
Eigen::VectorXd training_leverage(const FittedModel& model, const Eigen::MatrixXd& X);

}  // namespace occam

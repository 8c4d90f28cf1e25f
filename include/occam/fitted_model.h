// fitted_model.h — what a fit produces: the model, its standardisation and its posterior over
// the weights, with one predict() in the target's original units.
//
// The posterior is one of five: the Laplace approximation N(w_MAP, A⁻¹), a variational q = N(m, V),
// MCMC draws of the weights (and of β), a point estimate (the MAP weights alone, whose
// predictive is p(y | f(x; w_MAP))), or a committee's mixture of Laplace approximations. Every
// one of them predicts through FittedModel::predict, and save_model / load_model (io.h) write and
// read them all. A Gaussian Laplace fit may carry a noise
// model (fit_heteroscedastic, heteroscedastic.h): σ²(x) in place of 1/β.
//
//   occam::FittedModel model = occam::fit(spec, data, occam::LaplaceMethod{});
//   occam::Prediction p = model.predict(X_test);      // mean, std, 95% interval per row
//   occam::save_model("model.json", model);
#pragma once

#include <Eigen/Core>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "occam/cv.h"
#include "occam/data.h"
#include "occam/evidence.h"
#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/map.h"
#include "occam/mcmc/sampler.h"
#include "occam/model_spec.h"
#include "occam/network.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/status.h"
#include "occam/vi.h"

namespace occam {

// The MAP weights alone: no spread, the predictive is the plug-in p(y | f(x; w)).
struct PointEstimate {
  Eigen::VectorXd weights;
};

// Posterior draws of the weights, every kept draw of every chain (chain after chain).
struct PosteriorDraws {
  Eigen::MatrixXd weights;             // S × W
  Eigen::VectorXd betas;               // S noise precisions drawn with them, or empty (the likelihood's β)
  std::vector<Index> draws_per_chain;  // how many of the S rows each chain gave, in order
};

struct Committee;  // committee.h

// A committee's posterior (LaplaceMethod::committee, committee.h): the mixture Σ_k π_k N(w_k, A_k⁻¹)
// of its members' Laplace approximations, each member a FittedModel of its own (its own MAP, α, β).
// A fitted committee does not change, so copies of the model share it.
struct LaplaceMixture {
  std::shared_ptr<const Committee> committee;
};

using WeightPosterior =
    std::variant<LaplaceApproximation, GaussianVariational, PosteriorDraws, PointEstimate, LaplaceMixture>;
// "laplace", "vi", "mcmc", "map" or "committee": the model file's posterior_kind.
const char* posterior_kind(const WeightPosterior& posterior);
// The point the posterior is centred on: w_MAP, q's mean, the mean of the draws; for a mixture
// its mean Σ_k π_k w_k (for a network a point between the members' modes, not a mode itself), or
// an empty vector when a member has no weights of the network's size (stopped in its first MAP).
Eigen::VectorXd posterior_mean(const WeightPosterior& posterior);

// A noise level that depends on the inputs (fit_heteroscedastic, heteroscedastic.h): the noise
// variance σ²(x) = exp(s(x; weights)) in the standardised target's units, s a network of its own
// (one output) over the same standardised inputs. A Gaussian model that has one predicts with
// σ²(x) where it would use 1/β.
struct NoiseModel {
  std::unique_ptr<Network> network;
  Eigen::VectorXd weights;  // the noise network's MAP
  Prior prior;              // at the α its evidence chose

  NoiseModel() = default;
  NoiseModel(const NoiseModel& other);
  NoiseModel& operator=(const NoiseModel& other);
  NoiseModel(NoiseModel&&) noexcept = default;
  NoiseModel& operator=(NoiseModel&&) noexcept = default;

  // σ²(x) at the rows of Z, standardised inputs.
  Eigen::VectorXd variance(const Eigen::MatrixXd& Z) const;
  nlohmann::json to_json() const;
  static NoiseModel from_json(const nlohmann::json& j);  // throws Error(kInvalidInput)
};

// How the fit went; kept in memory (the model file keeps the report built from it).
struct FitSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  double log_evidence = 0.0;         // Laplace log-evidence in the target's original units (NaN if none)
  double symmetry_log_factor = 0.0;  // EvidenceSummary's (well-determined units) or Network::symmetry_log_factor()
  double elbo = 0.0;                 // VI: the ELBO in the target's original units (NaN otherwise)
  double train_rmse = 0.0;           // original units, at the posterior mean (NaN for classifiers)
  double train_accuracy = 0.0;       // classifiers only (NaN otherwise)
  Index num_data = 0;
  Index num_params = 0;
  double seconds = 0.0;
  // The engines' own summaries: the ones the method ran.
  std::optional<MapSummary> map;                  // MapMethod
  std::optional<EvidenceSummary> evidence;        // LaplaceMethod; VariationalMethod's Laplace step
  std::optional<VariationalSummary> variational;  // VariationalMethod
  std::optional<mcmc::SamplerSummary> sampler;    // SamplingMethod
  std::optional<CvSummary> cv;                    // CrossValidatedMethod
  std::optional<EvidenceSummary> noise_evidence;  // fit_heteroscedastic: the noise network's fit
  nlohmann::json options;                         // the method's options (method_to_json, fit.h)
  std::string data_source;                        // Dataset::source
};

// A committee (posterior LaplaceMixture) is a FittedModel too: its network, likelihood, prior,
// standardizer and names are its first fitted member's (the members share the architecture, the
// family and the data; each member's weights, α and β are its own, in the mixture), its summary
// the committee's termination and time, and its report Committee::report().
struct FittedModel {
  ModelSpec spec;  // what was asked for
  std::unique_ptr<Network> network;
  std::unique_ptr<Likelihood> likelihood;  // at the fitted β
  Prior prior;                             // at the fitted α
  Standardizer standardizer;               // fitted on the training data
  std::vector<std::string> feature_names;  // the inputs, in the network's order
  std::string target_name;
  WeightPosterior posterior;        // in standardised units
  std::optional<NoiseModel> noise;  // fit_heteroscedastic: σ²(x) in place of 1/β
  FitSummary summary;
  nlohmann::json report;  // fit_report() of the fit (fit.h); the model file's "summary"

  FittedModel() = default;
  FittedModel(const FittedModel& other);
  FittedModel& operator=(const FittedModel& other);
  FittedModel(FittedModel&&) noexcept = default;
  FittedModel& operator=(FittedModel&&) noexcept = default;

  // The predictive distribution at inputs X in their original units (columns in the order of
  // feature_names), in the target's original units. `offset` (one per row) is required exactly
  // when the model has an offset column. Throws Error(kInvalidArgument) on a mismatch. With a
  // noise model: N(f(x), gᵀA⁻¹g + σ²(x)), the linearised predictive only.
  Prediction predict(const Eigen::MatrixXd& X, const PredictOptions& options = {},
                     const Eigen::VectorXd* offset = nullptr) const;
  // The same with the inputs (and the offset) taken from a table by column name, in any order.
  Prediction predict(const Table& inputs, const PredictOptions& options = {}) const;
  // The committee whose mixture the posterior is (LaplaceMixture), or null for any other posterior.
  const Committee* committee() const;
};

}  // namespace occam

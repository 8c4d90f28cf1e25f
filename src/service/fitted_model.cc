// fitted_model.cc — a fitted model's posterior kinds and its one predict().

#include "occam/fitted_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <variant>

#include "occam/committee.h"
#include "occam/mcmc/draws_predict.h"
#include "occam/memory.h"
#include "occam/text.h"
#include "inference/predict_belief.h"

namespace occam {
namespace {

// The plug-in predictive of a point estimate: a Gaussian belief with no spread, so that every
// likelihood's predictive (classes, counts with an offset) applies unchanged.
Prediction predict_point(const Network& network, const Likelihood& likelihood, const PointEstimate& point,
                         const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  internal::WeightBelief belief;
  belief.mean = &point.weights;
  belief.factor_transpose = [](const Eigen::MatrixXd& G) { return Eigen::MatrixXd::Zero(1, G.cols()); };
  belief.sample = [&point](Rng&) { return point.weights; };
  PredictOptions chosen = options;
  if (chosen.method == PredictiveMethod::kAuto) chosen.method = PredictiveMethod::kLinearized;
  return internal::predict_from_belief(network, likelihood, belief, X, chosen, offset);
}

// The Monte Carlo predictive over MCMC draws: every ⌈S/max_draws⌉-th draw of the pooled chains.
Prediction predict_draws(const Network& network, const Likelihood& likelihood, const PosteriorDraws& draws,
                         const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  if (options.method != PredictiveMethod::kAuto && options.method != PredictiveMethod::kMonteCarlo) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("predict: MCMC draws give the Monte Carlo predictive only, not '") +
                    to_string(options.method) + "' (predictive auto or mc)");
  }
  const Index S = draws.weights.rows();
  const Index thin = options.max_draws > 0 ? (S + options.max_draws - 1) / options.max_draws : 1;
  if (!likelihood.has_precision()) {
    // No β drawn with the weights: the Monte Carlo predictive of any belief, whose "draws" are
    // the posterior draws in turn, serves every likelihood (offsets, classes, counts, hetero).
    if (S == 0) throw Error(ErrorKind::kInvalidArgument, "no posterior draws to predict from");
    const Eigen::VectorXd mean = draws.weights.colwise().mean().transpose();
    internal::WeightBelief belief;
    belief.mean = &mean;
    Index next = 0;
    belief.sample = [&draws, &next, thin](Rng&) -> Eigen::VectorXd {
      return draws.weights.row((next++) * thin).transpose();
    };
    PredictOptions chosen = options;
    chosen.method = PredictiveMethod::kMonteCarlo;
    chosen.samples = static_cast<int>((S + thin - 1) / thin);
    return internal::predict_from_belief(network, likelihood, belief, X, chosen, offset);
  }
  if (offset != nullptr || likelihood.num_outputs() != 1) {
    throw Error(ErrorKind::kInvalidArgument, "predict: MCMC draws of a Gaussian likelihood take no offset");
  }
  Eigen::MatrixXd weights((S + thin - 1) / thin, draws.weights.cols());
  Eigen::VectorXd betas(draws.betas.size() > 0 ? weights.rows() : 0);
  for (Index k = 0; k < weights.rows(); ++k) {
    weights.row(k) = draws.weights.row(k * thin);
    if (betas.size() > 0) betas[k] = draws.betas[k * thin];
  }
  mcmc::DrawsPredictOptions draw_options;
  draw_options.level = options.level;
  draw_options.seed = options.seed;
  draw_options.keep_draws = options.keep_draws;
  mcmc::DrawsPrediction p = mcmc::predict_from_draws(network, likelihood, weights, betas, X, draw_options);
  p.prediction.draws = std::move(p.y_draws);
  return std::move(p.prediction);
}

// N(f(x), gᵀA⁻¹g + σ²(x)) at standardised inputs Z: the linearised predictive of a Gaussian model
// whose noise variance is the noise model's instead of 1/β (heteroscedastic.h).
Prediction predict_with_noise_model(const Network& network, const NoiseModel& noise, const WeightPosterior& posterior,
                                    const Eigen::MatrixXd& Z, const PredictOptions& options) {
  const auto* q = std::get_if<LaplaceApproximation>(&posterior);
  if (q == nullptr) throw Error(ErrorKind::kInvalidArgument, "predict: a noise model goes with a Laplace posterior");
  if (options.method != PredictiveMethod::kAuto && options.method != PredictiveMethod::kLinearized) {
    throw Error(ErrorKind::kInvalidArgument,
                "predict: a model with a noise model gives the linearized predictive only (method auto or linearized)");
  }
  Eigen::MatrixXd f_mean, f_var;
  linearized_outputs(network, *q, Z, false, &f_mean, &f_var, options.batch_rows);
  const Eigen::VectorXd noise_var = noise.variance(Z);
  const double z = normal_quantile(0.5 + 0.5 * options.level);
  Prediction p;
  p.mean = f_mean.col(0);
  p.std = (f_var.col(0) + noise_var).cwiseSqrt();
  p.lower = p.mean - z * p.std;
  p.upper = p.mean + z * p.std;
  return p;
}

}  // namespace

const char* posterior_kind(const WeightPosterior& posterior) {
  static constexpr const char* kKinds[] = {"laplace", "vi", "mcmc", "map", "committee"};
  static_assert(std::size(kKinds) == std::variant_size_v<WeightPosterior>);
  return kKinds[posterior.index()];
}

Eigen::VectorXd posterior_mean(const WeightPosterior& posterior) {
  if (const auto* q = std::get_if<LaplaceApproximation>(&posterior)) return q->mean;
  if (const auto* q = std::get_if<GaussianVariational>(&posterior)) return q->mean();
  if (const auto* p = std::get_if<PointEstimate>(&posterior)) return p->weights;
  if (const auto* mixture = std::get_if<LaplaceMixture>(&posterior)) {
    const Committee& c = *mixture->committee;
    const Index W = c.models.front().network->num_params();
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(W);
    for (std::size_t k = 0; k < c.models.size(); ++k) {
      const Eigen::VectorXd w = posterior_mean(c.models[k].posterior);
      if (w.size() != W) return {};
      mean += c.weights[static_cast<Index>(k)] * w;
    }
    return mean;
  }
  return std::get<PosteriorDraws>(posterior).weights.colwise().mean().transpose();
}

NoiseModel::NoiseModel(const NoiseModel& other)
    : network(other.network ? other.network->clone() : nullptr), weights(other.weights), prior(other.prior) {}

NoiseModel& NoiseModel::operator=(const NoiseModel& other) {
  if (this != &other) *this = NoiseModel(other);
  return *this;
}

Eigen::VectorXd NoiseModel::variance(const Eigen::MatrixXd& Z) const {
  Eigen::MatrixXd S;
  network->forward(weights, Z, &S);
  return S.col(0).array().exp().matrix();
}

nlohmann::json NoiseModel::to_json() const {
  return {{"network", network->to_json()},
          {"weights", std::vector<double>(weights.data(), weights.data() + weights.size())},
          {"prior", prior.to_json()}};
}

NoiseModel NoiseModel::from_json(const nlohmann::json& j) {
  NoiseModel m;
  try {
    m.network = network_from_json(j.at("network"));
    const std::vector<double> w = j.at("weights").get<std::vector<double>>();
    m.weights = Eigen::Map<const Eigen::VectorXd>(w.data(), static_cast<Index>(w.size()));
    m.prior = Prior::from_json(j.at("prior"));
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::kInvalidInput, std::string("noise model: ") + e.what());
  }
  if (!m.network || m.network->num_outputs() != 1 || m.weights.size() != m.network->num_params() ||
      !m.weights.allFinite()) {
    throw Error(ErrorKind::kInvalidInput,
                "noise model: its weights do not fit its network (one output, finite weights)");
  }
  return m;
}

FittedModel::FittedModel(const FittedModel& other)
    : spec(other.spec),
      network(other.network ? other.network->clone() : nullptr),
      likelihood(other.likelihood ? other.likelihood->clone() : nullptr),
      prior(other.prior),
      standardizer(other.standardizer),
      feature_names(other.feature_names),
      target_name(other.target_name),
      posterior(other.posterior),
      noise(other.noise),
      summary(other.summary),
      report(other.report) {}

FittedModel& FittedModel::operator=(const FittedModel& other) {
  if (this != &other) *this = FittedModel(other);
  return *this;
}

const Committee* FittedModel::committee() const {
  const auto* mixture = std::get_if<LaplaceMixture>(&posterior);
  return mixture != nullptr ? mixture->committee.get() : nullptr;
}

namespace {

// The predictive draws a Monte Carlo predictive holds at once (rows × draws, twice when they are
// kept), refused like a fit's memory (memory.h) before they are allocated: a sample count whose
// draws do not fit would otherwise end in std::bad_alloc half-way.
void check_predict_memory(const FittedModel& model, Index rows, const PredictOptions& options) {
  Index draws = 0;
  if (const auto* mcmc = std::get_if<PosteriorDraws>(&model.posterior)) {
    const Index S = mcmc->weights.rows();
    draws = options.max_draws > 0 ? std::min(S, options.max_draws) : S;
  } else if (options.method == PredictiveMethod::kMonteCarlo ||
             (options.method == PredictiveMethod::kAuto &&
              std::holds_alternative<GaussianVariational>(model.posterior))) {
    draws = options.samples;
  }
  const double bytes = 8.0 * static_cast<double>(rows) * static_cast<double>(draws) *
                       static_cast<double>(model.network->num_outputs()) * (options.keep_draws ? 2.0 : 1.0);
  // Draws below 64 MB are not weighed: a cgroup's memory.max - memory.current counts reclaimable
  // page cache as used, so it can fall below that on a machine with room to spare, and reading
  // /proc and the cgroup on every call would cost more than such a predictive.
  if (bytes < 64e6) return;
  const double limit = MemoryLimit{}.resolve();
  if (limit > 0.0 && bytes > limit) {
    throw Error(ErrorKind::kInvalidArgument,
                "predict: the Monte Carlo predictive would hold about " + format_bytes(bytes) + " of draws (" +
                    std::to_string(draws) + " for each of " + std::to_string(rows) + " rows), more than the " +
                    format_bytes(limit) +
                    " of memory available; ask for fewer samples, or predict fewer rows at a time");
  }
}

// A prediction that overflowed (a model file with a huge mean, a tiny Cholesky factor or scale) is
// a failed computation, named by its example, never numbers written as inf or nan.
void check_prediction_finite(const Prediction& p) {
  for (Index i = 0; i < p.mean.size(); ++i) {
    const bool finite = std::isfinite(p.mean[i]) && std::isfinite(p.std[i]) && std::isfinite(p.lower[i]) &&
                        std::isfinite(p.upper[i]) &&
                        (p.probabilities.rows() <= i || p.probabilities.row(i).allFinite());
    if (!finite) {
      throw Error(
          ErrorKind::kNumerical,
          "predict: the predictive distribution of example " + std::to_string(i + 1) + " is not finite (mean " +
              format("%g", p.mean[i]) + ", std " + format("%g", p.std[i]) +
              "): the model's numbers (its weights, their covariance or the standardizer's scales) overflow a double");
    }
  }
}

}  // namespace

Prediction FittedModel::predict(const Eigen::MatrixXd& X, const PredictOptions& options,
                                const Eigen::VectorXd* offset) const {
  if (!network || !likelihood)
    throw Error(ErrorKind::kInvalidArgument, "predict: the model has no network or no likelihood");
  const std::string& offset_name = spec.likelihood.offset_column;
  if (offset_name.empty() != (offset == nullptr)) {
    throw Error(ErrorKind::kInvalidArgument, offset_name.empty()
                                                 ? "predict: the model has no offset column"
                                                 : "predict: the model needs its offset column '" + offset_name + "'");
  }
  if (X.cols() != network->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the inputs have " + std::to_string(X.cols()) +
                                                 " columns but the model has " + std::to_string(network->num_inputs()) +
                                                 " features");
  }
  options.validate();
  // A committee mixes its members' predictives, each in the original units already (committee.cc).
  if (const Committee* c = committee()) return c->predict(X, options);
  check_predict_memory(*this, X.rows(), options);
  const Eigen::MatrixXd Z = standardizer.transform_inputs(X);
  Prediction p;
  if (noise) {
    p = predict_with_noise_model(*network, *noise, posterior, Z, options);
  } else if (const auto* q = std::get_if<LaplaceApproximation>(&posterior)) {
    p = occam::predict(*network, *likelihood, *q, Z, options, offset);
  } else if (const auto* q = std::get_if<GaussianVariational>(&posterior)) {
    p = occam::predict(*network, *likelihood, *q, Z, options, offset);
  } else if (const auto* point = std::get_if<PointEstimate>(&posterior)) {
    p = predict_point(*network, *likelihood, *point, Z, options, offset);
  } else {
    p = predict_draws(*network, *likelihood, std::get<PosteriorDraws>(posterior), Z, options, offset);
  }
  standardizer.to_original(&p);
  check_prediction_finite(p);
  return p;
}

Prediction FittedModel::predict(const Table& inputs, const PredictOptions& options) const {
  const Eigen::MatrixXd X = select_columns(inputs, feature_names);
  const std::string& offset_name = spec.likelihood.offset_column;
  if (offset_name.empty()) return predict(X, options);
  const Eigen::VectorXd offset = select_columns(inputs, {offset_name}).col(0);
  return predict(X, options, &offset);
}

}  // namespace occam

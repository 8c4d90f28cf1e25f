#include "occam/heteroscedastic.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numbers>
#include <variant>

#include "occam/status.h"

namespace occam {
namespace {

// e_n ~ N(0, e^{s_n}) with s = log σ² the network's one output: −log p = ½ log 2π + ½ s + ½ e² e^{−s}.
// The Fisher information in s is the constant ½ (the Gauss–Newton weight), the observed one
// ½ e² e^{−s}; neither grows where the variance shrinks, unlike the hetero likelihood's weight 1/σ²
// on the mean, which is what lets that joint fit collapse.
class NoiseVarianceLikelihood final : public Likelihood {
 public:
  std::unique_ptr<Likelihood> clone() const override { return std::make_unique<NoiseVarianceLikelihood>(*this); }
  std::string name() const override { return "noise-variance"; }
  void validate_targets(const Eigen::MatrixXd& Y) const override {
    for (Index n = 0; n < Y.rows(); ++n) {
      if (!std::isfinite(Y(n, 0))) {
        throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the corrected residual of training row " +
                                               std::to_string(n + 1) + " is not finite");
      }
    }
  }
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override {
    const double half_log_2pi = 0.5 * std::log(2.0 * std::numbers::pi);
    double total = 0.0;
    if (dF != nullptr) dF->resize(F.rows(), 1);
    for (Index n = 0; n < F.rows(); ++n) {
      const double scaled = Y(n, 0) * Y(n, 0) * std::exp(-F(n, 0));  // e²/σ²
      total += -half_log_2pi - 0.5 * F(n, 0) - 0.5 * scaled;
      if (dF != nullptr) (*dF)(n, 0) = 0.5 * (scaled - 1.0);
    }
    return total;
  }
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override {
    d->gradient.resize(F.rows(), 1);
    d->hessian.setConstant(F.rows(), 1, 0.5);
    for (Index n = 0; n < F.rows(); ++n) d->gradient(n, 0) = 0.5 * (1.0 - Y(n, 0) * Y(n, 0) * std::exp(-F(n, 0)));
  }
  Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd&,
                                                 const Eigen::MatrixXd&) const override {
    return Eigen::MatrixXd::Zero(F.rows(), 1);  // the Fisher weight ½ does not move
  }
  Eigen::MatrixXd neg_log_hessian(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const override {
    return (0.5 * Y.col(0).array().square() * (-F.col(0).array()).exp()).matrix();
  }
  void predictive(const Eigen::VectorXd&, const Eigen::VectorXd&, double, Eigen::VectorXd*, Eigen::VectorXd*,
                  Eigen::VectorXd*, Eigen::VectorXd*) const override {
    throw Error(ErrorKind::kInvalidArgument, "the noise-variance likelihood has no predictive of its own");
  }
  double sample(double f, Rng& rng) const override { return std::exp(0.5 * f) * rng.normal(); }
  nlohmann::json to_json() const override { return {{"type", "noise-variance"}}; }
};

void check_spec(const ModelSpec& spec, const Dataset& data) {
  if (spec.likelihood.kind != LikelihoodKind::kGaussian) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("fit_heteroscedastic: the likelihood must be gaussian (the mean's fit), not ") +
                    to_string(spec.likelihood.kind));
  }
  if (spec.network.kind != NetworkKind::kMlp) {
    throw Error(ErrorKind::kInvalidArgument, "fit_heteroscedastic: the network must be an mlp");
  }
  if (data.is_shard()) {
    throw Error(ErrorKind::kInvalidArgument,
                "fit_heteroscedastic: the data must be one process's whole (the leverages need every row)");
  }
  if (data.offset.size() > 0) {
    throw Error(ErrorKind::kInvalidArgument, "fit_heteroscedastic: an offset column has no meaning for a gaussian fit");
  }
}

const ParamBlock* group_block(const std::vector<ParamGroup>& groups, const char* name) {
  for (const ParamGroup& g : groups) {
    if (g.name == name && g.blocks.size() == 1) return &g.blocks.front();
  }
  return nullptr;
}

// The noise network's start: random hidden weights (the mean's start's seed, a stream of its own)
// with the output layer set to the constant log σ² = log mean(e²) — the one-noise-level model, from
// which the fit moves only where the data ask.
Eigen::VectorXd noise_start(const Network& net, const StartOptions& start, double log_variance) {
  Rng rng(start.seed, start.stream ^ 0x6e6f697365ull);  // "noise"
  Eigen::VectorXd w = net.initial_params(rng);
  const std::vector<ParamGroup> groups = net.default_groups();
  const bool hidden = net.num_params() > 0 && group_block(groups, "output_weights") != nullptr;
  const ParamBlock* weights = group_block(groups, hidden ? "output_weights" : "weights");
  const ParamBlock* bias = group_block(groups, hidden ? "output_biases" : "biases");
  if (weights == nullptr || bias == nullptr || bias->size != 1) {
    throw Error(ErrorKind::kInvalidArgument, "fit_heteroscedastic: the noise network has no single output bias");
  }
  w.segment(weights->offset, weights->size).setZero();
  w[bias->offset] = log_variance;
  return w;
}

}  // namespace

void HeteroscedasticOptions::validate() const {
  noise.validate();
  if (noise.strategy != HyperStrategy::kEvidence && noise.strategy != HyperStrategy::kFixed) {
    throw Error(ErrorKind::kInvalidArgument, std::string("HeteroscedasticOptions.noise.strategy = ") +
                                                 to_string(noise.strategy) + ": must be evidence or fixed");
  }
  for (std::size_t l = 0; l < noise_hidden.size(); ++l) {
    if (noise_hidden[l] < 1) invalid_option("HeteroscedasticOptions", "noise_hidden[]", static_cast<double>(noise_hidden[l]), "must be at least 1");
  }
  if (!(noise_alpha > 0.0) || !std::isfinite(noise_alpha)) {
    invalid_option("HeteroscedasticOptions", "noise_alpha", noise_alpha, "must be positive and finite");
  }
}

Eigen::VectorXd training_leverage(const FittedModel& model, const Eigen::MatrixXd& X) {
  const auto* q = std::get_if<LaplaceApproximation>(&model.posterior);
  if (q == nullptr || model.likelihood == nullptr || !model.likelihood->has_precision() ||
      model.likelihood->num_outputs() != 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "training_leverage: the model must be a Laplace fit with a gaussian likelihood");
  }
  Eigen::MatrixXd mean, var;
  linearized_outputs(*model.network, *q, model.standardizer.transform_inputs(X), false, &mean, &var);
  // var f = gᵀA⁻¹g in standardised units, where β lives too.
  return model.likelihood->precision() * var.col(0);
}

HeteroscedasticModel fit_heteroscedastic(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                         const HeteroscedasticOptions& options, const FitCallback& callback) {
  options.validate();
  check_spec(spec, data);
  const auto started = std::chrono::steady_clock::now();
  HeteroscedasticModel model;
  bool aborted = false;
  FitCallback watch = [&](const FitProgress& p) {
    const CallbackReturn r = callback ? callback(p) : CallbackReturn::kContinue;
    if (r == CallbackReturn::kAbort) aborted = true;
    return r;
  };

  // Stage 1: the mean, with one β.
  model.mean = fit(spec, data, method, watch);
  if (model.mean.summary.termination == Termination::kFailure) {
    throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the mean's fit failed: " + model.mean.summary.message);
  }

  // The leverage-corrected residuals e_n = r_n/√(1 − h_n), standardised units. h_n < 1 for every
  // α > 0 (A = βJᵀJ + P ≻ βJᵀJ); the floor only guards the rounding of 1 − h_n near 1.
  model.leverage = training_leverage(model.mean, data.X);
  const Eigen::MatrixXd Xs = model.mean.standardizer.transform_inputs(data.X);
  const Eigen::MatrixXd Ys = model.mean.standardizer.transform_targets(data.Y);
  Eigen::MatrixXd F;
  const auto& q = std::get<LaplaceApproximation>(model.mean.posterior);
  model.mean.network->forward(q.mean, Xs, &F);
  Eigen::MatrixXd E(Ys.rows(), 1);
  for (Index n = 0; n < Ys.rows(); ++n) {
    const double keep = std::max(1.0 - model.leverage[n], 1e-12);
    E(n, 0) = (Ys(n, 0) - F(n, 0)) / std::sqrt(keep);
  }
  const double mean_square = E.squaredNorm() / static_cast<double>(E.rows());
  if (!(mean_square > 0.0) || !std::isfinite(mean_square)) {
    throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the mean fits every training row exactly (or not at "
                                       "all): no noise to model");
  }

  // Stage 2: the log-variance network by the evidence framework.
  NetworkSpec noise_spec = spec.network;
  if (!options.noise_hidden.empty()) noise_spec.hidden = options.noise_hidden;
  std::unique_ptr<Network> net = make_network(noise_spec, data.X.cols(), 1);
  Eigen::VectorXd w = noise_start(*net, method.start, std::log(mean_square));
  PriorSpec prior_spec;
  prior_spec.kind = PriorKind::kGroups;
  prior_spec.alpha = options.noise_alpha;
  Prior prior = make_prior(*net, prior_spec);
  Posterior posterior(net->clone(), std::make_unique<NoiseVarianceLikelihood>(), prior, Xs, E);
  EvidenceOptions noise = options.noise;
  noise.map.callback = [&](const MapIteration& it) {
    if (aborted) return CallbackReturn::kAbort;
    FitProgress p;
    p.map = &it;
    p.iteration = it.iteration;
    p.noise_model = true;
    return watch(p);
  };
  noise.callback = [&](const EvidenceIteration& it) {
    if (aborted) return CallbackReturn::kAbort;
    FitProgress p;
    p.evidence = &it;
    p.iteration = it.iteration;
    p.noise_model = true;
    return watch(p);
  };
  if (aborted) {
    // Stopped during the mean's fit: the noise network stays at its start, one level for every x.
    model.noise_posterior = laplace(posterior, w, noise.hessian, noise.structure);
    model.noise_summary.termination = Termination::kAborted;
    model.noise_summary.message = "stopped during the mean's fit: the noise network is at its start";
    model.noise_summary.strategy = noise.strategy;
  } else {
    EvidenceResult r = fit_evidence(&posterior, noise, &w);
    if (r.summary.termination == Termination::kFailure) {
      throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the noise network's fit failed: " + r.summary.message);
    }
    model.noise_posterior = std::move(r.laplace);
    model.noise_summary = std::move(r.summary);
  }
  model.noise_network = std::move(net);
  model.noise_prior = posterior.prior();
  model.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return model;
}

Eigen::VectorXd HeteroscedasticModel::noise_std(const Eigen::MatrixXd& X) const {
  if (!noise_network) throw Error(ErrorKind::kInvalidArgument, "HeteroscedasticModel: not fitted");
  if (X.cols() != noise_network->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "HeteroscedasticModel: X has " + std::to_string(X.cols()) +
                                                 " columns but the model has " +
                                                 std::to_string(noise_network->num_inputs()) + " inputs");
  }
  Eigen::MatrixXd S;
  noise_network->forward(noise_posterior.mean, mean.standardizer.transform_inputs(X), &S);
  return mean.standardizer.target_scale(1.0) * (0.5 * S.col(0).array()).exp().matrix();
}

Prediction HeteroscedasticModel::predict(const Eigen::MatrixXd& X, const PredictOptions& options) const {
  options.validate();
  if (options.method != PredictiveMethod::kAuto && options.method != PredictiveMethod::kLinearized) {
    throw Error(ErrorKind::kInvalidArgument,
                "HeteroscedasticModel::predict: only the linearised predictive (method auto or linearized)");
  }
  const Eigen::VectorXd sigma = noise_std(X);  // checks X
  Eigen::MatrixXd f_mean, f_var;
  linearized_outputs(*mean.network, std::get<LaplaceApproximation>(mean.posterior),
                     mean.standardizer.transform_inputs(X), false, &f_mean, &f_var, options.batch_rows);
  const double scale = mean.standardizer.target_scale(1.0);
  const double z = normal_quantile(0.5 + 0.5 * options.level);
  Prediction p;
  p.mean.resize(X.rows());
  p.std.resize(X.rows());
  for (Index n = 0; n < X.rows(); ++n) {
    p.mean[n] = mean.standardizer.target_location(f_mean(n, 0));
    p.std[n] = std::sqrt(scale * scale * f_var(n, 0) + sigma[n] * sigma[n]);
  }
  p.lower = p.mean - z * p.std;
  p.upper = p.mean + z * p.std;
  return p;
}

std::string HeteroscedasticModel::brief_report() const {
  const EvidenceSummary* m = mean.summary.evidence ? &*mean.summary.evidence : nullptr;
  char line[400];
  std::snprintf(line, sizeof line,
                "mean: %s, log-evidence %.6g, gamma %.4g, beta %.4g\n"
                "noise: %s, log-evidence %.6g, gamma %.4g; leverage sum %.4g, max %.3g\n",
                to_string(mean.summary.termination), m ? m->log_evidence : std::nan(""), m ? m->gamma_total : std::nan(""),
                m ? m->beta : std::nan(""), to_string(noise_summary.termination), noise_summary.log_evidence,
                noise_summary.gamma_total, leverage.sum(), leverage.size() ? leverage.maxCoeff() : std::nan(""));
  return line;
}

}  // namespace occam

#include "occam/heteroscedastic.h"

#include <chrono>
#include <cmath>
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

void check_data(const Dataset& data) {
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
  const bool hidden = group_block(groups, "output_weights") != nullptr;  // else a network without hidden layers
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

void check_heteroscedastic_spec(const ModelSpec& spec) {
  if (spec.likelihood.kind != LikelihoodKind::kGaussian) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("a noise model (fit_heteroscedastic) needs the gaussian likelihood for the mean, not ") +
                    to_string(spec.likelihood.kind));
  }
  if (spec.network.kind != NetworkKind::kMlp) {
    throw Error(ErrorKind::kInvalidArgument, "a noise model (fit_heteroscedastic) needs an mlp network");
  }
}

void HeteroscedasticOptions::validate() const {
  noise.validate();
  if (noise.strategy != HyperStrategy::kEvidence && noise.strategy != HyperStrategy::kFixed) {
    throw Error(ErrorKind::kInvalidArgument, std::string("HeteroscedasticOptions.noise.strategy = ") +
                                                 to_string(noise.strategy) + ": must be evidence or fixed");
  }
  for (std::size_t l = 0; l < noise_hidden.size(); ++l) {
    if (noise_hidden[l] < 1) invalid_option("HeteroscedasticOptions", "noise_hidden[]", static_cast<double>(noise_hidden[l]), "must be at least 1");
  }
  if (weighted_refits < 0) invalid_option("HeteroscedasticOptions", "weighted_refits", weighted_refits, "must be 0 or more");
  if (!(noise_alpha > 0.0) || !std::isfinite(noise_alpha)) {
    invalid_option("HeteroscedasticOptions", "noise_alpha", noise_alpha, "must be positive and finite");
  }
}

HeteroscedasticOptions heteroscedastic_options_like(const LaplaceMethod& method) {
  HeteroscedasticOptions options;
  options.noise.hessian = method.evidence.hessian;
  options.noise.map.optimizer = method.evidence.map.optimizer;
  options.noise.map.max_iterations = method.evidence.map.max_iterations;
  options.noise.map.gradient_tolerance = method.evidence.map.gradient_tolerance;
  options.noise.max_outer_iterations = method.evidence.max_outer_iterations;
  return options;
}

namespace {

// f(x_n) and h_n = β g_nᵀA⁻¹g_n at standardised inputs Z, from one linearised pass (var f = gᵀA⁻¹g in
// standardised units, where β lives too).
void fit_and_leverage(const FittedModel& model, const Eigen::MatrixXd& Z, Eigen::VectorXd* f, Eigen::VectorXd* h) {
  const auto* q = std::get_if<LaplaceApproximation>(&model.posterior);
  if (q == nullptr || model.likelihood == nullptr || !model.likelihood->has_precision() ||
      model.likelihood->num_outputs() != 1) {
    throw Error(ErrorKind::kInvalidArgument,
                "training_leverage: the model must be a Laplace fit with a gaussian likelihood");
  }
  Eigen::MatrixXd mean, var;
  linearized_outputs(*model.network, *q, Z, false, &mean, &var);
  *f = mean.col(0);
  *h = model.likelihood->precision() * var.col(0);
}

}  // namespace

Eigen::VectorXd training_leverage(const FittedModel& model, const Eigen::MatrixXd& X) {
  Eigen::VectorXd f, h;
  fit_and_leverage(model, model.standardizer.transform_inputs(X), &f, &h);
  return h;
}

FittedModel fit_heteroscedastic(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                const HeteroscedasticOptions& options, const FitCallback& callback) {
  options.validate();
  check_heteroscedastic_spec(spec);
  check_data(data);
  const auto started = std::chrono::steady_clock::now();
  bool aborted = false;
  FitCallback watch = [&](const FitProgress& p) {
    const CallbackReturn r = callback ? callback(p) : CallbackReturn::kContinue;
    if (r == CallbackReturn::kAbort) aborted = true;
    return r;
  };

  // Stage 1: the mean, with one β.
  FittedModel model = fit(spec, data, method, watch);
  if (model.summary.termination == Termination::kFailure) {
    throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the mean's fit failed: " + model.summary.message);
  }

  // The leverage-corrected residuals e_n = r_n/√(1 − h_n), standardised units. h_n < 1 for every
  // α > 0 (A = βJᵀJ + P ≻ βJᵀJ); the floor only guards the rounding of 1 − h_n near 1.
  const Eigen::MatrixXd Xs = model.standardizer.transform_inputs(data.X);
  const Eigen::MatrixXd Ys = model.standardizer.transform_targets(data.Y);
  Eigen::VectorXd f, leverage;
  fit_and_leverage(model, Xs, &f, &leverage);
  Eigen::MatrixXd E(Ys.rows(), 1);
  for (Index n = 0; n < Ys.rows(); ++n) {
    const double keep = std::max(1.0 - leverage[n], 1e-12);
    E(n, 0) = (Ys(n, 0) - f[n]) / std::sqrt(keep);
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
  Prior noise_prior = make_prior(*net, prior_spec);
  EvidenceOptions noise = options.noise;
  // Every iteration of the noise network's fit reaches the callback tagged as such.
  const auto tagged = [&](FitProgress p, int iteration) {
    if (aborted) return CallbackReturn::kAbort;
    p.iteration = iteration;
    p.noise_model = true;
    return watch(p);
  };
  noise.map.callback = [&](const MapIteration& it) {
    FitProgress p;
    p.map = &it;
    return tagged(p, it.iteration);
  };
  noise.callback = [&](const EvidenceIteration& it) {
    FitProgress p;
    p.evidence = &it;
    return tagged(p, it.iteration);
  };
  // The noise network's evidence fit to corrected residuals E, from w and noise_prior (both updated).
  const auto fit_noise = [&](const Eigen::MatrixXd& E) {
    Posterior posterior(net->clone(), std::make_unique<NoiseVarianceLikelihood>(), noise_prior, Xs, E);
    EvidenceResult r = fit_evidence(&posterior, noise, &w);
    if (r.summary.termination == Termination::kFailure) {
      throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the noise network's fit failed: " + r.summary.message);
    }
    noise_prior = posterior.prior();
    return std::move(r.summary);
  };
  EvidenceSummary noise_summary;
  if (aborted) {
    // Stopped during the mean's fit: the noise network stays at its start, one level for every x.
    noise_summary.termination = Termination::kAborted;
    noise_summary.message = "stopped during the mean's fit: the noise network is at its start";
    noise_summary.strategy = noise.strategy;
  } else {
    noise_summary = fit_noise(E);
  }

  // Stage 3 (options.weighted_refits times): the mean again, by weighted least squares with the
  // precisions the noise network gives, y_n ~ N(f(x_n), 1/(β ω_n)) with ω_n ∝ 1/σ²(x_n) (mean 1),
  // from its mode and α, β by the evidence; then the noise network again, from its own fit, on the
  // refit's corrected residuals, whose leverages are h_n = β ω_n g_nᵀA⁻¹g_n. One β for every row
  // lets the mean fit its noisiest rows as closely as its quietest: their residuals, and so the
  // noise stage 2 sees there, come out too small, and A = βJᵀJ + P weights them as if they were
  // precise, so gᵀA⁻¹g is too small there as well. Weighted by 1/σ²(x_n), both follow the noise.
  EvidenceSummary refit_summary;
  int refits = 0;  // the mean refits made (one stopped by the callback counts: its best state is kept)
  while (refits < options.weighted_refits && !aborted) {
    const auto* q = std::get_if<LaplaceApproximation>(&model.posterior);
    if (q == nullptr) break;
    Eigen::MatrixXd S;
    net->forward(w, Xs, &S);
    Eigen::VectorXd omega = (-S.col(0).array()).exp().matrix();
    omega /= omega.mean();
    if (!omega.allFinite()) throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: a noise variance is not finite");
    Eigen::MatrixXd Yw(Ys.rows(), 2);
    Yw << Ys, omega;
    Posterior mean(model.network->clone(), std::make_unique<GaussianLikelihood>(model.likelihood->precision(), true),
                   model.prior, Xs, Yw);
    Eigen::VectorXd w_mean = q->mean;
    EvidenceOptions refit = method.evidence;
    refit.callback = [&](const EvidenceIteration& it) {
      FitProgress p;
      p.evidence = &it;
      p.iteration = it.iteration;
      return watch(p);
    };
    EvidenceResult r = fit_evidence(&mean, refit, &w_mean);
    if (r.summary.termination == Termination::kFailure) {
      throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the weighted refit of the mean failed: " +
                                             r.summary.message);
    }
    model.posterior = std::move(r.laplace);
    model.prior = mean.prior();
    model.likelihood = std::make_unique<GaussianLikelihood>(mean.likelihood().precision());
    refit_summary = std::move(r.summary);
    ++refits;
    if (aborted) break;
    // The refit's corrected residuals: h_n = βω_n g_nᵀA⁻¹g_n.
    fit_and_leverage(model, Xs, &f, &leverage);
    for (Index n = 0; n < Ys.rows(); ++n) {
      const double h = leverage[n] * omega[n];
      E(n, 0) = (Ys(n, 0) - f[n]) / std::sqrt(std::max(1.0 - h, 1e-12));
      leverage[n] = h;
    }
    noise_summary = fit_noise(E);
  }
  NoiseModel noise_model;
  noise_model.network = std::move(net);
  noise_model.weights = w;
  noise_model.prior = noise_prior;
  model.noise = std::move(noise_model);

  FitSummary& s = model.summary;
  if (refits > 0) {
    // The mean is the refit's: its summary is the one reported.
    s.evidence = std::move(refit_summary);
    s.termination = s.evidence->termination;
    s.message = s.evidence->message;
    // A density of y, as fit() reports it (standardised targets t = (y − ȳ)/s: log p(y) = log p(t) − m log s).
    s.log_evidence = s.evidence->log_evidence - static_cast<double>(data.num_rows()) * std::log(model.standardizer.y_scale);
  }
  if (s.termination == Termination::kConverged) {
    s.termination = noise_summary.termination;
    s.message = "noise network: " + noise_summary.message;
  }
  model.report["noise_model"] = {
      {"termination", to_string(noise_summary.termination)},
      {"message", noise_summary.message},
      {"log_evidence", noise_summary.log_evidence},
      {"gamma", noise_summary.gamma_total},
      {"alpha", std::vector<double>(noise_summary.alpha.data(), noise_summary.alpha.data() + noise_summary.alpha.size())},
      {"hidden", noise_spec.hidden},
      {"leverage_sum", leverage.sum()},
      {"weighted_refits", refits},
      {"residuals", "leverage-corrected"}};
  s.noise_evidence = std::move(noise_summary);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return model;
}

Eigen::VectorXd noise_std(const FittedModel& model, const Eigen::MatrixXd& X) {
  const auto* hetero = model.likelihood ? dynamic_cast<const HeteroscedasticLikelihood*>(model.likelihood.get()) : nullptr;
  if (!model.network || !model.likelihood || (!model.likelihood->has_precision() && hetero == nullptr)) {
    throw Error(ErrorKind::kInvalidArgument, "noise_std: the model must have a gaussian or hetero likelihood");
  }
  if (X.cols() != model.network->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "noise_std: X has " + std::to_string(X.cols()) +
                                                 " columns but the model has " +
                                                 std::to_string(model.network->num_inputs()) + " inputs");
  }
  const double scale = model.standardizer.target_scale(1.0);
  if (hetero != nullptr) {
    // σ²(x) = exp(f₂(x; w̄)) + floor, the network's second output at the posterior mean.
    Eigen::MatrixXd F;
    model.network->forward(posterior_mean(model.posterior), model.standardizer.transform_inputs(X), &F);
    return scale * (F.col(1).array().exp() + hetero->variance_floor()).sqrt().matrix();
  }
  if (!model.noise) return Eigen::VectorXd::Constant(X.rows(), scale / std::sqrt(model.likelihood->precision()));
  return scale * model.noise->variance(model.standardizer.transform_inputs(X)).cwiseSqrt();
}

}  // namespace occam

#include "occam/heteroscedastic.h"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
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
    if (noise_hidden[l] < 1)
      invalid_option("HeteroscedasticOptions", "noise_hidden[]", static_cast<double>(noise_hidden[l]),
                     "must be at least 1");
  }
  if (weighted_refits < 0)
    invalid_option("HeteroscedasticOptions", "weighted_refits", weighted_refits, "must be 0 or more");
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

namespace {

// The three stages of fit_heteroscedastic over their shared state: the mean with one β; the
// log-variance network on the mean's leverage-corrected residuals; and options.weighted_refits
// rounds of the mean by weighted least squares followed by the noise network again.
class HeteroscedasticFit {
 public:
  HeteroscedasticFit(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                     const HeteroscedasticOptions& options, const FitCallback& callback)
      : spec_(spec), data_(data), method_(method), options_(options), callback_(callback) {}
  // Stage 1 given: the mean fitted before (its spec is spec's).
  void start_from(FittedModel mean) {
    given_mean_seconds_ = mean.summary.seconds;
    given_mean_ = std::move(mean);
  }

  FittedModel run() {
    fit_mean();
    start_noise_network();
    if (aborted_) {
      // Stopped during the mean's fit: the noise network stays at its start, one level for every x.
      noise_summary_.termination = Termination::kAborted;
      noise_summary_.message = "stopped during the mean's fit: the noise network is at its start";
      noise_summary_.strategy = noise_options_.strategy;
    } else {
      noise_summary_ = fit_noise();
    }
    while (refits_ < options_.weighted_refits && !aborted_ && std::get_if<LaplaceApproximation>(&model_.posterior)) {
      if (!refit_mean()) break;
      residuals_of_refit();
      noise_summary_ = fit_noise();
    }
    return finish();
  }

 private:
  // The user's callback, watched for a request to stop.
  CallbackReturn watch(const FitProgress& p) {
    const CallbackReturn r = callback_ ? callback_(p) : CallbackReturn::kContinue;
    if (r == CallbackReturn::kAbort) aborted_ = true;
    return r;
  }
  FitCallback watcher() {
    return [this](const FitProgress& p) { return watch(p); };
  }

  // Stage 1: the mean, with one β; then its leverage-corrected residuals.
  void fit_mean() {
    if (given_mean_) {
      model_ = std::move(*given_mean_);
      given_mean_.reset();
    } else {
      model_ = fit(spec_, data_, method_, watcher());
    }
    if (model_.summary.termination == Termination::kFailure) {
      throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the mean's fit failed: " + model_.summary.message);
    }
    // The leverage-corrected residuals e_n = r_n/√(1 − h_n), standardised units. h_n < 1 for every
    // α > 0 (A = βJᵀJ + P ≻ βJᵀJ); the floor only guards the rounding of 1 − h_n near 1.
    Xs_ = model_.standardizer.transform_inputs(data_.X);
    Ys_ = model_.standardizer.transform_targets(data_.Y);
    fit_and_leverage(model_, Xs_, &f_, &leverage_);
    E_.resize(Ys_.rows(), 1);
    for (Index n = 0; n < Ys_.rows(); ++n) {
      const double keep = std::max(1.0 - leverage_[n], 1e-12);
      E_(n, 0) = (Ys_(n, 0) - f_[n]) / std::sqrt(keep);
    }
    mean_square_ = E_.squaredNorm() / static_cast<double>(E_.rows());
    if (!(mean_square_ > 0.0) || !std::isfinite(mean_square_)) {
      throw Error(ErrorKind::kNumerical,
                  "fit_heteroscedastic: the mean fits every training row exactly (or not at "
                  "all): no noise to model");
    }
  }

  // Stage 2's network, its start (every x at the residuals' mean square) and prior, and its
  // evidence options, whose every iteration reaches the callback tagged as the noise model's.
  void start_noise_network() {
    noise_spec_ = spec_.network;
    if (!options_.noise_hidden.empty()) noise_spec_.hidden = options_.noise_hidden;
    net_ = make_network(noise_spec_, data_.X.cols(), 1);
    w_ = noise_start(*net_, method_.start, std::log(mean_square_));
    PriorSpec prior_spec;
    prior_spec.kind = PriorKind::kGroups;
    prior_spec.alpha = options_.noise_alpha;
    noise_prior_ = make_prior(*net_, prior_spec);
    noise_options_ = options_.noise;
    noise_options_.map.callback = [this](const MapIteration& it) {
      FitProgress p;
      p.map = &it;
      return tagged(p, it.iteration);
    };
    noise_options_.callback = [this](const EvidenceIteration& it) {
      FitProgress p;
      p.evidence = &it;
      return tagged(p, it.iteration);
    };
  }
  CallbackReturn tagged(FitProgress p, int iteration) {
    if (aborted_) return CallbackReturn::kAbort;
    p.iteration = iteration;
    p.noise_model = true;
    return watch(p);
  }

  // The noise network's evidence fit to the corrected residuals E, from w and its prior (both
  // updated).
  EvidenceSummary fit_noise() {
    Posterior posterior(net_->clone(), std::make_unique<NoiseVarianceLikelihood>(), noise_prior_, Xs_, E_);
    EvidenceResult r = fit_evidence(&posterior, noise_options_, &w_);
    if (r.summary.termination == Termination::kFailure) {
      throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: the noise network's fit failed: " + r.summary.message);
    }
    noise_prior_ = posterior.prior();
    return std::move(r.summary);
  }

  // Stage 3, one round: the mean again, by weighted least squares with the precisions the noise
  // network gives, y_n ~ N(f(x_n), 1/(β ω_n)) with ω_n ∝ 1/σ²(x_n) (mean 1), from its mode and α, β
  // by the evidence. One β for every row lets the mean fit its noisiest rows as closely as its
  // quietest: their residuals, and so the noise stage 2 sees there, come out too small, and
  // A = βJᵀJ + P weights them as if they were precise, so gᵀA⁻¹g is too small there as well.
  // Weighted by 1/σ²(x_n), both follow the noise. False when the callback stopped the refit (its
  // best state is kept and counts as a refit).
  bool refit_mean() {
    const auto& q = std::get<LaplaceApproximation>(model_.posterior);
    Eigen::MatrixXd S;
    net_->forward(w_, Xs_, &S);
    omega_ = (-S.col(0).array()).exp().matrix();
    omega_ /= omega_.mean();
    if (!omega_.allFinite()) throw Error(ErrorKind::kNumerical, "fit_heteroscedastic: a noise variance is not finite");
    Eigen::MatrixXd Yw(Ys_.rows(), 2);
    Yw << Ys_, omega_;
    Posterior mean(model_.network->clone(), std::make_unique<GaussianLikelihood>(model_.likelihood->precision(), true),
                   model_.prior, Xs_, Yw);
    Eigen::VectorXd w_mean = q.mean;
    EvidenceOptions refit = method_.evidence;
    refit.callback = [this](const EvidenceIteration& it) {
      FitProgress p;
      p.evidence = &it;
      p.iteration = it.iteration;
      return watch(p);
    };
    EvidenceResult r = fit_evidence(&mean, refit, &w_mean);
    if (r.summary.termination == Termination::kFailure) {
      throw Error(ErrorKind::kNumerical,
                  "fit_heteroscedastic: the weighted refit of the mean failed: " + r.summary.message);
    }
    model_.posterior = std::move(r.laplace);
    model_.prior = mean.prior();
    model_.likelihood = std::make_unique<GaussianLikelihood>(mean.likelihood().precision());
    refit_summary_ = std::move(r.summary);
    ++refits_;
    return !aborted_;
  }

  // The refit's corrected residuals, whose leverages are h_n = βω_n g_nᵀA⁻¹g_n.
  void residuals_of_refit() {
    fit_and_leverage(model_, Xs_, &f_, &leverage_);
    for (Index n = 0; n < Ys_.rows(); ++n) {
      const double h = leverage_[n] * omega_[n];
      E_(n, 0) = (Ys_(n, 0) - f_[n]) / std::sqrt(std::max(1.0 - h, 1e-12));
      leverage_[n] = h;
    }
  }

  // The noise model on the fitted model, and the summary: the last mean fit's, the noise
  // network's where that one converged.
  FittedModel finish() {
    NoiseModel noise_model;
    noise_model.network = std::move(net_);
    noise_model.weights = w_;
    noise_model.prior = noise_prior_;
    model_.noise = std::move(noise_model);

    FitSummary& s = model_.summary;
    if (refits_ > 0) {
      // The mean is the refit's: its summary is the one reported.
      s.evidence = std::move(refit_summary_);
      s.termination = s.evidence->termination;
      s.message = s.evidence->message;
      // A density of y, as fit() reports it (standardised targets t = (y − ȳ)/s: log p(y) = log p(t) − m log s).
      s.log_evidence =
          s.evidence->log_evidence - static_cast<double>(data_.num_rows()) * std::log(model_.standardizer.y_scale);
    }
    if (s.termination == Termination::kConverged) {
      s.termination = noise_summary_.termination;
      s.message = "noise network: " + noise_summary_.message;
    }
    model_.report["noise_model"] = {
        {"termination", to_string(noise_summary_.termination)},
        {"message", noise_summary_.message},
        {"log_evidence", noise_summary_.log_evidence},
        {"gamma", noise_summary_.gamma_total},
        {"alpha",
         std::vector<double>(noise_summary_.alpha.data(), noise_summary_.alpha.data() + noise_summary_.alpha.size())},
        {"hidden", noise_spec_.hidden},
        {"leverage_sum", leverage_.sum()},
        {"weighted_refits", refits_},
        {"residuals", "leverage-corrected"}};
    s.noise_evidence = std::move(noise_summary_);
    s.seconds =
        given_mean_seconds_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    return std::move(model_);
  }

  const ModelSpec& spec_;
  const Dataset& data_;
  const LaplaceMethod& method_;
  const HeteroscedasticOptions& options_;
  const FitCallback& callback_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool aborted_ = false;
  std::optional<FittedModel> given_mean_;  // stage 1 fitted before (fit_heteroscedastic from a mean)
  double given_mean_seconds_ = 0.0;

  FittedModel model_;                     // the mean's fit
  Eigen::MatrixXd Xs_, Ys_;               // standardised inputs and targets
  Eigen::VectorXd f_, leverage_, omega_;  // the mean's fit, h_n, and the refit's weights
  Eigen::MatrixXd E_;                     // the corrected residuals
  double mean_square_ = 0.0;              // of E after stage 1
  NetworkSpec noise_spec_;
  std::unique_ptr<Network> net_;  // the log-variance network, its weights and prior
  Eigen::VectorXd w_;
  Prior noise_prior_;
  EvidenceOptions noise_options_;
  EvidenceSummary noise_summary_, refit_summary_;
  int refits_ = 0;  // the mean refits made (one stopped by the callback counts: its best state is kept)
};

}  // namespace

FittedModel fit_heteroscedastic(const ModelSpec& spec, const Dataset& data, const LaplaceMethod& method,
                                const HeteroscedasticOptions& options, const FitCallback& callback) {
  options.validate();
  check_heteroscedastic_spec(spec);
  check_data(data);
  LaplaceMethod mean = method;  // the mean's fit, by fit(): without the noise model itself
  mean.noise_model.reset();
  HeteroscedasticFit stages(spec, data, mean, options, callback);
  return stages.run();
}

FittedModel fit_heteroscedastic(FittedModel mean, const Dataset& data, const LaplaceMethod& method,
                                const HeteroscedasticOptions& options, const FitCallback& callback) {
  options.validate();
  const ModelSpec spec = mean.spec;
  check_heteroscedastic_spec(spec);
  check_data(data);
  if (!std::holds_alternative<LaplaceApproximation>(mean.posterior) || !mean.network || !mean.likelihood ||
      !mean.likelihood->has_precision() || mean.noise) {
    throw Error(ErrorKind::kInvalidArgument,
                "fit_heteroscedastic: the mean must be a Laplace fit with one noise level (a gaussian likelihood)");
  }
  if (mean.summary.num_data > 0 && mean.summary.num_data != data.num_rows()) {  // 0: not recorded
    throw Error(ErrorKind::kInvalidArgument, "fit_heteroscedastic: the mean was fitted on " +
                                                 std::to_string(mean.summary.num_data) + " rows, the data has " +
                                                 std::to_string(data.num_rows()));
  }
  LaplaceMethod refit = method;
  refit.noise_model.reset();
  HeteroscedasticFit stages(spec, data, refit, options, callback);
  stages.start_from(std::move(mean));
  return stages.run();
}

Eigen::VectorXd noise_std(const FittedModel& model, const Eigen::MatrixXd& X) {
  const auto no_noise = [] {
    return Error(ErrorKind::kInvalidArgument, "noise_std: the model must have a gaussian or hetero likelihood");
  };
  if (!model.network || !model.likelihood) throw no_noise();
  if (X.cols() != model.network->num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "noise_std: X has " + std::to_string(X.cols()) +
                                                 " columns but the model has " +
                                                 std::to_string(model.network->num_inputs()) + " inputs");
  }
  const double scale = model.standardizer.target_scale(1.0);
  if (!model.likelihood->has_precision()) {
    // A family whose noise is an output of the network (hetero: σ²(x) = exp(f₂(x; w̄)) + floor),
    // at the posterior mean.
    Eigen::MatrixXd F;
    model.network->forward(posterior_mean(model.posterior), model.standardizer.transform_inputs(X), &F);
    const std::optional<Eigen::VectorXd> variance = model.likelihood->output_noise_variance(F);
    if (!variance) throw no_noise();
    return scale * variance->cwiseSqrt();
  }
  if (!model.noise) return Eigen::VectorXd::Constant(X.rows(), scale / std::sqrt(model.likelihood->precision()));
  return scale * model.noise->variance(model.standardizer.transform_inputs(X)).cwiseSqrt();
}

}  // namespace occam

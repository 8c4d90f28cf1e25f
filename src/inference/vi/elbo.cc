// elbo.cc — the ELBO, its reparameterisation gradient, and the Adam loop that maximises it.
//
// ELBO = E_q[log p(D|w)] + E_q[log p(w|α)] + H[q]. Only the first term needs Monte Carlo: with
// w_s = m + T v_s, ∇_λ E_q[log p(D|w)] ≈ (1/S) Σ_s (∂w_s/∂λ)ᵀ ∇_w log p(D|w_s) (Kingma & Welling
// 2014; Titsias & Lázaro-Gredilla 2014), ∇_w by the network's backprop. For the group-diagonal
// Gaussian prior,
//   E_q[log p(w|α)] = Σ_g (W_g/2) log(α_g/2π) − (α_g/2)(‖m_g‖² + tr V_g),
// so ∂/∂m = −α∘m, ∂/∂V_ii = −α_{g(i)}/2 and ∂/∂log α_g = W_g/2 − (α_g/2)(‖m_g‖² + tr V_g), whose
// zero is the closed-form update α_g = W_g/(‖m_g‖² + tr V_g).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>

#include "occam/likelihood.h"
#include "occam/status.h"
#include "occam/types.h"
#include "occam/vi.h"

namespace occam {
namespace {

// log p(Y|F) as a Network::OutputLoss; for a likelihood with a precision it also keeps
// ∂ log p/∂ log β of the last call, which the gradient in β needs.
class LogLikelihoodLoss final : public OutputLoss {
 public:
  LogLikelihoodLoss(const Likelihood& likelihood, const Eigen::MatrixXd& Y) : likelihood_(likelihood), Y_(Y) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    const double value = likelihood_.log_likelihood(F, Y_, dF);
    if (likelihood_.has_precision()) precision_derivative_ = likelihood_.log_precision_derivative(F, Y_);
    return value;
  }
  double precision_derivative() const { return precision_derivative_; }

 private:
  const Likelihood& likelihood_;
  const Eigen::MatrixXd& Y_;
  mutable double precision_derivative_ = 0.0;
};

struct Batch {
  Eigen::MatrixXd X, Y;
  double scale = 1.0;  // m / |B|
};

Batch make_batch(const Posterior& posterior, const std::vector<Index>& rows) {
  if (rows.empty()) return {posterior.X(), posterior.Y(), 1.0};
  return {posterior.X()(rows, Eigen::all), posterior.Y()(rows, Eigen::all),
          static_cast<double>(posterior.num_data()) / static_cast<double>(rows.size())};
}

double expected_log_prior(const Prior& prior, const GaussianVariational& q, Eigen::VectorXd* grad_lambda,
                          Eigen::VectorXd* grad_log_alpha) {
  const Eigen::VectorXd& alpha = prior.alpha();
  const Eigen::VectorXd sizes = prior.group_sizes();
  const Eigen::VectorXd half_norms = prior.energies(q.mean());        // ½‖m_g‖²
  const Eigen::VectorXd traces = prior.group_traces(q.variances());   // tr V_g
  const Eigen::VectorXd expected_energy = half_norms + 0.5 * traces;  // E_q[E_W,g]
  if (grad_lambda != nullptr) {
    const Eigen::VectorXd precision = prior.precision_diagonal();
    grad_lambda->head(q.dim()) -= precision.cwiseProduct(q.mean());
    q.add_variance_gradient(-0.5 * precision, grad_lambda);
  }
  if (grad_log_alpha != nullptr) *grad_log_alpha = 0.5 * sizes - alpha.cwiseProduct(expected_energy);
  return (0.5 * sizes.array() * (alpha.array() / (2.0 * std::numbers::pi)).log()).sum() - alpha.dot(expected_energy);
}

// log p(D|w_s) for each draw in the columns of noise (value only), the batch scale applied, and
// (when not null) each draw's ∂ log p(D|w_s)/∂ log β.
bool log_likelihood_draws(const Posterior& posterior, const GaussianVariational& q, const Eigen::MatrixXd& noise,
                          const Batch& batch, Eigen::VectorXd* values, Eigen::VectorXd* precision_derivatives) {
  const LogLikelihoodLoss loss(posterior.likelihood(), batch.Y);
  values->resize(noise.cols());
  if (precision_derivatives != nullptr) precision_derivatives->setZero(noise.cols());
  Eigen::MatrixXd F;
  for (Index s = 0; s < noise.cols(); ++s) {
    posterior.network().forward(q.transform(noise.col(s)), batch.X, &F);
    (*values)[s] = batch.scale * loss(F, nullptr);
    if (precision_derivatives != nullptr) (*precision_derivatives)[s] = batch.scale * loss.precision_derivative();
    if (!std::isfinite((*values)[s])) return false;
  }
  return true;
}

bool set_hyper(Posterior* posterior, const Eigen::VectorXd& log_alpha, const double* log_beta) {
  const Eigen::VectorXd alpha = log_alpha.array().exp();
  if (!alpha.allFinite() || !(alpha.array() > 0.0).all()) return false;
  posterior->prior().set_alpha(alpha);
  if (log_beta != nullptr) {
    const double beta = std::exp(*log_beta);
    if (!std::isfinite(beta) || !(beta > 0.0)) return false;
    posterior->likelihood().set_precision(beta);
  }
  return true;
}

// The closed-form prior term assumes precision Σ_g α_g·I_g; a graph-Laplacian smoothing prior
// couples the weights and would make it silently wrong.
void require_group_diagonal(const Prior& prior) {
  if (!prior.is_group_diagonal()) {
    throw Error(ErrorKind::kInvalidArgument,
                "variational inference here needs a prior whose precision is diagonal within groups "
                "(Σ_g α_g I_g: the ridge, groups or ard prior kinds); a smoothing prior has another structure");
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

VariationalHyper parse_variational_hyper(std::string_view name) { return enum_names<VariationalHyper>().parse(name); }

const char* to_string(VariationalHyper hyper) { return enum_names<VariationalHyper>().name(hyper); }

void VariationalOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("VariationalOptions", field, value, rule);
  };
  if (family.kind == FamilyKind::kLowRank && family.rank < 1) fail("family.rank", family.rank, "must be at least 1");
  if (mc_samples < 1) fail("mc_samples", mc_samples, "must be at least 1");
  if (batch_size < 0) fail("batch_size", static_cast<double>(batch_size), "must be 0 (all rows) or positive");
  if (max_iterations < 1) fail("max_iterations", max_iterations, "must be at least 1");
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) fail("learning_rate", learning_rate, "must be positive");
  if (!(decay_iterations > 0.0)) fail("decay_iterations", decay_iterations, "must be positive");
  if (!(decay_power >= 0.0 && decay_power <= 1.0)) fail("decay_power", decay_power, "must lie in [0, 1]");
  if (eval_every < 1) fail("eval_every", eval_every, "must be at least 1");
  if (eval_samples < 1) fail("eval_samples", eval_samples, "must be at least 1");
  if (window < 1) fail("window", window, "must be at least 1");
  if (!(relative_tolerance >= 0.0)) fail("relative_tolerance", relative_tolerance, "must be non-negative");
  if (final_samples < 2) fail("final_samples", final_samples, "must be at least 2");
  if (!(initial_std > 0.0) || !std::isfinite(initial_std)) fail("initial_std", initial_std, "must be positive");
  if (max_failures < 0) fail("max_failures", max_failures, "must be non-negative");
  if (adapt_iterations < 0) fail("adapt_iterations", adapt_iterations, "must be non-negative");
}

bool elbo_gradient(const Posterior& posterior, const GaussianVariational& q, const Eigen::MatrixXd& noise,
                   const std::vector<Index>& rows, ElboTerms* terms, Eigen::VectorXd* grad_lambda,
                   Eigen::VectorXd* grad_log_alpha, double* grad_log_beta) {
  if (q.dim() != posterior.dim() || noise.rows() != q.noise_dim() || noise.cols() < 1) {
    throw Error(ErrorKind::kInvalidArgument, "elbo_gradient: q, the posterior and the noise disagree in size");
  }
  const Likelihood& likelihood = posterior.likelihood();
  const Batch batch = make_batch(posterior, rows);
  const double S = static_cast<double>(noise.cols());
  const bool want_grad = grad_lambda != nullptr;
  if (want_grad) grad_lambda->setZero(q.num_params());

  double sum_log_lik = 0.0, sum_precision_derivative = 0.0;
  bool ok = true;
  if (want_grad) {
    const LogLikelihoodLoss loss(likelihood, batch.Y);
    Eigen::MatrixXd G(q.dim(), noise.cols());
    Eigen::VectorXd g;
    for (Index s = 0; s < noise.cols(); ++s) {
      const double value = posterior.network().value_gradient(q.transform(noise.col(s)), batch.X, loss, &g);
      if (!std::isfinite(value) || !g.allFinite()) return false;
      sum_log_lik += batch.scale * value;
      sum_precision_derivative += batch.scale * loss.precision_derivative();
      G.col(s) = (batch.scale / S) * g;
    }
    q.add_transform_gradient(noise, G, grad_lambda);
  } else {
    Eigen::VectorXd values, derivatives;
    ok = log_likelihood_draws(posterior, q, noise, batch, &values, &derivatives);
    sum_log_lik = values.sum();
    sum_precision_derivative = derivatives.sum();
  }
  terms->expected_log_likelihood = sum_log_lik / S;
  terms->expected_log_prior = expected_log_prior(posterior.prior(), q, grad_lambda, grad_log_alpha);
  terms->entropy = q.entropy(grad_lambda);
  // ∂/∂log β of the expected log-likelihood, averaged over the draws (0 without a precision).
  if (grad_log_beta != nullptr) *grad_log_beta = sum_precision_derivative / S;
  return ok && std::isfinite(terms->elbo()) && (!want_grad || grad_lambda->allFinite());
}

std::string VariationalSummary::brief_report() const {
  std::ostringstream out;
  out << "VI " << family.name() << ", hyper " << to_string(hyper) << ": " << to_string(termination);
  if (!message.empty()) out << " (" << message << ")";
  out << "\n  ELBO " << elbo << " ± " << elbo_std_error << " = E[log lik] " << expected_log_likelihood
      << " + E[log prior] " << expected_log_prior << " + entropy " << entropy << "\n  " << iterations << " iterations, "
      << seconds << " s";
  return out.str();
}

namespace {

// Adam (Kingma & Ba 2015, Alg. 1) for ascent, with a per-parameter step scale.
class Adam {
 public:
  explicit Adam(Eigen::VectorXd step_scale)
      : scale_(std::move(step_scale)), m1_(Eigen::VectorXd::Zero(scale_.size())), m2_(m1_) {}
  // The step to add to the parameters for the gradient g at learning rate `rate`.
  Eigen::VectorXd step(const Eigen::VectorXd& g, double rate) {
    beta1_power_ *= kBeta1;
    beta2_power_ *= kBeta2;
    m1_ = kBeta1 * m1_ + (1.0 - kBeta1) * g;
    m2_ = kBeta2 * m2_ + (1.0 - kBeta2) * g.cwiseAbs2();
    return (rate * scale_.array() * (m1_.array() / (1.0 - beta1_power_)) /
            ((m2_.array() / (1.0 - beta2_power_)).sqrt() + kEpsilon))
        .matrix();
  }

 private:
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-8;
  Eigen::VectorXd scale_, m1_, m2_;
  double beta1_power_ = 1.0, beta2_power_ = 1.0;
};

// Per-parameter step scale for the first `size` entries of θ = [m, factor, ...]. V_ii = Σ_j T_ij²
// sums K squared entries of a factor row (K = W for full-rank, R for low-rank's B): the
// noise-driven jitter of each entry adds up K times in the variances, so those entries step 1/√K
// as far and the jitter of V does not grow with W.
Eigen::VectorXd factor_step_scale(const GaussianVariational& q, Index size) {
  Eigen::VectorXd scale = Eigen::VectorXd::Ones(size);
  const Index W = q.dim();
  if (q.family().kind == FamilyKind::kFullRank) {
    Index k = W;
    for (Index j = 0; j < W; ++j) {
      ++k;  // the log-diagonal keeps the full step
      scale.segment(k, W - j - 1).setConstant(1.0 / std::sqrt(static_cast<double>(W)));
      k += W - j - 1;
    }
  } else if (q.family().kind == FamilyKind::kLowRank) {
    scale.segment(W, W * q.family().rank).setConstant(1.0 / std::sqrt(static_cast<double>(q.family().rank)));
  }
  return scale;
}

// The rows of each step: all of them, or minibatches from shuffled epochs (every row once per
// pass, in a seeded order).
class RowBatches {
 public:
  RowBatches(Index rows, Index batch) : m_(rows), batch_(batch), order_(static_cast<std::size_t>(rows)), cursor_(rows) {
    std::iota(order_.begin(), order_.end(), Index{0});
  }
  // Empty means every row.
  const std::vector<Index>& next(Rng& rng) {
    if (batch_ >= m_) return rows_;
    if (cursor_ + batch_ > m_) {
      rng.shuffle(&order_);
      cursor_ = 0;
    }
    rows_.assign(order_.begin() + cursor_, order_.begin() + cursor_ + batch_);
    cursor_ += batch_;
    return rows_;
  }

 private:
  Index m_, batch_;
  std::vector<Index> order_, rows_;
  Index cursor_;
};

// The stopping rule of Kucukelbir et al. (2017, §3.3): the mean or the median of the last
// `window` relative ELBO changes below the tolerance. Fills *message when it holds.
bool elbo_settled(const std::vector<double>& changes, const VariationalOptions& options, std::string* message) {
  if (static_cast<int>(changes.size()) < options.window) return false;
  const std::vector<double> recent(changes.end() - options.window, changes.end());
  const double mean_change = std::accumulate(recent.begin(), recent.end(), 0.0) / options.window;
  const double median_change = median(recent);
  if (!(mean_change < options.relative_tolerance || median_change < options.relative_tolerance)) return false;
  std::ostringstream msg;
  msg << "relative ELBO change over the last " << options.window << " evaluations: mean " << mean_change << ", median "
      << median_change << " (tolerance " << options.relative_tolerance << ")";
  *message = msg.str();
  return true;
}

// The Adam loop on θ = [λ, log α, log β] (the hyperparameters move only when options.hyper says
// so) as named steps: per iteration the gradient on fresh draws, the Adam step (and the closed-form
// hyperparameters), and every eval_every iterations the evaluation of the window's average with
// the stopping rules. Fills the summary's termination, message, iterations, trace and failures,
// and leaves in q and in the posterior the parameters kept: the average over the last `window`
// evaluation windows (Polyak–Ruppert), the span the stopping rule judged.
class ElboAscent {
 public:
  ElboAscent(Posterior* posterior, const VariationalOptions& options, GaussianVariational* q,
             VariationalSummary* summary)
      : posterior_(posterior),
        options_(options),
        q_(q),
        summary_(summary),
        learn_beta_(options.hyper != VariationalHyper::kFixed && posterior->likelihood().has_precision()),
        m_(posterior->num_data()),
        P_(q->num_params()),
        G_(posterior->prior().num_groups()),
        // The Adam state covers the hyperparameters only for kGradient.
        adam_size_(options.hyper == VariationalHyper::kGradient ? P_ + G_ + (learn_beta_ ? 1 : 0) : P_),
        adam_(factor_step_scale(*q, adam_size_)),
        rng_(options.seed, /*stream=*/0),
        batches_(m_, options.batch_size == 0 ? m_ : std::min(options.batch_size, m_)),
        noise_(q->noise_dim(), options.mc_samples),
        step_(adam_size_) {
    const Likelihood& likelihood = posterior->likelihood();
    theta_.resize(P_ + G_ + 1);
    theta_.head(P_) = q->params();
    theta_.segment(P_, G_) = posterior->prior().alpha().array().log();
    theta_[P_ + G_] = likelihood.has_precision() ? std::log(likelihood.precision()) : 0.0;
    // The draws every evaluation shares (common random numbers): the change between evaluations
    // is then the change of the parameters, not Monte Carlo noise.
    Rng eval_rng(options.seed, /*stream=*/1);
    eval_noise_.resize(q->noise_dim(), options.eval_samples);
    for (int s = 0; s < options.eval_samples; ++s) eval_noise_.col(s) = eval_rng.normal_vector(q->noise_dim());
    window_sum_ = Eigen::VectorXd::Zero(theta_.size());
    kept_ = theta_;
  }

  void optimize() {
    summary_->termination = Termination::kMaxIterations;
    summary_->message = "stopped at the iteration limit before the ELBO settled";
    const auto loop_start = std::chrono::steady_clock::now();
    while (t_ < options_.max_iterations) {
      ++t_;
      if (!apply(theta_)) {
        summary_->termination = Termination::kFailure;
        summary_->message = "the hyperparameters left the representable range at iteration " + std::to_string(t_);
        break;
      }
      const Gradient gradient = gradient_on_fresh_draws();
      if (gradient == Gradient::kTooManyFailures) break;
      if (gradient == Gradient::kFailed) continue;
      const double rate = ascend();
      window_sum_ += theta_;
      ++window_count_;
      if (t_ % options_.eval_every != 0) continue;
      if (evaluate_window(rate)) break;
    }
    summary_->iterations = t_;
    const double loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    summary_->seconds_per_iteration = loop_seconds / std::max(t_, 1);
    if (summary_->trace.empty() && summary_->termination != Termination::kFailure && window_count_ > 0) {
      kept_ = window_sum_ / static_cast<double>(window_count_);  // fewer iterations than one window
    }
    if (!apply(kept_)) apply(theta_);
  }

 private:
  enum class Gradient { kOk, kFailed, kTooManyFailures };

  bool apply(const Eigen::VectorXd& th) {
    q_->set_params(th.head(P_));
    const double log_beta = th[P_ + G_];
    return set_hyper(posterior_, th.segment(P_, G_), learn_beta_ ? &log_beta : nullptr);
  }

  // The reparameterised gradient on this step's rows and draws; a non-finite one is a failed step.
  Gradient gradient_on_fresh_draws() {
    const std::vector<Index>& rows = batches_.next(rng_);
    for (int s = 0; s < options_.mc_samples; ++s) noise_.col(s) = rng_.normal_vector(q_->noise_dim());
    ElboTerms terms;
    if (!elbo_gradient(*posterior_, *q_, noise_, rows, &terms, &grad_lambda_, &grad_log_alpha_,
                       learn_beta_ ? &grad_log_beta_ : nullptr)) {
      ++summary_->failed_steps;
      if (++consecutive_failures_ > options_.max_failures) {
        summary_->termination = Termination::kFailure;
        summary_->message = std::to_string(consecutive_failures_) + " consecutive steps gave non-finite values";
        return Gradient::kTooManyFailures;
      }
      return Gradient::kFailed;
    }
    consecutive_failures_ = 0;
    return Gradient::kOk;
  }

  // Ascent with η_t = η/(1 + t/τ)^κ; returns η_t.
  double ascend() {
    step_.head(P_) = grad_lambda_;
    if (adam_size_ > P_) {
      step_.segment(P_, G_) = grad_log_alpha_;
      if (learn_beta_) step_[P_ + G_] = grad_log_beta_;
    }
    const double rate = options_.learning_rate /
                        std::pow(1.0 + static_cast<double>(t_) / options_.decay_iterations, options_.decay_power);
    theta_.head(adam_size_) += adam_.step(step_, rate);
    if (options_.hyper == VariationalHyper::kClosedForm) closed_form_hyperparameters();
    return rate;
  }

  // The ELBO's maximisers over α and β for the current q (its stationary points in log α, log β).
  void closed_form_hyperparameters() {
    q_->set_params(theta_.head(P_));
    const Prior& prior = posterior_->prior();
    const Eigen::VectorXd second_moment =
        2.0 * prior.energies(q_->mean()) + prior.group_traces(q_->variances());  // ‖m_g‖² + tr V_g
    theta_.segment(P_, G_) = (prior.group_sizes().array() / second_moment.array()).log();
    if (learn_beta_) {
      // β = m / 2E_q[E_D], E_q[E_D] from this step's draws: ∂/∂log β = m/2 − β E_q[E_D] = 0.
      const double m = static_cast<double>(m_);
      const double expected_data_error = (0.5 * m - grad_log_beta_) / posterior_->likelihood().precision();
      theta_[P_ + G_] = std::log(0.5 * m / expected_data_error);
    }
  }

  // Polyak–Ruppert: the window's average iterate is both what is evaluated and what is kept. True
  // when a stopping rule holds (the callback's, or the ELBO settled).
  bool evaluate_window(double rate) {
    const Eigen::VectorXd average = window_sum_ / static_cast<double>(window_count_);
    window_sum_.setZero();
    window_count_ = 0;
    if (!apply(average)) return false;
    ElboTerms eval;
    if (!elbo_gradient(*posterior_, *q_, eval_noise_, {}, &eval, nullptr, nullptr, nullptr)) return false;
    recent_.push_back(average);
    if (static_cast<int>(recent_.size()) > options_.window) recent_.pop_front();
    kept_ = Eigen::VectorXd::Zero(theta_.size());
    for (const Eigen::VectorXd& a : recent_) kept_ += a / static_cast<double>(recent_.size());
    VariationalIteration it;
    it.iteration = t_;
    it.elbo = eval.elbo();
    it.relative_change = std::abs((it.elbo - previous_elbo_) / it.elbo);
    it.learning_rate = rate;
    previous_elbo_ = it.elbo;
    summary_->trace.push_back(it);
    if (stopped_by_callback(it)) {
      summary_->termination = Termination::kAborted;
      summary_->message = "stopped by the callback at iteration " + std::to_string(t_);
      return true;
    }
    if (std::isfinite(it.relative_change)) changes_.push_back(it.relative_change);
    if (elbo_settled(changes_, options_, &summary_->message)) {
      summary_->termination = Termination::kConverged;
      return true;
    }
    return false;
  }

  bool stopped_by_callback(const VariationalIteration& it) const {
    return options_.callback && options_.callback(it) == CallbackReturn::kAbort;
  }

  Posterior* posterior_;
  const VariationalOptions& options_;
  GaussianVariational* q_;
  VariationalSummary* summary_;
  const bool learn_beta_;
  const Index m_, P_;
  const int G_;
  const Index adam_size_;
  Adam adam_;
  Rng rng_;
  RowBatches batches_;
  Eigen::VectorXd theta_;
  Eigen::MatrixXd eval_noise_, noise_;
  Eigen::VectorXd window_sum_, kept_;
  int window_count_ = 0;
  std::deque<Eigen::VectorXd> recent_;
  double previous_elbo_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> changes_;
  Eigen::VectorXd grad_lambda_, grad_log_alpha_, step_;
  double grad_log_beta_ = 0.0;
  int consecutive_failures_ = 0;
  int t_ = 0;
};

void optimize_elbo(Posterior* posterior, const VariationalOptions& options, GaussianVariational* q,
                   VariationalSummary* summary) {
  ElboAscent(posterior, options, q, summary).optimize();
}

// The reported ELBO at the q, α, β kept: fresh draws, with the standard error of the Monte Carlo
// term; the prior and entropy terms are closed forms.
void report_elbo(const Posterior& posterior, const VariationalOptions& options, const GaussianVariational& q,
                 VariationalSummary* summary) {
  Rng final_rng(options.seed, /*stream=*/2);
  Eigen::MatrixXd final_noise(q.noise_dim(), options.final_samples);
  for (int s = 0; s < options.final_samples; ++s) final_noise.col(s) = final_rng.normal_vector(q.noise_dim());
  Eigen::VectorXd values;
  if (!log_likelihood_draws(posterior, q, final_noise, make_batch(posterior, {}), &values, nullptr)) {
    summary->termination = Termination::kFailure;
    summary->message = "the log-likelihood is not finite at a draw from the final q";
  }
  const double S = static_cast<double>(values.size());
  summary->expected_log_likelihood = values.mean();
  summary->elbo_std_error = std::sqrt((values.array() - values.mean()).square().sum() / (S - 1.0) / S);
  summary->expected_log_prior = expected_log_prior(posterior.prior(), q, nullptr, nullptr);
  summary->entropy = q.entropy(nullptr);
  summary->elbo = summary->expected_log_likelihood + summary->expected_log_prior + summary->entropy;
  summary->alpha = posterior.prior().alpha();
  const Likelihood& likelihood = posterior.likelihood();
  summary->beta = likelihood.has_precision() ? likelihood.precision() : std::numeric_limits<double>::quiet_NaN();
}

// One run from `initial` at the given options (no adaptation): the loop, then the report.
VariationalResult run_variational(Posterior* posterior, const VariationalOptions& options, GaussianVariational q) {
  VariationalSummary summary;
  summary.family = q.family();
  summary.hyper = options.hyper;
  summary.learning_rate = options.learning_rate;
  for (const ParamGroup& g : posterior->prior().groups()) summary.group_names.push_back(g.name);
  optimize_elbo(posterior, options, &q, &summary);
  report_elbo(*posterior, options, q, &summary);
  return {std::move(summary), std::move(q)};
}

// Step-size adaptation (Kucukelbir et al. 2017, §3.2): short trials from the same q, α and β for
// each of learning_rate × {1, 0.1, 0.01, 0.001}, judged on the same fixed evaluation draws; the
// rate whose last averaged ELBO is highest. The posterior's α, β are restored after each trial.
double adapt_learning_rate(Posterior* posterior, const VariationalOptions& options,
                           const GaussianVariational& initial) {
  const Eigen::VectorXd alpha0 = posterior->prior().alpha();
  const bool has_beta = posterior->likelihood().has_precision();
  const double beta0 = has_beta ? posterior->likelihood().precision() : 0.0;
  VariationalOptions trial = options;
  trial.adapt_iterations = 0;
  trial.max_iterations = options.adapt_iterations;
  trial.eval_every = options.adapt_iterations;
  trial.relative_tolerance = 0.0;
  trial.final_samples = 2;
  trial.callback = nullptr;
  double best_rate = options.learning_rate, best_elbo = -std::numeric_limits<double>::infinity();
  for (double factor : {1.0, 0.1, 0.01, 0.001}) {
    trial.learning_rate = options.learning_rate * factor;
    const VariationalResult r = run_variational(posterior, trial, initial);
    if (r.summary.termination != Termination::kFailure && !r.summary.trace.empty() &&
        r.summary.trace.back().elbo > best_elbo) {
      best_elbo = r.summary.trace.back().elbo;
      best_rate = trial.learning_rate;
    }
    posterior->prior().set_alpha(alpha0);
    if (has_beta) posterior->likelihood().set_precision(beta0);
  }
  return best_rate;
}

}  // namespace

VariationalResult fit_variational(Posterior* posterior, const VariationalOptions& options,
                                  const Eigen::VectorXd& initial_mean) {
  options.validate();
  if (initial_mean.size() != posterior->dim()) {
    throw Error(ErrorKind::kInvalidArgument, "fit_variational: the initial mean has " +
                                                 std::to_string(initial_mean.size()) + " entries, the model " +
                                                 std::to_string(posterior->dim()) + " parameters");
  }
  Rng rng(options.seed, /*stream=*/3);
  return fit_variational(posterior, options,
                         GaussianVariational(options.family, initial_mean, options.initial_std, &rng));
}

VariationalResult fit_variational(Posterior* posterior, const VariationalOptions& options,
                                  GaussianVariational initial) {
  options.validate();
  const auto start = std::chrono::steady_clock::now();
  if (initial.dim() != posterior->dim()) {
    throw Error(ErrorKind::kInvalidArgument, "fit_variational: the initial q has " + std::to_string(initial.dim()) +
                                                 " dimensions, the model " + std::to_string(posterior->dim()) +
                                                 " parameters");
  }
  require_group_diagonal(posterior->prior());
  VariationalOptions run = options;
  run.adapt_iterations = 0;
  if (options.adapt_iterations > 0) run.learning_rate = adapt_learning_rate(posterior, options, initial);
  VariationalResult result = run_variational(posterior, run, std::move(initial));
  result.summary.adapt_iterations = 4 * options.adapt_iterations;
  result.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace occam

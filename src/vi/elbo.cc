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
  const Eigen::VectorXd half_norms = prior.energies(q.mean());          // ½‖m_g‖²
  const Eigen::VectorXd traces = prior.group_traces(q.variances());     // tr V_g
  const Eigen::VectorXd expected_energy = half_norms + 0.5 * traces;    // E_q[E_W,g]
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
      << " + E[log prior] " << expected_log_prior << " + entropy " << entropy << "\n  " << iterations
      << " iterations, " << seconds << " s";
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
  msg << "relative ELBO change over the last " << options.window << " evaluations: mean " << mean_change
      << ", median " << median_change << " (tolerance " << options.relative_tolerance << ")";
  *message = msg.str();
  return true;
}

// The Adam loop on θ = [λ, log α, log β] (the hyperparameters move only when options.hyper says
// so). Fills the summary's termination, message, iterations, trace and failures, and leaves in q
// and in the posterior the parameters kept: the average over the last `window` evaluation
// windows (Polyak–Ruppert), the span the stopping rule judged.
void optimize_elbo(Posterior* posterior, const VariationalOptions& options, GaussianVariational* q,
                   VariationalSummary* summary) {
  const Likelihood& likelihood = posterior->likelihood();
  const bool learn_beta = options.hyper != VariationalHyper::kFixed && likelihood.has_precision();
  const Index m = posterior->num_data();
  const Index P = q->num_params();
  const int G = posterior->prior().num_groups();
  Eigen::VectorXd theta(P + G + 1);
  theta.head(P) = q->params();
  theta.segment(P, G) = posterior->prior().alpha().array().log();
  theta[P + G] = likelihood.has_precision() ? std::log(likelihood.precision()) : 0.0;
  const auto apply = [&](const Eigen::VectorXd& th) {
    q->set_params(th.head(P));
    const double log_beta = th[P + G];
    return set_hyper(posterior, th.segment(P, G), learn_beta ? &log_beta : nullptr);
  };
  // The Adam state covers the hyperparameters only for kGradient.
  const Index adam_size = options.hyper == VariationalHyper::kGradient ? P + G + (learn_beta ? 1 : 0) : P;
  Adam adam(factor_step_scale(*q, adam_size));
  Rng rng(options.seed, /*stream=*/0);
  RowBatches batches(m, options.batch_size == 0 ? m : std::min(options.batch_size, m));

  // The draws every evaluation shares (common random numbers): the change between evaluations
  // is then the change of the parameters, not Monte Carlo noise.
  Rng eval_rng(options.seed, /*stream=*/1);
  Eigen::MatrixXd eval_noise(q->noise_dim(), options.eval_samples);
  for (int s = 0; s < options.eval_samples; ++s) eval_noise.col(s) = eval_rng.normal_vector(q->noise_dim());

  Eigen::VectorXd window_sum = Eigen::VectorXd::Zero(theta.size());
  int window_count = 0;
  Eigen::VectorXd kept = theta;
  std::deque<Eigen::VectorXd> recent;
  double previous_elbo = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> changes;
  Eigen::MatrixXd noise(q->noise_dim(), options.mc_samples);
  Eigen::VectorXd grad_lambda, grad_log_alpha, step(adam_size);
  double grad_log_beta = 0.0;
  int consecutive_failures = 0;
  summary->termination = Termination::kMaxIterations;
  summary->message = "stopped at the iteration limit before the ELBO settled";
  const auto loop_start = std::chrono::steady_clock::now();

  int t = 0;
  while (t < options.max_iterations) {
    ++t;
    if (!apply(theta)) {
      summary->termination = Termination::kFailure;
      summary->message = "the hyperparameters left the representable range at iteration " + std::to_string(t);
      break;
    }
    const std::vector<Index>& rows = batches.next(rng);
    for (int s = 0; s < options.mc_samples; ++s) noise.col(s) = rng.normal_vector(q->noise_dim());
    ElboTerms terms;
    if (!elbo_gradient(*posterior, *q, noise, rows, &terms, &grad_lambda, &grad_log_alpha,
                       learn_beta ? &grad_log_beta : nullptr)) {
      ++summary->failed_steps;
      if (++consecutive_failures > options.max_failures) {
        summary->termination = Termination::kFailure;
        summary->message = std::to_string(consecutive_failures) + " consecutive steps gave non-finite values";
        break;
      }
      continue;
    }
    consecutive_failures = 0;

    // Ascent with η_t = η/(1 + t/τ)^κ.
    step.head(P) = grad_lambda;
    if (adam_size > P) {
      step.segment(P, G) = grad_log_alpha;
      if (learn_beta) step[P + G] = grad_log_beta;
    }
    const double rate = options.learning_rate /
                        std::pow(1.0 + static_cast<double>(t) / options.decay_iterations, options.decay_power);
    theta.head(adam_size) += adam.step(step, rate);
    if (options.hyper == VariationalHyper::kClosedForm) {
      // The ELBO's maximisers over α and β for the current q (its stationary points in log α, log β).
      q->set_params(theta.head(P));
      const Prior& prior = posterior->prior();
      const Eigen::VectorXd second_moment =
          2.0 * prior.energies(q->mean()) + prior.group_traces(q->variances());  // ‖m_g‖² + tr V_g
      theta.segment(P, G) = (prior.group_sizes().array() / second_moment.array()).log();
      if (learn_beta) {
        // β = m / 2E_q[E_D], E_q[E_D] from this step's draws: ∂/∂log β = m/2 − β E_q[E_D] = 0.
        const double expected_data_error = (0.5 * static_cast<double>(m) - grad_log_beta) / likelihood.precision();
        theta[P + G] = std::log(0.5 * static_cast<double>(m) / expected_data_error);
      }
    }

    window_sum += theta;
    ++window_count;
    if (t % options.eval_every != 0) continue;
    // Polyak–Ruppert: the window's average iterate is both what is evaluated and what is kept.
    const Eigen::VectorXd average = window_sum / static_cast<double>(window_count);
    window_sum.setZero();
    window_count = 0;
    if (!apply(average)) continue;
    ElboTerms eval;
    if (!elbo_gradient(*posterior, *q, eval_noise, {}, &eval, nullptr, nullptr, nullptr)) continue;
    recent.push_back(average);
    if (static_cast<int>(recent.size()) > options.window) recent.pop_front();
    kept = Eigen::VectorXd::Zero(theta.size());
    for (const Eigen::VectorXd& a : recent) kept += a / static_cast<double>(recent.size());
    VariationalIteration it;
    it.iteration = t;
    it.elbo = eval.elbo();
    it.relative_change = std::abs((it.elbo - previous_elbo) / it.elbo);
    it.learning_rate = rate;
    previous_elbo = it.elbo;
    summary->trace.push_back(it);
    if (options.callback && options.callback(it) == CallbackReturn::kAbort) {
      summary->termination = Termination::kAborted;
      summary->message = "stopped by the callback at iteration " + std::to_string(t);
      break;
    }
    if (std::isfinite(it.relative_change)) changes.push_back(it.relative_change);
    if (elbo_settled(changes, options, &summary->message)) {
      summary->termination = Termination::kConverged;
      break;
    }
  }
  summary->iterations = t;
  const double loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  summary->seconds_per_iteration = loop_seconds / std::max(t, 1);
  if (summary->trace.empty() && summary->termination != Termination::kFailure && window_count > 0) {
    kept = window_sum / static_cast<double>(window_count);  // fewer iterations than one window
  }
  if (!apply(kept)) apply(theta);
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
double adapt_learning_rate(Posterior* posterior, const VariationalOptions& options, const GaussianVariational& initial) {
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
  return fit_variational(posterior, options, GaussianVariational(options.family, initial_mean, options.initial_std, &rng));
}

VariationalResult fit_variational(Posterior* posterior, const VariationalOptions& options, GaussianVariational initial) {
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

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
#include "occam/vi.h"

namespace occam {
namespace {

// log p(Y|F) as a Network::OutputLoss; for the gaussian likelihood it also keeps E_D of the last
// call (E_D = ½‖dF‖²/β², from the residual already formed), which ∂/∂log β needs.
class LogLikelihoodLoss final : public OutputLoss {
 public:
  LogLikelihoodLoss(const Likelihood& likelihood, const Eigen::MatrixXd& Y)
      : likelihood_(likelihood), Y_(Y), gaussian_(dynamic_cast<const GaussianLikelihood*>(&likelihood)) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    const double value = likelihood_.log_likelihood(F, Y_, dF);
    if (gaussian_ != nullptr) {
      const double beta = gaussian_->precision();
      data_error_ = dF != nullptr ? 0.5 * dF->squaredNorm() / (beta * beta) : GaussianLikelihood::data_error(F, Y_);
    }
    return value;
  }
  double data_error() const { return data_error_; }

 private:
  const Likelihood& likelihood_;
  const Eigen::MatrixXd& Y_;
  const GaussianLikelihood* gaussian_;
  mutable double data_error_ = 0.0;
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

// log p(D|w_s) for each draw in the columns of noise (value only), the batch scale applied.
bool log_likelihood_draws(const Posterior& posterior, const GaussianVariational& q, const Eigen::MatrixXd& noise,
                          const Batch& batch, Eigen::VectorXd* values, Eigen::VectorXd* data_errors) {
  const LogLikelihoodLoss loss(posterior.likelihood(), batch.Y);
  values->resize(noise.cols());
  if (data_errors != nullptr) data_errors->resize(noise.cols());
  Eigen::MatrixXd F;
  for (Index s = 0; s < noise.cols(); ++s) {
    posterior.network().forward(q.transform(noise.col(s)), batch.X, &F);
    (*values)[s] = batch.scale * loss(F, nullptr);
    if (data_errors != nullptr) (*data_errors)[s] = batch.scale * loss.data_error();
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
                "(Σ_g α_g I_g, e.g. --prior ridge, groups or ard); a smoothing prior has another structure");
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

VariationalHyper parse_variational_hyper(std::string_view name) {
  if (name == "fixed") return VariationalHyper::kFixed;
  if (name == "gradient" || name == "elbo") return VariationalHyper::kGradient;
  if (name == "closed-form" || name == "elbo-closed") return VariationalHyper::kClosedForm;
  throw Error(ErrorKind::kInvalidArgument,
              "variational hyper must be 'fixed', 'gradient' or 'closed-form', got '" + std::string(name) + "'");
}

const char* to_string(VariationalHyper hyper) {
  switch (hyper) {
    case VariationalHyper::kFixed: return "fixed";
    case VariationalHyper::kGradient: return "gradient";
    case VariationalHyper::kClosedForm: return "closed-form";
  }
  return "?";
}

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
  const auto* gaussian = dynamic_cast<const GaussianLikelihood*>(&likelihood);
  if (grad_log_beta != nullptr && likelihood.has_precision() && gaussian == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "learning the noise precision by the ELBO is implemented for the "
                                             "gaussian likelihood only, not " + likelihood.name() + "; fix it instead");
  }
  const Batch batch = make_batch(posterior, rows);
  const double S = static_cast<double>(noise.cols());
  const bool want_grad = grad_lambda != nullptr;
  if (want_grad) grad_lambda->setZero(q.num_params());

  double sum_log_lik = 0.0, sum_data_error = 0.0;
  bool ok = true;
  if (want_grad) {
    const LogLikelihoodLoss loss(likelihood, batch.Y);
    Eigen::MatrixXd G(q.dim(), noise.cols());
    Eigen::VectorXd g;
    for (Index s = 0; s < noise.cols(); ++s) {
      const double value = posterior.network().value_gradient(q.transform(noise.col(s)), batch.X, loss, &g);
      if (!std::isfinite(value) || !g.allFinite()) return false;
      sum_log_lik += batch.scale * value;
      sum_data_error += batch.scale * loss.data_error();
      G.col(s) = (batch.scale / S) * g;
    }
    q.add_transform_gradient(noise, G, grad_lambda);
  } else {
    Eigen::VectorXd values, errors;
    ok = log_likelihood_draws(posterior, q, noise, batch, &values, &errors);
    sum_log_lik = values.sum();
    sum_data_error = errors.sum();
  }
  terms->expected_log_likelihood = sum_log_lik / S;
  terms->expected_log_prior = expected_log_prior(posterior.prior(), q, grad_lambda, grad_log_alpha);
  terms->entropy = q.entropy(grad_lambda);
  if (grad_log_beta != nullptr) {
    // log p(D|w, β) = (m/2) log(β/2π) − β E_D: ∂/∂log β = m/2 − β E_D, averaged over the draws.
    *grad_log_beta = gaussian == nullptr ? 0.0
                                         : 0.5 * static_cast<double>(posterior.num_data()) -
                                               gaussian->precision() * sum_data_error / S;
  }
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
  const Likelihood& likelihood = posterior->likelihood();
  const bool learn = options.hyper != VariationalHyper::kFixed;
  const bool learn_beta = learn && likelihood.has_precision();
  if (learn_beta && dynamic_cast<const GaussianLikelihood*>(&likelihood) == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "learning the noise precision by the ELBO is implemented for the "
                                             "gaussian likelihood only, not " + likelihood.name() + "; fix it instead");
  }
  const Index m = posterior->num_data();
  const Index batch = options.batch_size == 0 ? m : std::min(options.batch_size, m);

  if (options.adapt_iterations > 0) {
    // Short trials from the same q and α, β, judged on the same fixed evaluation draws.
    const Eigen::VectorXd alpha0 = posterior->prior().alpha();
    const double beta0 = likelihood.has_precision() ? likelihood.precision() : 0.0;
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
      const VariationalResult r = fit_variational(posterior, trial, initial);
      if (r.summary.termination != Termination::kFailure && !r.summary.trace.empty() &&
          r.summary.trace.back().elbo > best_elbo) {
        best_elbo = r.summary.trace.back().elbo;
        best_rate = trial.learning_rate;
      }
      posterior->prior().set_alpha(alpha0);
      if (likelihood.has_precision()) posterior->likelihood().set_precision(beta0);
    }
    VariationalOptions chosen = options;
    chosen.adapt_iterations = 0;
    chosen.learning_rate = best_rate;
    VariationalResult result = fit_variational(posterior, chosen, std::move(initial));
    result.summary.adapt_iterations = 4 * options.adapt_iterations;
    result.summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  }

  Rng rng(options.seed, /*stream=*/0);
  GaussianVariational q = std::move(initial);
  const Index P = q.num_params();
  const int G = posterior->prior().num_groups();
  // θ = [λ, log α, log β]; the Adam state covers the hyperparameters only for kGradient.
  Eigen::VectorXd theta(P + G + 1);
  theta.head(P) = q.params();
  theta.segment(P, G) = posterior->prior().alpha().array().log();
  theta[P + G] = likelihood.has_precision() ? std::log(likelihood.precision()) : 0.0;
  const Index adam_size = options.hyper == VariationalHyper::kGradient ? P + G + (learn_beta ? 1 : 0) : P;
  // Per-parameter step scale. V_ii = Σ_j T_ij² sums K squared entries of a factor row (K = W for
  // full-rank, R for low-rank's B): the noise-driven jitter of each entry adds up K times in the
  // variances, so those entries step 1/√K as far and the jitter of V does not grow with W.
  Eigen::VectorXd step_scale = Eigen::VectorXd::Ones(adam_size);
  {
    const Index W = q.dim();
    if (q.family().kind == FamilyKind::kFullRank) {
      Index k = W;
      for (Index j = 0; j < W; ++j) {
        ++k;  // the log-diagonal keeps the full step
        step_scale.segment(k, W - j - 1).setConstant(1.0 / std::sqrt(static_cast<double>(W)));
        k += W - j - 1;
      }
    } else if (q.family().kind == FamilyKind::kLowRank) {
      step_scale.segment(W, W * q.family().rank).setConstant(1.0 / std::sqrt(static_cast<double>(q.family().rank)));
    }
  }

  // The draws every evaluation shares (common random numbers): the change between evaluations
  // is then the change of the parameters, not Monte Carlo noise.
  Rng eval_rng(options.seed, /*stream=*/1);
  Eigen::MatrixXd eval_noise(q.noise_dim(), options.eval_samples);
  for (int s = 0; s < options.eval_samples; ++s) eval_noise.col(s) = eval_rng.normal_vector(q.noise_dim());

  const auto apply = [&](const Eigen::VectorXd& th) {
    q.set_params(th.head(P));
    const double log_beta = th[P + G];
    return set_hyper(posterior, th.segment(P, G), learn_beta ? &log_beta : nullptr);
  };

  VariationalSummary summary;
  summary.family = q.family();
  summary.hyper = options.hyper;
  summary.learning_rate = options.learning_rate;
  for (const ParamGroup& g : posterior->prior().groups()) summary.group_names.push_back(g.name);

  Eigen::VectorXd m1 = Eigen::VectorXd::Zero(adam_size), m2 = Eigen::VectorXd::Zero(adam_size);
  constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEpsilon = 1e-8;
  double beta1_power = 1.0, beta2_power = 1.0;
  Eigen::VectorXd window_sum = Eigen::VectorXd::Zero(theta.size());
  int window_count = 0;
  Eigen::VectorXd best = theta;  // the parameters returned: the average of the last windows
  std::deque<Eigen::VectorXd> recent;
  double previous_elbo = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> changes;
  std::vector<Index> order(static_cast<std::size_t>(m));
  std::iota(order.begin(), order.end(), Index{0});
  Index cursor = m;
  std::vector<Index> rows;
  Eigen::MatrixXd noise(q.noise_dim(), options.mc_samples);
  Eigen::VectorXd grad_lambda, grad_log_alpha, step(adam_size);
  double grad_log_beta = 0.0;
  int consecutive_failures = 0;
  summary.termination = Termination::kMaxIterations;
  summary.message = "stopped at the iteration limit before the ELBO settled";
  const auto loop_start = std::chrono::steady_clock::now();

  int t = 0;
  while (t < options.max_iterations) {
    ++t;
    if (!apply(theta)) {
      summary.termination = Termination::kFailure;
      summary.message = "the hyperparameters left the representable range at iteration " + std::to_string(t);
      break;
    }
    if (batch < m) {
      // Shuffled epochs: every row once per pass, in a seeded order.
      if (cursor + batch > m) {
        for (Index i = m - 1; i > 0; --i) {
          std::swap(order[static_cast<std::size_t>(i)],
                    order[rng.uniform_int(static_cast<std::uint64_t>(i + 1))]);
        }
        cursor = 0;
      }
      rows.assign(order.begin() + cursor, order.begin() + cursor + batch);
      cursor += batch;
    }
    for (int s = 0; s < options.mc_samples; ++s) noise.col(s) = rng.normal_vector(q.noise_dim());
    ElboTerms terms;
    const bool ok = elbo_gradient(*posterior, q, noise, rows, &terms, &grad_lambda, &grad_log_alpha,
                                  learn_beta ? &grad_log_beta : nullptr);
    if (!ok) {
      ++summary.failed_steps;
      if (++consecutive_failures > options.max_failures) {
        summary.termination = Termination::kFailure;
        summary.message = std::to_string(consecutive_failures) + " consecutive steps gave non-finite values";
        break;
      }
      continue;
    }
    consecutive_failures = 0;

    // Adam ascent step (Kingma & Ba 2015, Alg. 1) with η_t = η/(1 + t/τ)^κ.
    step.head(P) = grad_lambda;
    if (adam_size > P) {
      step.segment(P, G) = grad_log_alpha;
      if (learn_beta) step[P + G] = grad_log_beta;
    }
    beta1_power *= kBeta1;
    beta2_power *= kBeta2;
    m1 = kBeta1 * m1 + (1.0 - kBeta1) * step;
    m2 = kBeta2 * m2 + (1.0 - kBeta2) * step.cwiseAbs2();
    const double rate = options.learning_rate /
                        std::pow(1.0 + static_cast<double>(t) / options.decay_iterations, options.decay_power);
    theta.head(adam_size).array() += rate * step_scale.array() * (m1.array() / (1.0 - beta1_power)) /
                                     ((m2.array() / (1.0 - beta2_power)).sqrt() + kEpsilon);
    if (options.hyper == VariationalHyper::kClosedForm) {
      // The ELBO's maximisers over α and β for the current q (its stationary points in log α, log β).
      q.set_params(theta.head(P));
      const Prior& prior = posterior->prior();
      const Eigen::VectorXd second_moment =
          2.0 * prior.energies(q.mean()) + prior.group_traces(q.variances());  // ‖m_g‖² + tr V_g
      theta.segment(P, G) = (prior.group_sizes().array() / second_moment.array()).log();
      if (learn_beta) {
        // β = m / 2E_q[E_D], E_q[E_D] from this step's draws: ∂/∂log β = m/2 − β E_q[E_D] = 0.
        const double expected_data_error = (0.5 * static_cast<double>(m) - grad_log_beta) / likelihood.precision();
        theta[P + G] = std::log(0.5 * static_cast<double>(m) / expected_data_error);
      }
    }

    window_sum += theta;
    ++window_count;
    if (t % options.eval_every == 0) {
      // Polyak–Ruppert: the window's average iterate is both what is evaluated and what is kept.
      const Eigen::VectorXd average = window_sum / static_cast<double>(window_count);
      window_sum.setZero();
      window_count = 0;
      if (!apply(average)) continue;
      ElboTerms eval;
      if (!elbo_gradient(*posterior, q, eval_noise, {}, &eval, nullptr, nullptr, nullptr)) continue;
      // What is returned averages the last `window` windows: the span the stopping rule judged.
      recent.push_back(average);
      if (static_cast<int>(recent.size()) > options.window) recent.pop_front();
      best = Eigen::VectorXd::Zero(theta.size());
      for (const Eigen::VectorXd& a : recent) best += a / static_cast<double>(recent.size());
      VariationalIteration it;
      it.iteration = t;
      it.elbo = eval.elbo();
      it.relative_change = std::abs((it.elbo - previous_elbo) / it.elbo);
      it.learning_rate = rate;
      previous_elbo = it.elbo;
      summary.trace.push_back(it);
      if (options.callback) options.callback(it);
      if (std::isfinite(it.relative_change)) changes.push_back(it.relative_change);
      if (static_cast<int>(changes.size()) >= options.window) {
        const std::vector<double> recent(changes.end() - options.window, changes.end());
        const double mean_change = std::accumulate(recent.begin(), recent.end(), 0.0) / options.window;
        const double median_change = median(recent);
        if (mean_change < options.relative_tolerance || median_change < options.relative_tolerance) {
          summary.termination = Termination::kConverged;
          std::ostringstream msg;
          msg << "relative ELBO change over the last " << options.window << " evaluations: mean " << mean_change
              << ", median " << median_change << " (tolerance " << options.relative_tolerance << ")";
          summary.message = msg.str();
          break;
        }
      }
    }
  }
  summary.iterations = t;
  const double loop_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  summary.seconds_per_iteration = loop_seconds / std::max(t, 1);
  if (summary.trace.empty() && summary.termination != Termination::kFailure && window_count > 0) {
    best = window_sum / static_cast<double>(window_count);  // fewer iterations than one window
  }
  if (!apply(best)) {
    apply(theta);
    best = theta;
  }

  // The reported ELBO: fresh draws, with the standard error of the Monte Carlo term.
  Rng final_rng(options.seed, /*stream=*/2);
  Eigen::MatrixXd final_noise(q.noise_dim(), options.final_samples);
  for (int s = 0; s < options.final_samples; ++s) final_noise.col(s) = final_rng.normal_vector(q.noise_dim());
  Eigen::VectorXd values;
  const Batch all = make_batch(*posterior, {});
  if (!log_likelihood_draws(*posterior, q, final_noise, all, &values, nullptr)) {
    summary.termination = Termination::kFailure;
    summary.message = "the log-likelihood is not finite at a draw from the final q";
  }
  const double S = static_cast<double>(values.size());
  summary.expected_log_likelihood = values.mean();
  summary.elbo_std_error = std::sqrt((values.array() - values.mean()).square().sum() / (S - 1.0) / S);
  summary.expected_log_prior = expected_log_prior(posterior->prior(), q, nullptr, nullptr);
  summary.entropy = q.entropy(nullptr);
  summary.elbo = summary.expected_log_likelihood + summary.expected_log_prior + summary.entropy;
  summary.alpha = posterior->prior().alpha();
  summary.beta = likelihood.has_precision() ? likelihood.precision() : std::numeric_limits<double>::quiet_NaN();
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {std::move(summary), std::move(q)};
}

}  // namespace occam

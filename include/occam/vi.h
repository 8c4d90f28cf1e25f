// vi.h — variational inference: a Gaussian q(w) = N(m, V) fitted by maximising the ELBO.
//
// ELBO(q, α, β) = E_q[log p(D|w, β)] + E_q[log p(w|α)] + H[q] ≤ log p(D|α, β). The entropy and the
// Gaussian prior term are closed forms in (m, V, α); the likelihood term is estimated by
// reparameterisation, w = m + L v with v ~ N(0, I), its gradient by the chain rule from the
// network's backprop (Kingma & Welling 2014; Titsias & Lázaro-Gredilla 2014). Three families:
//   full-rank   V = LLᵀ, L lower triangular with its diagonal stored as log (positive by construction);
//   mean-field  V = diag(σ²), log σ per weight;
//   low-rank    V = BBᵀ + diag(exp 2d), B of W × R, for networks whose W² does not fit.
// α_g and β are learned jointly by gradient on their logs, or by the closed-form updates
// α_g = W_g/(‖m_g‖² + tr V_g), β = m/2E_q[E_D]. Adam with a decaying step size; convergence on the
// running relative change of the ELBO (Kucukelbir et al. 2017, §3.3, as Stan's ADVI).
//
//   occam::VariationalOptions options;   // full-rank, hyperparameters by ELBO gradient
//   occam::VariationalResult r = occam::fit_variational(&posterior, options, w_init);
//   std::cout << r.summary.brief_report();   // r.q is the fitted N(m, V)
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "occam/callback.h"
#include "occam/laplace.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {

enum class FamilyKind { kFullRank, kMeanField, kLowRank };

// A family of Gaussians and its size: "fullrank", "meanfield" or "lowrank:R" (1 ≤ R ≤ W: a
// GaussianVariational refuses a larger R before allocating its W × R factor).
struct VariationalFamily {
  FamilyKind kind = FamilyKind::kFullRank;
  Index rank = 0;  // R, low-rank only
  std::string name() const;
};
VariationalFamily parse_variational_family(std::string_view text);

// One member q(w) = N(mean, V) of a family, in its unconstrained parameterisation. Every parameter
// vector λ = [m, factor] is valid: positivity of the scales comes from the logs.
class GaussianVariational {
 public:
  GaussianVariational() = default;
  // q = N(mean, initial_std² I) for full-rank and mean-field. Low-rank starts with D = initial_std·I
  // and B = 0.1·initial_std times a draw from rng (B = 0 is a stationary point of the ELBO).
  GaussianVariational(VariationalFamily family, const Eigen::VectorXd& mean, double initial_std, Rng* rng = nullptr);

  // A start from a Laplace approximation N(w, A⁻¹): mean w and variances 1/A_ii, the mean-field
  // KL(q‖p) optimum for a Gaussian p (Bishop 2006, §10.1.2), narrower than A⁻¹ in every direction
  // (full-rank starts diagonal: A⁻¹ from a Gauss–Newton A is too wide where the network is
  // nonlinear); low-rank adds a small random B (from rng).
  static GaussianVariational from_laplace(VariationalFamily family, const LaplaceApproximation& laplace, Rng* rng);

  const VariationalFamily& family() const { return family_; }
  Index dim() const { return mean_.size(); }
  const Eigen::VectorXd& mean() const { return mean_; }

  // λ = [m, factor]: factor is the column-major packed lower triangle of L with log on its
  // diagonal (full-rank), log σ (mean-field) or [vec B, d] (low-rank).
  Index num_params() const;
  Eigen::VectorXd params() const;
  void set_params(const Eigen::Ref<const Eigen::VectorXd>& lambda);
  // How many standard normals one draw takes (W, or R + W for low-rank).
  Index noise_dim() const;

  // w = m + L v (full-rank), m + σ∘v, or m + B v_{1:R} + exp(d)∘v_{R+1:}.
  Eigen::VectorXd transform(const Eigen::Ref<const Eigen::VectorXd>& v) const;
  Eigen::VectorXd sample(Rng& rng) const;
  // The chain rule through transform(): adds ∂/∂λ of Σ_s g_sᵀ w(λ, v_s) to *grad (size
  // num_params()), for draws v_s in the columns of `noise` and the gradients g_s = ∇_w at w(λ, v_s)
  // in the columns of g_w.
  void add_transform_gradient(const Eigen::MatrixXd& noise, const Eigen::MatrixXd& g_w, Eigen::VectorXd* grad) const;

  // H[q] = (W/2)(1 + log 2π) + ½ log|V|; its gradient with respect to λ is added to *grad.
  double entropy(Eigen::VectorXd* grad = nullptr) const;
  Eigen::VectorXd variances() const;  // diag V
  // Adds ∂/∂λ of Σ_i c_i V_ii to *grad (the closed-form prior term's dependence on V).
  void add_variance_gradient(const Eigen::VectorXd& c, Eigen::VectorXd* grad) const;
  // gᵀVg for each column g of G (W × n): the linearised predictive variance of f.
  Eigen::VectorXd quadratic_form(const Eigen::MatrixXd& G) const;
  // SᵀG for the factor V = SSᵀ of this family (S = L; diag σ; [B, diag e^d]), so that
  // quadratic_form(G) is the column norms² of the result.
  Eigen::MatrixXd factor_transpose(const Eigen::MatrixXd& G) const;
  // V as a dense W × W matrix (for tests and small W).
  Eigen::MatrixXd covariance() const;

  nlohmann::json to_json() const;
  static GaussianVariational from_json(const nlohmann::json& j);  // throws Error(kInvalidInput)

 private:
  VariationalFamily family_;
  Eigen::VectorXd mean_;
  Eigen::MatrixXd L_;       // full-rank: lower triangular, positive diagonal
  Eigen::VectorXd log_sd_;  // mean-field: log σ; low-rank: d
  Eigen::MatrixXd B_;       // low-rank: W × R
};

// How α and β are set while q is fitted.
enum class VariationalHyper {
  kFixed,       // the values already in the posterior
  kGradient,    // log α_g and log β by Adam on the ELBO, jointly with q
  kClosedForm,  // after each step, α_g = W_g/(‖m_g‖² + tr V_g) and β = m/2E_q[E_D] (its MC estimate)
};
VariationalHyper parse_variational_hyper(std::string_view name);  // "fixed" | "gradient" | "closed-form"
const char* to_string(VariationalHyper hyper);

struct VariationalIteration {
  int iteration = 0;
  double elbo = 0.0;             // at the window-averaged parameters, on the fixed evaluation draws
  double relative_change = 0.0;  // |ΔELBO / ELBO| since the previous evaluation (NaN at the first)
  double learning_rate = 0.0;
};

struct VariationalOptions {
  VariationalFamily family;
  VariationalHyper hyper = VariationalHyper::kGradient;
  int mc_samples = 1;    // S: draws of v per gradient step
  Index batch_size = 0;  // rows per step, 0 = all; the likelihood term is scaled by m/|B|
  int max_iterations = 10000;
  // Adam (Kingma & Ba 2015) with step η_t = learning_rate / (1 + t/decay_iterations)^decay_power
  // (decay_power in (0.5, 1] gives Robbins–Monro steps; 0 keeps the step constant).
  double learning_rate = 0.01;
  double decay_iterations = 1000.0;
  double decay_power = 0.6;
  // Step-size adaptation (as Stan's ADVI, Kucukelbir et al. 2017, §3.2): before the run, a trial
  // of adapt_iterations steps from the initial q for each of learning_rate × {1, 0.1, 0.01,
  // 0.001}; the run uses the one whose averaged ELBO is highest. 0 turns it off.
  int adapt_iterations = 200;
  // Convergence (Kucukelbir et al. 2017, §3.3): every eval_every iterations the ELBO of the
  // parameters averaged over that window (Polyak–Ruppert) is estimated on eval_samples draws that
  // are fixed for the whole run (so the change measures the parameters, not fresh noise); the run
  // has converged when the mean or the median of the last `window` relative changes is below
  // relative_tolerance. The q returned is the average over those last `window` windows.
  int eval_every = 100;
  int eval_samples = 50;
  int window = 5;
  double relative_tolerance = 1e-4;
  int final_samples = 1000;   // draws for the reported ELBO and its standard error
  double initial_std = 0.01;  // q starts at N(initial mean, initial_std² I)
  int max_failures = 100;     // consecutive non-finite steps (skipped) before the run fails
  std::uint64_t seed = 1;
  // After each evaluation; may be empty. kAbort stops the run with the q of the last windows
  // (termination kAborted).
  IterationCallback<VariationalIteration> callback;

  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

struct VariationalSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  VariationalFamily family;
  VariationalHyper hyper = VariationalHyper::kGradient;
  double elbo = 0.0;                     // final estimate on final_samples fresh draws
  double elbo_std_error = 0.0;           // its Monte Carlo standard error
  double expected_log_likelihood = 0.0;  // E_q[log p(D|w)] (Monte Carlo)
  double expected_log_prior = 0.0;       // E_q[log p(w|α)] (closed form)
  double entropy = 0.0;                  // H[q] (closed form)
  Eigen::VectorXd alpha;                 // per group
  std::vector<std::string> group_names;
  double beta = 0.0;  // NaN when the likelihood has no precision
  int iterations = 0;
  int failed_steps = 0;        // steps skipped because a draw gave a non-finite value
  double learning_rate = 0.0;  // the initial step used (after adaptation)
  int adapt_iterations = 0;    // steps spent on the adaptation trials
  double seconds = 0.0;
  double seconds_per_iteration = 0.0;
  std::vector<VariationalIteration> trace;
  std::string brief_report() const;
};

struct VariationalResult {
  VariationalSummary summary;
  GaussianVariational q;
};

// The ELBO's parts at q for the posterior's current α, β, estimated with the given noise draws
// (one column per draw, noise_dim() rows). When the gradients are not null they receive ∂/∂λ
// (num_params()), ∂/∂log α_g (one per group) and ∂/∂log β (0 without a precision). Returns false
// when a draw gives a non-finite value or gradient. The likelihood term uses the rows given (all
// when empty), scaled by m/|rows|. Learning β by gradient needs the gaussian likelihood.
struct ElboTerms {
  double expected_log_likelihood = 0.0;
  double expected_log_prior = 0.0;
  double entropy = 0.0;
  double elbo() const { return expected_log_likelihood + expected_log_prior + entropy; }
};
bool elbo_gradient(const Posterior& posterior, const GaussianVariational& q, const Eigen::MatrixXd& noise,
                   const std::vector<Index>& rows, ElboTerms* terms, Eigen::VectorXd* grad_lambda,
                   Eigen::VectorXd* grad_log_alpha, double* grad_log_beta);

// Fits q from mean `initial_mean` (e.g. the MAP weights) and, unless options.hyper is kFixed, the
// posterior's α and β (left in *posterior). Throws Error(kInvalidArgument) on bad options or a
// model it cannot handle; a run that ends in non-finite values reports kFailure with the last
// good q.
VariationalResult fit_variational(Posterior* posterior, const VariationalOptions& options,
                                  const Eigen::VectorXd& initial_mean);

// The same from a given q (e.g. GaussianVariational::from_laplace); options.family and
// options.initial_std are then not used.
VariationalResult fit_variational(Posterior* posterior, const VariationalOptions& options, GaussianVariational initial);

// The predictive at new inputs from q: Monte Carlo (w ~ q, y ~ p(y|f(x; w))) or linearised
// (var f = gᵀVg at the mean). The same implementation as predict() for the Laplace posterior,
// so every likelihood (class probabilities, counts with an offset) is served alike.
Prediction predict(const Network& network, const Likelihood& likelihood, const GaussianVariational& q,
                   const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset = nullptr);

}  // namespace occam

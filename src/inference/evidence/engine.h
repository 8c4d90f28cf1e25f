// engine.h — the parts fit_evidence() is made of: one function per strategy, the helpers they
// share, and the run state the shared finish (evidence.cc) turns into an EvidenceSummary.
#pragma once

#include <Eigen/Core>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "inference/curvature/curvature.h"
#include "occam/evidence.h"
#include "occam/rng.h"

namespace occam::evidence {

// Hyperparameters are kept inside [kMinHyper, kMaxHyper]: a group whose weights all shrink to
// zero (E_W,g → 0) would otherwise send α_g to infinity and A out of floating-point range.
constexpr double kMinHyper = 1e-10;
constexpr double kMaxHyper = 1e10;
inline double clamp_hyper(double value) {
  return value < kMinHyper ? kMinHyper : (value > kMaxHyper ? kMaxHyper : value);
}

// What a strategy leaves for the shared finish. `stop` says why its loop ended: kConverged when
// its own stopping test passed (the finish then checks the optimality conditions and reports
// no_progress when they fail), kMaxIterations, kNoProgress or kFailure otherwise.
struct Run {
  Posterior& posterior;
  const EvidenceOptions& options;
  Eigen::VectorXd& w;
  EvidenceSummary& summary;
  Termination stop = Termination::kConverged;
  std::optional<LaplaceApproximation> laplace{};  // at the final w and hyperparameters, when the strategy has it
  // The exact total gradient of log Z in log θ at the final w and hyperparameters, where the
  // strategy evaluated it there with ∇∇S positive definite: the finish reports it rather than
  // solving for dw*/dφ a second time (on breast cancer, 50 units, 4% of the fit).
  std::optional<Eigen::VectorXd> total_gradient{};
  EvidenceGradient gradient_kind = EvidenceGradient::kNone;
  // The user's callback asked to stop (record(), or a MAP run's callback): the strategy ends on
  // its best consistent state, and the finish reports kAborted.
  bool aborted = false;
  // The trace step the next MAP run serves: every MapIteration it reports carries it
  // (MapIteration::evidence_step), so that a MAP is matched to its trace entry even where one step
  // runs two MAPs (a trial and, at a fold, the MAP at the current θ).
  int step = -1;
  // When the fit began, and the seconds of the run it resumes (EvidenceOptions::resume): a
  // checkpoint's summary counts both.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  double seconds_before = 0.0;
  double seconds() const {
    return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
};

// The number of scalar targets (m·T): the m of MacKay's β = (m − γ)/2E_D.
double num_targets(const Posterior& posterior);
// E_D = ½ Σ (y − f)² at w for a likelihood with β; −log p(D|w) otherwise.
double data_error(const Posterior& posterior, const Eigen::VectorXd& w);
double current_beta(const Posterior& posterior);  // NaN when the likelihood has no β
bool is_linear_gaussian(const Posterior& posterior);
// The exact (total) gradient of the Laplace log-evidence is built on the Gauss–Newton A; for a
// linear model the exact Hessian is that A, hetero's Fisher weights aside.
bool total_gradient_applies(const Posterior& posterior, HessianKind hessian);

// Every hyperparameter the evidence sets, as one vector: the prior's θ, then β when the
// likelihood has one; and back.
Eigen::VectorXd all_hyperparameters(const Posterior& posterior);
void set_all_hyperparameters(Posterior* posterior, const Eigen::VectorXd& theta);
std::vector<std::string> all_hyperparameter_names(const Posterior& posterior);

// ∂ log Z/∂ log θ_j with w held at the mode (½γ_j − θ_j E_j; for β, ½(m − γ_β) − βE_D), from γ per
// prior hyperparameter. `held` is the number of weights the Laplace approximation holds at the
// mode (last-layer: all but the output layer's; 0 otherwise): they count fully in γ_j (zero
// posterior variance) but are not in A, so γ_β = Σ_j γ_j − held.
Eigen::VectorXd mode_held_gradient(const Posterior& posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma,
                                   double held = 0.0);
// The weights q holds at the mode: W − q.integrated_dim().
inline double held_weights(const LaplaceApproximation& q) { return static_cast<double>(q.dim() - q.integrated_dim()); }
// The Laplace approximation of the options' Hessian and structure at w.
inline LaplaceApproximation laplace_at(const Posterior& posterior, const Eigen::VectorXd& w,
                                       const EvidenceOptions& options) {
  return laplace(posterior, w, options.hessian, options.structure);
}

// Which entries of a hyperparameter gradient count for convergence: not those fixed by
// fix_prior, nor one held at a bound by a gradient pointing out of [kMinHyper, kMaxHyper].
struct FreeHyperparameters {
  std::vector<bool> free;
  double norm = 0.0;  // max |g_j| over the free entries
};
FreeHyperparameters free_hyperparameters(const Posterior& posterior, const Eigen::VectorXd& gradient, bool fix_prior);

// MacKay's re-estimation θ_j ← γ_j/2E_j, β ← (m − γ_β)/2E_D (MacKay 1992a, eqs. 4.9–4.11; per group
// 1992b, eq. 5.1), clamped to [kMinHyper, kMaxHyper]; γ_β as in mode_held_gradient.
void mackay_update(Posterior* posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma, bool fix_prior,
                   double held = 0.0);

// Appends an iteration to the trace and calls the user's callback; sets run.aborted when the
// callback returns kAbort. An entry holds the α, β that its w and log-evidence belong to.
void record(Run& run, EvidenceIteration iteration);

// A ↦ A⁻¹R for the posterior precision A at the mode (a factor of it, never an inverse).
using InverseCurvature = std::function<Eigen::MatrixXd(const Eigen::MatrixXd&)>;

// The exact gradient of the Laplace log-evidence in φ = log θ (total_gradient.cc), and the
// derivative of the mode dw*/dφ it is built on (W × number of hyperparameters): the
// implicit-function theorem's −(∇∇S)⁻¹ ∂∇S/∂φ_k, column k.
struct TotalGradient {
  Eigen::VectorXd gradient;
  Eigen::MatrixXd mode_derivative;
  // Whether every solve with ∇∇S found it positive definite, so that dw*/dφ is the solution and
  // not a fallback: what `along_stationary_points` would change is then nothing.
  bool definite = true;
};
// At the mode w of the posterior's hyperparameters, with γ of the same A. `guess`, when given, is
// dw*/dφ at a nearby point: the start of the conjugate-gradient solves for this one.
// `along_stationary_points`: where w is a stationary point but not a minimum (∇∇S indefinite),
// dw*/dφ = (∇∇S)⁻¹b by an LU solve of the formed Hessian (up to kDenseExactSolve weights), the
// derivative of L along the branch of stationary points through w; otherwise, and above that size,
// A⁻¹b (the conjugate gradients' fallback), which is not the derivative of anything there.
// `curvature`, when given, is the factor of A at (w, θ) that solve_A applies: in its layered
// Woodbury form the trace term is computed in the space of the rows (Curvature::inverse_jacobian_blocks)
// instead of from A⁻¹Jᵀ.
TotalGradient total_gradient(const Posterior& posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma,
                             const InverseCurvature& solve_A, const Eigen::MatrixXd* guess = nullptr,
                             bool along_stationary_points = false, const internal::Curvature* curvature = nullptr);
// The same from dw*/dφ = U already solved.
TotalGradient finish_total_gradient(const Posterior& posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma,
                                    const InverseCurvature& solve_A, Eigen::MatrixXd U,
                                    const internal::Curvature* curvature = nullptr);

// Levenberg–Marquardt or Newton is the MAP optimiser the options resolve to (both run as the
// trust-region Newton method of trust_region_map.cc inside the evidence loops).
bool uses_levenberg_marquardt(const MapOptions& map, const Posterior& posterior);

// The MAP at the posterior's hyperparameters, from run.w (trust_region_map.cc). With
// Levenberg–Marquardt as the options' optimiser (a trust-region Newton method here) it stops at
// ‖∇S‖ ≤ tighten·map.gradient_tolerance·max(1, ‖w‖) — or, where double precision stops it
// first, at the options' own tolerance — and leaves the curvature at the final w, factored at the
// posterior's hyperparameters, in *curvature when given (made there when null); other optimisers run find_map. At most
// `max_iterations` iterations when positive (map.max_iterations otherwise). Adds its iterations to
// the summary; returns why it stopped.
//
// `floor`, when given, abandons the MAP of a trial point of the evidence ascent that is heading for a
// mode far below the current one: at each iterate w_k from floor->after_iterations iterations on
// (the start too when that is 0; A_k factored there) it estimates the trial's log-evidence as the Laplace value at the mode
// the Gauss–Newton model predicts from w_k,
//   L̂_k = log p(w_k, D | θ) + ½ g_kᵀA_k⁻¹g_k + (W/2) log 2π − ½ log|A_k|,   g_k = ∇S(w_k),
// and stops with kNoProgress once L̂_k < floor->log_evidence, setting floor->reached.
struct MapFloor {
  double log_evidence = -std::numeric_limits<double>::infinity();
  int after_iterations = 0;
  bool reached = false;
};
Termination minimize_map(Run& run, std::string* message, std::unique_ptr<internal::Curvature>* curvature = nullptr,
                         double tighten = 1.0, int max_iterations = 0, MapFloor* floor = nullptr);

// n of the posterior's m rows, drawn without replacement (the first n of a Fisher–Yates shuffle
// from rng), in their original order, as a posterior of their own (subset_start.cc).
Posterior sample_rows(const Posterior& posterior, Index n, Rng* rng);
// The stream of map.seed that start_on_subset draws its sample from ("star").
constexpr std::uint64_t kSubsetStartStream = 0x73746172;

// --- The strategies (one file each). ---
void fit_fixed(Run& run);            // simple_strategies.cc
void fit_quick(Run& run);            // simple_strategies.cc
void fit_integrated(Run& run);       // simple_strategies.cc
void fit_outer_loop(Run& run);       // outer_loop.cc: kEvidence with EvidenceLoop::kOuter, and kPeriodic
void fit_linear_gaussian(Run& run);  // linear_gaussian.cc: the exact type-II maximum likelihood
// evidence_ascent.cc: the maximum of the Laplace log-evidence by a trust-region quasi-Newton
// ascent on log θ, w_MAP re-solved from the current mode at each trial: kEvidence's joint loop on
// networks and GLMs, and the last stage after the outer loop for the non-Gaussian families.
void ascend_evidence(Run& run);
// subset_start.cc: EvidenceOptions::start_rows — the joint ascent on a sample of the rows, whose w
// and θ become the start of the ascent on all of them (run.w and the posterior's hyperparameters);
// nothing where the option is off or does not apply.
void start_on_subset(Run& run);

}  // namespace occam::evidence

// evidence.h — hyperparameters α_g and β by the evidence framework (MacKay 1992a, 1992b).
//
// One entry point, fit_evidence(), whose strategy option picks how α and β are set:
//   kFixed      the values already in the posterior;
//   kEvidence   the maximum of the Laplace log-evidence log p(D | θ) over θ = (α, β):
//                 linear model + Gaussian noise: the exact type-II maximum likelihood, by Newton's
//                   method on log θ with the exact gradient and Hessian (machine precision);
//                 networks and GLMs, EvidenceLoop::kJoint (what the default kAuto runs up to
//                   kOnlineLoopCost, below; beyond it the online loop): a trust-region
//                   quasi-Newton ascent on log θ of the Laplace log-evidence with its exact
//                   gradient, which includes how w_MAP and hence A move with θ; w follows θ by a
//                   few trust-region Newton steps from the current mode at each trial, so w and θ
//                   converge together, until ∇S(w) and the log-evidence gradient both vanish;
//                 EvidenceLoop::kOuter: MacKay's re-estimation γ_g = W_g − α_g tr_g(A⁻¹),
//                   α_g = γ_g/2E_W,g, β = (m − γ)/2E_D with a warm-started MAP to convergence
//                   between updates; for the non-Gaussian likelihoods (Bernoulli, Poisson,
//                   categorical, hetero), whose maximum is not MacKay's fixed point, the ascent
//                   then goes on to the true maximum;
//   kPeriodic   MacKay's updates every `reestimate_every` optimiser iterations of one MAP run;
//   kQuick      the m ≫ W update γ ≈ W (α_g = W_g/2E_W,g, β = m/2E_D): no Hessian in the loop;
//   kIntegrate  α, β integrated out under 1/σ priors: minimise (W_g/2)·Σ log E_W,g + (m/2)·log E_D
//               (MacKay 1994; Buntine & Weigend 1991), reporting the implied α_g = W_g/2E_W,g, β = m/2E_D.
// Every strategy ends with the Laplace approximation at the final w and its log-evidence, and
// reports `converged` only when its optimality conditions hold there (EvidenceSummary).
//
//   occam::EvidenceOptions options;  // kEvidence, Gauss–Newton Hessian
//   occam::EvidenceResult r = occam::fit_evidence(&posterior, options, &w);
//   std::cout << r.summary.brief_report();
#pragma once

#include <Eigen/Core>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "occam/callback.h"
#include "occam/laplace.h"
#include "occam/map.h"
#include "occam/minibatch_map.h"
#include "occam/posterior.h"
#include "occam/status.h"

namespace occam {

enum class HyperStrategy { kFixed, kEvidence, kPeriodic, kQuick, kIntegrate };
HyperStrategy parse_hyper_strategy(std::string_view name);  // fixed|evidence|periodic|quick|integrate
const char* to_string(HyperStrategy s);

// How kEvidence interleaves the MAP and the hyperparameter updates on a network or GLM (a
// linear-Gaussian model is solved exactly either way).
enum class EvidenceLoop {
  kJoint,   // an ascent on log θ with w re-solved from the current mode at each step: no MAP run is discarded
  kOuter,   // a warm-started MAP to convergence between updates; a round that lowers the evidence is undone
            // (then, for the non-Gaussian likelihoods, the ascent to the true maximum)
  kOnline,  // minibatch MAP with α, β learned online from the structured evidence (OnlineEvidenceOptions)
  kAuto,    // kJoint, or kOnline beyond the full-batch range: choose_evidence_loop below
};
EvidenceLoop parse_evidence_loop(std::string_view name);  // "joint" | "outer" | "online" | "auto"
const char* to_string(EvidenceLoop loop);

// What the reported log-evidence gradient ∂ log Z/∂ log θ_j contains.
enum class EvidenceGradient {
  kNone,      // no hyperparameter is optimised (kFixed, kIntegrate: θ is implied by w)
  kModeHeld,  // ½γ_j − θ_j E_j: w held at the mode (MacKay's fixed point; exact for linear-Gaussian models)
  kTotal,     // the total derivative, w_MAP moving with θ (implicit-function theorem): the exact
              // gradient of the Laplace log-evidence for non-Gaussian likelihoods
  kQuick,     // ½W_j − θ_j E_j: kQuick's own fixed point (γ ≈ W), not the evidence's
};
const char* to_string(EvidenceGradient kind);

struct EvidenceIteration {
  int iteration = 0;
  double log_evidence = 0.0;  // at the α, β below, the values in force during this round's MAP (NaN where not computed)
  Eigen::VectorXd alpha;      // per prior hyperparameter (the groups' α, then λ_s), in this round
  double beta = 0.0;          // in this round (NaN when the likelihood has none); the next round
                              // uses the re-estimated values, the next entry's
  Eigen::VectorXd gamma;      // per group, at this round's w
  int map_iterations = 0;     // optimiser iterations spent on this round's MAP
  bool accepted = true;       // false: the log-evidence fell and the round was undone (the outer
                              // loop), or the ascent rejected this trial point
  // max_j |∂ log Z/∂ log θ_j| at this round; NaN where not computed (the joint ascent's trials that
  // left the current branch and were refused on their log-evidence need none)
  double hyper_gradient_norm = std::numeric_limits<double>::quiet_NaN();
  double gradient_norm = std::numeric_limits<double>::quiet_NaN();  // ‖∇S(w)‖ at this round's w
  Index sample_rows = 0;  // a round of the ascent on EvidenceOptions::start_rows rows; 0: on all rows
};

// EvidenceLoop::kOnline (src/inference/evidence/online.cc; Immer et al. 2021, Alg. 1, as laplace-torch's
// marglik_training): one minibatch MAP run (MinibatchOptions) over `minibatch.epochs` epochs; after
// `burn_in` epochs and then every `evidence_every` epochs, the structured curvature (kron, diag or
// last-layer) over all rows (or a fresh sample of `curvature_rows`, scaled to all) at the current
// w, then `hyper_steps` Adam steps on log α_g and log β up the structure's log-evidence at that w, in closed form from the curvature's eigenvalues
// (src/inference/evidence/online.h). With `polish`, the outer loop (full-batch MAP by EvidenceOptions::map,
// MacKay's updates with the structure's γ) runs from the online state for at most
// max_outer_iterations rounds. Converged only when ‖∇S‖ and the structure's hyper-gradient (w held)
// are below their tolerances at the returned state; otherwise the epochs done.
struct OnlineEvidenceOptions {
  MinibatchOptions minibatch;
  int burn_in = 10;                  // epochs before the first hyperparameter round (B)
  int evidence_every = 5;            // epochs between rounds (F)
  int hyper_steps = 50;              // Adam steps on log θ per round (K)
  double hyper_learning_rate = 0.1;  // their step size (laplace-torch's default)
  bool polish = false;               // the full-batch outer loop after the epochs
  // Rows of each round's curvature pass: 0 (or m and more) all of them; otherwise a fresh sample of
  // this many rows, drawn without replacement from the seed's own stream, with the structure's data
  // curvature scaled by m/n (docs/scale.md, "A subsample for the curvature pass").
  Index curvature_rows = 0;
  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

struct EvidenceCheckpoint;  // below: the joint ascent's state between two of its steps

struct EvidenceOptions {
  HyperStrategy strategy = HyperStrategy::kEvidence;
  HessianKind hessian = HessianKind::kGgn;
  // The part of H the Laplace approximation keeps (laplace.h). A structure other than kFull runs
  // kEvidence and kPeriodic as the outer loop (MacKay's re-estimation with the structure's γ and
  // log|A|; the joint ascent needs exact solves with ∇∇S, which a structure does not give), even on
  // a linear-Gaussian model; converged then means ‖∇S‖ and max_j |∂ log Z_structure/∂ log θ_j| with
  // w held at the mode below their tolerances (docs/evidence.md).
  HessianStructure structure;
  MapOptions map;                           // every MAP run; map.gradient_tolerance is also the ∇S condition
  EvidenceLoop loop = EvidenceLoop::kAuto;  // kEvidence on networks and GLMs
  OnlineEvidenceOptions online;             // loop kOnline (needs a structure: kron, diag or last-layer)
  int max_outer_iterations = 200;           // hyperparameter steps: quasi-Newton steps of the ascent (joint
                                            // loop), re-estimations (outer loop, quick), Newton steps (linear-
                                            // Gaussian) — after the outer loop the ascent has a budget of its own
  // Converged needs max_j |∂ log Z/∂ log θ_j| ≤ hyper_gradient_tolerance (nats per e-fold of θ_j,
  // over the free hyperparameters, β included) as well as ‖∇S‖ ≤ map.gradient_tolerance·max(1, ‖w‖).
  double hyper_gradient_tolerance = 1e-4;
  // Outer loop: stop when |Δ log-evidence| ≤ tolerance·max(1, |log-evidence|) (a stall, reported
  // as converged only if the gradient conditions hold); quick: the largest change of a log-hyperparameter.
  double tolerance = 1e-6;
  // Outer loop: once a round has been undone and its step halved, stop when the next accepted
  // round gains less than this many nats (0 turns the rule off). Such a stop is reported as
  // no_progress unless the gradient conditions hold.
  double halved_step_gain = 0.5;
  int reestimate_every = 50;  // kPeriodic: optimiser iterations between updates
  // Keep the prior's hyperparameters as they are and re-estimate β alone (e.g. the evidence
  // or cross-validation over a grid of α).
  bool fix_prior = false;
  // The joint loop on many rows: first the whole joint ascent on start_rows of the m rows, drawn
  // without replacement from map.seed's own stream, then the ascent on all rows from the w and θ it
  // reached (src/inference/evidence/subset_start.cc; docs/evidence.md, "A start on fewer rows").
  // 0: off. Ignored where start_rows ≥ m, the rows are spread over processes or the joint loop does
  // not run.
  Index start_rows = 0;
  // Called after each re-estimation round (e.g. for a progress line); may be empty. kAbort ends
  // the loop on the best state so far (termination kAborted); so does an aborted MAP run.
  IterationCallback<EvidenceIteration> callback;
  // The joint ascent (kEvidence with loop kJoint and the full structure) hands its state to
  // `checkpoint` after its start and after every step (EvidenceCheckpoint), and with `resume` it
  // goes on from such a state instead of starting: the MAP from the random start, start_rows' sample
  // and the steps before are not run again, and the fit ends where the uninterrupted one ends, bit
  // for bit. fit_evidence throws Error(kInvalidArgument) when either is set on a fit that runs
  // another loop, or when `resume` does not fit the posterior (its sizes).
  std::function<void(const EvidenceCheckpoint&)> checkpoint;
  std::shared_ptr<const EvidenceCheckpoint> resume;

  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

// What EvidenceLoop::kAuto looks at: the sizes of one full-batch Gauss–Newton curvature and whether
// the online loop applies.
struct EvidenceLoopFacts {
  Index rows = 0;                  // m
  Index outputs = 1;               // K: the Jacobian has n = m·K rows
  Index weights = 0;               // W
  bool linear_gaussian = false;    // solved exactly, with no loop to choose
  bool linear_in_weights = false;  // a GLM: S is convex, and Newton's full-batch steps are few
  bool spread = false;             // the rows over several processes, where no full curvature is formed
  bool group_diagonal = true;      // the prior's precision is diag(α_g(i)) (not graph-Laplacian smoothing)
  bool layer_groups = true;        // one α over each dense layer's weights and one over its biases (kron's
                                   // factors; a per-input prior such as ard has several)
};
EvidenceLoopFacts evidence_loop_facts(const Posterior& posterior);
// The same before a posterior is built (fit()'s memory estimate): prior null for one that is not
// group-diagonal, rows over all processes.
EvidenceLoopFacts evidence_loop_facts(const Network& network, const Likelihood& likelihood, const Prior* prior,
                                      Index rows, bool spread);

// The multiply-adds of one full-batch Gauss–Newton curvature, n·W·min(n, W) with n = m·K (JᵀΛJ by
// a rank-n update when n ≥ W, its n × n Gram form otherwise), beyond which kAuto runs the online
// loop: between kin8nm's 1.9·10⁹ (7,373 rows, W = 501), the largest UCI set whose joint ascent
// converges in under a minute, and naval's 8.7·10⁹ (10,741 rows, W = 901), whose joint ascent had
// taken 3 steps at 20 minutes (docs/scale.md, "The automatic choice").
inline constexpr double kOnlineLoopCost = 4e9;

// The options EvidenceLoop::kAuto stands for on a problem of these facts; options whose loop is
// another are returned as they are. Beyond kOnlineLoopCost, where the online loop applies
// (strategy evidence, the Gauss–Newton Hessian, a structure it takes or the default full one, a
// group-diagonal prior, a network that is not linear in its weights), kOnline with kron in place of
// the full structure (diag where the prior's groups are not per layer) and a minibatch optimizer
// of map moved to online.minibatch; kJoint otherwise. With the rows spread over processes and the
// full structure, the online loop wherever it applies, whatever the cost: the full curvature needs
// every row in one process. *reason (when not null) says which and why.
EvidenceOptions choose_evidence_loop(const EvidenceOptions& options, const EvidenceLoopFacts& facts,
                                     std::string* reason = nullptr);

struct EvidenceSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  std::string loop_choice;  // EvidenceLoop::kAuto: the loop it ran and why (choose_evidence_loop); else empty
  HyperStrategy strategy = HyperStrategy::kEvidence;
  double log_evidence = 0.0;             // Laplace log-evidence at the final w, α, β
  Eigen::VectorXd alpha;                 // per prior hyperparameter: the groups' α, then λ_s if smoothing
  std::vector<std::string> group_names;  // Prior::hyperparameter_names()
  double beta = 0.0;                     // NaN when the likelihood has no precision
  Eigen::VectorXd gamma;                 // per group: well-determined parameters
  double gamma_total = 0.0;
  Eigen::VectorXd E_W;       // per group
  double E_D = 0.0;          // Gaussian misfit ½Σ(y − f)² (0 for other likelihoods)
  int outer_iterations = 0;  // hyperparameter updates (or Newton / quasi-Newton steps)
  int map_iterations = 0;    // optimiser iterations, summed over the whole fit
  // The joint ascent: trial MAPs abandoned on their way to a mode far below the current one
  // (their iterations count in map_iterations; docs/evidence.md, "Abandoned trials").
  int abandoned_trials = 0;
  // EvidenceOptions::resume: the ascent steps its checkpoint had taken (the counts above include
  // them); −1 for an ascent that started afresh.
  int resumed_at_step = -1;
  // The steps of the evidence loops' trust-region Newton MAP (docs/evidence.md, "Sloppy weights and
  // the curved valley"), summed over the fit: where Steihaug's conjugate gradients ended — inside
  // the region (a Newton step), at its boundary, or on a direction of negative curvature of ∇∇S
  // followed to the boundary — and how many steps were not taken (their trial refused, or, where a
  // step ends its MAP as a stall, not tried). Each iteration is
  // one step, so the first three add up to the iterations of those MAPs; where a fit's iterations
  // go, they say why (Boston split 0, 50 units: 432 of 582 steps cut by the region).
  struct MapSteps {
    int interior = 0;
    int boundary = 0;
    int negative_curvature = 0;
    int refused = 0;
  } map_steps;
  // EvidenceOptions::start_rows: the joint ascent on the sample of rows that gave the start (rows
  // 0 when there was none). Its iterations are not in outer_iterations and map_iterations.
  struct SubsetStart {
    Index rows = 0;
    Termination termination = Termination::kFailure;
    int outer_iterations = 0;
    int map_iterations = 0;
    double log_evidence = 0.0;  // on the sample's rows
    double seconds = 0.0;
  } subset_start;
  int clipped_eigenvalues = 0;  // exact Hessian: negative eigenvalues clipped at the end
  // The rounds, or the joint ascent's start and trials, in order. The joint ascent records every MAP
  // run, taken or not — at a fold the trial that left the branch and the MAP at the current θ are
  // two entries of one step —, so that its entries' map_iterations add up to map_iterations.
  std::vector<EvidenceIteration> trace;
  MapSummary last_map;
  double seconds = 0.0;

  // --- The optimality conditions at the returned w and hyperparameters. ---
  double gradient_norm = 0.0;       // ‖∇S(w)‖
  double gradient_tolerance = 0.0;  // map.gradient_tolerance·max(1, ‖w‖)
  // ∂ log Z/∂ log θ_j for each prior hyperparameter, then ∂/∂ log β when the likelihood has β
  // (empty for kNone). A hyperparameter held at a bound of [1e-10, 1e10] by a gradient pointing
  // out of the range, or fixed by fix_prior, does not count in hyper_gradient_norm.
  Eigen::VectorXd hyper_gradient;
  EvidenceGradient hyper_gradient_kind = EvidenceGradient::kNone;
  double hyper_gradient_norm = 0.0;  // max over the free hyperparameters of |hyper_gradient_j|
  double hyper_gradient_tolerance = 0.0;
  std::vector<std::string> at_bound;  // names of hyperparameters held at a bound (β: "beta")
  // The second-order condition: the smallest eigenvalue of the exact Hessian of S at w (NaN where
  // not checked: a linear-Gaussian model, whose S is quadratic, or more than 2000 weights). Negative
  // (beyond rounding): w is a saddle point of S, and the fit is not reported as converged.
  double min_hessian_eigenvalue = std::numeric_limits<double>::quiet_NaN();
  std::string stopping_test;                 // the test that ended the loop, in words
  EvidenceLoop loop = EvidenceLoop::kJoint;  // which loop ran (kEvidence on a network or GLM)
  HessianStructure hessian_structure;        // of the Laplace approximation behind log_evidence, γ and the gradient
  bool exact_linear_gaussian = false;        // the linear-Gaussian type-II maximum likelihood was solved exactly

  // --- The hidden-unit symmetry term of a network's evidence (MacKay 1992b, §4). ---
  // log(H_l!) + H_l log 2 (the sign flips only for odd activations) summed over hidden layers,
  // with H_l the layer's well-determined units (well_determined_units): the pruned ones do not
  // make distinct modes. 0 for a linear model.
  double symmetry_log_factor = 0.0;
  std::vector<Index> well_determined_units;  // per hidden layer

  std::string brief_report() const;
};

// The joint evidence ascent between two of its steps (EvidenceOptions::checkpoint, ::resume): the
// current mode and its log-evidence, gradient and dw*/dφ, the quasi-Newton model and trust radius
// in φ, the fold rule's memory, and the summary so far. The factor of A at the mode is not kept: it
// is formed again from w and θ, which gives the same bits.
struct EvidenceCheckpoint {
  int steps = 0;                        // ascent steps taken (the start is step 0)
  Eigen::VectorXd w;                    // the current mode, w_MAP(θ)
  Eigen::VectorXd log_hyperparameters;  // φ = log θ: the prior's hyperparameters, then log β
  double log_evidence = 0.0;            // L(φ) at w
  Eigen::VectorXd gradient;             // dL/dφ
  Eigen::VectorXd gamma;                // per prior hyperparameter
  Eigen::MatrixXd mode_derivative;      // dw*/dφ (W × φ's size; empty without the total gradient)
  bool definite = true;                 // ∇∇S was positive definite in the gradient's solves
  double w_gradient_norm = std::numeric_limits<double>::quiet_NaN();  // ‖∇S‖ at w
  int map_iterations = 0;                                             // of the MAP that found the mode
  Eigen::MatrixXd model;                                              // the quasi-Newton model of ∂²L/∂φ²
  double radius = 1.0;                                                // the trust radius in φ (∞-norm)
  int branch_switches = 0;                                            // moves to another branch at a fold
  std::vector<bool> prune_declined;                                   // per φ entry: a pruning trial of it lowered L
  std::optional<Eigen::VectorXd> departed;                            // where the last trial that left the branch ended
  std::optional<Eigen::VectorXd> fallen;  // the last trial refused at a mode far below: its w
  double fallen_log_evidence = 0.0;       // and its L
  // Set in the state saved after a step that ended the ascent with kNoProgress (the trust region
  // collapsed: no step raises L): the termination, its test and what it found. A resume from that
  // state ends at once, as the run did, instead of trying more steps. (Convergence and the step
  // budget are judged again from the state itself; a stop asked for by the callback, kAborted, is
  // never kept: a resume goes on from there.)
  struct Ending {
    Termination termination = Termination::kNoProgress;
    std::string stopping_test;
    std::string outcome;
  };
  std::optional<Ending> ended;
  // The fit's summary so far: the trace, the counts of iterations, trials and steps, start_rows'
  // sample, the message, and the seconds spent (seconds).
  EvidenceSummary summary;
};

struct EvidenceResult {
  EvidenceSummary summary;
  LaplaceApproximation laplace;  // N(w_MAP, A⁻¹) at the final hyperparameters
};

// Trains w (starting from *w; it holds w_MAP afterwards) and sets the posterior's α and β by the
// chosen strategy. Throws Error(kInvalidArgument) on bad options; a numerical failure that leaves
// no usable result throws Error(kNumerical), one that does is reported in the summary.
EvidenceResult fit_evidence(Posterior* posterior, const EvidenceOptions& options, Eigen::VectorXd* w);

// MacKay's γ_g = W_g − α_g tr_g(A⁻¹) for each group; for a prior that is not group-diagonal,
// γ_j = θ_j tr((P⁻¹ − A⁻¹)P_j) for each of its hyperparameters (Prior::well_determined).
Eigen::VectorXd well_determined_parameters(const Prior& prior, const LaplaceApproximation& q);

// ∂ log p(D | θ) / ∂ log θ_j for every prior hyperparameter θ_j (Prior::hyperparameters()), from
// the Laplace approximation q at the mode: ½γ_j − θ_j E_j. Zero at MacKay's fixed point; the
// way to set hyperparameters that have no closed-form update by gradient ascent.
Eigen::VectorXd log_evidence_gradient(const Posterior& posterior, const LaplaceApproximation& q);

// The exact gradient of the Laplace log-evidence
//   L(θ) = log p(D | w*) + log p(w* | θ) + (W/2) log 2π − ½ log|A(w*, θ)|,  A = H_GN(w*) + P(θ),
// in log θ_j for every prior hyperparameter, then log β when the likelihood has β, with w* = w_MAP(θ)
// moving with θ: ½γ_j − θ_j E_j (w held) plus −½ ∂log|A|/∂w · dw*/d log θ_j, where
// dw*/d log θ_j = −(∇∇S)⁻¹ θ_j P_j w* (implicit-function theorem, ∇∇S the exact Hessian of S).
// ∂log|A|/∂w comes from the derivative of the Gauss–Newton weights Λ(f) (exact) and, for a network,
// of its Jacobian along each dw*/d log θ_j (a central difference, relative error ~1e-9). q must be
// the Gauss–Newton Laplace approximation at w_MAP; with a Gaussian likelihood on a linear model the
// implicit part is zero and this equals log_evidence_gradient plus the β entry. Where q.mean is a
// stationary point of S but not a minimum (∇∇S indefinite: a saddle), it is the derivative along the
// branch of stationary points through it, dw*/d log θ_j by an LU solve of ∇∇S (up to 3000 weights;
// above, the conjugate gradients' fallback A⁻¹ in place of (∇∇S)⁻¹, which is not a derivative).
Eigen::VectorXd total_log_evidence_gradient(const Posterior& posterior, const LaplaceApproximation& q);

// The hidden units, per hidden layer of an Mlp, that the data determine: unit j counts when one of
// its outgoing weights i has 1 − α_i (A⁻¹)_ii ≥ ½, i.e. the data have at least halved that
// weight's prior variance (MacKay's γ counts each such direction as λ/(λ + α) ≥ ½). A unit pruned by
// the evidence (every outgoing weight at its prior) changes nothing when permuted or flipped, so it
// adds no distinct mode. Empty for a network without hidden layers.
std::vector<Index> well_determined_hidden_units(const Posterior& posterior, const LaplaceApproximation& q);

// log(H_l!) + H_l log 2 summed over hidden layers (the sign flip only for tanh and sigmoid, as
// symmetry_log_factor(const Network&) in laplace.h), with H_l = units_per_layer[l]: the number of
// equivalent modes the Laplace approximation at one of them stands for (MacKay 1992b, §4).
double symmetry_log_factor(const Network& network, const std::vector<Index>& units_per_layer);

}  // namespace occam

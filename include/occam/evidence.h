// evidence.h — hyperparameters α_g and β by the evidence framework (MacKay 1992a, 1992b).
//
// One entry point, fit_evidence(), whose strategy option picks how α and β are set:
//   kFixed      the values already in the posterior;
//   kEvidence   outer loop: warm-started MAP, then γ_g = W_g − α_g tr_g(A⁻¹), α_g = γ_g/2E_W,g,
//               β = (m − γ)/2E_D, until the log-evidence changes by less than `tolerance`; a round
//               that lowers the log-evidence is undone and its step halved in log space;
//   kPeriodic   the same updates every `reestimate_every` optimiser iterations during one MAP run;
//   kQuick      the m ≫ W update γ ≈ W (α_g = W_g/2E_W,g, β = m/2E_D): no Hessian in the loop;
//   kIntegrate  α, β integrated out under 1/σ priors: minimise (W_g/2)·Σ log E_W,g + (m/2)·log E_D
//               (MacKay 1994; Buntine & Weigend 1991), reporting the implied α_g = W_g/2E_W,g, β = m/2E_D.
// Every strategy ends with the Laplace approximation at the final w and its log-evidence.
//
//   occam::EvidenceOptions options;  // kEvidence, Gauss–Newton Hessian
//   occam::EvidenceResult r = occam::fit_evidence(&posterior, options, &w);
//   std::cout << r.summary.brief_report();
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "occam/callback.h"
#include "occam/laplace.h"
#include "occam/map.h"
#include "occam/posterior.h"
#include "occam/status.h"

namespace occam {

enum class HyperStrategy { kFixed, kEvidence, kPeriodic, kQuick, kIntegrate };
HyperStrategy parse_hyper_strategy(std::string_view name);  // fixed|evidence|periodic|quick|integrate
const char* to_string(HyperStrategy s);

struct EvidenceIteration {
  int iteration = 0;
  double log_evidence = 0.0;   // at the α, β below, the values in force during this round's MAP
  Eigen::VectorXd alpha;       // per prior hyperparameter (the groups' α, then λ_s), in this round
  double beta = 0.0;           // in this round (NaN when the likelihood has none); the next round
                               // uses the re-estimated values, the next entry's
  Eigen::VectorXd gamma;       // per group, at this iteration's w_MAP
  int map_iterations = 0;
  bool accepted = true;        // false: the log-evidence fell, the round was undone (kEvidence, kPeriodic)
};

struct EvidenceOptions {
  HyperStrategy strategy = HyperStrategy::kEvidence;
  HessianKind hessian = HessianKind::kGgn;
  MapOptions map;
  int max_outer_iterations = 200;  // kEvidence, kQuick: re-estimation rounds
  double tolerance = 1e-6;         // stop when |Δ log-evidence| ≤ tolerance·max(1, |log-evidence|)
  // kEvidence, kPeriodic: once a round has been undone and its step halved, the loop is at a
  // maximum along the update direction to within that step; it stops when the next accepted
  // round gains less than this many nats. On a network each such round is a full MAP run that
  // mostly confirms the best state: differences of a fraction of a nat in log-evidence carry no
  // weight as evidence (a factor e^0.5 in the marginal likelihood). 0 turns the rule off.
  double halved_step_gain = 0.5;
  int reestimate_every = 50;       // kPeriodic: optimiser iterations between updates
  // Keep the prior's hyperparameters as they are and re-estimate β alone (e.g. the evidence
  // or cross-validation over a grid of α).
  bool fix_prior = false;
  // Called after each re-estimation round (e.g. for a progress line); may be empty. kAbort ends
  // the loop on the best state so far (termination kAborted); so does an aborted MAP run.
  IterationCallback<EvidenceIteration> callback;

  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

struct EvidenceSummary {
  Termination termination = Termination::kFailure;
  std::string message;
  HyperStrategy strategy = HyperStrategy::kEvidence;
  double log_evidence = 0.0;          // Laplace log-evidence at the final w, α, β
  Eigen::VectorXd alpha;              // per prior hyperparameter: the groups' α, then λ_s if smoothing
  std::vector<std::string> group_names;  // Prior::hyperparameter_names()
  double beta = 0.0;                  // NaN when the likelihood has no precision
  Eigen::VectorXd gamma;              // per group: well-determined parameters
  double gamma_total = 0.0;
  Eigen::VectorXd E_W;                // per group
  double E_D = 0.0;                   // Gaussian misfit ½Σ(y − f)² (0 for other likelihoods)
  int outer_iterations = 0;
  int map_iterations = 0;             // summed over every MAP run
  int clipped_eigenvalues = 0;        // exact Hessian: negative eigenvalues clipped at the end
  std::vector<EvidenceIteration> trace;
  MapSummary last_map;
  double seconds = 0.0;

  std::string brief_report() const;
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

}  // namespace occam

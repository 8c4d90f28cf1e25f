// evidence.cc — fit_evidence(): picks the strategy (src/inference/evidence/), then the one shared finish:
// the Laplace approximation at the final w, the log-evidence, and the optimality conditions that
// decide whether the fit is reported as converged.
#include "occam/evidence.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

#include "inference/evidence/engine.h"
#include "inference/evidence/online.h"
#include "inference/laplace/structured/structured.h"
#include "core/linalg.h"
#include "occam/types.h"

namespace occam {
namespace {

using Clock = std::chrono::steady_clock;

// The second-order check forms the exact W × W Hessian of S (about mW² flops, as the GGN) and its
// eigenvalues (about 4W³/3): done up to this many weights, skipped above.
constexpr Index kSecondOrderCheckMaxWeights = 2000;
// An eigenvalue below −kSaddleTolerance·max(1, |largest|) is negative beyond rounding.
constexpr double kSaddleTolerance = 1e-10;

// The smallest eigenvalue of the exact Hessian of S at w (NaN where not checked). A stationary
// point of S where it is negative is a saddle, not a MAP — on a network typically a point of the
// permutation symmetry, two hidden units with the same weights, where S falls when they part.
// Gauss–Newton and Levenberg–Marquardt steps, whose curvature is positive by construction, do
// not see that direction and stop there; the Laplace approximation there is not one of the
// posterior's modes.
double smallest_hessian_eigenvalue(const Posterior& posterior, const Eigen::VectorXd& w, double* largest) {
  *largest = std::numeric_limits<double>::quiet_NaN();
  if (evidence::is_linear_gaussian(posterior) || posterior.dim() > kSecondOrderCheckMaxWeights) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  try {
    // Summed over the blocks of rows like every other sum (the same bits on any number of
    // processes), each block's exact Hessian from a posterior over its rows alone.
    const Index W = posterior.dim();
    const Eigen::VectorXd packed = posterior.sum_over_rows([&](Index start, Index rows, Eigen::VectorXd* out) {
      const Posterior block(posterior.network().clone(), posterior.likelihood().clone(), posterior.prior(),
                            posterior.X().middleRows(start, rows), posterior.Y().middleRows(start, rows));
      internal::pack_lower(block.data_hessian(w, HessianKind::kExact), out);
    });
    Eigen::MatrixXd H = internal::symmetric_from_packed_lower(packed, W);
    posterior.prior().add_precision_to(&H);
    Eigen::VectorXd values;
    if (!H.allFinite() || !internal::symmetric_eigen(H, &values, nullptr))
      return std::numeric_limits<double>::quiet_NaN();
    *largest = values[values.size() - 1];
    return values[0];
  } catch (const Error&) {
    return std::numeric_limits<double>::quiet_NaN();  // a likelihood without an exact Hessian
  }
}

std::string format_norms(const EvidenceSummary& s) {
  std::ostringstream out;
  out.precision(3);
  out << "|grad S| = " << s.gradient_norm << " (tolerance " << s.gradient_tolerance << ")";
  if (s.hyper_gradient_kind != EvidenceGradient::kNone) {
    out << ", max |d log Z" << (s.hessian_structure.full() ? "" : "_" + to_string(s.hessian_structure))
        << "/d log theta| = " << s.hyper_gradient_norm << " (tolerance " << s.hyper_gradient_tolerance << ")";
  }
  return out.str();
}

// The shared finish: Laplace at the final w, the log-evidence, the summary's quantities, and the
// termination from the optimality conditions (converged only when they hold).
void finish(evidence::Run& run, EvidenceResult* result) {
  Posterior& posterior = run.posterior;
  EvidenceSummary& summary = run.summary;
  const EvidenceOptions& options = run.options;
  result->laplace = run.laplace ? std::move(*run.laplace) : evidence::laplace_at(posterior, run.w, options);
  const LaplaceApproximation& q = result->laplace;
  summary.log_evidence = log_evidence(posterior, q);
  summary.alpha = posterior.prior().hyperparameters();
  summary.beta = evidence::current_beta(posterior);
  summary.gamma = well_determined_parameters(posterior.prior(), q);
  summary.gamma_total = summary.gamma.sum();
  summary.E_W = posterior.prior().hyperparameter_energies(run.w);
  summary.E_D = posterior.likelihood().has_precision() ? evidence::data_error(posterior, run.w) : 0.0;
  summary.clipped_eigenvalues = q.clipped_eigenvalues;

  // ‖∇S‖ at the returned w.
  double log_p;
  Eigen::VectorXd grad;
  const bool finite = posterior.evaluate(run.w, &log_p, &grad);
  summary.gradient_norm = finite ? grad.norm() : std::numeric_limits<double>::infinity();
  summary.gradient_tolerance = options.map.gradient_tolerance * std::max(1.0, run.w.norm());

  double largest = 0.0;
  summary.min_hessian_eigenvalue =
      finite ? smallest_hessian_eigenvalue(posterior, run.w, &largest) : std::numeric_limits<double>::quiet_NaN();
  const bool saddle = summary.min_hessian_eigenvalue < -kSaddleTolerance * std::max(1.0, std::abs(largest));

  // ∂ log Z/∂ log θ of the kind the strategy optimises.
  summary.hyper_gradient_kind = run.gradient_kind;
  switch (run.gradient_kind) {
    case EvidenceGradient::kNone:
      summary.hyper_gradient.resize(0);
      break;
    case EvidenceGradient::kModeHeld:
      summary.hyper_gradient = evidence::mode_held_gradient(posterior, run.w, summary.gamma, evidence::held_weights(q));
      break;
    case EvidenceGradient::kTotal:
      // The strategy's own exact gradient at this state where it has one with ∇∇S positive
      // definite (the same solves as below; only rounding differs); else solved here, along the
      // stationary points where w is a saddle.
      summary.hyper_gradient = run.total_gradient ? *run.total_gradient : total_log_evidence_gradient(posterior, q);
      break;
    case EvidenceGradient::kQuick: {
      // The stationarity condition of the quick update, γ ≈ W: ½W_j − θ_j E_j and ½m − βE_D.
      summary.hyper_gradient =
          evidence::mode_held_gradient(posterior, run.w, posterior.prior().hyperparameter_dimensions());
      if (posterior.likelihood().has_precision()) {
        summary.hyper_gradient.tail(1)[0] += 0.5 * posterior.prior().hyperparameter_dimensions().sum();
      }
      break;
    }
  }
  summary.hyper_gradient_norm = 0.0;
  summary.hyper_gradient_tolerance = 0.0;
  summary.at_bound.clear();
  if (run.gradient_kind != EvidenceGradient::kNone) {
    const evidence::FreeHyperparameters free =
        evidence::free_hyperparameters(posterior, summary.hyper_gradient, options.fix_prior);
    summary.hyper_gradient_norm = free.norm;
    summary.hyper_gradient_tolerance = options.hyper_gradient_tolerance;
    const std::vector<std::string> names = evidence::all_hyperparameter_names(posterior);
    const Eigen::VectorXd theta = evidence::all_hyperparameters(posterior);
    for (Index j = 0; j < theta.size(); ++j) {
      const bool fixed = options.fix_prior && j < posterior.prior().num_hyperparameters();
      if (!free.free[static_cast<std::size_t>(j)] && !fixed)
        summary.at_bound.push_back(names[static_cast<std::size_t>(j)]);
    }
  }

  const bool conditions_hold =
      finite && !saddle && summary.gradient_norm <= summary.gradient_tolerance &&
      (run.gradient_kind == EvidenceGradient::kNone || summary.hyper_gradient_norm <= summary.hyper_gradient_tolerance);
  if (run.stop == Termination::kFailure || !finite) {
    summary.termination = Termination::kFailure;
    if (!finite)
      summary.message += (summary.message.empty() ? "" : "; ") + std::string("S(w) is not finite at the end");
  } else if (run.stop == Termination::kAborted || run.aborted) {
    summary.termination = Termination::kAborted;  // the user stopped it, whatever the conditions say
    if (summary.message.empty()) summary.message = "stopped by the callback";
  } else if (conditions_hold) {
    summary.termination = Termination::kConverged;
  } else if (run.stop == Termination::kConverged) {
    // The loop's own test passed, but the optimality conditions do not hold.
    summary.termination = Termination::kNoProgress;
    summary.message += (summary.message.empty() ? "" : "; ") + std::string("the optimality conditions do not hold");
  } else {
    summary.termination = run.stop;
  }
  if (saddle) {
    // A saddle point is stationary; where ‖∇S‖ is above its tolerance (a budget or a minibatch
    // optimiser's end point) negative curvature says only that no minimum is at or next to w.
    std::ostringstream note;
    note.precision(3);
    note << (summary.gradient_norm <= summary.gradient_tolerance
                 ? "w is a saddle point of S, not a minimum: the exact Hessian of S has the negative eigenvalue "
                 : "w is neither a stationary point of S nor near a minimum: the exact Hessian of S there has the "
                   "negative eigenvalue ")
         << summary.min_hessian_eigenvalue;
    summary.message += (summary.message.empty() ? "" : "; ") + note.str();
  }
  summary.message += (summary.message.empty() ? "" : " — ") + format_norms(summary);

  // The hidden-unit symmetry term over the well-determined units only.
  summary.well_determined_units = well_determined_hidden_units(posterior, q);
  summary.symmetry_log_factor = symmetry_log_factor(posterior.network(), summary.well_determined_units);
}

}  // namespace

HyperStrategy parse_hyper_strategy(std::string_view name) { return enum_names<HyperStrategy>().parse(name); }

const char* to_string(HyperStrategy s) { return enum_names<HyperStrategy>().name(s); }

EvidenceLoop parse_evidence_loop(std::string_view name) { return enum_names<EvidenceLoop>().parse(name); }

const char* to_string(EvidenceLoop loop) { return enum_names<EvidenceLoop>().name(loop); }

EvidenceLoopFacts evidence_loop_facts(const Network& network, const Likelihood& likelihood, const Prior* prior,
                                      Index rows, bool spread) {
  EvidenceLoopFacts facts;
  facts.rows = rows;
  facts.outputs = likelihood.num_outputs();
  facts.weights = network.num_params();
  facts.linear_in_weights = network.linear_in_weights();
  facts.linear_gaussian = facts.linear_in_weights && likelihood.is_homoscedastic_gaussian();
  facts.spread = spread;
  facts.group_diagonal = prior != nullptr && prior->is_group_diagonal();
  if (prior == nullptr) return facts;
  const std::vector<DenseLayer> layers = internal::unit_major_layers(network);
  const Eigen::VectorXi& group_of = prior->group_of();
  const auto one_group = [&](Index first, Index count) {
    return count <= 0 || group_of.segment(first, count).minCoeff() == group_of.segment(first, count).maxCoeff();
  };
  facts.layer_groups = !layers.empty() && std::all_of(layers.begin(), layers.end(), [&](const DenseLayer& l) {
    return one_group(l.weight_offset, l.in * l.out) && (!l.has_biases() || one_group(l.bias_offset, l.out));
  });
  return facts;
}

EvidenceLoopFacts evidence_loop_facts(const Posterior& posterior) {
  return evidence_loop_facts(posterior.network(), posterior.likelihood(), &posterior.prior(), posterior.num_data(),
                             posterior.distributed());
}

EvidenceOptions choose_evidence_loop(const EvidenceOptions& options, const EvidenceLoopFacts& facts,
                                     std::string* reason) {
  if (options.loop != EvidenceLoop::kAuto) return options;
  EvidenceOptions chosen = options;
  chosen.loop = EvidenceLoop::kJoint;
  std::string why;
  const double n = static_cast<double>(facts.rows) * static_cast<double>(facts.outputs);
  const double W = static_cast<double>(facts.weights);
  const double cost = n * W * std::min(n, W);
  std::ostringstream size;
  size.precision(2);
  size << "one full-batch Gauss–Newton curvature is " << cost << " multiply-adds (" << facts.rows << " rows";
  if (facts.outputs > 1) size << " × " << facts.outputs << " outputs";
  size << ", " << facts.weights << " weights; the online loop from " << kOnlineLoopCost << ")";
  const HessianStructureKind kind = options.structure.kind;
  // Spread over processes, no full curvature is formed: the online loop whatever the cost.
  const bool spread_full = facts.spread && kind == HessianStructureKind::kFull;
  const char* not_online = nullptr;
  if (options.strategy != HyperStrategy::kEvidence) {
    not_online = "";  // no loop to choose: kJoint stands for what it always has
  } else if (facts.linear_gaussian) {
    not_online = "a linear-Gaussian model is solved exactly";
  } else if (facts.linear_in_weights) {
    // A GLM's S is convex and its Gauss–Newton matrix exact: Newton reaches the mode in a few
    // full-batch steps, where minibatch epochs would only approach it.
    not_online = "a GLM's MAP is convex, a few full-batch Newton steps";
  } else if (cost <= kOnlineLoopCost && !spread_full) {
    not_online = "";
  } else if (options.hessian != HessianKind::kGgn) {
    not_online = "the online loop needs the Gauss–Newton Hessian";
  } else if (!facts.group_diagonal) {
    not_online = "the online loop needs a group-diagonal prior";
  } else if (kind != HessianStructureKind::kFull && kind != HessianStructureKind::kKronecker &&
             kind != HessianStructureKind::kDiagonal && kind != HessianStructureKind::kLastLayer) {
    not_online = "the online loop needs the structure kron, diag or last-layer";
  }
  if (not_online != nullptr) {
    if (options.strategy == HyperStrategy::kEvidence) {
      why =
          std::string("joint: ") + (*not_online != '\0' ? std::string(not_online) + "; " : std::string()) + size.str();
    }
  } else {
    chosen.loop = EvidenceLoop::kOnline;
    why = "online: " +
          (cost <= kOnlineLoopCost ? std::string("the rows are spread over processes, where the full "
                                                 "curvature is not formed; ")
                                   : std::string()) +
          size.str();
    if (kind == HessianStructureKind::kFull) {
      chosen.structure.kind = facts.layer_groups ? HessianStructureKind::kKronecker : HessianStructureKind::kDiagonal;
      why += std::string("; ") + to_string(chosen.structure) + " in place of the full curvature" +
             (facts.layer_groups ? "" : " (the prior's groups are not per layer)");
    }
    if (is_minibatch(chosen.map.optimizer)) {  // the online loop's own; its polish is full-batch
      chosen.online.minibatch.optimizer = chosen.map.optimizer;
      chosen.map.optimizer = Optimizer::kAuto;
    }
  }
  if (reason != nullptr) *reason = why;
  return chosen;
}

const char* to_string(EvidenceGradient kind) { return enum_names<EvidenceGradient>().name(kind); }

void EvidenceOptions::validate() const {
  map.validate();
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("EvidenceOptions", field, value, rule);
  };
  if (max_outer_iterations < 1) fail("max_outer_iterations", max_outer_iterations, "must be at least 1");
  if (!(tolerance >= 0.0)) fail("tolerance", tolerance, "must be non-negative");
  if (!(hyper_gradient_tolerance > 0.0)) fail("hyper_gradient_tolerance", hyper_gradient_tolerance, "must be positive");
  if (!(halved_step_gain >= 0.0)) fail("halved_step_gain", halved_step_gain, "must be non-negative");
  if (reestimate_every < 1) fail("reestimate_every", reestimate_every, "must be at least 1");
  if (start_rows < 0) fail("start_rows", static_cast<double>(start_rows), "must be non-negative");
  if (!structure.full() && hessian != HessianKind::kGgn) {
    throw Error(ErrorKind::kInvalidArgument,
                "EvidenceOptions: structure " + to_string(structure) +
                    " approximates the Gauss–Newton matrix; it needs hessian ggn, not exact");
  }
  if (loop == EvidenceLoop::kOnline) {
    online.validate();
    const HessianStructureKind kind = structure.kind;
    if (strategy != HyperStrategy::kEvidence ||
        (kind != HessianStructureKind::kKronecker && kind != HessianStructureKind::kDiagonal &&
         kind != HessianStructureKind::kLastLayer)) {
      throw Error(ErrorKind::kInvalidArgument,
                  "EvidenceOptions: the online loop needs strategy evidence and a structure kron, diag or last-layer, "
                  "not " +
                      std::string(to_string(strategy)) + " with " + to_string(structure));
    }
  }
  if (strategy == HyperStrategy::kIntegrate && is_minibatch(map.optimizer)) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("EvidenceOptions: --hyper integrate needs a full-batch optimizer, not ") +
                    to_string(map.optimizer));
  }
}

std::string EvidenceSummary::brief_report() const {
  std::ostringstream out;
  out << "Evidence (" << to_string(strategy) << "): " << to_string(termination);
  if (!message.empty()) out << " — " << message;
  if (!loop_choice.empty()) out << "\n  evidence loop  " << loop_choice;
  if (!stopping_test.empty()) out << "\n  stopped by  " << stopping_test;
  out << "\n  log evidence  " << log_evidence;
  if (!hessian_structure.full()) out << "  (" << to_string(hessian_structure) << " Laplace)";
  out << "\n";
  for (Index g = 0; g < alpha.size(); ++g) {
    out << "  alpha[" << (g < static_cast<Index>(group_names.size()) ? group_names[g] : std::to_string(g)) << "]  "
        << alpha[g] << "   gamma " << gamma[g] << "\n";
  }
  if (std::isfinite(beta)) out << "  beta  " << beta << "  (noise sd " << 1.0 / std::sqrt(beta) << ")\n";
  out << "  gamma  " << gamma_total << "\n  |grad S|  " << gradient_norm << "  (tolerance " << gradient_tolerance
      << ")";
  if (hyper_gradient_kind != EvidenceGradient::kNone) {
    out << "\n  max |d log Z" << (hessian_structure.full() ? "" : "_" + to_string(hessian_structure))
        << " / d log theta|  " << hyper_gradient_norm << "  (tolerance " << hyper_gradient_tolerance << ", "
        << to_string(hyper_gradient_kind) << ")";
  }
  if (!at_bound.empty()) {
    out << "\n  at a bound of [1e-10, 1e10]  ";
    for (std::size_t i = 0; i < at_bound.size(); ++i) out << (i ? ", " : "") << at_bound[i];
  }
  out << "\n  hyperparameter updates  " << outer_iterations << ", MAP iterations " << map_iterations << ", " << seconds
      << " s";
  if (abandoned_trials > 0) out << "\n  trial MAPs abandoned on the way to a far lower mode  " << abandoned_trials;
  if (resumed_at_step >= 0) out << "\n  resumed from a checkpoint after step  " << resumed_at_step;
  if (clipped_eigenvalues > 0) out << "\n  clipped negative Hessian eigenvalues  " << clipped_eigenvalues;
  if (std::isfinite(min_hessian_eigenvalue))
    out << "\n  smallest eigenvalue of the exact Hessian of S  " << min_hessian_eigenvalue;
  return out.str();
}

Eigen::VectorXd well_determined_parameters(const Prior& prior, const LaplaceApproximation& q) {
  // γ_g = W_g − α_g tr_g(A⁻¹); for one group, γ = Σ_i λ_i/(λ_i + α) (MacKay 1992a, eq. 4.9).
  if (!prior.is_group_diagonal()) {
    // The full covariance A⁻¹ = SSᵀ from the factor (dense: S = L⁻ᵀ).
    const Eigen::MatrixXd S_t = q.covariance_factor_transpose(Eigen::MatrixXd::Identity(q.dim(), q.dim()));
    return prior.well_determined(S_t.transpose() * S_t);
  }
  return prior.group_sizes() - prior.alpha().cwiseProduct(prior.group_traces(q.covariance_diagonal()));
}

Eigen::VectorXd log_evidence_gradient(const Posterior& posterior, const LaplaceApproximation& q) {
  // ∂/∂ log θ_j of log p(w*|θ) − ½ log|A| at w* (MacKay 1992a, §4, with w* held at the mode:
  // the mode's own movement does not change log p(D, w*) to first order):
  //   ½ θ_j tr(P⁻¹P_j) − θ_j E_j − ½ θ_j tr(A⁻¹P_j) = ½ γ_j − θ_j E_j.
  const Prior& prior = posterior.prior();
  const Eigen::VectorXd gamma = well_determined_parameters(prior, q);
  return 0.5 * gamma - prior.hyperparameters().cwiseProduct(prior.hyperparameter_energies(q.mean));
}

EvidenceResult fit_evidence(Posterior* posterior, const EvidenceOptions& requested, Eigen::VectorXd* w) {
  requested.validate();
  std::string loop_choice;
  const EvidenceOptions options = requested.loop == EvidenceLoop::kAuto
                                      ? choose_evidence_loop(requested, evidence_loop_facts(*posterior), &loop_choice)
                                      : requested;
  options.validate();
  if (w->size() != posterior->dim()) {
    throw Error(ErrorKind::kInvalidArgument, "fit_evidence: the start point has " + std::to_string(w->size()) +
                                                 " entries but the network has " + std::to_string(posterior->dim()));
  }
  if (options.strategy == HyperStrategy::kIntegrate && !posterior->prior().is_group_diagonal()) {
    throw Error(ErrorKind::kInvalidArgument,
                "--hyper integrate needs a group-diagonal prior (not graph-Laplacian smoothing); use evidence");
  }
  check_hessian_structure(options.structure, posterior->dim());  // before the MAP, not after it
  const auto start = Clock::now();
  EvidenceResult result;
  EvidenceSummary& summary = result.summary;
  summary.strategy = options.strategy;
  summary.group_names = posterior->prior().hyperparameter_names();
  summary.loop = options.loop;
  summary.loop_choice = loop_choice;
  summary.hessian_structure = options.structure;
  evidence::Run run{*posterior, options, *w, summary};
  run.started = start;
  const bool structured = !options.structure.full();
  const bool joint_ascent = options.strategy == HyperStrategy::kEvidence && options.loop == EvidenceLoop::kJoint &&
                            !structured && !evidence::is_linear_gaussian(*posterior);
  if ((options.checkpoint || options.resume) && !joint_ascent) {
    throw Error(ErrorKind::kInvalidArgument,
                std::string("EvidenceOptions.") + (options.resume ? "resume" : "checkpoint") +
                    ": only the joint evidence ascent (strategy evidence, loop joint, the full structure, a model "
                    "that is not linear-Gaussian) has checkpoints; this fit runs " +
                    (options.strategy != HyperStrategy::kEvidence ? std::string("another strategy")
                     : options.loop != EvidenceLoop::kJoint ? std::string("the ") + to_string(options.loop) + " loop"
                     : structured                           ? std::string("a structured approximation")
                                                            : std::string("the exact linear-Gaussian solution")) +
                    (loop_choice.empty() ? "" : " (" + loop_choice + ")"));
  }

  switch (options.strategy) {
    case HyperStrategy::kFixed:
      evidence::fit_fixed(run);
      break;
    case HyperStrategy::kQuick:
      evidence::fit_quick(run);
      break;
    case HyperStrategy::kIntegrate:
      evidence::fit_integrated(run);
      break;
    case HyperStrategy::kEvidence:
    case HyperStrategy::kPeriodic:
      if (options.loop == EvidenceLoop::kOnline) {
        evidence::fit_online(run);  // evidence/online.cc
        break;
      }
      if (evidence::is_linear_gaussian(*posterior) && !structured) {
        // Solved exactly, whatever the schedule: there is nothing to interleave.
        evidence::fit_linear_gaussian(run);
        break;
      }
      if (options.strategy == HyperStrategy::kEvidence && options.loop == EvidenceLoop::kJoint && !structured) {
        // evidence/subset_start.cc: with start_rows alone; a resumed ascent had it before.
        if (!options.resume) evidence::start_on_subset(run);
        if (!run.aborted) evidence::ascend_evidence(run);
        break;
      }
      summary.loop = EvidenceLoop::kOuter;
      evidence::fit_outer_loop(run);
      // MacKay's fixed point is the maximum of the evidence only when A does not move with w_MAP
      // through the likelihood's weights Λ(f): for the non-Gaussian families, go on to the maximum.
      // With a structure the total gradient (exact solves with ∇∇S) is not available: the fixed
      // point of the structure's own evidence is where the loop ends.
      if (!structured && !posterior->likelihood().has_precision() &&
          evidence::total_gradient_applies(*posterior, options.hessian) && run.stop != Termination::kFailure) {
        evidence::ascend_evidence(run);
      }
      break;
  }
  finish(run, &result);
  summary.seconds = run.seconds();  // a resumed ascent's seconds include those before its checkpoint
  return result;
}

}  // namespace occam

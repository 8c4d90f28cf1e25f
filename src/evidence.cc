#include "occam/evidence.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

namespace occam {
namespace {

using Clock = std::chrono::steady_clock;

// Hyperparameters are kept inside [kMinHyper, kMaxHyper]: a group whose weights all shrink to
// zero (E_W,g → 0) would otherwise send α_g to infinity and A out of floating-point range.
constexpr double kMinHyper = 1e-10;
constexpr double kMaxHyper = 1e10;

double clamp_hyper(double value) { return std::clamp(value, kMinHyper, kMaxHyper); }

// The number of scalar targets (m·T): the m of MacKay's β = (m − γ)/2E_D.
double num_targets(const Posterior& posterior) { return static_cast<double>(posterior.Y().size()); }

// E_D = ½ Σ (y − f)² at w, the Gaussian misfit; for a likelihood without β, −log p(D|w).
double data_error(const Posterior& posterior, const Eigen::VectorXd& w) {
  if (!posterior.likelihood().has_precision()) return -posterior.log_likelihood(w);
  Eigen::MatrixXd F;
  posterior.network().forward(w, posterior.X(), &F);
  return GaussianLikelihood::data_error(F, posterior.Y());
}

// ½ Σ (y − f)² as a Network::OutputLoss, for the integrated-out objective.
class SquaredErrorLoss final : public OutputLoss {
 public:
  explicit SquaredErrorLoss(const Eigen::MatrixXd& Y) : Y_(Y) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    dF->noalias() = F - Y_;
    return 0.5 * dF->squaredNorm();
  }

 private:
  const Eigen::MatrixXd& Y_;
};

// The log-likelihood as a Network::OutputLoss (for families without β).
class LogLikelihoodLoss final : public OutputLoss {
 public:
  explicit LogLikelihoodLoss(const Posterior& posterior) : posterior_(posterior) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    return posterior_.likelihood().log_likelihood(F, posterior_.Y(), dF);
  }

 private:
  const Posterior& posterior_;
};

// α (and β) integrated out under the improper priors p(log α) = p(log β) = const:
//   log p(w | D) = −Σ_g (W_g/2) log E_W,g − (m/2) log E_D + const   (MacKay 1994, eq. 6;
// Buntine & Weigend 1991). Without β the data term is log p(D|w) itself.
class IntegratedHyperDensity final : public LogDensity {
 public:
  explicit IntegratedHyperDensity(const Posterior& posterior)
      : posterior_(posterior), sizes_(posterior.prior().group_sizes()) {}

  Index dim() const override { return posterior_.dim(); }

  bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& w, double* log_p, Eigen::VectorXd* grad) const override {
    const Prior& prior = posterior_.prior();
    const Eigen::VectorXd E_W = prior.energies(w);
    if ((E_W.array() <= 0.0).any()) return false;  // log E_W,g = −∞ at w_g = 0
    double value = -0.5 * sizes_.dot(E_W.array().log().matrix());
    Eigen::VectorXd data_grad;
    if (posterior_.likelihood().has_precision()) {
      const double m = num_targets(posterior_);
      const double E_D = posterior_.network().value_gradient(w, posterior_.X(), SquaredErrorLoss(posterior_.Y()),
                                                             &data_grad);
      if (!(E_D > 0.0)) return false;
      value -= 0.5 * m * std::log(E_D);
      data_grad *= -0.5 * m / E_D;
    } else {
      value += posterior_.network().value_gradient(w, posterior_.X(), LogLikelihoodLoss(posterior_), &data_grad);
    }
    if (grad != nullptr) {
      // ∂/∂w_i of −(W_g/2) log E_W,g is −(W_g / 2E_W,g)·w_i: the implied α_g times w_i.
      const Eigen::VectorXd implied_alpha = sizes_.cwiseQuotient(2.0 * E_W);
      *grad = data_grad;
      for (Index i = 0; i < w.size(); ++i) (*grad)[i] -= implied_alpha[prior.group_of()[i]] * w[i];
    }
    *log_p = value;
    return std::isfinite(value) && (grad == nullptr || grad->allFinite());
  }

 private:
  const Posterior& posterior_;
  Eigen::VectorXd sizes_;
};

double current_beta(const Posterior& posterior) {
  return posterior.likelihood().has_precision() ? posterior.likelihood().precision()
                                                : std::numeric_limits<double>::quiet_NaN();
}

// MacKay's re-estimation (MacKay 1992a, eqs. 4.9–4.11; per group, MacKay 1992b, eq. 5.1):
// α_g ← γ_g / 2E_W,g, β ← (m − γ) / 2E_D, with γ_g = W_g − α_g tr_g(A⁻¹) from
// well_determined_parameters (the caller has it already: it costs a W³ inverse).
// For a prior P = Σ_j θ_j P_j that is not group-diagonal (graph-Laplacian smoothing) the same
// update θ_j ← γ_j / 2E_j, E_j = ½wᵀP_jw, γ_j = θ_j tr((P⁻¹ − A⁻¹)P_j), is the stationarity
// condition of the log-evidence gradient (log_evidence_gradient): ∂ log Z/∂ log θ_j = ½γ_j − θ_j E_j.
void mackay_update(Posterior* posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma, bool fix_prior) {
  Prior& prior = posterior->prior();
  if (!fix_prior) {
    const Eigen::VectorXd E = prior.hyperparameter_energies(w);
    Eigen::VectorXd theta(prior.num_hyperparameters());
    for (Index j = 0; j < theta.size(); ++j) {
      theta[j] = clamp_hyper(std::max(gamma[j], kMinHyper) / std::max(2.0 * E[j], std::numeric_limits<double>::min()));
    }
    prior.set_hyperparameters(theta);
  }
  if (posterior->likelihood().has_precision()) {
    const double m = num_targets(*posterior);
    const double E_D = data_error(*posterior, w);
    const double beta = std::max(m - gamma.sum(), kMinHyper) / std::max(2.0 * E_D, std::numeric_limits<double>::min());
    posterior->likelihood().set_precision(clamp_hyper(beta));
  }
}

// The m ≫ W limit of the update, where every parameter is well determined (γ ≈ W):
// α_g ← W_g / 2E_W,g, β ← m / 2E_D (MacKay 1992a, §4.2). No Hessian is needed.
void quick_update(Posterior* posterior, const Eigen::VectorXd& w, bool fix_prior) {
  Prior& prior = posterior->prior();
  if (!fix_prior) {
    const Eigen::VectorXd E = prior.hyperparameter_energies(w);
    const Eigen::VectorXd sizes = prior.hyperparameter_dimensions();
    Eigen::VectorXd theta(prior.num_hyperparameters());
    for (Index j = 0; j < theta.size(); ++j) {
      theta[j] = clamp_hyper(sizes[j] / std::max(2.0 * E[j], std::numeric_limits<double>::min()));
    }
    prior.set_hyperparameters(theta);
  }
  if (posterior->likelihood().has_precision()) {
    const double E_D = data_error(*posterior, w);
    posterior->likelihood().set_precision(
        clamp_hyper(num_targets(*posterior) / std::max(2.0 * E_D, std::numeric_limits<double>::min())));
  }
}

bool evidence_settled(double previous, double current, double tolerance) {
  return std::abs(current - previous) <= tolerance * std::max(1.0, std::abs(current));
}

// Records a round with the α, β in force in the posterior (those its MAP and log-evidence belong
// to); returns true when the callback asks to stop.
bool record(const EvidenceOptions& options, EvidenceSummary* summary, int iteration, double log_z,
            const Posterior& posterior, const Eigen::VectorXd& gamma, int map_iterations, bool accepted = true) {
  EvidenceIteration it{iteration, log_z, posterior.prior().hyperparameters(), current_beta(posterior), gamma, map_iterations,
                       accepted};
  const bool stop = options.callback && options.callback(it) == CallbackReturn::kAbort;
  summary->trace.push_back(std::move(it));
  return stop;
}

}  // namespace

HyperStrategy parse_hyper_strategy(std::string_view name) {
  if (name == "fixed") return HyperStrategy::kFixed;
  if (name == "evidence") return HyperStrategy::kEvidence;
  if (name == "periodic") return HyperStrategy::kPeriodic;
  if (name == "quick") return HyperStrategy::kQuick;
  if (name == "integrate") return HyperStrategy::kIntegrate;
  throw Error(ErrorKind::kInvalidArgument, "hyper must be one of fixed, evidence, periodic, quick, integrate; got '" +
                                               std::string(name) + "'");
}

const char* to_string(HyperStrategy s) {
  switch (s) {
    case HyperStrategy::kFixed: return "fixed";
    case HyperStrategy::kEvidence: return "evidence";
    case HyperStrategy::kPeriodic: return "periodic";
    case HyperStrategy::kQuick: return "quick";
    case HyperStrategy::kIntegrate: return "integrate";
  }
  return "unknown";
}

void EvidenceOptions::validate() const {
  map.validate();
  auto fail = [](const char* field, double value, const char* rule) { invalid_option("EvidenceOptions", field, value, rule); };
  if (max_outer_iterations < 1) fail("max_outer_iterations", max_outer_iterations, "must be at least 1");
  if (!(tolerance >= 0.0)) fail("tolerance", tolerance, "must be non-negative");
  if (!(halved_step_gain >= 0.0)) fail("halved_step_gain", halved_step_gain, "must be non-negative");
  if (reestimate_every < 1) fail("reestimate_every", reestimate_every, "must be at least 1");
  if (strategy == HyperStrategy::kIntegrate && map.optimizer == Optimizer::kAdam) {
    throw Error(ErrorKind::kInvalidArgument, "EvidenceOptions: --hyper integrate needs a full-batch optimizer, not adam");
  }
}

std::string EvidenceSummary::brief_report() const {
  std::ostringstream out;
  out << "Evidence (" << to_string(strategy) << "): " << to_string(termination);
  if (!message.empty()) out << " — " << message;
  out << "\n  log evidence  " << log_evidence << "\n";
  for (Index g = 0; g < alpha.size(); ++g) {
    out << "  alpha[" << (g < static_cast<Index>(group_names.size()) ? group_names[g] : std::to_string(g))
        << "]  " << alpha[g] << "   gamma " << gamma[g] << "\n";
  }
  if (std::isfinite(beta)) out << "  beta  " << beta << "  (noise sd " << 1.0 / std::sqrt(beta) << ")\n";
  out << "  gamma  " << gamma_total << "\n  outer iterations  " << outer_iterations << ", MAP iterations "
      << map_iterations << ", " << seconds << " s";
  if (clipped_eigenvalues > 0) out << "\n  clipped negative Hessian eigenvalues  " << clipped_eigenvalues;
  return out.str();
}

Eigen::VectorXd well_determined_parameters(const Prior& prior, const LaplaceApproximation& q) {
  // γ_g = W_g − α_g tr_g(A⁻¹); for one group, γ = Σ_i λ_i/(λ_i + α) (MacKay 1992a, eq. 4.9).
  if (!prior.is_group_diagonal()) {
    // The full covariance A⁻¹ from the factor: A⁻¹ = L⁻ᵀL⁻¹.
    const Index W = q.dim();
    Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(W, W);
    q.precision_cholesky.triangularView<Eigen::Lower>().solveInPlace(L_inv);
    return prior.well_determined(L_inv.transpose() * L_inv);
  }
  return prior.group_sizes() - prior.alpha().cwiseProduct(prior.group_traces(q.covariance_diagonal()));
}

EvidenceResult fit_evidence(Posterior* posterior, const EvidenceOptions& options, Eigen::VectorXd* w) {
  options.validate();
  if (w->size() != posterior->dim()) {
    throw Error(ErrorKind::kInvalidArgument, "fit_evidence: the start point has " + std::to_string(w->size()) +
                                                 " entries but the network has " + std::to_string(posterior->dim()));
  }
  const auto start = Clock::now();
  EvidenceResult result;
  EvidenceSummary& summary = result.summary;
  summary.strategy = options.strategy;
  summary.group_names = posterior->prior().hyperparameter_names();
  if (options.strategy == HyperStrategy::kIntegrate && !posterior->prior().is_group_diagonal()) {
    throw Error(ErrorKind::kInvalidArgument,
                "--hyper integrate needs a group-diagonal prior (not graph-Laplacian smoothing); use evidence");
  }
  summary.termination = Termination::kConverged;

  // A MAP run that stops early is carried into the summary; the engine goes on with the best point.
  auto run_map = [&](const MapOptions& map_options) {
    summary.last_map = find_map(*posterior, map_options, w);
    summary.map_iterations += summary.last_map.iterations;
    return summary.last_map;
  };

  bool have_laplace = false;
  bool aborted = false;  // a callback asked to stop: the loops end on their best consistent state
  switch (options.strategy) {
    case HyperStrategy::kFixed:
      run_map(options.map);
      summary.message = "hyperparameters fixed";
      break;

    case HyperStrategy::kEvidence:
    case HyperStrategy::kPeriodic: {
      // The fixed-point updates are not an ascent method: on a network, w_MAP moves with α and β
      // and an update can overshoot into a worse mode. The loop is therefore safeguarded: a round
      // whose log-evidence falls below the best so far is undone, and the step from the best
      // hyperparameters is halved in log space, up to kMaxHalvings times. The accepted rounds
      // increase the log-evidence monotonically; the trace marks the rejected ones. An accepted
      // round after a halving that gains less than halved_step_gain nats ends the loop: the
      // evidence is at its maximum along the update direction, to within what matters.
      constexpr int kMaxHalvings = 4;
      MapOptions map_options = options.map;
      if (options.strategy == HyperStrategy::kPeriodic) map_options.max_iterations = options.reestimate_every;
      struct State {
        double log_z = -std::numeric_limits<double>::infinity();
        Eigen::VectorXd w, alpha;
        double beta = 0.0;
        LaplaceApproximation laplace;
      } best;
      auto set_hypers = [&](const Eigen::VectorXd& alpha, double beta) {
        posterior->prior().set_hyperparameters(alpha);
        if (posterior->likelihood().has_precision()) posterior->likelihood().set_precision(beta);
      };
      int halvings = 0;
      summary.termination = Termination::kMaxIterations;
      summary.message = "reached the maximum of " + std::to_string(options.max_outer_iterations) + " re-estimations";
      const auto restore_best = [&] {
        if (!std::isfinite(best.log_z)) return;
        *w = best.w;
        result.laplace = best.laplace;
        set_hypers(best.alpha, best.beta);
      };
      for (int it = 1; it <= options.max_outer_iterations; ++it) {
        const MapSummary map = run_map(map_options);
        aborted = map.termination == Termination::kAborted;
        result.laplace = laplace(*posterior, *w, options.hessian);
        const double log_z = log_evidence(*posterior, result.laplace);
        summary.outer_iterations = it;
        const bool map_done = map.termination == Termination::kConverged;
        const Eigen::VectorXd gamma = well_determined_parameters(posterior->prior(), result.laplace);
        if (map_done && log_z < best.log_z) {
          aborted = record(options, &summary, it, log_z, *posterior, gamma, map.iterations, /*accepted=*/false);
          *w = best.w;
          result.laplace = best.laplace;
          if (halvings == kMaxHalvings || it == options.max_outer_iterations || aborted) {
            // End on the best state, whose w and Laplace factor belong to its α and β.
            set_hypers(best.alpha, best.beta);
            if (halvings == kMaxHalvings) {
              summary.termination = Termination::kConverged;
              summary.message = "no re-estimation step increased the log-evidence (after " +
                                std::to_string(kMaxHalvings) + " halvings); the best state is kept";
            }
            break;
          }
          ++halvings;
          // Half the step in log space: the geometric mean of the best and the rejected values.
          const Eigen::VectorXd alpha = (best.alpha.array() * posterior->prior().hyperparameters().array()).sqrt();
          const double beta = posterior->likelihood().has_precision()
                                  ? std::sqrt(best.beta * posterior->likelihood().precision())
                                  : best.beta;
          set_hypers(alpha, beta);
          continue;
        }
        const double previous = best.log_z;
        const bool after_halving = halvings > 0;
        if (map_done) {
          best = {log_z, *w, posterior->prior().hyperparameters(), current_beta(*posterior), result.laplace};
          halvings = 0;
        }
        if (map_done && evidence_settled(previous, log_z, options.tolerance)) {
          record(options, &summary, it, log_z, *posterior, gamma, map.iterations, true);
          summary.termination = Termination::kConverged;
          summary.message = "log-evidence changed by less than the tolerance";
          break;
        }
        if (map_done && after_halving && log_z - previous < options.halved_step_gain) {
          record(options, &summary, it, log_z, *posterior, gamma, map.iterations, true);
          summary.termination = Termination::kConverged;
          std::ostringstream message;
          message << "a halved step gained " << log_z - previous << " nats of log-evidence, less than "
                  << options.halved_step_gain << "; the loop is at its maximum";
          summary.message = message.str();
          break;
        }
        if (it == options.max_outer_iterations || aborted) {
          record(options, &summary, it, log_z, *posterior, gamma, map.iterations, true);
          if (aborted) restore_best();
          break;
        }
        if (record(options, &summary, it, log_z, *posterior, gamma, map.iterations, true)) {
          aborted = true;
          break;
        }
        mackay_update(posterior, *w, gamma, options.fix_prior);
      }
      have_laplace = true;
      break;
    }

    case HyperStrategy::kQuick: {
      summary.termination = Termination::kMaxIterations;
      summary.message = "reached the maximum of " + std::to_string(options.max_outer_iterations) + " re-estimations";
      for (int it = 1; it <= options.max_outer_iterations; ++it) {
        const MapSummary map = run_map(options.map);
        summary.outer_iterations = it;
        const Eigen::VectorXd old_alpha = posterior->prior().hyperparameters();
        const double old_beta = current_beta(*posterior);
        if (it == options.max_outer_iterations || map.termination == Termination::kAborted) break;
        if (record(options, &summary, it, std::numeric_limits<double>::quiet_NaN(), *posterior,
                   posterior->prior().hyperparameter_dimensions(), map.iterations)) {
          aborted = true;
          break;
        }
        quick_update(posterior, *w, options.fix_prior);
        // Settled when no log-hyperparameter moves by more than the tolerance.
        double change = (posterior->prior().hyperparameters().array().log() - old_alpha.array().log()).abs().maxCoeff();
        if (posterior->likelihood().has_precision()) {
          change = std::max(change, std::abs(std::log(current_beta(*posterior)) - std::log(old_beta)));
        }
        if (map.termination == Termination::kConverged && change <= std::max(options.tolerance, 1e-8)) {
          run_map(options.map);  // the MAP at the settled hyperparameters
          summary.termination = Termination::kConverged;
          summary.message = "hyperparameters changed by less than the tolerance";
          break;
        }
      }
      break;
    }

    case HyperStrategy::kIntegrate: {
      // The integrated objective is unbounded at w_g = 0 (log E_W,g → −∞; MacKay 1994, §3), where
      // an initialisation puts the biases. Start from the MAP at the given α, β instead, whose
      // basin holds the local optimum the method is after.
      if (run_map(options.map).termination == Termination::kAborted) break;
      const IntegratedHyperDensity density(*posterior);
      summary.last_map = maximize(density, options.map, w);
      summary.map_iterations += summary.last_map.iterations;
      summary.termination = summary.last_map.termination;
      summary.message = "α, β integrated out: " + summary.last_map.message;
      // The optimum is the MAP at the implied α_g = W_g/2E_W,g and β = m/2E_D (MacKay 1994, eq. 7).
      const Eigen::VectorXd E_W = posterior->prior().energies(*w);
      for (int g = 0; g < posterior->prior().num_groups(); ++g) {
        if (E_W[g] <= 1e-12 * std::max(1.0, E_W.maxCoeff())) {
          summary.termination = Termination::kFailure;
          summary.message += "; the weights of group '" + posterior->prior().groups()[g].name +
                             "' collapsed to zero, where the integrated objective is unbounded "
                             "(no interior optimum for that group): use one alpha (--alpha-groups single) "
                             "or the evidence strategy";
          break;
        }
      }
      quick_update(posterior, *w, options.fix_prior);
      break;
    }
  }

  if (!have_laplace) result.laplace = laplace(*posterior, *w, options.hessian);
  summary.log_evidence = log_evidence(*posterior, result.laplace);
  summary.alpha = posterior->prior().hyperparameters();
  summary.beta = current_beta(*posterior);
  summary.gamma = well_determined_parameters(posterior->prior(), result.laplace);
  summary.gamma_total = summary.gamma.sum();
  summary.E_W = posterior->prior().hyperparameter_energies(*w);
  summary.E_D = posterior->likelihood().has_precision() ? data_error(*posterior, *w) : 0.0;
  summary.clipped_eigenvalues = result.laplace.clipped_eigenvalues;
  if (summary.termination != Termination::kFailure && summary.last_map.termination == Termination::kFailure) {
    summary.termination = Termination::kFailure;
    summary.message += " (MAP: " + summary.last_map.message + ")";
  }
  if (aborted || summary.last_map.termination == Termination::kAborted) {
    summary.termination = Termination::kAborted;
    summary.message = "stopped by the callback after " + std::to_string(summary.outer_iterations) +
                      " re-estimations; the best state so far is kept";
  }
  summary.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

Eigen::VectorXd log_evidence_gradient(const Posterior& posterior, const LaplaceApproximation& q) {
  // ∂/∂ log θ_j of log p(w*|θ) − ½ log|A| at w* (MacKay 1992a, §4, with w* held at the mode:
  // the mode's own movement does not change log p(D, w*) to first order):
  //   ½ θ_j tr(P⁻¹P_j) − θ_j E_j − ½ θ_j tr(A⁻¹P_j) = ½ γ_j − θ_j E_j.
  const Prior& prior = posterior.prior();
  const Eigen::VectorXd gamma = well_determined_parameters(prior, q);
  return 0.5 * gamma - prior.hyperparameters().cwiseProduct(prior.hyperparameter_energies(q.mean));
}

}  // namespace occam

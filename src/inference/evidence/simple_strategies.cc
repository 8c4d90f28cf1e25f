// simple_strategies.cc — the strategies with no evidence maximisation in them: fixed
// hyperparameters, the m ≫ W quick update, and α, β integrated out.
#include <algorithm>
#include <cmath>
#include <limits>

#include "inference/evidence/engine.h"

namespace occam::evidence {
namespace {

// ½ Σ (y − f)² as a Network::OutputLoss, for the integrated-out objective (½ Σ ω (y − f)² when Y
// has a weight column).
class SquaredErrorLoss final : public OutputLoss {
 public:
  explicit SquaredErrorLoss(const Eigen::MatrixXd& Y) : Y_(Y) {}
  double operator()(const Eigen::MatrixXd& F, Eigen::MatrixXd* dF) const override {
    if (Y_.cols() == 2) {
      dF->noalias() = (Y_.col(1).array() * (F.col(0) - Y_.col(0)).array()).matrix();
      return 0.5 * (dF->array() * (F.col(0) - Y_.col(0)).array()).sum();
    }
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
      const double E_D =
          posterior_.network().value_gradient(w, posterior_.X(), SquaredErrorLoss(posterior_.Y()), &data_grad);
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

// The m ≫ W limit of MacKay's update, where every parameter is well determined (γ ≈ W):
// α_g ← W_g / 2E_W,g, β ← m / 2E_D (MacKay 1992a, §4.2). No Hessian is needed.
void quick_update(Posterior* posterior, const Eigen::VectorXd& w, bool fix_prior) {
  constexpr double kTiny = std::numeric_limits<double>::min();
  Prior& prior = posterior->prior();
  if (!fix_prior) {
    const Eigen::VectorXd E = prior.hyperparameter_energies(w);
    const Eigen::VectorXd sizes = prior.hyperparameter_dimensions();
    Eigen::VectorXd theta(prior.num_hyperparameters());
    for (Index j = 0; j < theta.size(); ++j) theta[j] = clamp_hyper(sizes[j] / std::max(2.0 * E[j], kTiny));
    prior.set_hyperparameters(theta);
  }
  if (posterior->likelihood().has_precision()) {
    const double E_D = data_error(*posterior, w);
    posterior->likelihood().set_precision(clamp_hyper(num_targets(*posterior) / std::max(2.0 * E_D, kTiny)));
  }
}

}  // namespace

void fit_fixed(Run& run) {
  run.gradient_kind = EvidenceGradient::kNone;
  std::string message;
  run.stop = minimize_map(run, &message);
  run.summary.message = "hyperparameters fixed; MAP: " + message;
  run.summary.stopping_test = "MAP: " + message;
}

void fit_quick(Run& run) {
  Posterior& posterior = run.posterior;
  const EvidenceOptions& options = run.options;
  EvidenceSummary& summary = run.summary;
  run.gradient_kind = EvidenceGradient::kQuick;
  run.stop = Termination::kMaxIterations;
  summary.message = "reached the maximum of " + std::to_string(options.max_outer_iterations) + " re-estimations";
  summary.stopping_test = "update budget (max_outer_iterations)";
  for (int it = 1; it <= options.max_outer_iterations; ++it) {
    std::string map_message;
    const int before = summary.map_iterations;
    const Termination map = minimize_map(run, &map_message);
    if (map == Termination::kFailure) {
      run.stop = Termination::kFailure;
      summary.message = "MAP: " + map_message;
      return;
    }
    if (map == Termination::kAborted) {
      run.stop = Termination::kAborted;
      summary.message = "stopped by the callback during a MAP run";
      return;
    }
    summary.outer_iterations = it;
    const Eigen::VectorXd old_theta = all_hyperparameters(posterior);
    // This round, at the α, β its MAP belongs to (before the update).
    record(run,
           {it, std::numeric_limits<double>::quiet_NaN(), posterior.prior().hyperparameters(), current_beta(posterior),
            posterior.prior().hyperparameter_dimensions(), summary.map_iterations - before});
    if (run.aborted) {
      run.stop = Termination::kAborted;
      summary.message = "stopped by the callback; this round's MAP is kept";
      return;
    }
    if (it == options.max_outer_iterations) break;
    quick_update(&posterior, run.w, options.fix_prior);
    // Settled when no log-hyperparameter moves by more than the tolerance.
    const double change = (all_hyperparameters(posterior).array().log() - old_theta.array().log()).abs().maxCoeff();
    if (change <= std::max(options.tolerance, 1e-8)) {
      const Termination last = minimize_map(run, &map_message);  // the MAP at the settled hyperparameters
      run.stop = last == Termination::kFailure ? last : Termination::kConverged;
      summary.message = "hyperparameters changed by less than the tolerance";
      summary.stopping_test = "quick update: largest change of a log-hyperparameter below the tolerance";
      break;
    }
  }
}

void fit_integrated(Run& run) {
  Posterior& posterior = run.posterior;
  posterior.require_one_process("hyperparameters integrated out (strategy integrate)");
  const EvidenceOptions& options = run.options;
  EvidenceSummary& summary = run.summary;
  // The optimum is the MAP at the implied α_g = W_g/2E_W,g, β = m/2E_D (MacKay 1994, eq. 7): at
  // the end the posterior holds those, and ∇S = 0 there is the optimality condition.
  run.gradient_kind = EvidenceGradient::kNone;
  // The integrated objective is unbounded at w_g = 0 (log E_W,g → −∞; MacKay 1994, §3), where
  // an initialisation puts the biases. Start from the MAP at the given α, β instead, whose
  // basin holds the local optimum the method is after.
  std::string map_message;
  minimize_map(run, &map_message);
  const IntegratedHyperDensity density(posterior);
  summary.last_map = maximize(density, options.map, &run.w);
  summary.map_iterations += summary.last_map.iterations;
  run.stop = summary.last_map.termination;
  summary.message = "α, β integrated out: " + summary.last_map.message;
  summary.stopping_test = "L-BFGS on the integrated objective: " + summary.last_map.message;
  const Eigen::VectorXd E_W = posterior.prior().energies(run.w);
  for (int g = 0; g < posterior.prior().num_groups(); ++g) {
    if (E_W[g] <= 1e-12 * std::max(1.0, E_W.maxCoeff())) {
      run.stop = Termination::kFailure;
      summary.message += "; the weights of group '" + posterior.prior().groups()[g].name +
                         "' collapsed to zero, where the integrated objective is unbounded "
                         "(no interior optimum for that group): use one alpha (--alpha-groups single) "
                         "or the evidence strategy";
      break;
    }
  }
  quick_update(&posterior, run.w, options.fix_prior);
}

}  // namespace occam::evidence

// hyperparameters.cc — what every evidence strategy shares: the hyperparameter vector (θ, then β),
// MacKay's re-estimation, the gradient with w held at the mode, and which entries are free.
#include <algorithm>
#include <cmath>
#include <limits>

#include "inference/evidence/engine.h"
#include "core/row_sums.h"

namespace occam::evidence {

// m·K over every process's rows.
double num_targets(const Posterior& posterior) {
  // One target per output and row (a weighted Gaussian's weight column is not a target).
  return static_cast<double>(posterior.num_data()) * static_cast<double>(posterior.likelihood().num_outputs());
}

double data_error(const Posterior& posterior, const Eigen::VectorXd& w) {
  if (!posterior.likelihood().has_precision()) return -posterior.log_likelihood(w);
  return internal::gaussian_data_error(posterior, w);
}

double current_beta(const Posterior& posterior) {
  return posterior.likelihood().has_precision() ? posterior.likelihood().precision()
                                                : std::numeric_limits<double>::quiet_NaN();
}

bool uses_levenberg_marquardt(const MapOptions& map, const Posterior& posterior) {
  return map.optimizer == Optimizer::kLevenbergMarquardt || map.optimizer == Optimizer::kNewton ||
         (map.optimizer == Optimizer::kAuto && !posterior.distributed() && posterior.dim() <= map.lm_max_params);
}

bool is_linear_gaussian(const Posterior& posterior) {
  return posterior.network().linear_in_weights() && posterior.likelihood().is_homoscedastic_gaussian();
}

bool total_gradient_applies(const Posterior& posterior, HessianKind hessian) {
  return hessian == HessianKind::kGgn || posterior.network().linear_in_weights();
}

Eigen::VectorXd all_hyperparameters(const Posterior& posterior) {
  const Eigen::VectorXd theta = posterior.prior().hyperparameters();
  if (!posterior.likelihood().has_precision()) return theta;
  Eigen::VectorXd all(theta.size() + 1);
  all << theta, posterior.likelihood().precision();
  return all;
}

void set_all_hyperparameters(Posterior* posterior, const Eigen::VectorXd& theta) {
  const Index J = posterior->prior().num_hyperparameters();
  posterior->prior().set_hyperparameters(theta.head(J));
  if (posterior->likelihood().has_precision()) posterior->likelihood().set_precision(theta[J]);
}

std::vector<std::string> all_hyperparameter_names(const Posterior& posterior) {
  std::vector<std::string> names = posterior.prior().hyperparameter_names();
  if (posterior.likelihood().has_precision()) names.emplace_back("beta");
  return names;
}

Eigen::VectorXd mode_held_gradient(const Posterior& posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma,
                                   double held) {
  // ∂/∂ log θ_j of log p(w|θ) − ½ log|A| at w: ½γ_j − θ_j E_j (MacKay 1992a, §4); for β,
  // ∂/∂ log β of (m/2) log β − βE_D − ½ log|A| = ½(m − γ_β) − βE_D, with
  // γ_β = tr(A⁻¹βH) = Σ_j γ_j − held (the held weights count fully in γ_j but are not in A).
  const Prior& prior = posterior.prior();
  const Index J = prior.num_hyperparameters();
  const bool has_beta = posterior.likelihood().has_precision();
  Eigen::VectorXd g(J + (has_beta ? 1 : 0));
  g.head(J) = 0.5 * gamma - prior.hyperparameters().cwiseProduct(prior.hyperparameter_energies(w));
  if (has_beta) {
    g[J] = 0.5 * (num_targets(posterior) - (gamma.sum() - held)) -
           posterior.likelihood().precision() * data_error(posterior, w);
  }
  return g;
}

FreeHyperparameters free_hyperparameters(const Posterior& posterior, const Eigen::VectorXd& gradient, bool fix_prior) {
  const Eigen::VectorXd theta = all_hyperparameters(posterior);
  const Index J = posterior.prior().num_hyperparameters();
  FreeHyperparameters out;
  out.free.assign(static_cast<std::size_t>(theta.size()), true);
  for (Index j = 0; j < theta.size(); ++j) {
    // A maximum on the boundary of the box: the gradient points out of it.
    const bool held_low = theta[j] <= kMinHyper * (1.0 + 1e-12) && gradient[j] < 0.0;
    const bool held_high = theta[j] >= kMaxHyper * (1.0 - 1e-12) && gradient[j] > 0.0;
    const bool free = !(fix_prior && j < J) && !held_low && !held_high;
    out.free[static_cast<std::size_t>(j)] = free;
    if (free) out.norm = std::max(out.norm, std::abs(gradient[j]));
  }
  return out;
}

void mackay_update(Posterior* posterior, const Eigen::VectorXd& w, const Eigen::VectorXd& gamma, bool fix_prior,
                   double held) {
  // α_g ← γ_g/2E_W,g, β ← (m − γ)/2E_D (MacKay 1992a, eqs. 4.9–4.11). For a prior P = Σ_j θ_j P_j
  // that is not group-diagonal the same update θ_j ← γ_j/2E_j is the stationarity condition of
  // ∂ log Z/∂ log θ_j = ½γ_j − θ_j E_j.
  constexpr double kTiny = std::numeric_limits<double>::min();
  Prior& prior = posterior->prior();
  if (!fix_prior) {
    const Eigen::VectorXd E = prior.hyperparameter_energies(w);
    Eigen::VectorXd theta = prior.hyperparameters();
    for (Index j = 0; j < theta.size(); ++j) {
      theta[j] = clamp_hyper(std::max(gamma[j], kMinHyper) / std::max(2.0 * E[j], kTiny));
    }
    prior.set_hyperparameters(theta);
  }
  if (posterior->likelihood().has_precision()) {
    const double m = num_targets(*posterior);
    const double E_D = data_error(*posterior, w);
    const double beta = clamp_hyper(std::max(m - (gamma.sum() - held), kMinHyper) / std::max(2.0 * E_D, kTiny));
    posterior->likelihood().set_precision(beta);
  }
}

void record(Run& run, EvidenceIteration iteration) {
  if (run.options.callback && run.options.callback(iteration) == CallbackReturn::kAbort) run.aborted = true;
  run.summary.trace.push_back(std::move(iteration));
}

}  // namespace occam::evidence

#include "occam/mcmc/hyper_gibbs.h"

#include <boost/math/special_functions/gamma.hpp>
#include <boost/random/gamma_distribution.hpp>
#include <cmath>
#include <limits>
#include <optional>
#include <numbers>
#include <sstream>

#include "occam/status.h"
#include "core/row_sums.h"

namespace occam::mcmc {
namespace {

// Gamma(shape, rate) by Boost.Random (scale = 1/rate), whose output is the same on every platform.
double draw_gamma(double shape, double rate, Rng& rng, const char* what) {
  double value = std::numeric_limits<double>::quiet_NaN();
  if (shape > 0.0 && rate > 0.0 && std::isfinite(rate)) {
    value = boost::random::gamma_distribution<double>(shape, 1.0 / rate)(rng.engine());
  }
  if (!(value > 0.0) || !std::isfinite(value)) {
    std::ostringstream msg;
    msg << "Gibbs update of " << what << ": the draw from Gamma(shape " << shape << ", rate " << rate
        << ") is not positive and finite (an improper hyperprior with a = b = 0 needs non-zero weights)";
    throw Error(ErrorKind::kNumerical, msg.str());
  }
  return value;
}

double log_gamma_density(double x, const GammaPrior& g) {
  if (g.shape <= 0.0 || g.rate <= 0.0) return -std::log(x);  // the improper 1/x limit
  return g.shape * std::log(g.rate) - boost::math::lgamma(g.shape) + (g.shape - 1.0) * std::log(x) - g.rate * x;
}

// One slice-sampling update of x (Neal 2003, "Slice sampling", §4: stepping out by `width`, at
// most `max_steps` steps, then shrinkage), leaving the density exp(log_f) invariant.
template <typename LogF>
double slice_update(double x0, const LogF& log_f, double width, int max_steps, Rng& rng) {
  const double level = log_f(x0) + std::log(rng.uniform());  // log of the slice's height
  double lo = x0 - width * rng.uniform();
  double hi = lo + width;
  int left = static_cast<int>(std::floor(max_steps * rng.uniform()));
  int right = max_steps - 1 - left;
  while (left-- > 0 && log_f(lo) > level) lo -= width;
  while (right-- > 0 && log_f(hi) > level) hi += width;
  for (;;) {
    const double x = lo + rng.uniform() * (hi - lo);
    if (log_f(x) > level) return x;
    (x < x0 ? lo : hi) = x;
    if (!(hi - lo > 1e-12 * (1.0 + std::abs(x0)))) return x0;  // the slice has shrunk onto x0
  }
}

// The smoothed group's α_g and λ_s given w: p(θ | w) ∝ |P(θ)|^½ exp(−Σ_j θ_j E_j) p(θ), with no
// Gamma form (log|λ_s L + α_g I| couples them), updated one at a time by slice sampling on
// log θ_j (whose Jacobian adds log θ_j).
void slice_smoothing_hyperparameters(Prior* prior, const Eigen::VectorXd& w, const GammaPrior& hyperprior, Rng& rng) {
  const Eigen::VectorXd energies = prior->hyperparameter_energies(w);
  Eigen::VectorXd theta = prior->hyperparameters();
  const Eigen::Index smoothed[] = {prior->smoothing()->group, prior->num_hyperparameters() - 1};
  for (const Eigen::Index j : smoothed) {
    const auto log_f = [&](double x) {
      const double t = std::exp(x);
      if (!(t > 0.0) || !std::isfinite(t)) return -std::numeric_limits<double>::infinity();
      theta[j] = t;
      prior->set_hyperparameters(theta);
      return 0.5 * prior->log_det_precision() - theta.dot(energies) + log_gamma_density(t, hyperprior) + x;
    };
    const double x = slice_update(std::log(theta[j]), log_f, /*width=*/1.0, /*max_steps=*/50, rng);
    theta[j] = std::exp(x);
    prior->set_hyperparameters(theta);
  }
}

}  // namespace

void HyperGibbsOptions::validate() const {
  if (!(alpha.shape >= 0.0) || !std::isfinite(alpha.shape))
    invalid_option("HyperGibbsOptions", "alpha.shape", alpha.shape, "must be finite and non-negative");
  if (!(alpha.rate >= 0.0) || !std::isfinite(alpha.rate))
    invalid_option("HyperGibbsOptions", "alpha.rate", alpha.rate, "must be finite and non-negative");
  if (!(beta.shape >= 0.0) || !std::isfinite(beta.shape))
    invalid_option("HyperGibbsOptions", "beta.shape", beta.shape, "must be finite and non-negative");
  if (!(beta.rate >= 0.0) || !std::isfinite(beta.rate))
    invalid_option("HyperGibbsOptions", "beta.rate", beta.rate, "must be finite and non-negative");
}

// The conjugate α_g update needs log p(w|α) = Σ_g (W_g/2) log(α_g/2π) − α_g ½‖w_g‖², which holds
// for every group of a group-diagonal prior; a graph-Laplacian group couples its weights, and its
// α_g and λ_s are slice-sampled instead. β has a Gamma full conditional for the Gaussian
// likelihood only.
void check_gibbs_supported(const Posterior& posterior) {
  if (posterior.likelihood().has_precision() && posterior.likelihood().name() != "gaussian") {
    throw Error(ErrorKind::kInvalidArgument, "Gibbs hyperparameters: the " + posterior.likelihood().name() +
                                                 " likelihood's precision has no Gamma full conditional here");
  }
}

void gibbs_hyperparameters(Posterior* posterior, const Eigen::VectorXd& w, const HyperGibbsOptions& options, Rng& rng) {
  Prior& prior = posterior->prior();
  const Eigen::VectorXd energies = prior.energies(w);  // ½‖w_g‖²
  const Eigen::VectorXd sizes = prior.group_sizes();
  Eigen::VectorXd alpha(prior.num_groups());
  const std::optional<Smoothing>& smoothing = prior.smoothing();
  for (int g = 0; g < prior.num_groups(); ++g) {
    if (smoothing && g == smoothing->group) {
      alpha[g] = prior.alpha()[g];  // slice-sampled below, with λ_s
      continue;
    }
    alpha[g] = draw_gamma(options.alpha.shape + 0.5 * sizes[g], options.alpha.rate + energies[g], rng, "alpha");
  }
  prior.set_alpha(alpha);
  if (smoothing) slice_smoothing_hyperparameters(&prior, w, options.alpha, rng);
  Likelihood& likelihood = posterior->likelihood();
  if (options.sample_beta && likelihood.has_precision()) {
    // E_D over every row, however they are spread over processes (a sum with the same bits on
    // each, so that every process draws the same β).
    const double E_D = occam::internal::gaussian_data_error(*posterior, w);
    const double m = static_cast<double>(posterior->num_data() * likelihood.num_outputs());
    likelihood.set_precision(draw_gamma(options.beta.shape + 0.5 * m, options.beta.rate + E_D, rng, "beta"));
  }
}

double log_hyperprior(const Posterior& posterior, const HyperGibbsOptions& options) {
  double lp = 0.0;
  for (Eigen::Index g = 0; g < posterior.prior().alpha().size(); ++g) {
    lp += log_gamma_density(posterior.prior().alpha()[g], options.alpha);
  }
  if (posterior.prior().smoothing()) lp += log_gamma_density(posterior.prior().smoothing()->lambda, options.alpha);
  if (options.sample_beta && posterior.likelihood().has_precision()) {
    lp += log_gamma_density(posterior.likelihood().precision(), options.beta);
  }
  return lp;
}

}  // namespace occam::mcmc

#include "occam/mcmc/hyper_gibbs.h"

#include <boost/math/special_functions/gamma.hpp>
#include <boost/random/gamma_distribution.hpp>
#include <cmath>
#include <numbers>
#include <sstream>

#include "occam/status.h"

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

}  // namespace

void HyperGibbsOptions::validate() const {
  if (!(alpha.shape >= 0.0) || !std::isfinite(alpha.shape)) invalid_option("HyperGibbsOptions", "alpha.shape", alpha.shape, "must be finite and non-negative");
  if (!(alpha.rate >= 0.0) || !std::isfinite(alpha.rate)) invalid_option("HyperGibbsOptions", "alpha.rate", alpha.rate, "must be finite and non-negative");
  if (!(beta.shape >= 0.0) || !std::isfinite(beta.shape)) invalid_option("HyperGibbsOptions", "beta.shape", beta.shape, "must be finite and non-negative");
  if (!(beta.rate >= 0.0) || !std::isfinite(beta.rate)) invalid_option("HyperGibbsOptions", "beta.rate", beta.rate, "must be finite and non-negative");
}

// The conjugate α_g update needs log p(w|α) = Σ_g (W_g/2) log(α_g/2π) − α_g ½‖w_g‖², which holds
// exactly for a group-diagonal prior; a graph-Laplacian smoothing prior couples the weights.
void check_gibbs_supported(const Posterior& posterior) {
  if (!posterior.prior().is_group_diagonal()) {
    throw Error(ErrorKind::kInvalidArgument,
                "Gibbs hyperparameters need a group-diagonal prior (precision α_g·I on each group), whose α_g have "
                "Gamma full conditionals; a smoothing prior is not of that form: keep them fixed");
  }
  if (posterior.likelihood().has_precision() && posterior.likelihood().name() != "gaussian") {
    throw Error(ErrorKind::kInvalidArgument,
                "Gibbs hyperparameters: the " + posterior.likelihood().name() + " likelihood's precision has no Gamma full conditional here");
  }
}

void gibbs_hyperparameters(Posterior* posterior, const Eigen::VectorXd& w, const HyperGibbsOptions& options, Rng& rng) {
  Prior& prior = posterior->prior();
  const Eigen::VectorXd energies = prior.energies(w);  // ½‖w_g‖²
  const Eigen::VectorXd sizes = prior.group_sizes();
  Eigen::VectorXd alpha(prior.num_groups());
  for (int g = 0; g < prior.num_groups(); ++g) {
    alpha[g] = draw_gamma(options.alpha.shape + 0.5 * sizes[g], options.alpha.rate + energies[g], rng, "alpha");
  }
  prior.set_alpha(alpha);
  Likelihood& likelihood = posterior->likelihood();
  if (options.sample_beta && likelihood.has_precision()) {
    Eigen::MatrixXd F;
    posterior->network().forward(w, posterior->X(), &F);
    const double E_D = GaussianLikelihood::data_error(F, posterior->Y());
    const double m = static_cast<double>(posterior->Y().size());
    likelihood.set_precision(draw_gamma(options.beta.shape + 0.5 * m, options.beta.rate + E_D, rng, "beta"));
  }
}

double log_hyperprior(const Posterior& posterior, const HyperGibbsOptions& options) {
  double lp = 0.0;
  for (Eigen::Index g = 0; g < posterior.prior().alpha().size(); ++g) {
    lp += log_gamma_density(posterior.prior().alpha()[g], options.alpha);
  }
  if (options.sample_beta && posterior.likelihood().has_precision()) {
    lp += log_gamma_density(posterior.likelihood().precision(), options.beta);
  }
  return lp;
}

}  // namespace occam::mcmc

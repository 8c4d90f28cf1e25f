// hyper_gibbs.h — the hyperparameters α_g and β drawn from their Gamma full conditionals.
//
// With Gamma(a, b) priors (shape a, rate b), the conditionals given the weights are conjugate
// (Neal 1996, §3.2; MacKay 1999):
//   α_g | w ~ Gamma(a + W_g/2, b + ‖w_g‖²/2),   β | w, D ~ Gamma(a + m/2, b + E_D(w)).
// a = b = 0 is the improper 1/σ prior; the default is a proper vague Gamma(10⁻², 10⁻²).
//
//   occam::mcmc::HyperGibbsOptions hyper;                  // vague Gamma priors on α and β
//   occam::mcmc::check_gibbs_supported(posterior);         // throws for a non-group-diagonal prior
//   occam::mcmc::gibbs_hyperparameters(&posterior, w, hyper, rng);
#pragma once

#include <Eigen/Core>

#include "occam/posterior.h"
#include "occam/rng.h"

namespace occam::mcmc {

struct GammaPrior {
  double shape = 1e-2;  // a
  double rate = 1e-2;   // b
};

struct HyperGibbsOptions {
  GammaPrior alpha;
  GammaPrior beta;
  bool sample_beta = true;  // only where the likelihood has a precision
  void validate() const;    // a, b ≥ 0
};

// Throws Error(kInvalidArgument) unless the prior is group-diagonal (each group's precision is
// α_g times the identity on its parameters), the only case with the conjugate α_g update.
void check_gibbs_supported(const Posterior& posterior);

// Replaces the posterior's α (and β, where the likelihood has one and options.sample_beta) by a
// draw from the full conditional given w. A draw that is not positive and finite (e.g. a = b = 0
// with w_g = 0) throws Error(kNumerical).
void gibbs_hyperparameters(Posterior* posterior, const Eigen::VectorXd& w, const HyperGibbsOptions& options,
                           Rng& rng);

// log p(α, β) under the Gamma priors (for lp__ of the joint), the constant included where a, b > 0.
double log_hyperprior(const Posterior& posterior, const HyperGibbsOptions& options);

}  // namespace occam::mcmc

// hyper_gibbs.h — the hyperparameters α_g and β drawn from their Gamma full conditionals.
//
// With Gamma(a, b) priors (shape a, rate b), the conditionals given the weights are conjugate
// (Neal 1996, §3.2; MacKay 1999):
//   α_g | w ~ Gamma(a + W_g/2, b + ‖w_g‖²/2),   β | w, D ~ Gamma(a + m/2, b + E_D(w)).
// a = b = 0 is the improper 1/σ prior; the default is a proper vague Gamma(10⁻², 10⁻²).
// A graph-Laplacian prior's smoothed group (precision λ_s·L + α_g·I) has no conjugate update: its
// α_g and λ_s (under the same Gamma prior as α) are moved by slice sampling on their logarithms
// (Neal 2003), which leaves p(α_g, λ_s | w) invariant; the Gibbs sweep stays exact.
//
//   occam::mcmc::HyperGibbsOptions hyper;                  // vague Gamma priors on α and β
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

// Throws Error(kInvalidArgument) for a likelihood with a precision other than the Gaussian's β
// (no Gamma full conditional).
void check_gibbs_supported(const Posterior& posterior);

// Replaces the posterior's α (and β, where the likelihood has one and options.sample_beta) by a
// draw from the full conditional given w (λ_s and the smoothed group's α_g: one slice-sampling
// update each). A draw that is not positive and finite (e.g. a = b = 0
// with w_g = 0) throws Error(kNumerical). A posterior spread over processes (DataShard) sums E_D
// over all of them: every process calls it together, with the same stream, and draws the same.
void gibbs_hyperparameters(Posterior* posterior, const Eigen::VectorXd& w, const HyperGibbsOptions& options, Rng& rng);

// log p(α, λ_s, β) under the Gamma priors (for lp__ of the joint), the constant included where a, b > 0.
double log_hyperprior(const Posterior& posterior, const HyperGibbsOptions& options);

}  // namespace occam::mcmc

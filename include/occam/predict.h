// predict.h — the predictive distribution at new inputs from a Laplace posterior.
//
// Linearised (MacKay 1992a): f ≈ f(x; w_MAP) + gᵀ(w − w_MAP), so var f = gᵀA⁻¹g and, for the
// Gaussian likelihood, var y = gᵀA⁻¹g + 1/β. Monte Carlo: w ~ N(w_MAP, A⁻¹), y ~ p(y | f(x; w)),
// intervals from the empirical quantiles.
//
//   occam::PredictOptions options;  // linearised, 95% interval
//   occam::Prediction p = occam::predict(net, lik, laplace, X, options);
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/network.h"

namespace occam {

enum class PredictiveMethod {
  kAuto,  // each posterior's own: Laplace: the bridge for classifiers, else linearised; Monte Carlo for VI and MCMC
  kLinearized,  // y ~ p(y | f) with f ~ N(f(x; mean), gᵀVg) (MacKay 1992a); classes by the probit
  kMonteCarlo,  // w drawn from the posterior, y ~ p(y | f(x; w)), empirical moments and quantiles
  // w drawn from the posterior, y ~ p(y | f(x; mean) + gᵀ(w − mean)): the linearised predictive
  // sampled, draws joint across rows; classes without the probit's approximation of the integral.
  kLinearizedMonteCarlo,
  kLaplaceBridge,  // classifiers: the linearised belief about the logits as a Dirichlet (laplace_bridge.h)
  kPlugIn,         // p(y | f(x; mean)): the posterior mean's own predictive, no spread
};
// "auto" | "linearized" (also "probit") | "mc" | "linearized-mc" | "bridge" | "plug-in"
PredictiveMethod parse_predictive_method(std::string_view name);
const char* to_string(PredictiveMethod method);

struct PredictOptions {
  PredictiveMethod method = PredictiveMethod::kAuto;
  double level = 0.95;      // central interval probability, in (0, 1)
  int samples = 1000;       // Monte Carlo draws of w (Gaussian posteriors)
  std::uint64_t seed = 1;   // Monte Carlo stream
  Index batch_rows = 4096;  // rows of X handled at once (bounds the Jacobian's memory)
  // MCMC draws: at most this many posterior draws, every ⌈S/max_draws⌉-th of the pooled chains
  // (0 = all of them). keep_draws returns one predictive draw per posterior draw used (MCMC) or
  // per Monte Carlo sample (Gaussian posteriors, method kMonteCarlo) in Prediction::draws.
  Index max_draws = 0;
  bool keep_draws = false;
  void validate() const;  // throws Error(kInvalidArgument) naming the bad field and value
};

// One entry per row of X, in the network's output units. For a classifier (bernoulli,
// categorical) `probabilities` holds P(y = c) per row and class (columns in the order of
// `labels`); mean/std/lower/upper are then those of the class (Bernoulli: of y ∈ {0, 1};
// categorical: the most probable class index, 1 − its probability as variance).
struct Prediction {
  Eigen::VectorXd mean;
  Eigen::VectorXd std;
  Eigen::VectorXd lower;
  Eigen::VectorXd upper;
  Eigen::MatrixXd probabilities;    // rows × classes; empty for regression
  std::vector<std::string> labels;  // class labels; empty for regression
  Eigen::MatrixXd draws;            // PredictOptions::keep_draws (Monte Carlo predictives): draws × rows
};

// `offset` (one entry per row, may be null) is added to the network output before the
// likelihood sees it: the Poisson likelihood's log-exposure.
Prediction predict(const Network& network, const Likelihood& likelihood, const LaplaceApproximation& q,
                   const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset = nullptr);

// The linearised belief about the K network outputs at the rows of X: their means f(x; w_MAP)
// and marginal variances g_kᵀA⁻¹g_k (m × K each). With centre_outputs the outputs are centred
// across k first (f_k − mean_j f_j), which leaves a softmax unchanged and removes the variance
// along its invariant direction (all logits moving together), which would otherwise flatten the
// extended-probit probabilities for no reason.
void linearized_outputs(const Network& network, const LaplaceApproximation& q, const Eigen::MatrixXd& X,
                        bool centre_outputs, Eigen::MatrixXd* mean, Eigen::MatrixXd* var, Index batch_rows = 4096);

// Network outputs f(x; w) at the rows of X for `count` draws w ~ N(mean, A⁻¹): X.rows() × count.
Eigen::MatrixXd posterior_function_draws(const Network& network, const LaplaceApproximation& q,
                                         const Eigen::MatrixXd& X, int count, Rng& rng);
// Draws of the linearised network f(x; w_MAP) + J(x)(w − w_MAP), w ~ N(mean, A⁻¹): the functions
// whose spread is the linearised predictive band. With the Gauss–Newton A, this is the posterior of
// the linearised model the Laplace approximation describes; pushing the same w through the
// nonlinear network (above) can spread much wider (Immer, Korzepa & Bauer 2021).
Eigen::MatrixXd linearized_function_draws(const Network& network, const LaplaceApproximation& q,
                                          const Eigen::MatrixXd& X, int count, Rng& rng);
// The same with w drawn from the prior N(0, diag(α_{g(i)})⁻¹).
Eigen::MatrixXd prior_function_draws(const Network& network, const Prior& prior, const Eigen::MatrixXd& X, int count,
                                     Rng& rng);

}  // namespace occam

// network_model.h — a network posterior as a ChainModel: the weights for the kernel, α and β by
// Gibbs (or fixed), the chain's starting point, and the monitored network outputs.
//
// Each chain owns a copy of the Posterior (its α and β change under Gibbs). With the
// non-centred parameterisation the kernel moves u = √α_g(i)·w_i, whose prior is N(0, I) whatever
// α is (Papaspiliopoulos, Roberts & Sköld 2007): the step size no longer has to fit the
// narrowest conditional of a funnel between α and its weights. Columns: w.1..w.W (always w),
// then alpha.1..alpha.G, smoothing (λ_s of a graph-Laplacian prior) and beta (Gibbs only), then
// f.1..f.K, the network output at K monitored inputs in the target's original units (a
// non-identifiable weight says nothing; f does; for a categorical likelihood its C logits
// f.k.1..f.k.C, for a heteroscedastic one the mean), then
// with log_lik the pointwise log-likelihood log_lik.1..log_lik.m of the m training examples
// (CmdStan's convention, which R's loo package reads for PSIS-LOO).
//
// A posterior spread over processes (DataShard) is sampled by all of them in lockstep
// (ChainModel::communicator): its Gibbs β, MAP initialisation and log_lik columns are sums or
// gathers over every process's rows, and an initialisation that needs the dense curvature
// (kLaplace) is refused.
//
//   occam::mcmc::NetworkModelOptions o; o.gibbs = true; o.init = occam::mcmc::InitKind::kMap;
//   auto make = [&](int) { return std::make_unique<occam::mcmc::NetworkChainModel>(posterior, o); };
//   occam::mcmc::SamplerSummary s = occam::mcmc::sample(make, occam::mcmc::SamplerOptions{});
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "occam/map.h"
#include "occam/mcmc/hyper_gibbs.h"
#include "occam/mcmc/sampler.h"
#include "occam/posterior.h"

namespace occam::mcmc {

enum class InitKind {
  kPrior,    // w ~ N(0, diag(α)⁻¹) with the starting α
  kMap,      // a MAP fit from the network's random initialisation (one per chain)
  kLaplace,  // a draw from that MAP's Laplace approximation N(w_MAP, A⁻¹) (one process only)
};
InitKind parse_init_kind(std::string_view name);  // "prior" | "map" | "laplace"
const char* to_string(InitKind kind);

// A random stream other than the chain's own: Rng(seed, stream).
struct StartStream {
  std::uint64_t seed = 1;
  std::uint64_t stream = 0;
};

struct NetworkModelOptions {
  bool gibbs = false;  // α and β by Gibbs; otherwise fixed at the posterior's values
  HyperGibbsOptions hyper;
  InitKind init = InitKind::kMap;
  // Where the chain's starting point is drawn from (the prior draw, or the network's random
  // initialisation that its MAP fit starts from): this stream instead of the chain's own, so that
  // a chain can start where a fit with that seed and stream starts. The chain's own stream is
  // left untouched for its transitions.
  std::optional<StartStream> start;
  int map_max_iterations = 2000;
  // The optimiser of that MAP fit. kAuto is Levenberg–Marquardt (Newton for a linear model) for
  // W ≤ 3000 on one process and L-BFGS on a spread posterior, which gives only values and
  // gradients: name kLbfgs for the same draws on one process as on several.
  Optimizer map_optimizer = Optimizer::kAuto;
  // Called from the chain's thread at each iteration of its initial MAP fit (init map, laplace);
  // kAbort stops the fit at its best point so far, so that a stop request is seen within an
  // iteration rather than after the fit.
  IterationCallback<MapIteration> map_callback;
  bool non_centered = false;       // the kernel moves u = √α·w instead of w
  Eigen::MatrixXd monitor_inputs;  // K × D, in the network's (standardised) input units; may be empty
  double output_shift = 0.0;       // f is reported as shift + scale · f(x; w)
  double output_scale = 1.0;
  // log p(y_n | w, β) of every training example as log_lik.1..log_lik.m, in the target's original
  // units: the density of the standardised target less log(output_scale).
  bool log_lik = false;
};

// The columns of a chain's row, which NetworkChainModel names and counts: the sampler's seven,
// w.1..w.W, alpha.1..alpha.G, smoothing and beta (Gibbs only), f.k (f.k.j for a classifier's
// logits) and log_lik.1..log_lik.m. Made of sizes alone, so that a memory estimate made before
// the posterior exists can count the columns from bounds on them.
struct DrawLayout {
  Index weights = 0;
  Index alphas = 0;
  bool smoothing = false;
  bool beta = false;
  Index monitored = 0;          // monitored inputs
  Index outputs_per_input = 1;  // 1, or a classifier's K logits
  Index log_lik = 0;            // training rows with a log_lik column
  Index num_columns() const;
  std::vector<std::string> extra_names() const;  // the columns after w
};

class NetworkChainModel final : public ChainModel {
 public:
  // Copies `posterior`. Throws Error(kInvalidArgument) for Gibbs on a likelihood whose precision has
  // no Gamma full conditional (check_gibbs_supported), and for an initialisation or MAP optimiser
  // that needs every row in one process when the posterior is spread over several.
  NetworkChainModel(const Posterior& posterior, NetworkModelOptions options);
  NetworkChainModel(const NetworkChainModel&) = delete;  // density() refers to this object
  NetworkChainModel& operator=(const NetworkChainModel&) = delete;

  const LogDensity& density() const override;
  // The centred posterior a minibatch at a time (SGLD, SGHMC); null when non-centred. Spread over
  // processes, each minibatch is a collective: the processes all-gather the batch's rows and sum
  // its chunks (kMinibatchChunkRows) along a fixed-order tree, with one process's bits.
  const StochasticLogDensity* stochastic_density() const override;
  // The posterior's processes when its rows are spread over more than one, else null.
  const Communicator* communicator() const override;
  Eigen::VectorXd initial_point(Rng& rng) override;
  bool gibbs_step(Eigen::VectorXd* theta, Rng& rng) override;
  std::vector<std::string> parameter_names() const override;
  Eigen::VectorXd parameter_values(const Eigen::VectorXd& theta) const override;
  std::vector<std::string> extra_names() const override;
  Eigen::VectorXd extra_values(const Eigen::VectorXd& theta) const override;
  // α per group, λ_s (laplacian prior), then β where the likelihood has a precision.
  Eigen::VectorXd state() const override;
  void restore_state(const Eigen::VectorXd& state) override;

  const Posterior& posterior() const { return posterior_; }
  DrawLayout layout() const;
  // A classifier's K logits are monitored; any other model's first output (a heteroscedastic
  // model's second output is its log-variance, a nuisance beside the mean f).
  static Index monitored_outputs(const Network& network, const Likelihood& likelihood);

 private:
  // log p(u) = log p(w = s∘u, D | α, β) + Σ log s_i with s_i = α_g(i)^(−1/2).
  class NonCenteredDensity final : public LogDensity {
   public:
    explicit NonCenteredDensity(const NetworkChainModel& model) : model_(model) {}
    Index dim() const override { return model_.posterior_.dim(); }
    bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& u, double* log_p, Eigen::VectorXd* grad) const override;

   private:
    const NetworkChainModel& model_;
  };
  // log p(w | α) and Σ_{n∈rows} log p(y_n | w, β) of the posterior's network and data.
  class MinibatchDensity final : public StochasticLogDensity {
   public:
    explicit MinibatchDensity(const NetworkChainModel& model) : model_(model) {}
    Index dim() const override { return model_.posterior_.dim(); }
    Index num_data() const override { return model_.posterior_.num_data(); }
    bool log_prior(const Eigen::Ref<const Eigen::VectorXd>& w, double* value, Eigen::VectorXd* grad) const override;
    bool log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w, const std::vector<Index>& rows, double* value,
                        Eigen::VectorXd* grad) const override;

   private:
    const NetworkChainModel& model_;
  };
  void update_scale();
  Eigen::VectorXd initial_weights(Rng& rng);

  Posterior posterior_;
  NetworkModelOptions options_;
  Eigen::VectorXd scale_;  // s_i = α_g(i)^(−1/2) (non-centred only)
  double log_jacobian_ = 0.0;
  NonCenteredDensity non_centered_{*this};
  MinibatchDensity minibatch_{*this};
};

// The checks NetworkChainModel's constructor makes (Error(kInvalidArgument) naming the field), for a
// caller that wants them before it writes anything.
void check_network_model(const Posterior& posterior, const NetworkModelOptions& options);

// A copy of a posterior (network, likelihood, prior, data and its shard of the rows).
Posterior copy_posterior(const Posterior& posterior);

}  // namespace occam::mcmc

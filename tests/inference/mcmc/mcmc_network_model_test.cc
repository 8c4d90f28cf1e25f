// NetworkChainModel's own choices: where a chain starts (its own stream, or NetworkModelOptions::start)
// and the columns it names (DrawLayout), which the sampler writes and a memory estimate counts.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "occam/fit.h"
#include "occam/likelihood.h"
#include "occam/mcmc/network_model.h"
#include "occam/mcmc/sampler.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "testing/toy_data.h"

namespace occam::mcmc {
namespace {

Posterior small_posterior(std::unique_ptr<Likelihood> likelihood, Index outputs) {
  const testing::ToyData d = testing::gap_data(12, 0.1, 3);
  auto net = std::make_unique<Mlp>(1, std::vector<Index>{3}, Activation::kTanh, outputs);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
  Eigen::MatrixXd Y = d.Y;
  if (likelihood->num_classes() > 0) Y = (d.Y.array() > 0.0).cast<double>().matrix();
  return Posterior(std::move(net), std::move(likelihood), std::move(prior), d.X, Y);
}

// With a start stream, the chain starts where a chain without one would start from that stream,
// and the chain's own stream is left as it was (its transitions draw from it).
TEST(NetworkChainModel, StartsFromTheGivenStreamAndLeavesItsOwnUntouched) {
  const Posterior posterior = small_posterior(std::make_unique<GaussianLikelihood>(10.0), 1);
  for (InitKind init : {InitKind::kPrior, InitKind::kMap}) {
    SCOPED_TRACE(to_string(init));
    NetworkModelOptions own;
    own.init = init;
    NetworkModelOptions started = own;
    started.start = StartStream{.seed = 7, .stream = 3};
    NetworkChainModel from_own(posterior, own), from_start(posterior, started);
    Rng stream(7, 3), chain(1, 0), untouched(1, 0);
    EXPECT_EQ(from_start.initial_point(chain), from_own.initial_point(stream));
    EXPECT_EQ(chain.save(), untouched.save());
    Rng chain_again(1, 0);
    EXPECT_NE(from_own.initial_point(chain_again), from_start.initial_point(chain_again));
  }
}

// The layout counts what the model names: the sampler writes exactly that many columns, for a
// regression model with Gibbs hyperparameters and for a classifier's logits with log_lik.
TEST(NetworkChainModel, LayoutCountsTheColumnsItNames) {
  struct Case {
    const char* name;
    std::unique_ptr<Likelihood> likelihood;
    Index outputs;
    bool gibbs, log_lik;
  };
  std::vector<Case> cases;
  cases.push_back({"gaussian, gibbs", std::make_unique<GaussianLikelihood>(10.0), 1, true, false});
  cases.push_back({"categorical, log_lik", std::make_unique<CategoricalLikelihood>(std::vector<std::string>{"a", "b"}),
                   2, false, true});
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Posterior posterior = small_posterior(std::move(c.likelihood), c.outputs);
    NetworkModelOptions options;
    options.init = InitKind::kPrior;
    options.gibbs = c.gibbs;
    options.log_lik = c.log_lik;
    options.monitor_inputs = Eigen::MatrixXd::Constant(3, 1, 0.5);
    const NetworkChainModel model(posterior, options);
    const DrawLayout layout = model.layout();
    EXPECT_EQ(layout.extra_names(), model.extra_names());
    SamplerOptions sampler;
    sampler.chains = 1;
    sampler.num_warmup = 5;
    sampler.num_draws = 3;
    const SamplerSummary s =
        sample([&](int) { return std::make_unique<NetworkChainModel>(posterior, options); }, sampler);
    EXPECT_EQ(static_cast<Index>(s.columns.size()), layout.num_columns());
    EXPECT_EQ(s.draws.at(0).cols(), layout.num_columns());
    EXPECT_EQ(layout.num_columns(),
              kNumSamplerColumns + posterior.dim() + static_cast<Index>(model.extra_names().size()));
  }
}

}  // namespace
}  // namespace occam::mcmc

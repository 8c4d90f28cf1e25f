// A chain stopped after k iterations and resumed from its checkpoint (ChainState, written to JSON
// and read back) continues exactly as the uninterrupted chain: the same rows bit for bit, the
// same kept draws and the same summary counters, whether k falls in warm-up, at the warm-up /
// sampling boundary or in sampling; for NUTS, HMC (with step-size jitter, which draws from the
// stream), Metropolis, MCLMC (whose velocity carries over between iterations) and MAMS, with α and
// β drawn by Gibbs between weight transitions; and for SGLD
// and SGHMC (minibatches of 6 of 20 rows, α and β by Gibbs each epoch), where the state also holds
// the velocity, the RMSprop average and the place in the epoch's permutation.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "occam/likelihood.h"
#include "occam/mcmc/checkpoint.h"
#include "occam/mcmc/network_model.h"
#include "occam/mcmc/sampler.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/status.h"
#include "testing/toy_data.h"

namespace occam::mcmc {
namespace {

constexpr int kWarmup = 150, kDraws = 60;

Posterior small_network_posterior() {
  const testing::ToyData d = testing::gap_data(20, 0.1, 5);
  auto net = std::make_unique<Mlp>(1, std::vector<Index>{3}, Activation::kTanh);
  Prior prior = Prior::from_network(*net, AlphaGroups::kDefault, 1.0);
  return Posterior(std::move(net), std::make_unique<GaussianLikelihood>(10.0), std::move(prior), d.X, d.Y);
}

// Records every row and every checkpoint of one chain.
class RecordingSink final : public DrawSink {
 public:
  RecordingSink(std::vector<Eigen::VectorXd>* rows, std::map<int, ChainState>* checkpoints)
      : rows_(rows), checkpoints_(checkpoints) {}
  void draw(const Eigen::VectorXd& row, bool) override { rows_->push_back(row); }
  void checkpoint(const ChainState& state) override {
    // Through JSON and back, as a run folder keeps it.
    (*checkpoints_)[state.iteration] = chain_state_from_json(nlohmann::json::parse(chain_state_to_json(state).dump()));
  }

 private:
  std::vector<Eigen::VectorXd>* rows_;
  std::map<int, ChainState>* checkpoints_;
};

struct Recorded {
  SamplerSummary summary;
  std::vector<std::vector<Eigen::VectorXd>> rows;      // per chain, every row written
  std::vector<std::map<int, ChainState>> checkpoints;  // per chain, by iteration
};

Recorded run(const Posterior& posterior, const SamplerOptions& options) {
  NetworkModelOptions model;
  model.gibbs = true;
  model.init = InitKind::kPrior;
  Recorded r;
  r.rows.resize(static_cast<std::size_t>(options.chains));
  r.checkpoints.resize(static_cast<std::size_t>(options.chains));
  r.summary = sample([&](int) { return std::make_unique<NetworkChainModel>(posterior, model); }, options,
                     [&](int c) {
                       const auto i = static_cast<std::size_t>(c);
                       return std::make_unique<RecordingSink>(&r.rows[i], &r.checkpoints[i]);
                     });
  return r;
}

bool same_bits(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return false;
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
      if (std::memcmp(&a(i, j), &b(i, j), sizeof(double)) != 0) return false;
    }
  }
  return true;
}

struct Case {
  SamplerKind method;
  MetricKind metric;
  bool rmsprop = false;
  int cycles = 0;
};

class McmcResume : public ::testing::TestWithParam<Case> {};

TEST_P(McmcResume, ResumedChainsContinueExactly) {
  const Posterior posterior = small_network_posterior();
  SamplerOptions o;
  o.method = GetParam().method;
  o.metric = GetParam().metric;
  o.chains = 2;
  o.threads = 1;
  o.num_warmup = kWarmup;
  o.num_draws = kDraws;
  o.save_warmup = true;  // every iteration writes a row: row k is iteration k's
  o.seed = 11;
  o.initial_step_size = o.method == SamplerKind::kMetropolis ? 0.0 : 1.0;
  if (is_stochastic_gradient(o.method)) {
    o.initial_step_size = 1e-3;
    o.stochastic_gradient.batch_size = 6;  // 3 batches an epoch, 2 rows left out of each
    o.stochastic_gradient.friction = 50.0;
    o.stochastic_gradient.rmsprop = GetParam().rmsprop;
    o.stochastic_gradient.cycles = GetParam().cycles;
  }
  o.hmc.num_steps = 8;
  o.hmc.jitter = 0.3;
  o.checkpoint_every = 1;
  const Recorded straight = run(posterior, o);
  ASSERT_EQ(straight.rows[0].size(), static_cast<std::size_t>(kWarmup + kDraws));

  // In the first metric window, at the boundary, in sampling.
  for (const int k : {90, kWarmup, kWarmup + 23}) {
    SCOPED_TRACE("resumed after iteration " + std::to_string(k));
    SamplerOptions resumed = o;
    resumed.checkpoint_every = 0;
    resumed.resume.resize(2);
    ChainState state = straight.checkpoints[0].at(k);
    ASSERT_EQ(state.iteration, k);
    state.kept_draws = straight.summary.draws[0].topRows(state.draws);
    resumed.resume[0] = state;  // chain 2 starts afresh
    const Recorded again = run(posterior, resumed);

    const std::vector<Eigen::VectorXd>& before = straight.rows[0];
    const std::vector<Eigen::VectorXd>& after = again.rows[0];
    ASSERT_EQ(after.size(), before.size() - static_cast<std::size_t>(k));
    for (std::size_t i = 0; i < after.size(); ++i) {
      ASSERT_TRUE(same_bits(after[i], before[static_cast<std::size_t>(k) + i])) << "row " << k + i;
    }
    for (int c = 0; c < 2; ++c) {
      const ChainSummary& a = straight.summary.chains[static_cast<std::size_t>(c)];
      const ChainSummary& b = again.summary.chains[static_cast<std::size_t>(c)];
      EXPECT_TRUE(same_bits(straight.summary.draws[static_cast<std::size_t>(c)],
                            again.summary.draws[static_cast<std::size_t>(c)]))
          << "chain " << c + 1;
      EXPECT_EQ(a.iterations, b.iterations);
      EXPECT_EQ(a.draws, b.draws);
      EXPECT_EQ(a.divergences, b.divergences);
      EXPECT_EQ(a.warmup_divergences, b.warmup_divergences);
      EXPECT_EQ(a.max_depth_hits, b.max_depth_hits);
      EXPECT_EQ(a.mean_accept_stat, b.mean_accept_stat);
      EXPECT_EQ(a.mean_tree_depth, b.mean_tree_depth);
      EXPECT_EQ(a.step_size, b.step_size);
      EXPECT_EQ(a.gradient_evaluations, b.gradient_evaluations);
      EXPECT_TRUE(same_bits(a.inverse_metric_diagonal, b.inverse_metric_diagonal));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Samplers, McmcResume,
    ::testing::Values(Case{SamplerKind::kNuts, MetricKind::kDiagonal}, Case{SamplerKind::kNuts, MetricKind::kDense},
                      Case{SamplerKind::kHmc, MetricKind::kDiagonal},
                      Case{SamplerKind::kMetropolis, MetricKind::kDiagonal},
                      Case{SamplerKind::kMclmc, MetricKind::kDiagonal}, Case{SamplerKind::kMams, MetricKind::kDiagonal},
                      Case{SamplerKind::kSgld, MetricKind::kUnit},
                      Case{SamplerKind::kSghmc, MetricKind::kUnit, /*rmsprop=*/true, /*cycles=*/3}),
    [](const auto& info) {
      return std::string(to_string(info.param.method)) + "_" +
             (info.param.metric == MetricKind::kDense  ? "dense"
              : info.param.metric == MetricKind::kUnit ? "unit"
                                                       : "diag");
    });

// Checkpoints come every checkpoint_every iterations, after the starting point and at the end.
TEST(McmcResume, CheckpointsComeOnSchedule) {
  const Posterior posterior = small_network_posterior();
  SamplerOptions o;
  o.chains = 1;
  o.num_warmup = 30;
  o.num_draws = 25;
  o.checkpoint_every = 20;
  const Recorded r = run(posterior, o);
  std::vector<int> at;
  for (const auto& [iteration, state] : r.checkpoints[0]) at.push_back(iteration);
  EXPECT_EQ(at, (std::vector<int>{0, 20, 40, 55}));
}

TEST(McmcResume, TheRandomStreamRoundTripsAndRefusesAnotherStream) {
  Rng a(7, 3);
  for (int i = 0; i < 1000; ++i) a.normal();
  Rng b(7, 3);
  b.restore(a.save());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.uniform(), b.uniform());
  Rng other(7, 4);
  EXPECT_THROW(other.restore(a.save()), Error);
  EXPECT_THROW(b.restore("7 3 xyz"), Error);
}

TEST(McmcResume, AStateOfAnotherSizeIsRefused) {
  const Posterior posterior = small_network_posterior();
  SamplerOptions o;
  o.chains = 1;
  o.num_warmup = 20;
  o.num_draws = 10;
  o.checkpoint_every = 10;
  const Recorded r = run(posterior, o);
  ChainState state = r.checkpoints[0].at(10);
  state.position.conservativeResize(state.position.size() - 1);
  o.resume = {state};
  EXPECT_THROW(run(posterior, o), Error);
}

}  // namespace
}  // namespace occam::mcmc

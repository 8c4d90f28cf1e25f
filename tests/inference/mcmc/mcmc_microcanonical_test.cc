// The isokinetic dynamics of MCLMC and MAMS (isokinetic.h) against what can be computed without
// them — the velocity flow at a fixed gradient by Runge–Kutta, the second order of the integrators'
// energy error, their reversibility — and the chains (microcanonical.h): the same draws for a seed
// whatever the thread count, a warm-up that reaches its targets, checkpoints that skip the
// decoherence stage. The statistical checks of the draws are in mcmc_pooled_variance_test.cc.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "occam/mcmc/isokinetic.h"
#include "occam/mcmc/microcanonical.h"
#include "occam/mcmc/sampler.h"
#include "occam/status.h"
#include "testing/gaussian_target.h"

namespace occam::mcmc {
namespace {

using testing::GaussianTarget;

// log p(x) = gᵀx: a constant gradient, under which the velocity flow has nothing to approximate.
class LinearDensity final : public LogDensity {
 public:
  explicit LinearDensity(Eigen::VectorXd g) : g_(std::move(g)) {}
  Eigen::Index dim() const override { return g_.size(); }
  bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& x, double* log_p, Eigen::VectorXd* grad) const override {
    *log_p = g_.dot(x);
    if (grad) *grad = g_;
    return true;
  }

 private:
  Eigen::VectorXd g_;
};

// du/dt = (I − uuᵀ) g̃/(d − 1) and dK/dt = g̃·u (g̃ = σ∘g fixed), integrated together by classical
// Runge–Kutta in n steps over time t: the velocity and the kinetic energy change.
std::pair<Eigen::VectorXd, double> runge_kutta_flow(const Eigen::VectorXd& u0, const Eigen::VectorXd& g, double t,
                                                    int n) {
  const Eigen::Index d = u0.size();
  const double d1 = static_cast<double>(d - 1);
  // The state (u, K).
  const auto f = [&](const Eigen::VectorXd& s) {
    Eigen::VectorXd ds(d + 1);
    const Eigen::VectorXd u = s.head(d);
    ds.head(d) = (g - u * u.dot(g)) / d1;
    ds[d] = g.dot(u);
    return ds;
  };
  Eigen::VectorXd s = Eigen::VectorXd::Zero(d + 1);
  s.head(d) = u0;
  const double h = t / n;
  for (int i = 0; i < n; ++i) {
    const Eigen::VectorXd k1 = f(s), k2 = f(s + 0.5 * h * k1), k3 = f(s + 0.5 * h * k2), k4 = f(s + h * k3);
    s += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
  }
  return {s.head(d), s[d]};
}

Eigen::VectorXd unit_vector(Eigen::Index d, std::uint64_t seed) {
  Rng rng(seed);
  Eigen::VectorXd u = rng.normal_vector(d);
  return u / u.norm();
}

class IsokineticIntegrators : public ::testing::TestWithParam<IsokineticIntegrator> {};

// At a fixed gradient the integrator's velocity updates compose to the exact flow over the step,
// and ΔK = ΔE − Δlog p is that flow's ∫ g̃·u dt: the closed form, its normalisation and its
// kinetic energy, checked at δ = ε|g̃|/(d − 1) of about 3, where every term matters.
TEST_P(IsokineticIntegrators, TheVelocityUpdateIsTheExactFlowAtAFixedGradient) {
  const Eigen::Index d = 5;
  const Eigen::VectorXd g = (Eigen::VectorXd(d) << 3.0, -1.0, 2.0, 0.5, -2.5).finished();
  const Eigen::VectorXd sigma = (Eigen::VectorXd(d) << 1.0, 2.0, 0.5, 1.0, 3.0).finished();
  const LinearDensity density(g);
  IsokineticDynamics dynamics(density, GetParam());
  dynamics.set_scale(sigma);
  for (const double eps : {0.1, 1.0, 1.5}) {
    MicrocanonicalPoint z;
    z.x = Eigen::VectorXd::Zero(d);
    ASSERT_TRUE(dynamics.evaluate(&z));
    z.u = unit_vector(d, 3);
    const Eigen::VectorXd x0 = z.x;
    const double log_p0 = z.log_p;
    double energy_error = 0.0;
    ASSERT_TRUE(dynamics.step(&z, eps, &energy_error));
    const auto [u, kinetic] = runge_kutta_flow(unit_vector(d, 3), sigma.cwiseProduct(g), eps, 4000);
    EXPECT_NEAR(z.u.norm(), 1.0, 1e-14);
    EXPECT_LT((z.u - u).norm(), 1e-10) << "ε = " << eps;
    EXPECT_NEAR(energy_error + (z.log_p - log_p0), kinetic, 1e-9 * std::max(1.0, std::abs(kinetic))) << "ε = " << eps;
    EXPECT_NEAR(z.log_p - log_p0, g.dot(z.x - x0), 1e-12);
  }
}

// The energy error over a fixed time T falls as ε² (both integrators are of second order), and
// vanishes as ε → 0: the bookkeeping ΔK + ΔV is that of the dynamics actually integrated.
TEST_P(IsokineticIntegrators, TheEnergyErrorIsOfSecondOrder) {
  Eigen::VectorXd sd(10);
  for (Eigen::Index i = 0; i < 10; ++i) sd[i] = std::pow(10.0, static_cast<double>(i) / 9.0);
  const GaussianTarget target(Eigen::VectorXd::LinSpaced(10, -1.0, 1.0), sd.cwiseAbs2().asDiagonal());
  IsokineticDynamics dynamics(target, GetParam());
  const auto worst_error = [&](double eps) {
    MicrocanonicalPoint z;
    z.x = target.mean() + sd.cwiseProduct(Eigen::VectorXd::LinSpaced(10, 1.5, -1.0));
    EXPECT_TRUE(dynamics.evaluate(&z));
    z.u = unit_vector(10, 5);
    double total = 0.0, worst = 0.0;
    for (int i = 0; i < static_cast<int>(std::lround(8.0 / eps)); ++i) {
      double e = 0.0;
      EXPECT_TRUE(dynamics.step(&z, eps, &e));
      total += e;
      worst = std::max(worst, std::abs(total));
    }
    return worst;
  };
  const double coarse = worst_error(0.2), fine = worst_error(0.1);
  std::cout << to_string(GetParam()) << ": max |ΣΔE| over t = 8: " << coarse << " (ε = 0.2), " << fine
            << " (ε = 0.1)\n";
  EXPECT_GT(coarse / fine, 3.0);
  EXPECT_LT(coarse / fine, 5.5);
  EXPECT_LT(worst_error(0.002), 1e-5);
}

// Integrating forward, reversing the velocity and integrating again returns to the start with the
// opposite energy error: the property MAMS's Metropolis test relies on.
TEST_P(IsokineticIntegrators, TheStepIsReversible) {
  const GaussianTarget target = testing::correlated_gaussian(0.9);
  IsokineticDynamics dynamics(target, GetParam());
  dynamics.set_scale(Eigen::Vector2d(0.7, 1.3));
  MicrocanonicalPoint z;
  z.x = Eigen::Vector2d(2.0, -0.5);
  ASSERT_TRUE(dynamics.evaluate(&z));
  z.u = unit_vector(2, 9);
  const MicrocanonicalPoint start = z;
  double forward = 0.0, backward = 0.0, e = 0.0;
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(dynamics.step(&z, 0.3, &e));
    forward += e;
  }
  z.u = -z.u;
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(dynamics.step(&z, 0.3, &e));
    backward += e;
  }
  EXPECT_LT((z.x - start.x).norm(), 1e-10);
  EXPECT_LT((z.u + start.u).norm(), 1e-10);
  EXPECT_GT(std::abs(forward), 1e-4);  // a real error, that the return undoes
  EXPECT_NEAR(forward + backward, 0.0, 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Both, IsokineticIntegrators,
                         ::testing::Values(IsokineticIntegrator::kLeapfrog, IsokineticIntegrator::kMinimalNorm),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(IsokineticDynamics, RefusesOneDimension) {
  const GaussianTarget target(Eigen::VectorXd::Zero(1), Eigen::MatrixXd::Identity(1, 1));
  EXPECT_THROW(IsokineticDynamics(target, IsokineticIntegrator::kLeapfrog), Error);
}

// ---- the chains ------------------------------------------------------------------------------

// 10-d, standard deviations log-spaced over [1, 10], means spread over [−1, 1].
GaussianTarget spread_gaussian() {
  Eigen::VectorXd sd(10);
  for (Eigen::Index i = 0; i < 10; ++i) sd[i] = std::pow(10.0, static_cast<double>(i) / 9.0);
  return GaussianTarget(Eigen::VectorXd::LinSpaced(10, -1.0, 1.0), sd.cwiseAbs2().asDiagonal());
}

SamplerOptions tuned(SamplerKind method, int warmup, int draws, std::uint64_t seed) {
  SamplerOptions o;
  o.method = method;
  o.chains = 3;
  o.threads = 1;
  o.num_warmup = warmup;
  o.num_draws = draws;
  o.seed = seed;
  return o;
}

SamplerSummary run(const LogDensity& target, const SamplerOptions& o) {
  return sample([&](int) { return std::make_unique<testing::TargetModel>(target); }, o);
}

bool same_bits(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) == 0;
}

class MicrocanonicalChains : public ::testing::TestWithParam<SamplerKind> {};

// Tuning included: the step size, metric and L each chain ends with, and every draw, are the
// same for a seed, run again or on three threads instead of one.
TEST_P(MicrocanonicalChains, TheDrawsDependOnTheSeedAloneNotTheThreads) {
  const GaussianTarget target = spread_gaussian();
  SamplerOptions o = tuned(GetParam(), 300, 60, 17);
  const SamplerSummary one = run(target, o);
  const SamplerSummary again = run(target, o);
  o.threads = 3;
  const SamplerSummary three = run(target, o);
  for (std::size_t c = 0; c < 3; ++c) {
    for (const SamplerSummary* other : {&again, &three}) {
      EXPECT_TRUE(same_bits(one.draws[c], other->draws[c])) << "chain " << c + 1;
      EXPECT_EQ(one.chains[c].step_size, other->chains[c].step_size);
      EXPECT_EQ(one.chains[c].trajectory_length, other->chains[c].trajectory_length);
      EXPECT_TRUE(same_bits(one.chains[c].inverse_metric_diagonal, other->chains[c].inverse_metric_diagonal));
    }
  }
  // Three chains of another seed differ.
  o.seed = 18;
  EXPECT_FALSE(same_bits(one.draws[0], run(target, o).draws[0]));
}

// Warm-up finds the scales (the diagonal metric within a factor 2 of the variances; 700
// iterations of one chain see each coordinate only so often), a decoherence length of the order
// of √d in those coordinates, and its step-size target: MAMS an acceptance near 0.9; MCLMC an
// energy error variance per dimension near 5·10⁻⁴, measured afresh over 4000 steps at the tuned
// ε, L and metric.
TEST_P(MicrocanonicalChains, WarmUpReachesItsTargets) {
  const GaussianTarget target = spread_gaussian();
  SamplerOptions o = tuned(GetParam(), 1000, 300, 23);
  o.chains = 1;
  const SamplerSummary s = run(target, o);
  const ChainSummary& c = s.chains[0];
  const Eigen::VectorXd ratio = c.inverse_metric_diagonal.cwiseQuotient(target.covariance().diagonal());
  std::cout << to_string(GetParam()) << ": ε = " << c.step_size << ", L = " << c.trajectory_length
            << ", metric / variance in [" << ratio.minCoeff() << ", " << ratio.maxCoeff() << "], mean accept_stat "
            << c.mean_accept_stat << ", gradients " << c.gradient_evaluations << '\n';
  EXPECT_GT(ratio.minCoeff(), 0.5);
  EXPECT_LT(ratio.maxCoeff(), 2.0);
  EXPECT_GT(c.trajectory_length, 0.3 * std::sqrt(10.0));
  EXPECT_LT(c.trajectory_length, 3.0 * std::sqrt(10.0));
  EXPECT_EQ(c.divergences, 0);
  if (GetParam() == SamplerKind::kMams) {
    EXPECT_GT(c.mean_accept_stat, 0.82);
    EXPECT_LT(c.mean_accept_stat, 0.97);
    return;
  }
  IsokineticDynamics dynamics(target, MicrocanonicalOptions{}.integrator);
  dynamics.set_scale(c.inverse_metric_diagonal.cwiseSqrt());
  MicrocanonicalPoint z;
  z.x = s.draws[0].row(s.draws[0].rows() - 1).segment(kNumSamplerColumns, 10).transpose();
  ASSERT_TRUE(dynamics.evaluate(&z));
  Rng rng(99);
  dynamics.refresh(&z, rng);
  double sum_sq = 0.0;
  const int steps = 4000;
  for (int i = 0; i < steps; ++i) {
    double e = 0.0;
    ASSERT_TRUE(dynamics.step(&z, c.step_size, &e));
    sum_sq += e * e;
    dynamics.partial_refresh(&z, c.step_size, c.trajectory_length, rng);
  }
  const double per_dimension = sum_sq / steps / 10.0;
  std::cout << "  Var[ΔE]/d at the tuned ε: " << per_dimension << '\n';
  EXPECT_GT(per_dimension, 5e-4 / 3.0);
  EXPECT_LT(per_dimension, 5e-4 * 3.0);
}

// Checkpoints come on schedule, except inside the decoherence stage (MCLMC: iterations 105–149
// of a 150-iteration warm-up), whose positions a state does not hold.
TEST_P(MicrocanonicalChains, NoCheckpointInsideTheDecoherenceStage) {
  class Recorder final : public DrawSink {
   public:
    explicit Recorder(std::vector<int>* at) : at_(at) {}
    void draw(const Eigen::VectorXd&, bool) override {}
    void checkpoint(const ChainState& state) override {
      at_->push_back(state.iteration);
      EXPECT_EQ(state.momentum.size(), 10);
    }

   private:
    std::vector<int>* at_;
  };
  const GaussianTarget target = spread_gaussian();
  SamplerOptions o = tuned(GetParam(), 150, 10, 3);
  o.chains = 1;
  o.checkpoint_every = 1;
  std::vector<int> at;
  sample([&](int) { return std::make_unique<testing::TargetModel>(target); }, o,
         [&](int) { return std::make_unique<Recorder>(&at); });
  // MCLMC: stages end at 45, 90, 105, 150; MAMS: 38, 75, 98, 128, 150.
  const int begin = GetParam() == SamplerKind::kMclmc ? 105 : 98;
  const int end = GetParam() == SamplerKind::kMclmc ? 150 : 128;
  std::vector<int> expected;
  for (int i = 0; i <= 160; ++i) {
    if (i <= begin || i >= end) expected.push_back(i);
  }
  EXPECT_EQ(at, expected);
}

INSTANTIATE_TEST_SUITE_P(Both, MicrocanonicalChains, ::testing::Values(SamplerKind::kMclmc, SamplerKind::kMams),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(MicrocanonicalOptions, RefuseWhatTheyCannotDo) {
  SamplerOptions o;
  o.method = SamplerKind::kMams;
  o.metric = MetricKind::kDense;
  EXPECT_THROW(o.validate(), Error);
  o.metric = MetricKind::kDiagonal;
  o.microcanonical.max_steps = 0;
  EXPECT_THROW(o.validate(), Error);
  o.microcanonical.max_steps = 10;
  o.microcanonical.energy_variance = 0.0;
  EXPECT_THROW(o.validate(), Error);
  o.microcanonical.energy_variance = 5e-4;
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(parse_sampler_kind("mclmc"), SamplerKind::kMclmc);
  EXPECT_STREQ(to_string(parse_sampler_kind("mams")), "mams");
  EXPECT_EQ(parse_isokinetic_integrator("leapfrog"), IsokineticIntegrator::kLeapfrog);
  EXPECT_THROW(parse_isokinetic_integrator("verlet"), Error);
}

// MAMS's trajectory lengths: uniform on 1..2N−1, mean N = L/ε.
TEST(MicrocanonicalOptions, MamsStepsAreUniformAroundLOverEpsilon) {
  Rng rng(4);
  std::vector<int> count(20, 0);
  for (int i = 0; i < 19000; ++i) ++count[static_cast<std::size_t>(mams_steps(5.0, 0.5, 512, rng))];
  EXPECT_EQ(count[0], 0);
  for (int n = 1; n <= 19; ++n) EXPECT_NEAR(count[static_cast<std::size_t>(n)], 1000, 5 * std::sqrt(1000.0)) << n;
  EXPECT_EQ(mams_steps(1e6, 1.0, 512, rng) <= 511, true);
  EXPECT_EQ(mclmc_steps(5.0, 0.5, 512), 10);
  EXPECT_EQ(mclmc_steps(1e9, 1.0, 512), 512);
}

}  // namespace
}  // namespace occam::mcmc

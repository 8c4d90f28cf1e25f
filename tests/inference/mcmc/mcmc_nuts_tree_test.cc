// The NUTS tree driven by mock Hamiltonians whose trajectories are known exactly: a free
// particle (never turns), an exact harmonic oscillator (turns when an end's momentum changes sign), and one
// whose energy becomes non-finite after a few steps (a divergence, not a crash).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "occam/mcmc/nuts.h"

namespace occam::mcmc {
namespace {

// H = V(q) + ½p², unit metric, with the leapfrog step replaced by a scripted map.
class MockHamiltonian : public Hamiltonian {
 public:
  enum class Kind { kFreeParticle, kRotation, kBlowsUp };
  MockHamiltonian(Kind kind, int blow_up_after = 0) : kind_(kind), blow_up_after_(blow_up_after) {}
  bool init(PhasePoint* z) const override {
    z->V = kind_ == Kind::kRotation ? 0.5 * z->q.squaredNorm() : 0.0;
    z->grad_V = kind_ == Kind::kRotation ? z->q : Eigen::VectorXd::Zero(z->q.size());
    return true;
  }
  double kinetic(const Eigen::VectorXd& p) const override { return 0.5 * p.squaredNorm(); }
  Eigen::VectorXd velocity(const Eigen::VectorXd& p) const override { return p; }
  void sample_momentum(PhasePoint* z, Rng&) const override { z->p = Eigen::VectorXd::Ones(z->q.size()); }
  void leapfrog(PhasePoint* z, double step) const override {
    ++steps_;
    if (kind_ == Kind::kRotation) {  // the exact flow of H = ½q² + ½p²: a rotation by `step`
      const Eigen::VectorXd q = z->q, p = z->p;
      z->q = std::cos(step) * q + std::sin(step) * p;
      z->p = -std::sin(step) * q + std::cos(step) * p;
    } else {
      z->q += step * z->p;
    }
    init(z);
    if (kind_ == Kind::kBlowsUp && steps_ > blow_up_after_) z->V = std::numeric_limits<double>::quiet_NaN();
  }
  int steps() const { return steps_; }

 private:
  Kind kind_;
  int blow_up_after_;
  mutable int steps_ = 0;
};

PhasePoint start(const Hamiltonian& h) {
  PhasePoint z;
  z.q = Eigen::VectorXd::Zero(1);
  h.init(&z);
  return z;
}

TEST(NutsTree, FreeParticleGrowsToTheMaximumDepth) {
  MockHamiltonian h(MockHamiltonian::Kind::kFreeParticle);
  NutsKernel nuts(h, {.max_depth = 5});
  nuts.set_step_size(0.5);
  Rng rng(1);
  for (int i = 0; i < 20; ++i) {
    PhasePoint z = start(h);
    const TransitionInfo info = nuts.transition(&z, rng);
    EXPECT_EQ(info.tree_depth, 5);
    EXPECT_EQ(info.n_leapfrog, 31);  // 2^5 − 1
    EXPECT_FALSE(info.divergent);
    EXPECT_DOUBLE_EQ(info.accept_stat, 1.0);  // energy is conserved exactly
    // The draw is one of the trajectory's points: a multiple of the step, within 31 steps.
    const double k = z.q[0] / 0.5;
    EXPECT_NEAR(k, std::round(k), 1e-12);
    EXPECT_LE(std::abs(k), 31.0);
  }
}

TEST(NutsTree, ExactOscillatorStopsWhenAnEndTurnsBack) {
  MockHamiltonian h(MockHamiltonian::Kind::kRotation);
  NutsKernel nuts(h, {.max_depth = 10});
  const double step = 0.05;  // 2π/step ≈ 126 steps per revolution
  nuts.set_step_size(step);
  Rng rng(2);
  for (int i = 0; i < 50; ++i) {
    PhasePoint z = start(h);
    z.q[0] = 0.3;
    h.init(&z);
    const TransitionInfo info = nuts.transition(&z, rng);
    // In one dimension the trajectory turns when the momentum at one of its ends changes sign.
    // From (q, p) = (0.3, 1) = R(sin φ, cos φ), φ = atan 0.3, that takes a rotation by π/2 − φ
    // forwards or π/2 + φ backwards, so the tree cannot stop before π/2 − φ; with doubling it
    // stops well before a whole revolution.
    EXPECT_GE(info.n_leapfrog * step, 0.5 * std::numbers::pi - std::atan(0.3)) << info.n_leapfrog;
    EXPECT_LE(info.n_leapfrog * step, 2.0 * std::numbers::pi) << info.n_leapfrog;
    EXPECT_LT(info.tree_depth, 10);
    EXPECT_NEAR(info.accept_stat, 1.0, 1e-12);
    // Energy is conserved, so the draw stays on the initial circle q² + p² = 0.3² + 1.
    EXPECT_NEAR(2.0 * info.energy, 0.09 + 1.0, 1e-9);
  }
}

TEST(NutsTree, NonFiniteEnergyIsADivergenceAndTheDrawStaysFinite) {
  MockHamiltonian h(MockHamiltonian::Kind::kBlowsUp, /*blow_up_after=*/5);
  NutsKernel nuts(h, {.max_depth = 10});
  nuts.set_step_size(0.1);
  Rng rng(3);
  PhasePoint z = start(h);
  const TransitionInfo info = nuts.transition(&z, rng);
  EXPECT_TRUE(info.divergent);
  EXPECT_EQ(info.n_leapfrog, 6);  // the sixth step failed and ended the tree
  EXPECT_LE(info.tree_depth, 3);
  EXPECT_TRUE(std::isfinite(info.energy));
  EXPECT_TRUE(std::isfinite(z.V));
}

}  // namespace
}  // namespace occam::mcmc

// sgmcmc.h — stochastic-gradient MCMC: SGLD (Welling & Teh 2011) and SGHMC (Chen, Fox & Guestrin
// 2014), with cyclical step sizes (Zhang et al. 2020) and RMSprop preconditioning (Li et al. 2016).
//
// Chosen by SamplerOptions::method (kSgld, kSghmc) and run by occam::mcmc::sample() like the exact
// kernels; the chain's model must provide a StochasticLogDensity (ChainModel::stochastic_density).
// Each iteration is one step on one minibatch ∇̂ = ∇log p(θ) + (m/|B|) Σ_{n∈B} ∇log p(y_n|θ), the
// minibatches drawn without replacement, a fresh permutation of the rows each epoch from the
// chain's own stream. With time step h and preconditioner G (G = I without RMSprop):
//   SGLD  (Euler–Maruyama for dθ = ½G∇log p dt + G^½ dW):
//         θ ← θ + (h/2) G∇̂ + √h G^½ ξ
//   SGHMC (Chen et al. eq. 13 with velocity v = M⁻¹p, M = G⁻¹, friction C·M, noise estimate B̂ = 0):
//         v ← (1 − hC) v + h G∇̂ + √(2Ch) G^½ ξ,   θ ← θ + h v
// ξ ~ N(0, I). Neither has a Metropolis correction: the draws carry an O(h) bias (docs/mcmc.md).
// RMSprop: V ← ρV + (1 − ρ) ḡ∘ḡ with ḡ = ∇̂/m, G = diag(1 / (λ + √V)), updated before each step
// (Li et al. 2016, Algorithm 1); the Γ(θ) correction term is omitted, as Li et al. do in practice.
// Cyclical: h_t = (h/2)(cos(π r_t) + 1), r_t = (t mod L)/L, L = ⌈T/M⌉ for M cycles over all T
// iterations (Zhang et al. 2020, eq. 1); while r_t < the exploration fraction the step has no
// noise and no draw is kept.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "occam/rng.h"

namespace occam::mcmc {

struct StochasticGradientOptions {
  Eigen::Index batch_size = 0;    // rows per minibatch; 0: min(m, 128)
  double friction = 1.0;          // SGHMC's C, per unit time (h·C < 1)
  int cycles = 0;                 // 0: a constant step size; M ≥ 1: the cosine schedule with M cycles
  double exploration = 0.0;       // in [0, 1): the fraction of each cycle without noise or draws (cycles ≥ 1)
  bool rmsprop = false;           // the diagonal RMSprop preconditioner
  double rmsprop_decay = 0.99;    // ρ
  double rmsprop_epsilon = 1e-5;  // λ
  int gibbs_every = 1;            // epochs between Gibbs updates of the model's hyperparameters
  void validate() const;          // throws Error(kInvalidArgument) naming the bad field
};

// The rows of each minibatch: a permutation of 0..m−1 per epoch, cut into ⌊m/b⌋ batches of b
// (the last m mod b rows of a permutation are left out of that epoch). The permutation is a
// function of the stream's state before it is drawn (shuffle_state), so a checkpoint holds that
// text and the position instead of m indices.
class MinibatchStream {
 public:
  MinibatchStream(Eigen::Index rows, Eigen::Index batch_size);
  // The next batch; a new epoch (a fresh permutation from rng) when the current one is used up.
  // Returns true when a new epoch began.
  bool advance(Rng& rng);
  const std::vector<Eigen::Index>& batch() const { return batch_; }
  long long epoch() const { return epoch_; }  // −1 before the first advance
  Eigen::Index position() const { return position_; }
  const std::string& shuffle_state() const { return shuffle_state_; }
  // Back to a saved point: the batch is the one advance() last returned there.
  void restore(const std::string& shuffle_state, long long epoch, Eigen::Index position);

 private:
  void shuffle(Rng& rng);
  Eigen::Index rows_, batch_size_;
  std::vector<Eigen::Index> permutation_, batch_;
  Eigen::Index position_;
  long long epoch_ = -1;
  std::string shuffle_state_;
};

// h_t of the cyclical schedule (above), or h itself when cycles = 0.
double cyclical_step_size(double step_size, int iteration, int total_iterations, int cycles);
// Whether iteration t is in a cycle's exploration stage.
bool in_exploration_stage(int iteration, int total_iterations, int cycles, double exploration);

}  // namespace occam::mcmc

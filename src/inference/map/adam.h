// adam.h (internal) — Adam's moment estimates and step (Kingma & Ba 2015, Algorithm 1, with the
// bias corrections folded into the step size as its §2 describes: α_t = α·√(1 − β₂ᵗ)/(1 − β₁ᵗ),
// step = α_t·m_t/(√v_t + ε)), shared by the minibatch MAP (descent on S, minibatch_map.cc) and
// the online evidence loop (ascent on φ = log θ, evidence/online.cc). Variational inference keeps
// its own (vi/elbo.cc): Algorithm 1 as printed, ε added to the corrected √v̂, with a step scale
// per parameter, whose published figures depend on that arithmetic.
#pragma once

#include <Eigen/Core>
#include <cmath>

namespace occam::internal {

class AdamMoments {
 public:
  AdamMoments(Eigen::Index dim, double beta1, double beta2, double epsilon)
      : beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon),
        first_(Eigen::VectorXd::Zero(dim)),
        second_(Eigen::VectorXd::Zero(dim)),
        step_(dim) {}

  // Updates the moments with the gradient g and returns the step at learning rate `rate`:
  // subtract it to descend, add it to ascend.
  const Eigen::VectorXd& step(const Eigen::VectorXd& g, double rate) {
    ++t_;
    first_ = beta1_ * first_ + (1.0 - beta1_) * g;
    second_ = beta2_ * second_ + (1.0 - beta2_) * g.cwiseAbs2();
    const double t = static_cast<double>(t_);
    const double corrected = rate * std::sqrt(1.0 - std::pow(beta2_, t)) / (1.0 - std::pow(beta1_, t));
    step_ = (corrected * first_.array() / (second_.array().sqrt() + epsilon_)).matrix();
    return step_;
  }

 private:
  double beta1_, beta2_, epsilon_;
  Eigen::VectorXd first_, second_, step_;
  long long t_ = 0;
};

}  // namespace occam::internal

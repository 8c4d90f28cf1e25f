// online.h (internal) — the structured Laplace log-evidence at a fixed w as a closed-form function
// of the log-hyperparameters, for the online evidence loop (online.cc) and its tests.
//
// At a fixed w the structured posterior precision is A(θ) = (β/β₀)·H₀ + Σ_g α_g P_g, with H₀ the
// structure's Gauss–Newton part computed once at β₀ (a Gaussian likelihood's Λ = β, so H is
// linear in β; the other likelihoods have no β and H does not move). For kron and diag, A's
// eigenvalues are known in closed form from the factors — per Kronecker block b of a prior group g,
// λ_q,i·λ_g,j·β/β₀ + α_g (the eigenvalues of Q ⊗ G are the products λ_q,i λ_g,j: Horn & Johnson 1991,
// Topics in Matrix Analysis, Thm 4.2.12; used so by Immer et al. 2021, §3); per weight, h_i·β/β₀ + α_g
// — so with c_k = β-free curvature eigenvalue and g(k) its group,
//   log|A|              = Σ_k log(β c_k + α_g(k))
//   ∂log|A|/∂log α_g    = Σ_{k: g(k)=g} α_g / (β c_k + α_g)
//   ∂log|A|/∂log β      = Σ_k β c_k / (β c_k + α_g(k))
// (the derivative of log(βc + α) in log α is α/(βc + α), in log β it is βc/(βc + α)). For
// last-layer, A is the dense p × p matrix (β/β₀)H₀ + diag(α), and the same derivatives are
// α_g tr_g(A⁻¹) and tr(A⁻¹ (β/β₀)H₀) = p − Σ_i α_g(i) (A⁻¹)_ii from its Cholesky factor.
// The log-evidence (MacKay 1992a, eq. 10) at the fixed w, in φ = log θ, up to terms free of θ:
//   L(φ) = Σ_g [(W_g/2) log α_g − α_g E_W,g] + (m/2) log β − β E_D − ½ log|A(θ)|,
//   ∂L/∂log α_g = ½W_g − α_g E_W,g − ½ ∂log|A|/∂log α_g,  ∂L/∂log β = ½m − βE_D − ½ ∂log|A|/∂log β,
// W_g counting the held weights of last-layer too (their prior term stays in log p(w|α)).
#pragma once

#include <Eigen/Core>
#include <vector>

#include "inference/evidence/engine.h"
#include "occam/laplace.h"
#include "occam/posterior.h"

namespace occam::evidence {

// EvidenceLoop::kOnline (evidence.h, OnlineEvidenceOptions): the minibatch run with the
// hyperparameter rounds, then, with `polish`, the outer loop; leaves the Laplace approximation at
// the final state to the shared finish.
void fit_online(Run& run);

class FixedModeEvidence {
 public:
  // From q, the structured Laplace approximation (kron, diag or last-layer) at w with the
  // posterior's current hyperparameters. Throws Error(kInvalidArgument) for another structure or a
  // prior that is not group-diagonal, or a Kronecker block that spans prior groups.
  // data_scale multiplies the data part of q's curvature: m/n where q was formed on n of the m rows
  // of the posterior (the structures' data curvature is a sum over rows: kron's Q = Σ_n a_n a_nᵀ,
  // its G a mean, diag's and last-layer's sums).
  FixedModeEvidence(const Posterior& posterior, const LaplaceApproximation& q, double data_scale = 1.0);

  // L(φ) as above (up to a constant) and its gradient in φ = log θ (θ = the prior's hyperparameters,
  // then β when the likelihood has one).
  double evaluate(const Eigen::VectorXd& log_theta, Eigen::VectorXd* gradient) const;
  // log|A(θ)| and its derivatives in log θ (the same order), alone.
  double log_det(const Eigen::VectorXd& log_theta, Eigen::VectorXd* gradient) const;

  // γ_g = W_g − α_g tr_g(A⁻¹) at log θ, MacKay's well-determined parameters of the structure, as
  // well_determined_parameters (evidence.h) counts them: a weight last-layer holds at the mode, a
  // point mass, counts as one.
  Eigen::VectorXd well_determined(const Eigen::VectorXd& log_theta) const;

  Index num_hyperparameters() const { return static_cast<Index>(group_sizes_.size()) + (has_beta_ ? 1 : 0); }

 private:
  bool has_beta_ = false;
  double beta0_ = 1.0, num_targets_ = 0.0, data_error_ = 0.0;
  Eigen::VectorXd group_sizes_, energies_;  // W_g, E_W,g
  // kron and diag: the β-free curvature eigenvalue of each integrated direction and its group.
  Eigen::VectorXd curvature_;
  Eigen::VectorXi group_;
  // last-layer: H₀ (p × p, at β₀) and the group of each of its p weights.
  Eigen::MatrixXd dense_;
  bool is_dense_ = false;
};

}  // namespace occam::evidence

// laplace.h — the Laplace approximation N(w_MAP, A⁻¹) and the log-evidence it gives.
//
// A = −∇∇ log p(w, D) at w_MAP = H + Σ_g α_g P_g, with H the data Hessian (Gauss–Newton or exact).
// A is kept as its Cholesky factor A = LLᵀ: determinants from the factor, variances by solves.
//
//   occam::LaplaceApproximation q = occam::laplace(posterior, w_map, occam::HessianKind::kGgn);
//   double log_z = occam::log_evidence(posterior, q);
#pragma once

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>

#include "occam/posterior.h"
#include "occam/rng.h"

namespace occam {

struct LaplaceApproximation {
  Eigen::VectorXd mean;                // w_MAP
  Eigen::MatrixXd precision_cholesky;  // L, lower triangular, A = LLᵀ
  double log_det_precision = 0.0;      // log |A| = 2 Σ log L_ii
  int clipped_eigenvalues = 0;         // exact Hessian only: negative eigenvalues of H set to 0

  Eigen::Index dim() const { return mean.size(); }
  // diag(A⁻¹).
  Eigen::VectorXd covariance_diagonal() const;
  // gᵀ A⁻¹ g for each column g of G (W × n): the linearised predictive variance of f.
  Eigen::VectorXd quadratic_form_inverse(const Eigen::MatrixXd& G) const;
  // w ~ N(mean, A⁻¹), i.e. mean + L⁻ᵀz with z ~ N(0, I).
  Eigen::VectorXd sample(Rng& rng) const;

  nlohmann::json to_json() const;  // mean and the packed lower triangle of L
  static LaplaceApproximation from_json(const nlohmann::json& j);
};

// The data Hessian H = −∇∇ log p(D|w) at w, made positive semi-definite for kExact by setting
// its negative eigenvalues to zero; *clipped receives how many were (may be null).
Eigen::MatrixXd positive_data_hessian(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind,
                                      int* clipped);

// The Laplace approximation at w (normally w_MAP). Throws Error(kNumerical) if A is not positive
// definite.
LaplaceApproximation laplace(const Posterior& posterior, const Eigen::VectorXd& w, HessianKind kind);
// The same from a data Hessian already computed (it must be positive semi-definite).
LaplaceApproximation laplace_from_hessian(const Posterior& posterior, const Eigen::VectorXd& w,
                                          const Eigen::MatrixXd& data_hessian);

// log p(D | α, β) ≈ log p(D | w_MAP) + log p(w_MAP | α) + (W/2) log 2π − ½ log|A|
// (MacKay 1992a, eq. 10; for a Gaussian likelihood this is
//  Σ_g (W_g/2) log α_g + (m/2) log β − (m/2) log 2π − ½ log|A| − Σ_g α_g E_W,g − β E_D).
double log_evidence(const Posterior& posterior, const LaplaceApproximation& q);

// The hidden-unit symmetry term log(H!) + H log 2 summed over hidden layers (the sign-flip term
// only for odd activations): a network's evidence counts each of its equivalent modes
// (MacKay 1992b, §4).
double symmetry_log_factor(const Network& network);

}  // namespace occam

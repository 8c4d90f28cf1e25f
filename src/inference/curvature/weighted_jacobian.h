// weighted_jacobian.h (internal) — the weighted Jacobian Z = Λ^½J of all the data at one w, for
// the Woodbury form of the curvature (curvature.h), held either by its layers' factors or in full.
//
// For a dense layer with inputs a_n (the rows of A, m × fan-in) and back-propagated output
// sensitivities δ_ρ of the rows ρ = (k, n) of Z (the rows of S, n × fan-out; n = m·K, output-major,
// with S_n = Λ_n^½ as the seeds of the backward pass), the row of Z over the layer's weights is
// δ_ρ ⊗ a_n and over its biases δ_ρ (Goodfellow 2015, per-example gradients). So for any diagonal
// D whose inverse over the layer's weights is constant down each input column, d⁻¹(c, j) = v_j,
//
//     Z_l D_l⁻¹ Z_lᵀ = (Ã diag(v) Ãᵀ) ⊙ (S Sᵀ)       (Ã: row ρ = (k, n) is a_n),
//
// the structured form of the empirical neural tangent kernel (Novak, Sohl-Dickstein & Schoenholz
// 2022): m²·fan-in + n²·fan-out multiply-adds instead of n²·fan-in·fan-out, and Z is never
// formed. Products Zv and Zᵀt are a forward and a backward pass through the layers' factors (one
// matrix product each, m·W multiply-adds), and the per-column quadratic forms z_jᵀMz_j that the
// traces tr_g(A⁻¹) need sum over a column's units as ã_jᵀ (M ⊙ SSᵀ) ã_j.
//
// The layered form applies where a network has dense layers (Network::dense_layers: an Mlp, a
// Linear) and every input column of every layer's weights, and every layer's biases, lie in one
// prior group (ridge, MacKay's groups, ARD); elsewhere Z is held in full (n × W) and the same
// operations are matrix products with it.
//
//   auto Z = occam::internal::make_weighted_jacobian(posterior, /*layered=*/true);
//   if (Z->form(posterior, w)) {                                        // false: some Λ_n not PSD
//     Eigen::MatrixXd K(Z->rows(), Z->rows());
//     Z->gram_lower(d_inverse, beta_ratio, &K);                         // K = I + c·Z D⁻¹ Zᵀ
//   }
#pragma once

#include <Eigen/Core>
#include <memory>

#include "occam/posterior.h"

namespace occam::internal {

class WeightedJacobian {
 public:
  virtual ~WeightedJacobian() = default;
  Index rows() const { return rows_; }  // n = m·K
  Index cols() const { return cols_; }  // W

  // Forms Z at w over all the posterior's rows, reusing this object's storage (an optimiser's next
  // iterate). Returns false when some Λ_n is not positive semi-definite (it has no square root);
  // throws Error(kNumerical) when the Jacobian is not finite at w.
  virtual bool form(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w) = 0;

  // out = Z·V (n × k) for V W × k.
  virtual void multiply(const Eigen::Ref<const Eigen::MatrixXd>& V, Eigen::MatrixXd* out) const = 0;
  // out = Zᵀ·T (W × k) for T n × k.
  virtual void multiply_transpose(const Eigen::Ref<const Eigen::MatrixXd>& T, Eigen::MatrixXd* out) const = 0;
  // The lower triangle (diagonal included) of K = I + scale·Z diag(d_inverse) Zᵀ into *K (n × n,
  // resized; its strictly upper triangle is left unspecified). d_inverse must be constant on each
  // of the sets below (it is for D = P + μI with a prior whose groups contain them).
  virtual void gram_lower(const Eigen::VectorXd& d_inverse, double scale, Eigen::MatrixXd* K) const = 0;
  // The weights fall into sets, each inside one prior group, over which this form sums: set_of()[i]
  // is the set of weight i, 0 ≤ set < num_sets(). The full form has one set per weight.
  const Eigen::VectorXi& set_of() const { return set_of_; }
  Index num_sets() const { return num_sets_; }
  // Σ_{i ∈ s} z_iᵀ M z_i for each set s, z_i the columns of Z, M symmetric n × n (both triangles).
  virtual Eigen::VectorXd set_quadratic_sums(const Eigen::MatrixXd& M) const = 0;
  // diag(ZᵀZ): the Gauss–Newton matrix's diagonal, per weight.
  virtual Eigen::VectorXd column_squared_norms() const = 0;
  // Z itself (n × W).
  virtual Eigen::MatrixXd dense() const = 0;
  // True for the layered form.
  virtual bool layered() const = 0;

  // What the exact gradient of the Laplace log-evidence needs of A⁻¹ (evidence/total_gradient.cc),
  // in the n × n space of the rows, with A = D + c·ZᵀZ factored as K = I + c·Z D⁻¹ Zᵀ = L Lᵀ (L the
  // lower triangle of *K_factor) and J the unweighted Jacobian at the w Z was formed at:
  //   C (m × K²):   C(n, k + l·K) = (J A⁻¹ Jᵀ)_(k,n),(l,n),
  //   E_h (m × K²): E_h(n, a + b·K) = (J A⁻¹ dJ_hᵀ)_(b,n),(a,n) for each column u_h of U, dJ_h the
  //                 derivative of J along u_h by a central difference of step h_base/‖u_h‖∞.
  // From J A⁻¹ Yᵀ = G_JY − c·G_JZ K⁻¹ G_ZY with the cross Gram matrices G_XY = X D⁻¹ Yᵀ, which the
  // layered form has from its factors: n³ for K⁻¹G_ZJ once, n²·Σ(fan-in + fan-out) per column of U,
  // where A⁻¹Jᵀ itself costs n²W. Only the layered form computes them; the full form returns false.
  virtual bool inverse_jacobian_blocks(const Posterior& posterior, const Eigen::Ref<const Eigen::VectorXd>& w,
                                       const Eigen::VectorXd& d_inverse, double c, const Eigen::MatrixXd& K_factor,
                                       const Eigen::MatrixXd& U, double h_base, Eigen::MatrixXd* C,
                                       std::vector<Eigen::MatrixXd>* E) const {
    (void)posterior, (void)w, (void)d_inverse, (void)c, (void)K_factor, (void)U, (void)h_base, (void)C, (void)E;
    return false;
  }

 protected:
  Index rows_ = 0, cols_ = 0;
  Eigen::VectorXi set_of_;
  Index num_sets_ = 0;
};

// Whether the posterior's network and prior allow the layered form (see above).
bool layered_jacobian_applies(const Posterior& posterior);

// An empty Z for the posterior: layered where it applies and `layered` is true, in full otherwise.
std::unique_ptr<WeightedJacobian> make_weighted_jacobian(const Posterior& posterior, bool layered = true);

// The same, formed at w; null when some Λ_n is not positive semi-definite.
std::unique_ptr<WeightedJacobian> make_weighted_jacobian(const Posterior& posterior,
                                                         const Eigen::Ref<const Eigen::VectorXd>& w,
                                                         bool layered = true);

}  // namespace occam::internal

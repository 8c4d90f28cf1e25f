// metric.h — the Euclidean metric of HMC: the inverse mass matrix M⁻¹ (unit, diagonal or dense).
//
// K(p) = ½ pᵀM⁻¹p, momenta p ~ N(0, M). Warm-up sets M⁻¹ to an estimate of the posterior
// covariance (Stan's windowed adaptation); random-walk Metropolis uses M⁻¹ as its proposal shape.
//
//   occam::mcmc::Metric m = occam::mcmc::Metric::dense(covariance);   // M⁻¹ = covariance
//   Eigen::VectorXd p = m.sample_momentum(rng);
//   double k = m.kinetic(p);
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <string>
#include <string_view>

#include "occam/rng.h"

namespace occam::mcmc {

enum class MetricKind { kUnit, kDiagonal, kDense };
MetricKind parse_metric_kind(std::string_view name);  // "unit" | "diag" | "dense"
const char* to_string(MetricKind kind);               // Stan's names: "unit_e" | "diag_e" | "dense_e"

class Metric {
 public:
  Metric() = default;
  static Metric unit(Eigen::Index dim);
  // Throws Error(kInvalidArgument) unless every entry is positive and finite.
  static Metric diagonal(const Eigen::VectorXd& inverse_mass);
  // Throws Error(kInvalidArgument) unless the matrix is symmetric positive definite.
  static Metric dense(const Eigen::MatrixXd& inverse_mass);

  MetricKind kind() const { return kind_; }
  Eigen::Index dim() const { return dim_; }
  double kinetic(const Eigen::VectorXd& p) const;            // ½ pᵀM⁻¹p
  Eigen::VectorXd velocity(const Eigen::VectorXd& p) const;  // M⁻¹p
  Eigen::VectorXd sample_momentum(Rng& rng) const;           // p ~ N(0, M)
  // L·z with M⁻¹ = LLᵀ: a draw from N(0, M⁻¹) given z ~ N(0, I) (Metropolis proposals).
  Eigen::VectorXd scale_by_inverse_mass_root(const Eigen::VectorXd& z) const;
  // The diagonal of M⁻¹ (every kind), and the whole matrix (dense only; empty otherwise).
  Eigen::VectorXd inverse_mass_diagonal() const;
  const Eigen::MatrixXd& inverse_mass_matrix() const { return dense_; }

 private:
  MetricKind kind_ = MetricKind::kUnit;
  Eigen::Index dim_ = 0;
  Eigen::VectorXd diag_;            // kDiagonal: M⁻¹
  Eigen::VectorXd diag_sqrt_;       // √M⁻¹
  Eigen::MatrixXd dense_;           // kDense: M⁻¹
  Eigen::MatrixXd dense_cholesky_;  // L, M⁻¹ = LLᵀ
};

}  // namespace occam::mcmc

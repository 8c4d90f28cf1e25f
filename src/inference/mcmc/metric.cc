#include "occam/mcmc/metric.h"

#include <cmath>
#include <string>

#include "occam/status.h"
#include "occam/types.h"

namespace occam::mcmc {

MetricKind parse_metric_kind(std::string_view name) { return enum_names<MetricKind>().parse(name); }

const char* to_string(MetricKind kind) {
  switch (kind) {
    case MetricKind::kUnit:
      return "unit_e";
    case MetricKind::kDiagonal:
      return "diag_e";
    case MetricKind::kDense:
      return "dense_e";
  }
  return "?";
}

Metric Metric::unit(Eigen::Index dim) {
  Metric m;
  m.kind_ = MetricKind::kUnit;
  m.dim_ = dim;
  return m;
}

Metric Metric::diagonal(const Eigen::VectorXd& inverse_mass) {
  for (Eigen::Index i = 0; i < inverse_mass.size(); ++i) {
    if (!(inverse_mass[i] > 0.0) || !std::isfinite(inverse_mass[i])) {
      throw Error(ErrorKind::kInvalidArgument, "diagonal metric: entry " + std::to_string(i + 1) +
                                                   " of the inverse mass matrix is " + std::to_string(inverse_mass[i]) +
                                                   "; it must be positive and finite");
    }
  }
  Metric m;
  m.kind_ = MetricKind::kDiagonal;
  m.dim_ = inverse_mass.size();
  m.diag_ = inverse_mass;
  m.diag_sqrt_ = inverse_mass.cwiseSqrt();
  return m;
}

Metric Metric::dense(const Eigen::MatrixXd& inverse_mass) {
  if (inverse_mass.rows() != inverse_mass.cols()) {
    throw Error(ErrorKind::kInvalidArgument, "dense metric: the inverse mass matrix is not square");
  }
  if (!inverse_mass.allFinite() || !inverse_mass.isApprox(inverse_mass.transpose(), 1e-10)) {
    throw Error(ErrorKind::kInvalidArgument, "dense metric: the inverse mass matrix is not finite and symmetric");
  }
  Eigen::LLT<Eigen::MatrixXd> llt(inverse_mass);
  if (llt.info() != Eigen::Success) {
    throw Error(ErrorKind::kInvalidArgument, "dense metric: the inverse mass matrix is not positive definite");
  }
  Metric m;
  m.kind_ = MetricKind::kDense;
  m.dim_ = inverse_mass.rows();
  m.dense_ = inverse_mass;
  m.dense_cholesky_ = llt.matrixL();
  return m;
}

double Metric::kinetic(const Eigen::VectorXd& p) const {
  switch (kind_) {
    case MetricKind::kUnit:
      return 0.5 * p.squaredNorm();
    case MetricKind::kDiagonal:
      return 0.5 * p.dot(diag_.cwiseProduct(p));
    case MetricKind::kDense:
      return 0.5 * p.dot(dense_ * p);
  }
  return 0.0;
}

Eigen::VectorXd Metric::velocity(const Eigen::VectorXd& p) const {
  switch (kind_) {
    case MetricKind::kUnit:
      return p;
    case MetricKind::kDiagonal:
      return diag_.cwiseProduct(p);
    case MetricKind::kDense:
      return dense_ * p;
  }
  return p;
}

Eigen::VectorXd Metric::sample_momentum(Rng& rng) const {
  const Eigen::VectorXd z = rng.normal_vector(dim_);
  switch (kind_) {
    case MetricKind::kUnit:
      return z;
    case MetricKind::kDiagonal:
      return z.cwiseQuotient(diag_sqrt_);
    // p = L⁻ᵀz has covariance L⁻ᵀL⁻¹ = (LLᵀ)⁻¹ = M (Stan's dense_e_metric::sample_p).
    case MetricKind::kDense:
      return dense_cholesky_.transpose().triangularView<Eigen::Upper>().solve(z);
  }
  return z;
}

Eigen::VectorXd Metric::scale_by_inverse_mass_root(const Eigen::VectorXd& z) const {
  switch (kind_) {
    case MetricKind::kUnit:
      return z;
    case MetricKind::kDiagonal:
      return diag_sqrt_.cwiseProduct(z);
    case MetricKind::kDense:
      return dense_cholesky_.triangularView<Eigen::Lower>() * z;
  }
  return z;
}

Eigen::VectorXd Metric::inverse_mass_diagonal() const {
  switch (kind_) {
    case MetricKind::kUnit:
      return Eigen::VectorXd::Ones(dim_);
    case MetricKind::kDiagonal:
      return diag_;
    case MetricKind::kDense:
      return dense_.diagonal();
  }
  return {};
}

}  // namespace occam::mcmc

#include "evidence/exact_hessian.h"

#include "output_hessian.h"

namespace occam::evidence {

ExactHessian::ExactHessian(const Posterior& posterior, const Eigen::VectorXd& w)
    : posterior_(posterior), w_(w), linearisation_(posterior.network().linearise(w, posterior.X())) {
  OutputDerivatives d;
  posterior.likelihood().neg_log_derivatives(linearisation_->output(), posterior.Y(), &d);
  output_gradient_ = std::move(d.gradient);
  output_hessian_ = posterior.likelihood().neg_log_hessian(linearisation_->output(), posterior.Y());
}

Eigen::VectorXd ExactHessian::operator()(const Eigen::VectorXd& v) const {
  Eigen::VectorXd out;
  linearisation_->hessian_vp(
      output_gradient_, [this](const Eigen::MatrixXd& Jv) { return internal::apply_output_hessian(output_hessian_, Jv); },
      v, &out);
  return out + posterior_.prior().apply_precision(v);
}

Eigen::VectorXd ExactHessian::pull_output_acceleration(const Eigen::VectorXd& v, double h) const {
  Eigen::MatrixXd plus, minus;
  posterior_.network().forward(w_ + h * v, posterior_.X(), &plus);
  posterior_.network().forward(w_ - h * v, posterior_.X(), &minus);
  const Eigen::MatrixXd f_vv = (plus - 2.0 * linearisation_->output() + minus) / (h * h);
  Eigen::VectorXd out;
  linearisation_->vjp(internal::apply_output_hessian(output_hessian_, f_vv), &out);
  return out;
}

Eigen::VectorXd solve_exact_hessian(const ExactHessian& hessian, const Preconditioner& precondition,
                                    const Eigen::VectorXd& b, bool* indefinite,
                                    const std::optional<Eigen::VectorXd>& start) {
  if (indefinite != nullptr) *indefinite = false;
  const Eigen::VectorXd fallback = precondition(b);
  Eigen::VectorXd x = start ? *start : fallback;
  Eigen::VectorXd r = b - hessian(x);
  const double target = 1e-10 * b.norm();
  if (r.norm() <= target) return x;
  Eigen::VectorXd z = precondition(r), p = z;
  double rz = r.dot(z);
  for (Index it = 0; it < 2 * b.size() && r.norm() > target; ++it) {
    const Eigen::VectorXd Hp = hessian(p);
    const double pHp = p.dot(Hp);
    if (!(pHp > 0.0)) {
      if (indefinite != nullptr) *indefinite = true;
      return fallback;
    }
    const double step = rz / pHp;
    x += step * p;
    r -= step * Hp;
    z = precondition(r);
    const double rz_next = r.dot(z);
    p = z + (rz_next / rz) * p;
    rz = rz_next;
  }
  return x;
}

}  // namespace occam::evidence

#include "occam/mcmc/isokinetic.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "occam/status.h"
#include "occam/types.h"

namespace occam::mcmc {
namespace {

// Omelyan, Mryglod & Folk (2003): the velocity-update weight of the minimal-norm scheme.
constexpr double kMinimalNormLambda = 0.1931833275037836;

}  // namespace

IsokineticIntegrator parse_isokinetic_integrator(std::string_view name) {
  return enum_names<IsokineticIntegrator>().parse(name);
}

const char* to_string(IsokineticIntegrator integrator) { return enum_names<IsokineticIntegrator>().name(integrator); }

IsokineticDynamics::IsokineticDynamics(const LogDensity& density, IsokineticIntegrator integrator)
    : density_(density), integrator_(integrator), dim_(density.dim()), sigma_(Eigen::VectorXd::Ones(density.dim())) {
  if (dim_ < 2) {
    throw Error(ErrorKind::kInvalidArgument,
                "the microcanonical samplers need at least 2 parameters (the velocity lives "
                "on the sphere of dimension d − 1); this density has " +
                    std::to_string(dim_));
  }
}

void IsokineticDynamics::set_scale(const Eigen::VectorXd& sigma) {
  if (sigma.size() != dim_ || !sigma.allFinite() || !(sigma.minCoeff() > 0.0)) {
    throw Error(ErrorKind::kInvalidArgument, "isokinetic dynamics: the preconditioner must hold " +
                                                 std::to_string(dim_) + " positive, finite scales");
  }
  sigma_ = sigma;
}

bool IsokineticDynamics::evaluate(MicrocanonicalPoint* z) const {
  ++evaluations_;
  if (z->grad.size() != dim_) z->grad.resize(dim_);
  return density_.evaluate(z->x, &z->log_p, &z->grad) && std::isfinite(z->log_p) && z->grad.allFinite();
}

// The closed-form velocity update for a time t at fixed gradient, and the kinetic energy change
// it implies (isokinetic.h). Written with ζ = e^{−δ} ≤ 1 so that neither term overflows for a
// steep gradient (δ ≫ 1).
double IsokineticDynamics::update_velocity(MicrocanonicalPoint* z, double time) const {
  scaled_gradient_ = sigma_.cwiseProduct(z->grad);
  const double norm = scaled_gradient_.norm();
  if (!(norm > 0.0)) return 0.0;  // a flat spot: u keeps its direction
  const double d1 = static_cast<double>(dim_ - 1);
  const double delta = time * norm / d1;
  const double zeta = std::exp(-delta);
  const double ue = std::clamp(z->u.dot(scaled_gradient_) / norm, -1.0, 1.0);
  z->u = (((1.0 - zeta) * (1.0 + zeta + ue * (1.0 - zeta))) / norm) * scaled_gradient_ + (2.0 * zeta) * z->u;
  z->u /= z->u.norm();
  return d1 * (delta - std::numbers::ln2 + std::log(1.0 + ue + (1.0 - ue) * zeta * zeta));
}

bool IsokineticDynamics::update_position(MicrocanonicalPoint* z, double time) const {
  z->x.noalias() += time * sigma_.cwiseProduct(z->u);
  return evaluate(z);
}

bool IsokineticDynamics::step(MicrocanonicalPoint* z, double eps, double* energy_error) const {
  const double log_p0 = z->log_p;
  double kinetic = 0.0;
  if (integrator_ == IsokineticIntegrator::kLeapfrog) {
    kinetic += update_velocity(z, 0.5 * eps);
    if (!update_position(z, eps)) return false;
    kinetic += update_velocity(z, 0.5 * eps);
  } else {
    kinetic += update_velocity(z, kMinimalNormLambda * eps);
    if (!update_position(z, 0.5 * eps)) return false;
    kinetic += update_velocity(z, (1.0 - 2.0 * kMinimalNormLambda) * eps);
    if (!update_position(z, 0.5 * eps)) return false;
    kinetic += update_velocity(z, kMinimalNormLambda * eps);
  }
  *energy_error = kinetic - (z->log_p - log_p0);
  return std::isfinite(*energy_error);
}

void IsokineticDynamics::refresh(MicrocanonicalPoint* z, Rng& rng) const {
  z->u = rng.normal_vector(dim_);
  z->u /= z->u.norm();
}

void IsokineticDynamics::partial_refresh(MicrocanonicalPoint* z, double eps, double trajectory_length, Rng& rng) const {
  const double c1 = std::exp(-eps / trajectory_length);
  const double c2 = std::sqrt(1.0 - c1 * c1) / std::sqrt(static_cast<double>(dim_));
  z->u = c1 * z->u + c2 * rng.normal_vector(dim_);
  z->u /= z->u.norm();
}

}  // namespace occam::mcmc

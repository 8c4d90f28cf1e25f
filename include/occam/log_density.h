// log_density.h — the one interface every inference engine works on.
//
// An unnormalised log density over a flat parameter vector θ ∈ R^W, with its gradient.
// Samplers and optimisers see nothing else of the model.
//
//   double lp; Eigen::VectorXd g;
//   if (!density.evaluate(theta, &lp, &g)) { /* numerical failure: reject, don't crash */ }
#pragma once

#include <Eigen/Core>

namespace occam {

class LogDensity {
 public:
  virtual ~LogDensity() = default;
  virtual Eigen::Index dim() const = 0;
  // Writes log p(θ) (up to a constant) and, when grad is not null, its gradient.
  // Returns false on a numerical failure (non-finite value or gradient): a rejection, not a crash.
  virtual bool evaluate(const Eigen::Ref<const Eigen::VectorXd>& theta, double* log_p, Eigen::VectorXd* grad) const = 0;
};

}  // namespace occam

// likelihood.h — log p(y | f) for one example's network output f, summed over the data.
//
// A Likelihood gives value, gradient and Hessian with respect to the network output and the
// predictive distribution of its family. Y is m × T (T = 1 for every scalar target).
//
//   occam::GaussianLikelihood lik(/*beta=*/25.0);
//   Eigen::MatrixXd dF;
//   double log_p = lik.log_likelihood(F, Y, &dF);
#pragma once

#include <Eigen/Core>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "occam/network.h"
#include "occam/rng.h"

namespace occam {

class Likelihood {
 public:
  virtual ~Likelihood() = default;
  virtual std::unique_ptr<Likelihood> clone() const = 0;
  virtual std::string name() const = 0;

  // How many network outputs K one example needs (1, or the number of classes).
  virtual Index num_outputs() const { return 1; }

  // Throws Error(kInvalidInput) naming the first bad row (1-based) when Y cannot be targets of
  // this likelihood (wrong shape, non-finite values, a count that is not an integer, ...).
  virtual void validate_targets(const Eigen::MatrixXd& Y) const = 0;

  // log p(Y | F) = Σ_n log p(y_n | f_n), normalising constants included. When dF is not null it
  // receives ∂ log p / ∂F (m × K).
  virtual double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                Eigen::MatrixXd* dF) const = 0;

  // Derivatives of the negative log-likelihood −log p(y_n | f_n) with respect to f_n: the
  // gradient and the Hessian Λ_n (positive semi-definite for every log-concave family), which
  // the Gauss–Newton matrix JᵀΛJ is built from.
  virtual void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                   OutputDerivatives* d) const = 0;

  // The noise precision β, for families that have one (Gaussian); MacKay's β updates use it.
  virtual bool has_precision() const { return false; }
  virtual double precision() const;
  virtual void set_precision(double beta);

  // The predictive distribution of y given a Gaussian belief N(f_mean, f_var) about a scalar
  // latent output (the linearised Laplace predictive): its mean, variance and central interval
  // at `level`. Vectors have one entry per example.
  virtual void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level,
                          Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                          Eigen::VectorXd* upper) const = 0;

  // One draw y ~ p(y | f) for a scalar output f (the Monte Carlo predictive).
  virtual double sample(double f, Rng& rng) const = 0;

  // {"type": "gaussian", "beta": ...}; likelihood_from_json inverts it.
  virtual nlohmann::json to_json() const = 0;
};

// y_n ~ N(f_n, 1/β). E_D = ½ Σ_n (y_n − f_n)², log p = (m/2) log(β/2π) − β E_D.
class GaussianLikelihood final : public Likelihood {
 public:
  explicit GaussianLikelihood(double beta = 1.0);

  std::unique_ptr<Likelihood> clone() const override;
  std::string name() const override { return "gaussian"; }
  void validate_targets(const Eigen::MatrixXd& Y) const override;
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override;
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override;
  bool has_precision() const override { return true; }
  double precision() const override { return beta_; }
  void set_precision(double beta) override;
  void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level,
                  Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                  Eigen::VectorXd* upper) const override;
  double sample(double f, Rng& rng) const override;
  nlohmann::json to_json() const override;

  // E_D = ½ Σ (y − f)², the data misfit of MacKay's S(w) = α E_W + β E_D.
  static double data_error(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y);

 private:
  double beta_;
};

std::unique_ptr<Likelihood> likelihood_from_json(const nlohmann::json& j);

// The standard normal quantile Φ⁻¹(p), for central intervals: z = normal_quantile(0.5 + level/2).
double normal_quantile(double p);

}  // namespace occam

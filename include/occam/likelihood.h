// likelihood.h — log p(y | f) for one example's network output f, summed over the data.
//
// A Likelihood gives value, gradient and Hessian with respect to the network output and the
// predictive distribution of its family. Y is m × T (T = 1 for every scalar target; the Poisson
// likelihood with an offset reads T = 2: the count and the offset added to f). The families:
// gaussian (β), bernoulli (logit link), poisson (log link), categorical (softmax over K outputs)
// and hetero (a Gaussian whose mean and log-variance are the network's two outputs); see
// docs/likelihoods/.
//
//   occam::GaussianLikelihood lik(/*beta=*/25.0);
//   Eigen::MatrixXd dF;
//   double log_p = lik.log_likelihood(F, Y, &dF);
#pragma once

#include <Eigen/Core>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  virtual double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const = 0;

  // Derivatives of the negative log-likelihood −log p(y_n | f_n) with respect to f_n: the
  // gradient and the Hessian Λ_n (positive semi-definite for every log-concave family), which
  // the Gauss–Newton matrix JᵀΛJ is built from.
  virtual void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const = 0;

  // The directional derivative of those Gauss–Newton weights along output directions V (m × K):
  // row n is Σ_c ∂Λ_n/∂f_nc · V_nc, laid out like Λ (m × K²). The Laplace posterior precision
  // A = JᵀΛJ + P moves with w_MAP through Λ, and the exact gradient of the log-evidence in the
  // hyperparameters needs how (the third derivative of −log p in f).
  virtual Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                         const Eigen::MatrixXd& V) const = 0;
  // The exact Hessian of −log p(y_n | f_n) in f_n (m × K², laid out like Λ). It is Λ itself for
  // every family whose Gauss–Newton weight is its exact Hessian (Gaussian and the canonical links:
  // the default); hetero's Λ is the Fisher information and it overrides this.
  virtual Eigen::MatrixXd neg_log_hessian(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const;

  // The noise precision β, for families that have one (Gaussian); MacKay's β updates use it.
  virtual bool has_precision() const { return false; }
  virtual double precision() const;
  virtual void set_precision(double beta);
  // ∂ log p(Y | F) / ∂ log β, for families with a precision (Gaussian: m/2 − β E_D): the ELBO's
  // gradient in β. Throws Error(kInvalidArgument) for the others.
  virtual double log_precision_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const;
  // True for Gaussian noise of one precision β on every row (no row weights): with a model linear
  // in w the posterior is then Gaussian and the evidence closed-form (evidence/linear_gaussian.cc).
  virtual bool is_homoscedastic_gaussian() const { return false; }
  // The noise variance of each row's observation at outputs F (m × K) for a family whose noise is
  // an output of the network (hetero: exp(f₂) + floor); empty for the others.
  virtual std::optional<Eigen::VectorXd> output_noise_variance(const Eigen::MatrixXd& /*F*/) const {
    return std::nullopt;
  }

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

  // --- Multi-output families and classification (the defaults suit scalar regression). ---

  // How many target columns T the likelihood reads (Poisson with an offset: 2).
  virtual Index num_target_columns() const { return 1; }

  // The predictive of y from Gaussian beliefs about each of the K outputs, given by their means
  // and marginal variances (m × K each). The default uses column 0 with predictive() above.
  virtual void predictive_outputs(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var, double level,
                                  Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                  Eigen::VectorXd* upper) const;
  // One draw y ~ p(y | f) for an example whose K outputs are f. The default is sample(f[0]).
  virtual double sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const;

  // Classification: the number of classes C (0 for the regression families) and their labels,
  // in the order of the probability columns.
  virtual Index num_classes() const { return 0; }
  virtual std::vector<std::string> class_labels() const { return {}; }
  // p(y = c | f_n) at fixed outputs F (m × K): an m × C matrix whose rows sum to one.
  virtual Eigen::MatrixXd class_probabilities(const Eigen::MatrixXd& F) const;
  // ∫ p(y = c | f) N(f; μ, diag v) df, approximately, from the latent means and marginal
  // variances (m × K): MacKay's moderated output for Bernoulli, the extended probit for softmax.
  virtual Eigen::MatrixXd predictive_probabilities(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var) const;
  // The same integral by the Laplace bridge (Hobbhahn, Kristiadi & Hennig 2022): the Dirichlet
  // whose Laplace approximation in the softmax basis is the Gaussian belief about the logits, and
  // its mean. Bernoulli: the logits (−f/2, f/2), for which the mean is σ(μ) at any variance.
  virtual Eigen::MatrixXd laplace_bridge_probabilities(const Eigen::MatrixXd& f_mean,
                                                       const Eigen::MatrixXd& f_var) const;
  // The predictive's mean, variance and central interval of y (as predictive_outputs gives them)
  // from class probabilities P (m × C), whichever way P was computed.
  virtual void predictive_from_probabilities(const Eigen::MatrixXd& P, double level, Eigen::VectorXd* mean,
                                             Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                             Eigen::VectorXd* upper) const;
};

// y_n ~ N(f_n, 1/β). E_D = ½ Σ_n (y_n − f_n)², log p = (m/2) log(β/2π) − β E_D.
//
// With row weights the targets are two columns, y_n and a known relative precision ω_n > 0:
// y_n ~ N(f_n, 1/(βω_n)), E_D = ½ Σ_n ω_n (y_n − f_n)² and log p = (m/2) log(β/2π) + ½ Σ log ω_n
// − β E_D, so that MacKay's β = (m − γ)/2E_D and every other use of E_D carry over unchanged
// (weighted least squares). A new row's predictive takes ω = 1: the weights are data, not model.
// fit_heteroscedastic refits the mean with ω_n = 1/σ²(x_n) from its noise network.
class GaussianLikelihood final : public Likelihood {
 public:
  explicit GaussianLikelihood(double beta = 1.0, bool row_weights = false);

  std::unique_ptr<Likelihood> clone() const override;
  std::string name() const override { return "gaussian"; }
  void validate_targets(const Eigen::MatrixXd& Y) const override;
  Index num_target_columns() const override { return row_weights_ ? 2 : 1; }
  bool has_row_weights() const { return row_weights_; }
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override;
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override;
  Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 const Eigen::MatrixXd& V) const override;
  bool has_precision() const override { return true; }
  bool is_homoscedastic_gaussian() const override { return !row_weights_; }
  double precision() const override { return beta_; }
  void set_precision(double beta) override;
  double log_precision_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const override;
  void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level, Eigen::VectorXd* mean,
                  Eigen::VectorXd* var, Eigen::VectorXd* lower, Eigen::VectorXd* upper) const override;
  double sample(double f, Rng& rng) const override;
  nlohmann::json to_json() const override;

  // E_D = ½ Σ (y − f)², the data misfit of MacKay's S(w) = α E_W + β E_D; ½ Σ ω (y − f)² when Y
  // has the weight column.
  static double data_error(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y);

 private:
  double beta_;
  bool row_weights_ = false;
};

// y_n ∈ {0, 1} with p(y = 1 | f) = σ(f) (logit link). log p = Σ y f − log(1 + e^f);
// Λ_n = σ(f)(1 − σ(f)), the Γ of the GLM Hessian −XᵀΓX.
class BernoulliLikelihood final : public Likelihood {
 public:
  std::unique_ptr<Likelihood> clone() const override;
  std::string name() const override { return "bernoulli"; }
  void validate_targets(const Eigen::MatrixXd& Y) const override;
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override;
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override;
  Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 const Eigen::MatrixXd& V) const override;
  // mean = the moderated P(y = 1), var = p(1 − p), the interval the Bernoulli quantiles (0 or 1).
  void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level, Eigen::VectorXd* mean,
                  Eigen::VectorXd* var, Eigen::VectorXd* lower, Eigen::VectorXd* upper) const override;
  double sample(double f, Rng& rng) const override;
  nlohmann::json to_json() const override;
  Index num_classes() const override { return 2; }
  std::vector<std::string> class_labels() const override { return {"0", "1"}; }
  Eigen::MatrixXd class_probabilities(const Eigen::MatrixXd& F) const override;
  Eigen::MatrixXd predictive_probabilities(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var) const override;
  Eigen::MatrixXd laplace_bridge_probabilities(const Eigen::MatrixXd& f_mean,
                                               const Eigen::MatrixXd& f_var) const override;
  void predictive_from_probabilities(const Eigen::MatrixXd& P, double level, Eigen::VectorXd* mean,
                                     Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                     Eigen::VectorXd* upper) const override;
};

// y_n ∈ {0, 1, 2, ...} with rate λ_n = exp(f_n + o_n) (log link; o_n the optional offset, e.g. log
// exposure, read from the second target column). log p = Σ y(f + o) − e^{f+o} − log y!; Λ_n = λ_n.
class PoissonLikelihood final : public Likelihood {
 public:
  explicit PoissonLikelihood(bool with_offset = false) : with_offset_(with_offset) {}
  bool with_offset() const { return with_offset_; }

  std::unique_ptr<Likelihood> clone() const override;
  std::string name() const override { return "poisson"; }
  Index num_target_columns() const override { return with_offset_ ? 2 : 1; }
  void validate_targets(const Eigen::MatrixXd& Y) const override;
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override;
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override;
  Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 const Eigen::MatrixXd& V) const override;
  // f ~ N(μ, s²) makes the rate log-normal: E y = e^{μ+s²/2}, var y = E y + (e^{s²} − 1) e^{2μ+s²};
  // the interval holds the quantiles of that Poisson–log-normal mixture, from its CDF integrated
  // over f to about 1e-9 at any rate (src/model/likelihoods/poisson_mixture.h). f_mean must already
  // include the offset. Throws Error(kNumerical) naming the example when a latent mean or
  // variance is not finite, or when the count's mean, variance or a bound exceeds the largest double.
  void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level, Eigen::VectorXd* mean,
                  Eigen::VectorXd* var, Eigen::VectorXd* lower, Eigen::VectorXd* upper) const override;
  // Exact Poisson draws up to a rate of 1e12, the rounded normal N(λ, λ) above (skewness < 1e-6).
  // Throws Error(kNumerical) when e^f is not finite.
  double sample(double f, Rng& rng) const override;
  nlohmann::json to_json() const override;

 private:
  bool with_offset_;
};

// y_n ∈ {0, ..., K−1} (indices into `labels`) with p(y = k | f) = softmax(f)_k over K outputs.
// Λ_n = diag(p) − ppᵀ. The labels (integers or strings, as in the data file) are kept so that
// predictions can name their classes.
class CategoricalLikelihood final : public Likelihood {
 public:
  explicit CategoricalLikelihood(std::vector<std::string> labels);
  const std::vector<std::string>& labels() const { return labels_; }

  std::unique_ptr<Likelihood> clone() const override;
  std::string name() const override { return "categorical"; }
  Index num_outputs() const override { return static_cast<Index>(labels_.size()); }
  void validate_targets(const Eigen::MatrixXd& Y) const override;
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override;
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override;
  Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 const Eigen::MatrixXd& V) const override;
  // The scalar predictive has no meaning for unordered classes: throws (use predictive_probabilities).
  void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level, Eigen::VectorXd* mean,
                  Eigen::VectorXd* var, Eigen::VectorXd* lower, Eigen::VectorXd* upper) const override;
  // mean = the most probable class index, var = 1 − its probability, interval = [mean, mean].
  void predictive_outputs(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var, double level,
                          Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                          Eigen::VectorXd* upper) const override;
  double sample(double f, Rng& rng) const override;  // throws: needs all K outputs
  double sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const override;
  nlohmann::json to_json() const override;
  Index num_classes() const override { return num_outputs(); }
  std::vector<std::string> class_labels() const override { return labels_; }
  Eigen::MatrixXd class_probabilities(const Eigen::MatrixXd& F) const override;
  Eigen::MatrixXd predictive_probabilities(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var) const override;
  Eigen::MatrixXd laplace_bridge_probabilities(const Eigen::MatrixXd& f_mean,
                                               const Eigen::MatrixXd& f_var) const override;
  void predictive_from_probabilities(const Eigen::MatrixXd& P, double level, Eigen::VectorXd* mean,
                                     Eigen::VectorXd* var, Eigen::VectorXd* lower,
                                     Eigen::VectorXd* upper) const override;

 private:
  std::vector<std::string> labels_;
};

// y_n ~ N(f_n1, σ_n²) with σ² = exp(f_n2) + v: the network's two outputs are the mean and the
// log-variance (heteroscedastic regression), above a variance floor v ≥ 0.
// −log p = ½ log σ² + ½ (y − f1)²/σ² + ½ log 2π. Λ_n is the Fisher information
// diag(1/σ², ½ (e^{f2}/σ²)²), which is positive definite: the exact second derivative is
// indefinite away from the optimum and could not serve as a Gauss–Newton weight.
// Without a floor the likelihood is unbounded: where the mean fits a point exactly the MAP
// drives f2 → −∞, and the Fisher weight e^{−f2} (e^36 on the UCI yacht data) makes A = H + P
// indefinite in double precision. A floor v bounds the weight by 1/v.
class HeteroscedasticLikelihood final : public Likelihood {
 public:
  explicit HeteroscedasticLikelihood(double variance_floor = 0.0);
  double variance_floor() const { return variance_floor_; }
  // exp(f₂) + floor per row.
  std::optional<Eigen::VectorXd> output_noise_variance(const Eigen::MatrixXd& F) const override;
  std::unique_ptr<Likelihood> clone() const override;
  std::string name() const override { return "hetero"; }
  Index num_outputs() const override { return 2; }
  void validate_targets(const Eigen::MatrixXd& Y) const override;
  double log_likelihood(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, Eigen::MatrixXd* dF) const override;
  void neg_log_derivatives(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y, OutputDerivatives* d) const override;
  Eigen::MatrixXd gauss_newton_weight_derivative(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y,
                                                 const Eigen::MatrixXd& V) const override;
  // The observed information [[e^{−s}, (y − μ)e^{−s}], [(y − μ)e^{−s}, ½(y − μ)²e^{−s}]].
  Eigen::MatrixXd neg_log_hessian(const Eigen::MatrixXd& F, const Eigen::MatrixXd& Y) const override;
  // Scalar form: throws (the family needs both outputs; use predictive_outputs).
  void predictive(const Eigen::VectorXd& f_mean, const Eigen::VectorXd& f_var, double level, Eigen::VectorXd* mean,
                  Eigen::VectorXd* var, Eigen::VectorXd* lower, Eigen::VectorXd* upper) const override;
  // var y = var f1 + e^{μ2} + v (the noise variance at the belief's mean, as β for the Gaussian
  // family); a Gaussian interval around μ1.
  void predictive_outputs(const Eigen::MatrixXd& f_mean, const Eigen::MatrixXd& f_var, double level,
                          Eigen::VectorXd* mean, Eigen::VectorXd* var, Eigen::VectorXd* lower,
                          Eigen::VectorXd* upper) const override;
  double sample(double f, Rng& rng) const override;  // throws: needs both outputs
  double sample_outputs(const Eigen::Ref<const Eigen::RowVectorXd>& f, Rng& rng) const override;
  nlohmann::json to_json() const override;

 private:
  double variance_floor_;
};

std::unique_ptr<Likelihood> likelihood_from_json(const nlohmann::json& j);

// log(1 + e^x) without overflow, and the logistic σ(x) = 1/(1 + e^{−x}) without it either.
double log1p_exp(double x);
double logistic(double x);

// The standard normal quantile Φ⁻¹(p), for central intervals: z = normal_quantile(0.5 + level/2).
double normal_quantile(double p);

}  // namespace occam

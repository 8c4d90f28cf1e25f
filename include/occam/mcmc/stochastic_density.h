// stochastic_density.h — a log density whose likelihood is a sum over data rows, for samplers that
// see the data a minibatch at a time (SGLD, SGHMC).
//
// log p(θ | D) = log p(θ) + Σ_{n=1}^{m} log p(y_n | θ) + const. A minibatch B of rows gives the
// unbiased estimate (Welling & Teh 2011, eq. 3)
//   log p̂(θ) = log p(θ) + (m/|B|) Σ_{n∈B} log p(y_n | θ),
// and the same for its gradient. The density supplies the two terms; minibatch_estimate() scales
// and adds them, so every stochastic-gradient sampler uses one estimator.
//
//   std::vector<Index> rows = {3, 17, 42};
//   double lp; Eigen::VectorXd g;
//   if (!occam::mcmc::minibatch_estimate(density, theta, rows, &lp, &g)) { /* not finite */ }
#pragma once

#include <Eigen/Core>
#include <vector>

#include "occam/posterior.h"

namespace occam::mcmc {

// Rows per chunk of a minibatch whose log-likelihood is a sum over processes or threads: the
// posterior adds the chunks' terms, cut in batch order, along a fixed-order tree over the chunk
// indices (Posterior::batch_log_likelihood), so that its value has the same bits on any number of
// processes and threads.
inline constexpr Eigen::Index kMinibatchChunkRows = kBatchChunkRows;  // Posterior::batch_log_likelihood's

class StochasticLogDensity {
 public:
  virtual ~StochasticLogDensity() = default;
  virtual Eigen::Index dim() const = 0;
  virtual Eigen::Index num_data() const = 0;  // m, the rows of the likelihood's sum
  // log p(θ) and its gradient. Returns false when either is not finite.
  virtual bool log_prior(const Eigen::Ref<const Eigen::VectorXd>& theta, double* value,
                         Eigen::VectorXd* grad) const = 0;
  // Σ_{n∈rows} log p(y_n | θ) and its gradient (rows are 0-based, distinct). False when not finite.
  virtual bool log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& theta, const std::vector<Eigen::Index>& rows,
                              double* value, Eigen::VectorXd* grad) const = 0;
};

// The unbiased minibatch estimate of log p(θ | D) and of its gradient (above). False when the
// value or gradient is not finite (a failed evaluation, for the sampler to report).
bool minibatch_estimate(const StochasticLogDensity& density, const Eigen::Ref<const Eigen::VectorXd>& theta,
                        const std::vector<Eigen::Index>& rows, double* log_p, Eigen::VectorXd* grad);

}  // namespace occam::mcmc

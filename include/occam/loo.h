// loo.h — leave-one-out cross-validation of a model fitted by MCMC, from its posterior draws
// (PSIS-LOO, mcmc/loo.h), and the pointwise log-likelihood it is computed from.
//
//   occam::FittedModel model = occam::fit(spec, data, occam::SamplingMethod{});
//   occam::mcmc::LooResult loo = occam::loo(model, data);
//   loo.elpd_loo, loo.se_elpd_loo, loo.pareto_k;
#pragma once

#include <Eigen/Core>

#include "occam/data.h"
#include "occam/fitted_model.h"
#include "occam/mcmc/loo.h"

namespace occam {

// log p(y_n | w_s, β_s) for every posterior draw s (rows, chain after chain) and every example n
// of `data` (columns), in the target's original units: where the targets were standardised the
// density carries the Jacobian 1/y_scale. `data` is laid out as the training data were
// (make_training_data: the model's features, the target, the offset when the model has one).
// Throws Error(kInvalidArgument) when the model holds no draws or the data do not fit the model.
Eigen::MatrixXd pointwise_log_likelihood(const FittedModel& model, const Dataset& data);

// PSIS-LOO of the model's draws on `data` (normally the data it was fitted to), the chains taken
// from PosteriorDraws::draws_per_chain (which must be equal for the relative efficiencies).
mcmc::LooResult loo(const FittedModel& model, const Dataset& data, const mcmc::LooOptions& options = {});
// The same with the data read from a table (read_csv) by the model's column names, in any order:
// its features, its target (class labels by the model's own labels) and its offset column.
mcmc::LooResult loo(const FittedModel& model, const Table& table, const mcmc::LooOptions& options = {});

}  // namespace occam

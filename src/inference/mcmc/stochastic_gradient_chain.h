// stochastic_gradient_chain.h — one chain of SGLD or SGHMC, run by occam::mcmc::sample().
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "occam/mcmc/sampler.h"

namespace occam::mcmc::internal {

// As sample()'s chains do: rows to the sink and to *kept, checkpoints, resume from
// options.resume[chain], a stop request seen between iterations.
ChainSummary run_stochastic_gradient_chain(int chain, ChainModel& model, const SamplerOptions& options, DrawSink* sink,
                                           const std::vector<std::string>& columns, Eigen::MatrixXd* kept);

}  // namespace occam::mcmc::internal

// loo.cc — the pointwise log-likelihood of posterior draws and PSIS-LOO of a fitted model (loo.h).
#include "occam/loo.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "occam/model_spec.h"
#include "occam/status.h"

namespace occam {

Eigen::MatrixXd pointwise_log_likelihood(const FittedModel& model, const Dataset& data) {
  const auto* draws = std::get_if<PosteriorDraws>(&model.posterior);
  if (draws == nullptr)
    throw Error(ErrorKind::kInvalidArgument,
                std::string("the pointwise log-likelihood needs posterior draws (posterior ") +
                    "kind mcmc); this model holds a " + posterior_kind(model.posterior) + " posterior");
  const Network& network = *model.network;
  if (data.X.cols() != network.num_inputs())
    throw Error(ErrorKind::kInvalidArgument, "the data have " + std::to_string(data.X.cols()) +
                                                 " input columns but the model takes " +
                                                 std::to_string(network.num_inputs()));
  if (data.Y.rows() != data.X.rows())
    throw Error(ErrorKind::kInvalidArgument, "the data have " + std::to_string(data.X.rows()) + " rows of inputs but " +
                                                 std::to_string(data.Y.rows()) + " targets");
  const Standardizer& s = model.standardizer;
  Eigen::MatrixXd Y = s.standardizes_targets() ? s.transform_targets(data.Y) : data.Y;
  std::unique_ptr<Likelihood> likelihood = model.likelihood->clone();
  if (likelihood->num_target_columns() == 2) {
    if (data.offset.size() != data.X.rows())
      throw Error(ErrorKind::kInvalidArgument,
                  "the model has an offset column but the data give no offset for each row");
    Eigen::MatrixXd with_offset(Y.rows(), 2);
    with_offset << Y, data.offset;
    Y = std::move(with_offset);
  }
  likelihood->validate_targets(Y);
  const Eigen::MatrixXd Z = s.transform_inputs(data.X);
  // In the target's original units: y = y_mean + y_scale·t, so p(y) = p(t) / y_scale.
  const double log_jacobian = s.standardizes_targets() ? std::log(s.y_scale) : 0.0;
  const Index S = draws->weights.rows(), m = Z.rows();
  Eigen::MatrixXd log_lik(S, m);
  Eigen::MatrixXd F;
  for (Index d = 0; d < S; ++d) {
    network.forward(draws->weights.row(d).transpose(), Z, &F);
    if (draws->betas.size() != 0) likelihood->set_precision(draws->betas[d]);
    for (Index n = 0; n < m; ++n)
      log_lik(d, n) = likelihood->log_likelihood(F.row(n), Y.row(n), nullptr) - log_jacobian;
  }
  return log_lik;
}

mcmc::LooResult loo(const FittedModel& model, const Dataset& data, const mcmc::LooOptions& options) {
  const Eigen::MatrixXd log_lik = pointwise_log_likelihood(model, data);
  const std::vector<Index>& per_chain = std::get<PosteriorDraws>(model.posterior).draws_per_chain;
  Index chains = 1;
  if (!per_chain.empty()) {
    for (Index c : per_chain)
      if (c != per_chain.front())
        throw Error(ErrorKind::kInvalidArgument,
                    "PSIS-LOO's relative efficiencies need chains of equal length; these have " +
                        std::to_string(per_chain.front()) + " and " + std::to_string(c) + " draws");
    chains = static_cast<Index>(per_chain.size());
  }
  return mcmc::psis_loo(log_lik, chains, options);
}

mcmc::LooResult loo(const FittedModel& model, const Table& table, const mcmc::LooOptions& options) {
  Dataset data = make_training_data(table, model.target_name, model.spec);
  data.X = select_columns(table, model.feature_names);
  data.feature_names = model.feature_names;
  const std::vector<std::string> labels = model.likelihood->class_labels();
  // Only a categorical model's data have labels of their own (make_training_data numbers them in
  // the table's order); a Bernoulli target is 0 or 1 already, which validate_targets checked.
  if (!labels.empty() && !data.class_labels.empty() && data.class_labels != labels) {
    // The table's classes numbered by the model's labels, which the network's outputs follow.
    for (Index n = 0; n < data.Y.rows(); ++n) {
      const std::string& label = data.class_labels.at(static_cast<std::size_t>(data.Y(n, 0)));
      const auto it = std::find(labels.begin(), labels.end(), label);
      if (it == labels.end())
        throw Error(ErrorKind::kInvalidInput, (table.path.empty() ? std::string("the data") : table.path) + ": line " +
                                                  std::to_string(n + 2) + ": class '" + label + "' of column '" +
                                                  model.target_name + "' is not one of the model's classes");
      data.Y(n, 0) = static_cast<double>(it - labels.begin());
    }
  }
  return loo(model, data, options);
}

}  // namespace occam

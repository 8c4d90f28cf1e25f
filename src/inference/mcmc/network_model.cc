#include "occam/mcmc/network_model.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "occam/laplace.h"
#include "occam/map.h"
#include "occam/status.h"
#include "occam/types.h"
#include "inference/mcmc/collective.h"
#include "model/log_likelihood_loss.h"
#include "core/parallel/fixed_order_sum.h"
#include "core/row_sums.h"

namespace occam::mcmc {

InitKind parse_init_kind(std::string_view name) { return enum_names<InitKind>().parse(name); }

const char* to_string(InitKind kind) { return enum_names<InitKind>().name(kind); }

Posterior copy_posterior(const Posterior& p) {
  return Posterior(p.network().clone(), p.likelihood().clone(), p.prior(), p.X(), p.Y(), p.shard());
}

void check_network_model(const Posterior& posterior, const NetworkModelOptions& options) {
  if (options.gibbs) {
    options.hyper.validate();
    check_gibbs_supported(posterior);
  }
  if (options.monitor_inputs.size() > 0 && options.monitor_inputs.cols() != posterior.network().num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "monitored inputs have the wrong number of columns");
  }
  if (!posterior.distributed()) return;
  if (options.init == InitKind::kLaplace) {
    posterior.require_one_process(
        "NetworkModelOptions.init laplace (a draw from the Laplace approximation, which "
        "needs the dense curvature; use init map or prior)");
  }
  if (options.init == InitKind::kMap && options.map_optimizer != Optimizer::kAuto &&
      options.map_optimizer != Optimizer::kLbfgs) {
    posterior.require_one_process(std::string("NetworkModelOptions.map_optimizer ") + to_string(options.map_optimizer) +
                                  " (use lbfgs)");
  }
}

NetworkChainModel::NetworkChainModel(const Posterior& posterior, NetworkModelOptions options)
    : posterior_(copy_posterior(posterior)), options_(std::move(options)) {
  check_network_model(posterior_, options_);
  update_scale();
}

const Communicator* NetworkChainModel::communicator() const {
  return posterior_.distributed() ? posterior_.shard().communicator : nullptr;
}

const LogDensity& NetworkChainModel::density() const {
  if (options_.non_centered) return non_centered_;
  return posterior_;
}

const StochasticLogDensity* NetworkChainModel::stochastic_density() const {
  return options_.non_centered ? nullptr : &minibatch_;
}

bool NetworkChainModel::MinibatchDensity::log_prior(const Eigen::Ref<const Eigen::VectorXd>& w, double* value,
                                                    Eigen::VectorXd* grad) const {
  *value = model_.posterior_.prior().log_density(w, grad);
  return std::isfinite(*value) && (grad == nullptr || grad->allFinite());
}

bool NetworkChainModel::MinibatchDensity::log_likelihood(const Eigen::Ref<const Eigen::VectorXd>& w,
                                                         const std::vector<Index>& rows, double* value,
                                                         Eigen::VectorXd* grad) const {
  return model_.posterior_.batch_log_likelihood(w, rows, value, grad);
}

void NetworkChainModel::update_scale() {
  scale_ = posterior_.prior().precision_diagonal().cwiseSqrt().cwiseInverse();
  log_jacobian_ = scale_.array().log().sum();
}

bool NetworkChainModel::NonCenteredDensity::evaluate(const Eigen::Ref<const Eigen::VectorXd>& u, double* log_p,
                                                     Eigen::VectorXd* grad) const {
  const Eigen::VectorXd w = model_.scale_.cwiseProduct(u);
  if (!model_.posterior_.evaluate(w, log_p, grad)) return false;
  *log_p += model_.log_jacobian_;
  if (grad) *grad = grad->cwiseProduct(model_.scale_);  // ∂/∂u = s ∘ ∂/∂w
  return true;
}

Eigen::VectorXd NetworkChainModel::parameter_values(const Eigen::VectorXd& theta) const {
  return options_.non_centered ? Eigen::VectorXd(scale_.cwiseProduct(theta)) : theta;
}

Eigen::VectorXd NetworkChainModel::initial_point(Rng& rng) {
  std::optional<Rng> start;
  if (options_.start) start.emplace(options_.start->seed, options_.start->stream);
  const Eigen::VectorXd w = initial_weights(start ? *start : rng);
  return options_.non_centered ? Eigen::VectorXd(w.cwiseQuotient(scale_)) : w;
}

Eigen::VectorXd NetworkChainModel::initial_weights(Rng& rng) {
  if (options_.init == InitKind::kPrior) {
    return rng.normal_vector(posterior_.dim()).cwiseQuotient(posterior_.prior().precision_diagonal().cwiseSqrt());
  }
  Eigen::VectorXd w = posterior_.network().initial_params(rng);
  MapOptions map;
  map.optimizer = options_.map_optimizer;
  map.max_iterations = options_.map_max_iterations;
  map.callback = options_.map_callback;
  if (const Communicator* comm = communicator(); comm != nullptr) {
    // A stop asked of one process stops every process's fit at the same iteration.
    map.callback = [this, comm](const MapIteration& it) {
      const bool stop = options_.map_callback && options_.map_callback(it) == CallbackReturn::kAbort;
      return internal::any_process(comm, stop) ? CallbackReturn::kAbort : CallbackReturn::kContinue;
    };
  }
  find_map(posterior_, map, &w);  // the best point found, whatever the termination
  if (options_.init == InitKind::kLaplace) {
    try {
      return laplace(posterior_, w, HessianKind::kGgn).sample(rng);
    } catch (const Error&) {
      return w;  // A not positive definite: start at the MAP itself
    }
  }
  return w;
}

bool NetworkChainModel::gibbs_step(Eigen::VectorXd* theta, Rng& rng) {
  if (!options_.gibbs) return false;
  const Eigen::VectorXd w = parameter_values(*theta);
  gibbs_hyperparameters(&posterior_, w, options_.hyper, rng);
  if (options_.non_centered) {
    update_scale();
    *theta = w.cwiseQuotient(scale_);  // the same weights in the new coordinates
  }
  return true;
}

Eigen::VectorXd NetworkChainModel::state() const {
  const Eigen::VectorXd prior = posterior_.prior().hyperparameters();
  const bool beta = posterior_.likelihood().has_precision();
  Eigen::VectorXd s(prior.size() + (beta ? 1 : 0));
  s.head(prior.size()) = prior;
  if (beta) s[prior.size()] = posterior_.likelihood().precision();
  return s;
}

void NetworkChainModel::restore_state(const Eigen::VectorXd& state) {
  const Index n = posterior_.prior().num_hyperparameters();
  const bool beta = posterior_.likelihood().has_precision();
  if (state.size() != n + (beta ? 1 : 0)) {
    throw Error(ErrorKind::kInvalidArgument, "network chain: the saved state holds " + std::to_string(state.size()) +
                                                 " hyperparameters, the model has " +
                                                 std::to_string(n + (beta ? 1 : 0)));
  }
  posterior_.prior().set_hyperparameters(state.head(n));
  if (beta) posterior_.likelihood().set_precision(state[n]);
  update_scale();
}

std::vector<std::string> NetworkChainModel::parameter_names() const {
  std::vector<std::string> names;
  for (Index i = 0; i < posterior_.dim(); ++i) names.push_back("w." + std::to_string(i + 1));
  return names;
}

Index NetworkChainModel::monitored_outputs(const Network& network, const Likelihood& likelihood) {
  return likelihood.num_classes() > 1 ? network.num_outputs() : 1;
}

DrawLayout NetworkChainModel::layout() const {
  DrawLayout l;
  l.weights = posterior_.dim();
  if (options_.gibbs) {
    l.alphas = posterior_.prior().num_groups();
    l.smoothing = posterior_.prior().smoothing().has_value();
    l.beta = options_.hyper.sample_beta && posterior_.likelihood().has_precision();
  }
  l.monitored = options_.monitor_inputs.rows();
  l.outputs_per_input = monitored_outputs(posterior_.network(), posterior_.likelihood());
  l.log_lik = options_.log_lik ? posterior_.num_data() : 0;
  return l;
}

Index DrawLayout::num_columns() const {
  return kNumSamplerColumns + weights + alphas + (smoothing ? 1 : 0) + (beta ? 1 : 0) + monitored * outputs_per_input +
         log_lik;
}

std::vector<std::string> DrawLayout::extra_names() const {
  std::vector<std::string> names;
  for (Index g = 0; g < alphas; ++g) names.push_back("alpha." + std::to_string(g + 1));
  if (smoothing) names.push_back("smoothing");
  if (beta) names.push_back("beta");
  for (Index k = 0; k < monitored; ++k) {
    if (outputs_per_input == 1) {
      names.push_back("f." + std::to_string(k + 1));
    } else {
      for (Index j = 0; j < outputs_per_input; ++j)
        names.push_back("f." + std::to_string(k + 1) + "." + std::to_string(j + 1));
    }
  }
  for (Index n = 0; n < log_lik; ++n) names.push_back("log_lik." + std::to_string(n + 1));
  return names;
}

std::vector<std::string> NetworkChainModel::extra_names() const { return layout().extra_names(); }

Eigen::VectorXd NetworkChainModel::extra_values(const Eigen::VectorXd& theta) const {
  const DrawLayout l = layout();
  Eigen::VectorXd v(l.num_columns() - kNumSamplerColumns - l.weights);
  Index k = 0;
  if (options_.gibbs) {
    for (int g = 0; g < posterior_.prior().num_groups(); ++g) v[k++] = posterior_.prior().alpha()[g];
    if (posterior_.prior().smoothing()) v[k++] = posterior_.prior().smoothing()->lambda;
    if (options_.hyper.sample_beta && posterior_.likelihood().has_precision())
      v[k++] = posterior_.likelihood().precision();
  }
  if (options_.monitor_inputs.rows() > 0) {
    Eigen::MatrixXd F;
    posterior_.network().forward(parameter_values(theta), options_.monitor_inputs, &F);
    const Index outputs = l.outputs_per_input;
    if (outputs == 1) {
      v.segment(k, F.rows()) = (options_.output_shift + options_.output_scale * F.col(0).array()).matrix();
      k += F.rows();
    } else {
      for (Index r = 0; r < F.rows(); ++r) {
        for (Index j = 0; j < outputs; ++j) v[k++] = F(r, j);
      }
    }
  }
  if (options_.log_lik) {
    // Every process's rows, in row order (a collective when the rows are spread).
    const Eigen::VectorXd w = parameter_values(theta);
    const double log_scale = std::log(options_.output_scale);
    const Eigen::VectorXd log_lik = occam::internal::gather_rows(
        posterior_, [&](const Eigen::MatrixXd& X, const Eigen::MatrixXd& Y, Eigen::VectorXd* out) {
          Eigen::MatrixXd F;
          posterior_.network().forward(w, X, &F);
          out->resize(Y.rows());
          for (Index n = 0; n < Y.rows(); ++n)
            (*out)[n] = posterior_.likelihood().log_likelihood(F.row(n), Y.row(n), nullptr) - log_scale;
        });
    v.segment(k, log_lik.size()) = log_lik;
    k += log_lik.size();
  }
  return v;
}

}  // namespace occam::mcmc

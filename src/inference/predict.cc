#include "occam/predict.h"

#include "inference/predict_belief.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "occam/status.h"
#include "occam/types.h"

namespace occam {
namespace {

void require_single_output(const Network& network) {
  if (network.num_outputs() != 1) {
    throw Error(ErrorKind::kInvalidArgument, "predict: only single-output networks are supported here, this one has " +
                                                 std::to_string(network.num_outputs()) + " outputs");
  }
}

// The empirical p-quantile of sorted values (linear interpolation between order statistics,
// Hyndman & Fan 1996, type 7).
double quantile_sorted(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

void add_offset(const Eigen::VectorXd* offset, Eigen::MatrixXd* F) {
  if (offset != nullptr) F->col(0) += *offset;
}

// The linearised predictive (kLinearized), with the class probabilities of a classifier by the
// probit approximation, or by the Laplace bridge (kLaplaceBridge); or the plug-in predictive at
// the posterior mean (kPlugIn: the same with no spread).
Prediction predict_linearized(const Network& network, const Likelihood& likelihood, const internal::WeightBelief& q,
                              const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  const bool bridge = options.method == PredictiveMethod::kLaplaceBridge;
  if (bridge && likelihood.num_classes() == 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "predict: the Laplace bridge (predictive 'bridge') gives class probabilities; "
                "the " +
                    likelihood.name() + " likelihood is not a classifier");
  }
  // f(x; w) ≈ f(x; w̄) + gᵀ(w − w̄): var f_k = g_kᵀVg_k for each output k (MacKay 1992a, eq. 3.13,
  // with V = A⁻¹ for the Laplace posterior); the likelihood's predictive uses these variances.
  Eigen::MatrixXd f_mean, f_var;
  const bool softmax = likelihood.num_classes() > 0 && likelihood.num_outputs() > 1;
  internal::linearized_outputs(network, q, X, softmax, &f_mean, &f_var, options.batch_rows);
  add_offset(offset, &f_mean);
  if (options.method == PredictiveMethod::kPlugIn) f_var.setZero();
  Prediction p;
  Eigen::VectorXd var;
  if (bridge) {
    p.probabilities = likelihood.laplace_bridge_probabilities(f_mean, f_var);
    likelihood.predictive_from_probabilities(p.probabilities, options.level, &p.mean, &var, &p.lower, &p.upper);
  } else {
    likelihood.predictive_outputs(f_mean, f_var, options.level, &p.mean, &var, &p.lower, &p.upper);
    if (likelihood.num_classes() > 0) p.probabilities = likelihood.predictive_probabilities(f_mean, f_var);
  }
  p.std = var.cwiseSqrt();
  if (likelihood.num_classes() > 0) p.labels = likelihood.class_labels();
  return p;
}

// Mean, standard deviation and central interval of each row's predictive draws (rows × S).
void summarise_draws(const Eigen::MatrixXd& draws, const PredictOptions& options, Prediction* p) {
  const Index n = draws.rows();
  const Index S = draws.cols();
  p->mean = draws.rowwise().mean();
  p->std.resize(n);
  p->lower.resize(n);
  p->upper.resize(n);
  std::vector<double> row(static_cast<std::size_t>(S));
  for (Index i = 0; i < n; ++i) {
    // The spread scaled by its largest deviation first: draws near the top of the double range
    // (huge counts) have a finite standard deviation whose squares would overflow.
    const Eigen::RowVectorXd deviation = draws.row(i).array() - p->mean[i];
    const double largest = deviation.cwiseAbs().maxCoeff();
    p->std[i] =
        largest > 0.0
            ? largest * std::sqrt((deviation / largest).squaredNorm() / static_cast<double>(std::max<Index>(S - 1, 1)))
            : 0.0;
    if (!std::isfinite(p->mean[i]) || !std::isfinite(p->std[i])) {
      throw Error(ErrorKind::kNumerical, "Monte Carlo predictive: the predictive draws of example " +
                                             std::to_string(i + 1) + " are too large to represent (mean " +
                                             std::to_string(p->mean[i]) +
                                             "); the model predicts values beyond the range of a double");
    }
    for (Index s = 0; s < S; ++s) row[static_cast<std::size_t>(s)] = draws(i, s);
    std::sort(row.begin(), row.end());
    p->lower[i] = quantile_sorted(row, 0.5 - 0.5 * options.level);
    p->upper[i] = quantile_sorted(row, 0.5 + 0.5 * options.level);
  }
  if (options.keep_draws) p->draws = draws.transpose();
}

Prediction predict_monte_carlo(const Network& network, const Likelihood& likelihood, const internal::WeightBelief& q,
                               const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  // ∫ p(y|x, w) q(w) dw (q = N(w_MAP, A⁻¹) for Laplace) by simple Monte Carlo: w_s ~ q, y_s ~ p(y | f(x; w_s)); class
  // probabilities are the average of p(y = c | f(x; w_s)) over the draws.
  const Index n = X.rows();
  const int S = options.samples;
  Rng rng(options.seed, /*stream=*/0x70726564);
  Eigen::MatrixXd draws(n, S);
  Eigen::MatrixXd F;
  Prediction p;
  const bool classifier = likelihood.num_classes() > 0;
  if (classifier) p.probabilities = Eigen::MatrixXd::Zero(n, likelihood.num_classes());
  for (int s = 0; s < S; ++s) {
    network.forward(q.sample(rng), X, &F);
    add_offset(offset, &F);
    for (Index i = 0; i < n; ++i) draws(i, s) = likelihood.sample_outputs(F.row(i), rng);
    if (classifier) p.probabilities += likelihood.class_probabilities(F);
  }
  if (classifier) {
    p.probabilities /= static_cast<double>(S);
    p.labels = likelihood.class_labels();
  }
  summarise_draws(draws, options, &p);
  return p;
}

Prediction predict_linearized_monte_carlo(const Network& network, const Likelihood& likelihood,
                                          const internal::WeightBelief& q, const Eigen::MatrixXd& X,
                                          const PredictOptions& options, const Eigen::VectorXd* offset) {
  // The linearised model f(x; w̄) + J(x)(w − w̄) with w ~ q, sampled: the predictive whose spread
  // is the linearised band (Immer, Korzepa & Bauer 2021, the "GLM predictive"), as draws that are
  // joint across the rows, and for a classifier its class probabilities without the probit's
  // approximation of the integral. The weight steps come from one stream, as in the Monte Carlo
  // predictive; each row's y draws from a stream of its own, so that the rows' batching
  // (options.batch_rows) does not change a number.
  const Index n = X.rows(), K = network.num_outputs();
  const int S = options.samples;
  Rng rng(options.seed, /*stream=*/0x70726564);
  Eigen::MatrixXd steps(q.dim(), S);
  for (int s = 0; s < S; ++s) steps.col(s) = q.sample(rng) - *q.mean;
  Eigen::MatrixXd draws(n, S);
  Prediction p;
  const bool classifier = likelihood.num_classes() > 0;
  if (classifier) p.probabilities = Eigen::MatrixXd::Zero(n, likelihood.num_classes());
  Eigen::MatrixXd F, J, moved, Fs;
  std::vector<Rng> row_streams;
  for (Index start = 0; start < n; start += options.batch_rows) {
    const Index rows = std::min(options.batch_rows, n - start);
    const auto Xb = X.middleRows(start, rows);
    network.forward(*q.mean, Xb, &F);
    network.jacobian(*q.mean, Xb, &J);  // (rows·K) × W, output-major
    if (offset != nullptr) F.col(0) += offset->segment(start, rows);
    // J·steps, (rows·K) × S, a row at a time: a matrix product's blocking, and so its rounding,
    // follows its shape, and a row's draws must not depend on which rows share its batch.
    moved.resize(J.rows(), S);
    for (Index r = 0; r < J.rows(); ++r) moved.row(r).noalias() = J.row(r) * steps;
    row_streams.clear();
    for (Index i = 0; i < rows; ++i)
      row_streams.emplace_back(options.seed, 0x6c696e00ULL + static_cast<std::uint64_t>(start + i));
    Fs.resize(rows, K);
    for (int s = 0; s < S; ++s) {
      for (Index k = 0; k < K; ++k) Fs.col(k) = F.col(k) + moved.block(k * rows, s, rows, 1);
      for (Index i = 0; i < rows; ++i) {
        draws(start + i, s) = likelihood.sample_outputs(Fs.row(i), row_streams[static_cast<std::size_t>(i)]);
      }
      if (classifier) p.probabilities.middleRows(start, rows) += likelihood.class_probabilities(Fs);
    }
  }
  if (classifier) {
    p.probabilities /= static_cast<double>(S);
    p.labels = likelihood.class_labels();
  }
  summarise_draws(draws, options, &p);
  return p;
}

internal::WeightBelief laplace_belief(const LaplaceApproximation& q) {
  internal::WeightBelief belief;
  belief.mean = &q.mean;
  // A⁻¹ = SSᵀ (dense: S = L⁻ᵀ, a triangular solve), so gᵀA⁻¹g = ‖Sᵀg‖², never an inverse.
  belief.factor_transpose = [&q](const Eigen::MatrixXd& G) { return q.covariance_factor_transpose(G); };
  belief.sample = [&q](Rng& rng) { return q.sample(rng); };
  return belief;
}

}  // namespace

void linearized_outputs(const Network& network, const LaplaceApproximation& q, const Eigen::MatrixXd& X,
                        bool centre_outputs, Eigen::MatrixXd* mean, Eigen::MatrixXd* var, Index batch_rows) {
  internal::linearized_outputs(network, laplace_belief(q), X, centre_outputs, mean, var, batch_rows);
}

namespace internal {

void linearized_outputs(const Network& network, const WeightBelief& q, const Eigen::MatrixXd& X, bool centre_outputs,
                        Eigen::MatrixXd* mean, Eigen::MatrixXd* var, Index batch_rows) {
  const Index n = X.rows();
  const Index K = network.num_outputs();
  mean->resize(n, K);
  var->resize(n, K);
  Eigen::MatrixXd F, J, Z;
  std::vector<Eigen::MatrixXd> Zk(static_cast<std::size_t>(K));
  for (Index start = 0; start < n; start += batch_rows) {
    const Index rows = std::min(batch_rows, n - start);
    const auto Xb = X.middleRows(start, rows);
    network.forward(*q.mean, Xb, &F);
    network.jacobian(*q.mean, Xb, &J);
    // Var f_k = ‖Sᵀg_k‖² for V = SSᵀ: one factor product per output.
    Eigen::MatrixXd Zsum;
    for (Index k = 0; k < K; ++k) {
      Zk[static_cast<std::size_t>(k)] = q.factor_transpose(J.middleRows(k * rows, rows).transpose());
      if (k == 0) {
        Zsum = Zk[0];
      } else {
        Zsum += Zk[static_cast<std::size_t>(k)];
      }
    }
    if (centre_outputs && K > 1) {
      F = F.colwise() - F.rowwise().mean();
      Zsum /= static_cast<double>(K);
    }
    mean->middleRows(start, rows) = F;
    for (Index k = 0; k < K; ++k) {
      Z = Zk[static_cast<std::size_t>(k)];
      if (centre_outputs && K > 1) Z -= Zsum;
      var->block(start, k, rows, 1) = Z.colwise().squaredNorm().transpose();
    }
  }
}

}  // namespace internal

PredictiveMethod parse_predictive_method(std::string_view name) { return enum_names<PredictiveMethod>().parse(name); }

const char* to_string(PredictiveMethod method) { return enum_names<PredictiveMethod>().name(method); }

void PredictOptions::validate() const {
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("PredictOptions", field, value, rule);
  };
  if (!(level > 0.0 && level < 1.0)) fail("level", level, "must lie strictly between 0 and 1");
  if (samples < 2) fail("samples", samples, "must be at least 2");
  if (batch_rows < 1) fail("batch_rows", static_cast<double>(batch_rows), "must be at least 1");
  if (max_draws < 0) fail("max_draws", static_cast<double>(max_draws), "must be 0 (all) or positive");
}

namespace internal {

Prediction predict_from_belief(const Network& network, const Likelihood& likelihood, const WeightBelief& q,
                               const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  options.validate();
  if (network.num_outputs() != likelihood.num_outputs()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the network has " + std::to_string(network.num_outputs()) +
                                                 " outputs but the " + likelihood.name() + " likelihood needs " +
                                                 std::to_string(likelihood.num_outputs()));
  }
  if (offset != nullptr && offset->size() != X.rows()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the offset has " + std::to_string(offset->size()) +
                                                 " entries for " + std::to_string(X.rows()) + " rows");
  }
  if (X.cols() != network.num_inputs()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the network takes " + std::to_string(network.num_inputs()) +
                                                 " inputs but the data have " + std::to_string(X.cols()));
  }
  if (q.dim() != network.num_params()) {
    throw Error(ErrorKind::kInvalidArgument, "predict: the posterior has " + std::to_string(q.dim()) +
                                                 " parameters but the network " + std::to_string(network.num_params()));
  }
  switch (options.method) {
    case PredictiveMethod::kLinearized:
    case PredictiveMethod::kLaplaceBridge:
    case PredictiveMethod::kPlugIn:
      return predict_linearized(network, likelihood, q, X, options, offset);
    case PredictiveMethod::kLinearizedMonteCarlo:
      return predict_linearized_monte_carlo(network, likelihood, q, X, options, offset);
    case PredictiveMethod::kAuto:
    case PredictiveMethod::kMonteCarlo:
      break;
  }
  return predict_monte_carlo(network, likelihood, q, X, options, offset);
}

}  // namespace internal

Prediction predict(const Network& network, const Likelihood& likelihood, const LaplaceApproximation& q,
                   const Eigen::MatrixXd& X, const PredictOptions& options, const Eigen::VectorXd* offset) {
  PredictOptions chosen = options;
  if (chosen.method == PredictiveMethod::kAuto) {
    // A classifier's Laplace Gaussian is far too wide where the classes (nearly) separate, and the
    // bridge is the best calibrated of its predictives against NUTS on the same posterior
    // (docs/python.md, "Calibrated probabilities"); regression keeps the linearised predictive.
    chosen.method = likelihood.num_classes() > 0 ? PredictiveMethod::kLaplaceBridge : PredictiveMethod::kLinearized;
  }
  return internal::predict_from_belief(network, likelihood, laplace_belief(q), X, chosen, offset);
}

Eigen::MatrixXd posterior_function_draws(const Network& network, const LaplaceApproximation& q,
                                         const Eigen::MatrixXd& X, int count, Rng& rng) {
  require_single_output(network);
  Eigen::MatrixXd out(X.rows(), count), F;
  for (int s = 0; s < count; ++s) {
    network.forward(q.sample(rng), X, &F);
    out.col(s) = F.col(0);
  }
  return out;
}

Eigen::MatrixXd linearized_function_draws(const Network& network, const LaplaceApproximation& q,
                                          const Eigen::MatrixXd& X, int count, Rng& rng) {
  require_single_output(network);
  Eigen::MatrixXd F, J, steps(q.dim(), count);
  for (int s = 0; s < count; ++s) steps.col(s) = q.sample(rng) - q.mean;
  network.forward(q.mean, X, &F);
  network.jacobian(q.mean, X, &J);
  return (J * steps).colwise() + F.col(0);
}

Eigen::MatrixXd prior_function_draws(const Network& network, const Prior& prior, const Eigen::MatrixXd& X, int count,
                                     Rng& rng) {
  require_single_output(network);
  Eigen::MatrixXd out(X.rows(), count), F;
  for (int s = 0; s < count; ++s) {
    network.forward(prior.sample(rng), X, &F);
    out.col(s) = F.col(0);
  }
  return out;
}

}  // namespace occam

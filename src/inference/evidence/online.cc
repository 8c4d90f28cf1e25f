// online.cc — hyperparameters learned online from the structured Laplace evidence during one
// minibatch MAP run (Immer et al. 2021, "Scalable marginal likelihood estimation for model
// selection in deep learning", Alg. 1; laplace-torch's marglik_training): after a burn-in, every F
// epochs the structured curvature at the current w over all rows (or over a fresh sample of them,
// scaled by m/n), then K Adam steps on φ = log θ up the log-evidence at that w, whose value and
// gradient are closed-form sums over the curvature's eigenvalues (online.h). The minibatch optimiser's state runs on across the rounds, as does the
// hyperparameters' Adam state.
#include "inference/evidence/online.h"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <vector>

#include "inference/map/adam.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "inference/laplace/structured/precision_factors.h"

namespace occam::evidence {

FixedModeEvidence::FixedModeEvidence(const Posterior& posterior, const LaplaceApproximation& q, double data_scale) {
  const Prior& prior = posterior.prior();
  if (!prior.is_group_diagonal()) {
    throw Error(ErrorKind::kInvalidArgument,
                "online evidence: needs a group-diagonal prior (not graph-Laplacian smoothing)");
  }
  has_beta_ = posterior.likelihood().has_precision();
  beta0_ = has_beta_ ? posterior.likelihood().precision() : 1.0;
  num_targets_ = num_targets(posterior);
  data_error_ = has_beta_ ? data_error(posterior, q.mean) : 0.0;
  group_sizes_ = prior.group_sizes();
  energies_ = prior.hyperparameter_energies(q.mean);
  const double unscale = data_scale / beta0_;  // H₀/β₀: the curvature per unit β, over all m rows
  const Eigen::VectorXi& group_of = prior.group_of();
  switch (q.structure().kind) {
    case HessianStructureKind::kKronecker: {
      curvature_.resize(q.dim());
      group_.resize(q.dim());
      Index k = 0;
      for (const internal::KroneckerBlock& b : q.precision_as<internal::KroneckerPrecision>()->blocks()) {
        const Index n = b.rows * b.cols;
        const auto groups = group_of.segment(b.offset, n);
        if (groups.minCoeff() != groups.maxCoeff()) {
          throw Error(ErrorKind::kInvalidArgument,
                      "online evidence with kron: a layer's weights (or biases) lie in several prior groups; use "
                      "--prior groups or ridge");
        }
        // The block's eigenvalues λ_g,i λ_q,j (column-major over i, j; the order does not matter).
        const Eigen::MatrixXd products = b.output_values * b.input_values.transpose();
        curvature_.segment(k, n) = Eigen::Map<const Eigen::VectorXd>(products.data(), n) * unscale;
        group_.segment(k, n).setConstant(groups[0]);
        k += n;
      }
      break;
    }
    case HessianStructureKind::kDiagonal:
      // a_i − α_g(i) = h_i, clipped at 0 against the rounding of the subtraction.
      curvature_ = (q.precision_diagonal() - prior.precision_diagonal()).cwiseMax(0.0) * unscale;
      group_ = group_of;
      break;
    case HessianStructureKind::kLastLayer: {
      is_dense_ = true;
      const auto& last_layer = *q.precision_as<internal::LastLayerPrecision>();
      const std::vector<Index>& integrated = last_layer.integrated();
      const Eigen::MatrixXd& L = last_layer.cholesky();
      const auto p = static_cast<Index>(integrated.size());
      dense_ = L.triangularView<Eigen::Lower>() * L.transpose();
      const Eigen::VectorXd precision = prior.precision_diagonal();
      group_.resize(p);
      for (Index i = 0; i < p; ++i) {
        const Index weight = integrated[static_cast<std::size_t>(i)];
        dense_(i, i) -= precision[weight];
        group_[i] = group_of[weight];
      }
      dense_ *= unscale;
      break;
    }
    default:
      throw Error(ErrorKind::kInvalidArgument,
                  "online evidence: needs the structure kron, diag or last-layer, not " + to_string(q.structure()));
  }
}

double FixedModeEvidence::log_det(const Eigen::VectorXd& log_theta, Eigen::VectorXd* gradient) const {
  const Index G = group_sizes_.size();
  const Eigen::VectorXd alpha = log_theta.head(G).array().exp();
  const double beta = has_beta_ ? std::exp(log_theta[G]) : 1.0;
  gradient->setZero(num_hyperparameters());
  double value = 0.0, beta_part = 0.0;
  if (!is_dense_) {
    // log|A| = Σ_k log(βc_k + α_g(k)); ∂/∂log α_g = Σ_{k∈g} α_g/(βc_k + α_g); ∂/∂log β = Σ_k βc_k/(βc_k + α_g(k)).
    for (Index k = 0; k < curvature_.size(); ++k) {
      const double a = alpha[group_[k]], bc = beta * curvature_[k], d = bc + a;
      value += std::log(d);
      (*gradient)[group_[k]] += a / d;
      beta_part += bc / d;
    }
  } else {
    // A = βH₀/β₀ + diag(α): log|A| = 2 Σ log L_ii; ∂/∂log α_g = α_g tr_g(A⁻¹); ∂/∂log β =
    // tr(A⁻¹ βH₀/β₀) = p − Σ_i α_g(i) (A⁻¹)_ii.
    Eigen::MatrixXd A = beta * dense_;
    for (Index i = 0; i < A.rows(); ++i) A(i, i) += alpha[group_[i]];
    const Eigen::LLT<Eigen::MatrixXd> llt(A);
    if (llt.info() != Eigen::Success) {
      throw Error(ErrorKind::kNumerical, "online evidence: the last-layer precision is not positive definite");
    }
    const Eigen::MatrixXd L = llt.matrixL();
    value = 2.0 * L.diagonal().array().log().sum();
    Eigen::MatrixXd L_inv = Eigen::MatrixXd::Identity(A.rows(), A.rows());
    L.triangularView<Eigen::Lower>().solveInPlace(L_inv);
    const Eigen::VectorXd inverse_diagonal = L_inv.colwise().squaredNorm().transpose();  // (A⁻¹)_ii = Σ_k (L⁻¹)_ki²
    beta_part = static_cast<double>(A.rows());
    for (Index i = 0; i < A.rows(); ++i) {
      const double term = alpha[group_[i]] * inverse_diagonal[i];
      (*gradient)[group_[i]] += term;
      beta_part -= term;
    }
  }
  if (has_beta_) (*gradient)[G] = beta_part;
  if (!std::isfinite(value)) throw Error(ErrorKind::kNumerical, "online evidence: log|A| is not finite");
  return value;
}

Eigen::VectorXd FixedModeEvidence::well_determined(const Eigen::VectorXd& log_theta) const {
  Eigen::VectorXd log_det_gradient;
  log_det(log_theta, &log_det_gradient);  // its part in log α_g: α_g tr_g(A⁻¹)
  return group_sizes_ - log_det_gradient.head(group_sizes_.size());
}

double FixedModeEvidence::evaluate(const Eigen::VectorXd& log_theta, Eigen::VectorXd* gradient) const {
  const Index G = group_sizes_.size();
  Eigen::VectorXd log_det_gradient;
  const double ld = log_det(log_theta, &log_det_gradient);
  const Eigen::VectorXd alpha = log_theta.head(G).array().exp();
  // MacKay 1992a, eq. 10, at the fixed w: Σ_g (W_g/2) log α_g − α_g E_W,g [+ (m/2) log β − βE_D] − ½ log|A|.
  double value = (0.5 * group_sizes_.cwiseProduct(log_theta.head(G)) - alpha.cwiseProduct(energies_)).sum() - 0.5 * ld;
  *gradient = -0.5 * log_det_gradient;
  gradient->head(G) += 0.5 * group_sizes_ - alpha.cwiseProduct(energies_);
  if (has_beta_) {
    const double beta = std::exp(log_theta[G]);
    value += 0.5 * num_targets_ * log_theta[G] - beta * data_error_;
    (*gradient)[G] += 0.5 * num_targets_ - beta * data_error_;
  }
  return value;
}

namespace {

// The stream the curvature rows are drawn from (the seed's stream "curv"), apart from the
// minibatch order's, so that a subsample changes no minibatch.
constexpr std::uint64_t kCurvatureStream = 0x63757276;

// Adam (adam.h) ascending φ = log θ, clamped to the hyperparameters' range; its moments run on
// across the rounds, as laplace-torch keeps one optimiser for the hyperparameters.
class HyperAdam {
 public:
  HyperAdam(Index dim, double rate) : rate_(rate), adam_(dim, 0.9, 0.999, 1e-8) {}
  void ascend(const Eigen::VectorXd& gradient, Eigen::VectorXd* phi) {
    *phi += adam_.step(gradient, rate_);
    *phi = phi->cwiseMax(std::log(kMinHyper)).cwiseMin(std::log(kMaxHyper));
  }

 private:
  double rate_;
  internal::AdamMoments adam_;
};

}  // namespace

void fit_online(Run& run) {
  Posterior& posterior = run.posterior;
  const EvidenceOptions& options = run.options;
  const OnlineEvidenceOptions& online = options.online;
  EvidenceSummary& summary = run.summary;
  run.gradient_kind = EvidenceGradient::kModeHeld;
  const Index J = all_hyperparameters(posterior).size();
  const Index prior_count = posterior.prior().num_hyperparameters();
  HyperAdam hyper(J, online.hyper_learning_rate);
  int rounds = 0, last_round_epoch = 0;
  const Index m = posterior.num_data();
  const bool subsample = online.curvature_rows > 0 && online.curvature_rows < m;
  // A sample is drawn from the rows in one place; spread over processes, every round's curvature is
  // a collective sum over all rows.
  if (subsample) posterior.require_one_process("a sample of the rows for the curvature (curvature_rows)");
  Rng curvature_rng(online.minibatch.seed, kCurvatureStream);

  // A round's structured curvature at w: over all rows, or over a fresh sample of curvature_rows of
  // them with its data part scaled by m/n. With a sample, the trace's log-evidence and γ are the
  // scaled structure's (log p(D, w) over all rows, log|A| and γ_g = W_g − α_g tr_g(A⁻¹) from its
  // eigenvalues): estimates, as its curvature is.
  struct Round {
    FixedModeEvidence evidence;
    double log_evidence;
    Eigen::VectorXd gamma;
  };
  auto curvature_round = [&](const Eigen::VectorXd& w, const Eigen::VectorXd& phi) -> Round {
    if (!subsample) {
      const LaplaceApproximation q = laplace_at(posterior, w, options);
      return {FixedModeEvidence(posterior, q), log_evidence(posterior, q),
              well_determined_parameters(posterior.prior(), q)};
    }
    const Posterior rows = sample_rows(posterior, online.curvature_rows, &curvature_rng);
    const LaplaceApproximation q = laplace_at(rows, w, options);
    FixedModeEvidence evidence(posterior, q, static_cast<double>(m) / static_cast<double>(online.curvature_rows));
    Eigen::VectorXd log_det_gradient;
    const double log_det = evidence.log_det(phi, &log_det_gradient);
    Eigen::VectorXd gamma = evidence.well_determined(phi);
    double log_joint;
    if (!posterior.evaluate(w, &log_joint, nullptr)) {
      throw Error(ErrorKind::kNumerical, "online evidence: the log density is not finite at the round's w");
    }
    const double log_z =
        log_joint + 0.5 * static_cast<double>(q.integrated_dim()) * std::log(2.0 * std::numbers::pi) - 0.5 * log_det;
    return {std::move(evidence), log_z, std::move(gamma)};
  };

  MinibatchOptions minibatch = online.minibatch;
  minibatch.gradient_tolerance = options.map.gradient_tolerance;
  if (!minibatch.callback) minibatch.callback = options.map.callback;  // progress and Ctrl-C
  minibatch.after_epoch = [&](int epoch, const Eigen::VectorXd& w) {
    if (epoch < online.burn_in || (epoch - online.burn_in) % online.evidence_every != 0)
      return CallbackReturn::kContinue;
    ++rounds;
    const Eigen::VectorXd theta = all_hyperparameters(posterior);
    Eigen::VectorXd phi = theta.array().log().matrix(), gradient;
    const Round round = curvature_round(w, phi);
    const FixedModeEvidence& evidence = round.evidence;
    evidence.evaluate(phi, &gradient);
    const double start_norm = free_hyperparameters(posterior, gradient, options.fix_prior).norm;
    for (int k = 0; k < online.hyper_steps; ++k) {
      if (k > 0) evidence.evaluate(phi, &gradient);
      if (options.fix_prior) gradient.head(prior_count).setZero();
      hyper.ascend(gradient, &phi);
    }
    record(run, {rounds, round.log_evidence, posterior.prior().hyperparameters(), current_beta(posterior), round.gamma,
                 epoch - last_round_epoch, true, start_norm, std::numeric_limits<double>::quiet_NaN()});
    last_round_epoch = epoch;
    set_all_hyperparameters(&posterior, phi.array().exp().matrix());
    return run.aborted ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  const MinibatchSummary s = find_map_minibatch(posterior, minibatch, &run.w);
  summary.last_map = s.as_map_summary();
  summary.map_iterations += s.epochs;
  summary.outer_iterations = rounds;
  std::ostringstream message;
  message << "online: " << s.epochs << " epochs of " << to_string(minibatch.optimizer) << ", " << rounds
          << " hyperparameter rounds";
  if (rounds == 0) message << " (none: the burn-in of " << online.burn_in << " epochs was not over; α, β as given)";
  summary.stopping_test = "epoch budget (online.minibatch.epochs)";
  if (s.termination == Termination::kFailure) {
    run.stop = Termination::kFailure;
    summary.message = message.str() + "; " + s.message;
    summary.stopping_test = "minibatch MAP failure";
    return;
  }
  if (s.termination == Termination::kAborted || run.aborted) {
    run.stop = Termination::kAborted;
    run.aborted = true;
    summary.message = message.str() + "; stopped by the callback";
    summary.stopping_test = "the callback asked to stop";
    return;
  }
  run.stop =
      Termination::kMaxIterations;  // the epochs are spent; the finish reports converged only if the conditions hold
  summary.message = message.str();
  if (!online.polish) return;
  // The full-batch outer loop from here: a MAP run to convergence, MacKay's updates with the
  // structure's γ (outer_loop.cc), so that the optimality conditions can be met.
  EvidenceOptions polish_options = options;
  polish_options.loop = EvidenceLoop::kOuter;
  if (is_minibatch(polish_options.map.optimizer)) polish_options.map.optimizer = Optimizer::kAuto;
  Run polish{posterior, polish_options, run.w, summary};
  const int outer_before = summary.outer_iterations;
  fit_outer_loop(polish);
  run.stop = polish.stop;
  run.aborted = run.aborted || polish.aborted;
  run.laplace = std::move(polish.laplace);
  summary.outer_iterations += outer_before;
  summary.message = message.str() + ", then the full-batch outer loop: " + summary.message;
}

}  // namespace occam::evidence

namespace occam {

void OnlineEvidenceOptions::validate() const {
  minibatch.validate();
  auto fail = [](const char* field, double value, const char* rule) {
    invalid_option("OnlineEvidenceOptions", field, value, rule);
  };
  if (burn_in < 0) fail("burn_in", burn_in, "must be non-negative");
  if (evidence_every < 1) fail("evidence_every", evidence_every, "must be at least 1");
  if (hyper_steps < 0) fail("hyper_steps", hyper_steps, "must be non-negative");
  if (curvature_rows < 0) fail("curvature_rows", static_cast<double>(curvature_rows), "must be non-negative");
  if (!(hyper_learning_rate > 0.0) || !std::isfinite(hyper_learning_rate)) {
    fail("hyper_learning_rate", hyper_learning_rate, "must be positive");
  }
}

}  // namespace occam

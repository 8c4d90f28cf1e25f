#include "uci/uci_methods.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numbers>

#include "occam/cv.h"
#include "occam/evidence.h"
#include "occam/likelihood.h"
#include "occam/map.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/mcmc/draws_predict.h"
#include "occam/mcmc/network_model.h"
#include "occam/mcmc/sampler.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "occam/status.h"
#include "occam/vi.h"

namespace occam::uci {
namespace {

// One split standardised on its training part (Hernández-Lobato & Adams 2015 protocol): the
// network sees z-scored inputs and targets; predictions go back to the original units.
struct Standardized {
  Standardizer standardizer;
  Eigen::MatrixXd X, Y, X_test;
};

Standardized standardize(const UciSplit& split) {
  Standardized s;
  s.standardizer = Standardizer::fit(split.train, Standardize::kBoth);  // a constant column keeps scale 1
  s.X = s.standardizer.transform_inputs(split.train.X);
  s.Y = s.standardizer.transform_targets(split.train.Y);
  s.X_test = s.standardizer.transform_inputs(split.test.X);
  return s;
}

std::unique_ptr<Mlp> make_network(Index inputs, const MethodSettings& settings) {
  return std::make_unique<Mlp>(inputs, std::vector<Index>{settings.hidden_units}, Activation::kTanh, /*outputs=*/1);
}

// The same start for every method on a split, whatever else the run does: Rng(seed, split).
Eigen::VectorXd initial_weights(const Network& net, const UciSplit& split, const MethodSettings& settings) {
  Rng rng(settings.seed, static_cast<std::uint64_t>(split.index));
  return net.initial_params(rng);
}

void to_original_units(const Standardizer& s, const Eigen::VectorXd& mean, const Eigen::VectorXd& std,
                       MethodOutput* out) {
  out->mean = (s.y_mean + s.y_scale * mean.array()).matrix();
  out->std = s.y_scale * std;
}

// ---------------------------------------------------------------------------------------------
// map-cv: MAP weights with λ = α/β chosen by k-fold cross-validation on the training split.
//
// The MAP weights minimise β E_D + α E_W, so they depend on α and β only through λ = α/β: the
// search is one-dimensional. For each fold, the net is trained on the other folds for every λ of
// the grid, largest first, each fit warm-started from the previous one (a regularisation path);
// the held-out squared errors are pooled over folds. λ* minimises the pooled validation MSE, and
// β = 1/MSE(λ*) is the noise precision that maximises the Gaussian validation log-likelihood
// Σ log N(y; f, 1/β) in closed form (at that β it is −(n/2)(log 2π·MSE + 1), so the λ with the
// least MSE is also the λ with the highest validation log-likelihood). The final net is trained
// on the whole training split at λ*, and predicts N(f(x; w_MAP), 1/β) — no weight uncertainty.

constexpr int kCvMaxIterations = 1000;

MapOptions cv_map_options() {
  // L-BFGS: an iteration costs O(mW) against Levenberg–Marquardt's O(mW² + W³), and a validation
  // MSE does not need the last digits of w_MAP that LM's extra iterations buy.
  MapOptions options;
  options.optimizer = Optimizer::kLbfgs;
  options.max_iterations = kCvMaxIterations;
  return options;
}

MethodOutput run_map_cv(const UciSplit& split, const MethodSettings& settings) {
  const Standardized data = standardize(split);
  const Index m = data.X.rows();
  const int folds = settings.cv_folds;
  if (folds < 2 || folds > m) {
    throw Error(ErrorKind::kInvalidArgument, "map-cv needs between 2 and " + std::to_string(m) + " folds, got " +
                                                 std::to_string(folds));
  }
  const std::vector<double>& grid = settings.cv_grid;
  // The library's seeded k-fold (cv.h), a seed of its own per split.
  KFoldOptions fold_options;
  fold_options.folds = folds;
  fold_options.seed = settings.seed * 1000003u + static_cast<std::uint64_t>(split.index);
  const std::vector<Fold> cv_folds = kfold(m, fold_options);
  const std::unique_ptr<Mlp> net = make_network(data.X.cols(), settings);

  Eigen::VectorXd sse = Eigen::VectorXd::Zero(static_cast<Index>(grid.size()));
  bool all_converged = true;
  int cv_iterations = 0;
  for (const Fold& fold : cv_folds) {
    const Eigen::MatrixXd X_fit = take_rows(data.X, fold.train), Y_fit = take_rows(data.Y, fold.train);
    const Eigen::MatrixXd X_val = take_rows(data.X, fold.test), Y_val = take_rows(data.Y, fold.test);
    Eigen::VectorXd w = initial_weights(*net, split, settings);
    for (std::size_t j = 0; j < grid.size(); ++j) {
      // β = 1 and α = λ: the same minimiser as any (α, β) with α/β = λ.
      Posterior posterior(net->clone(), std::make_unique<GaussianLikelihood>(1.0),
                          Prior::from_network(*net, AlphaGroups::kSingle, grid[j]), X_fit, Y_fit);
      const MapSummary s = find_map(posterior, cv_map_options(), &w);
      all_converged = all_converged && s.termination == Termination::kConverged;
      cv_iterations += s.iterations;
      Eigen::MatrixXd F;
      net->forward(w, X_val, &F);
      sse[static_cast<Index>(j)] += (F - Y_val).squaredNorm();
    }
  }
  Index best = 0;
  sse.minCoeff(&best);
  const double lambda = grid[static_cast<std::size_t>(best)];
  const double mse = sse[best] / static_cast<double>(m);
  const double beta = 1.0 / mse;

  Eigen::VectorXd w = initial_weights(*net, split, settings);
  Posterior posterior(net->clone(), std::make_unique<GaussianLikelihood>(beta),
                      Prior::from_network(*net, AlphaGroups::kSingle, lambda * beta), data.X, data.Y);
  MapOptions final_options;
  final_options.optimizer = map_optimizer_for(settings, m);
  final_options.max_iterations = settings.max_map_iterations;
  const MapSummary s = find_map(posterior, final_options, &w);
  Eigen::MatrixXd F;
  net->forward(w, data.X_test, &F);

  MethodOutput out;
  to_original_units(data.standardizer, F.col(0), Eigen::VectorXd::Constant(F.rows(), 1.0 / std::sqrt(beta)), &out);
  out.termination = to_string(s.termination);
  char detail[240];
  std::snprintf(detail, sizeof detail, "lambda %.3g, beta %.4g (validation MSE %.4g), %d + %d MAP iterations%s",
                lambda, beta, mse, cv_iterations, s.iterations,
                all_converged ? "" : "; some CV fits stopped at their iteration limit");
  out.detail = detail;
  return out;
}

// ---------------------------------------------------------------------------------------------
// laplace / laplace-integrate: fit_evidence with the Gauss–Newton Hessian and the linearised
// predictive N(f(x; w_MAP), gᵀA⁻¹g + 1/β) (MacKay 1992a). laplace re-estimates one α per weight
// group (MacKay's four); laplace-integrate integrates out one α for all weights: integrating out
// an α of its own for the single output bias has no interior optimum (−½ log E_W,g → +∞ as that
// weight → 0; MacKay 1994, §3), and the optimiser duly drives it to zero.

MethodOutput run_evidence(const UciSplit& split, const MethodSettings& settings, HyperStrategy strategy,
                          AlphaGroups groups) {
  const Standardized data = standardize(split);
  const std::unique_ptr<Mlp> net = make_network(data.X.cols(), settings);
  Eigen::VectorXd w = initial_weights(*net, split, settings);
  // The CLI's starting values (apps/occam/fitting.h): α = 1, β = 10 on standardised data.
  Posterior posterior(net->clone(), std::make_unique<GaussianLikelihood>(10.0),
                      Prior::from_network(*net, groups, 1.0), data.X, data.Y);
  EvidenceOptions options;
  options.strategy = strategy;
  options.hessian = HessianKind::kGgn;
  options.map.optimizer = map_optimizer_for(settings, data.X.rows());
  options.map.max_iterations = settings.max_map_iterations;
  // kIntegrate maximises its objective with L-BFGS, whose iterations cost O(mW) against LM's
  // O(mW² + W³) and which needs many more of them: at least the library's default 5000.
  if (strategy == HyperStrategy::kIntegrate) {
    options.map.max_iterations = std::max(settings.max_map_iterations, MapOptions{}.max_iterations);
  }
  options.max_outer_iterations = settings.max_rounds;
  if (settings.progress) {
    options.callback = [&settings](const EvidenceIteration& it) {
      char line[200];
      std::snprintf(line, sizeof line, "round %d: log-evidence %.6g, gamma %.4g, beta %.4g, %d MAP iterations%s",
                    it.iteration, it.log_evidence, it.gamma.sum(), it.beta, it.map_iterations,
                    it.accepted ? "" : " (lower: undone, step halved)");
      settings.progress(line);
    };
  }
  const EvidenceResult r = fit_evidence(&posterior, options, &w);
  const Prediction p = predict(posterior.network(), posterior.likelihood(), r.laplace, data.X_test, PredictOptions{});

  MethodOutput out;
  to_original_units(data.standardizer, p.mean, p.std, &out);
  out.termination = to_string(r.summary.termination);
  char detail[200];
  std::snprintf(detail, sizeof detail, "log-evidence %.6g, gamma %.4g, beta %.4g, %d rounds, %d MAP iterations",
                r.summary.log_evidence, r.summary.gamma_total, r.summary.beta, r.summary.outer_iterations,
                r.summary.map_iterations);
  out.detail = detail;
  if (r.summary.termination == Termination::kFailure) out.detail += " (" + r.summary.message + ")";
  return out;
}

// ---------------------------------------------------------------------------------------------
// vi-meanfield: the MAP at the CLI's starting α = 1 (MacKay's four groups), β = 10 gives the start
// N(w_MAP, 1/diag A); mean-field q, α and β are then fitted jointly by the ELBO (docs/vi.md) and
// the predictive is the Monte Carlo one over q, w ~ q, y ~ N(f(x; w), 1/β), summarised by its
// mean and standard deviation: the Gaussian with the mixture's first two moments, scored like
// every other method here.

MethodOutput run_vi_meanfield(const UciSplit& split, const MethodSettings& settings) {
  const Standardized data = standardize(split);
  const std::unique_ptr<Mlp> net = make_network(data.X.cols(), settings);
  Eigen::VectorXd w = initial_weights(*net, split, settings);
  Posterior posterior(net->clone(), std::make_unique<GaussianLikelihood>(10.0),
                      Prior::from_network(*net, AlphaGroups::kDefault, 1.0), data.X, data.Y);
  MapOptions map_options;
  map_options.optimizer = map_optimizer_for(settings, data.X.rows());
  map_options.max_iterations = settings.max_map_iterations;
  const MapSummary start = find_map(posterior, map_options, &w);
  VariationalOptions options;
  options.family = parse_variational_family("meanfield");
  options.seed = settings.seed + static_cast<std::uint64_t>(split.index);
  Rng init_rng(options.seed, /*stream=*/4);
  const VariationalResult r = fit_variational(
      &posterior, options,
      GaussianVariational::from_laplace(options.family, laplace(posterior, w, HessianKind::kGgn), &init_rng));
  PredictOptions predict_options;
  predict_options.method = PredictiveMethod::kMonteCarlo;
  predict_options.samples = 1000;
  predict_options.seed = options.seed;
  const Prediction p = predict(posterior.network(), posterior.likelihood(), r.q, data.X_test, predict_options);

  MethodOutput out;
  to_original_units(data.standardizer, p.mean, p.std, &out);
  out.termination = to_string(r.summary.termination);
  char detail[200];
  std::snprintf(detail, sizeof detail, "ELBO %.6g, beta %.4g, %d VI steps, %d MAP iterations to the start",
                r.summary.elbo, posterior.likelihood().precision(), r.summary.iterations, start.iterations);
  out.detail = detail;
  if (r.summary.termination == Termination::kFailure) out.detail += " (" + r.summary.message + ")";
  return out;
}

// ---------------------------------------------------------------------------------------------
// nuts: NUTS over the weights, alternating with Gibbs draws of α and β from their Gamma full
// conditionals (Neal 1996; the library's default vague Gamma(0.01, 0.01) hyperpriors), from α = 1,
// β = 10 on standardised data. One α for all weights: with MacKay's four groups each α_g and its
// weights form a funnel under the vague hyperprior, and the chains mix badly (docs/mcmc.md).
// Each chain starts from its own MAP fit from its own random initial weights — chain 0 from the
// initial weights every method uses on the split, Rng(seed, split) — so the chains also act like
// a committee over modes. The predictive is the mixture over the kept draws s of
// N(f(x; w_s), 1/β_s), summarised by its mean and variance like vi-meanfield's.

// At most this many draws (evenly thinned over every chain) go into the predictive.
constexpr Index kMaxPredictiveDraws = 1000;

// A NetworkChainModel whose chain 0 starts from the split's common initial weights.
class CommonStartModel final : public mcmc::ChainModel {
 public:
  CommonStartModel(const Posterior& posterior, const mcmc::NetworkModelOptions& options, std::uint64_t seed,
                   std::uint64_t split)
      : inner_(posterior, options), seed_(seed), split_(split) {}
  const LogDensity& density() const override { return inner_.density(); }
  Eigen::VectorXd initial_point(Rng&) override {
    // initial_weights(): Network::initial_params(Rng(seed, split)), then the chain's MAP fit.
    Rng common(seed_, split_);
    return inner_.initial_point(common);
  }
  bool gibbs_step(Eigen::VectorXd* theta, Rng& rng) override { return inner_.gibbs_step(theta, rng); }
  std::vector<std::string> parameter_names() const override { return inner_.parameter_names(); }
  Eigen::VectorXd parameter_values(const Eigen::VectorXd& theta) const override { return inner_.parameter_values(theta); }
  std::vector<std::string> extra_names() const override { return inner_.extra_names(); }
  Eigen::VectorXd extra_values(const Eigen::VectorXd& theta) const override { return inner_.extra_values(theta); }

 private:
  mcmc::NetworkChainModel inner_;
  std::uint64_t seed_, split_;
};

MethodOutput run_nuts(const UciSplit& split, const MethodSettings& settings) {
  const Standardized data = standardize(split);
  const std::unique_ptr<Mlp> net = make_network(data.X.cols(), settings);
  const Posterior posterior(net->clone(), std::make_unique<GaussianLikelihood>(10.0),
                            Prior::from_network(*net, AlphaGroups::kSingle, 1.0), data.X, data.Y);
  mcmc::NetworkModelOptions model;
  model.gibbs = true;
  model.init = mcmc::InitKind::kMap;
  model.map_max_iterations = settings.max_map_iterations;

  mcmc::SamplerOptions options;
  options.chains = settings.nuts_chains;
  options.threads = settings.nuts_threads;
  options.num_warmup = settings.nuts_warmup;
  options.num_draws = settings.nuts_draws;
  options.nuts.max_depth = settings.nuts_max_depth;
  // A seed of its own per (seed, split): reruns give the same row, whatever the thread count.
  Rng seeder(settings.seed, 0x6e757473u + static_cast<std::uint64_t>(split.index));
  options.seed = seeder.engine()();
  options.validate();
  if (options.num_draws < 4) throw Error(ErrorKind::kInvalidArgument, "nuts needs at least 4 draws per chain");
  const auto seed = settings.seed;
  const auto split_index = static_cast<std::uint64_t>(split.index);
  const mcmc::SamplerSummary s = mcmc::sample(
      [&](int chain) -> std::unique_ptr<mcmc::ChainModel> {
        if (chain == 0) return std::make_unique<CommonStartModel>(posterior, model, seed, split_index);
        return std::make_unique<mcmc::NetworkChainModel>(posterior, model);
      },
      options);

  // Every kept draw of every chain, evenly thinned to at most kMaxPredictiveDraws.
  const Index W = posterior.dim();
  const auto column_of = [&](const std::string& name) {
    return static_cast<Index>(std::find(s.columns.begin(), s.columns.end(), name) - s.columns.begin());
  };
  const Index first_w = column_of("w.1"), beta_col = column_of("beta");
  Index total = 0;
  for (const Eigen::MatrixXd& d : s.draws) total += d.rows();
  if (total == 0 || beta_col >= static_cast<Index>(s.columns.size())) {
    throw Error(ErrorKind::kNumerical, "nuts: the sampler returned no draws");
  }
  const Index thin = (total + kMaxPredictiveDraws - 1) / kMaxPredictiveDraws;
  Eigen::MatrixXd weights((total + thin - 1) / thin, W);
  Eigen::VectorXd betas(weights.rows());
  Index k = 0, global = 0;
  for (const Eigen::MatrixXd& d : s.draws) {
    for (Index r = 0; r < d.rows(); ++r, ++global) {
      if (global % thin != 0) continue;
      weights.row(k) = d.row(r).segment(first_w, W);
      betas[k++] = d(r, beta_col);
    }
  }
  mcmc::DrawsPredictOptions predict_options;
  predict_options.seed = options.seed;
  const mcmc::DrawsPrediction p =
      mcmc::predict_from_draws(posterior.network(), posterior.likelihood(), weights, betas, data.X_test, predict_options);

  // Convergence of what the chains can agree on (the weights are not identifiable): lp__ and the
  // hyperparameters.
  double max_rhat = 0.0, min_ess = std::numeric_limits<double>::infinity();
  std::string worst = "lp__";
  for (const std::string& name : s.columns) {
    if (name != "lp__" && name != "beta" && name.rfind("alpha.", 0) != 0) continue;
    const Eigen::MatrixXd x = s.column(name);
    const double r = mcmc::rhat(x), e = mcmc::ess_bulk(x);
    if (!(r <= max_rhat)) {  // NaN (e.g. a single chain's constant column) counts as not converged
      max_rhat = std::isnan(r) ? std::numeric_limits<double>::infinity() : r;
      worst = name;
    }
    if (!(e >= min_ess)) min_ess = std::isnan(e) ? 0.0 : e;
  }
  int divergences = 0, depth_hits = 0;
  double step_min = std::numeric_limits<double>::infinity(), step_max = 0.0, depth = 0.0;
  double warmup_seconds = 0.0, sampling_seconds = 0.0;
  for (const mcmc::ChainSummary& c : s.chains) {
    warmup_seconds += c.warmup_seconds;
    sampling_seconds += c.sampling_seconds;
    divergences += c.divergences;
    depth_hits += c.max_depth_hits;
    step_min = std::min(step_min, c.step_size);
    step_max = std::max(step_max, c.step_size);
    depth += c.mean_tree_depth / static_cast<double>(s.chains.size());
  }

  MethodOutput out;
  to_original_units(data.standardizer, p.prediction.mean, p.prediction.std, &out);
  out.termination = !s.interrupted && max_rhat <= 1.01 ? "converged" : "not_converged";
  char detail[400];
  std::snprintf(detail, sizeof detail,
                "%zu chains x (%d + %d), %lld draws in the predictive; max R-hat %.3f (%s), min bulk ESS %.0f; "
                "%d divergences, step size %.3g-%.3g, mean tree depth %.2f (%d at the maximum); beta %.4g; "
                "chain time %.0f s MAP + warm-up, %.0f s sampling",
                s.chains.size(), options.num_warmup, options.num_draws, static_cast<long long>(weights.rows()),
                max_rhat, worst.c_str(), min_ess, divergences, step_min, step_max, depth, depth_hits, betas.mean(),
                warmup_seconds, sampling_seconds);
  out.detail = detail;
  return out;
}

}  // namespace

Optimizer map_optimizer_for(const MethodSettings& settings, Index rows) {
  if (settings.map_optimizer != Optimizer::kAuto) return settings.map_optimizer;
  return rows <= settings.lm_max_rows ? Optimizer::kLevenbergMarquardt : Optimizer::kLbfgs;
}

const std::vector<UciMethod>& method_registry() {
  static const std::vector<UciMethod> methods = {
      {"map-cv", "MAP weights; lambda = alpha/beta by k-fold cross-validation, beta = 1/validation MSE",
       run_map_cv},
      {"laplace", "Laplace (Gauss-Newton) with alpha per weight group and beta by MacKay's evidence",
       [](const UciSplit& s, const MethodSettings& m) {
         return run_evidence(s, m, HyperStrategy::kEvidence, AlphaGroups::kDefault);
       }},
      {"laplace-integrate", "Laplace (Gauss-Newton) with one alpha and beta integrated out under 1/sigma priors",
       [](const UciSplit& s, const MethodSettings& m) {
         return run_evidence(s, m, HyperStrategy::kIntegrate, AlphaGroups::kSingle);
       }},
      {"vi-meanfield", "mean-field Gaussian q with alpha per weight group and beta learned by the ELBO; Monte Carlo "
                       "predictive", run_vi_meanfield},
      {"nuts", "NUTS over the weights with one alpha and beta by Gibbs; chains from MAP fits; Monte Carlo "
               "predictive", run_nuts},
  };
  return methods;
}

const UciMethod& find_method(const std::string& name) {
  std::string known;
  for (const UciMethod& m : method_registry()) {
    if (m.name == name) return m;
    known += (known.empty() ? "" : ", ") + m.name;
  }
  throw Error(ErrorKind::kInvalidArgument, "unknown method '" + name + "' (known: " + known + ")");
}

SplitMetrics score(const MethodOutput& p, const Eigen::VectorXd& y) {
  if (p.mean.size() != y.size() || p.std.size() != y.size()) {
    throw Error(ErrorKind::kInvalidArgument, "score: prediction and targets differ in size");
  }
  // 1.959963984540054 = Φ⁻¹(0.975): the central 95% interval of a Gaussian.
  constexpr double kZ95 = 1.959963984540054;
  const Eigen::ArrayXd r = y.array() - p.mean.array();
  const Eigen::ArrayXd s = p.std.array();
  SplitMetrics out;
  out.rmse = std::sqrt(r.square().mean());
  out.test_ll = (-0.5 * std::log(2.0 * std::numbers::pi) - s.log() - 0.5 * (r / s).square()).mean();
  out.coverage95 = (r.abs() <= kZ95 * s).cast<double>().mean();
  return out;
}

}  // namespace occam::uci

#include "uci/uci_methods.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>

#include "occam/committee.h"
#include "occam/cv.h"
#include "occam/fit.h"
#include "occam/heteroscedastic.h"
#include "occam/mcmc/diagnostics.h"
#include "occam/status.h"

namespace occam::uci {
namespace {

// Every method fits one tanh hidden layer of the protocol's width with a Gaussian likelihood, from
// the library's starting values α = 1, β = 10 on data standardised on the split's training part
// (Hernández-Lobato & Adams 2015); predictions come back in the original units.
ModelSpec network_spec(const MethodSettings& settings, PriorKind prior) {
  ModelSpec spec;
  spec.network.hidden = {settings.hidden_units};
  spec.prior.kind = prior;
  return spec;
}

// The same start for every method on a split, whatever else the run does: Rng(seed, split).
StartOptions split_start(const UciSplit& split, const MethodSettings& settings) {
  StartOptions start;
  start.seed = settings.seed;
  start.stream = static_cast<std::uint64_t>(split.index);
  return start;
}

MethodOutput gaussian_output(const Prediction& p) {
  MethodOutput out;
  out.mean = p.mean;
  out.std = p.std;
  return out;
}

// Each evidence round as a line of progress (with the committee member, when there is one), and
// a heartbeat: any other iteration (a MAP step, a NUTS iteration of any chain) when
// settings.heartbeat_seconds have passed since the last line, naming the split. Sampling calls
// from each chain's thread, hence the lock.
FitCallback fit_progress(const MethodSettings& settings, int split) {
  struct Heartbeat {
    std::mutex mutex;
    std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
  };
  auto heartbeat = std::make_shared<Heartbeat>();
  return [&settings, heartbeat, split](const FitProgress& p) {
    if (!settings.progress) return CallbackReturn::kContinue;
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(heartbeat->mutex);
    if (p.evidence == nullptr) {
      if (std::chrono::duration<double>(now - heartbeat->last).count() < settings.heartbeat_seconds) {
        return CallbackReturn::kContinue;
      }
      const std::string line = p.describe();
      if (!line.empty()) {
        settings.progress("split " + std::to_string(split) + ", " + line);
        heartbeat->last = now;
      }
      return CallbackReturn::kContinue;
    }
    heartbeat->last = now;
    const EvidenceIteration& it = *p.evidence;
    const std::string who = p.member >= 0   ? "member " + std::to_string(p.member + 1) + ", "
                            : p.noise_model ? "noise network, "
                                            : "";
    char beta[40] = "";  // the noise network's likelihood has no β
    if (!std::isnan(it.beta)) std::snprintf(beta, sizeof beta, ", beta %.4g", it.beta);
    char line[200];
    std::snprintf(line, sizeof line, "%sround %d: log-evidence %.6g, gamma %.4g%s, %d MAP iterations%s", who.c_str(),
                  it.iteration, it.log_evidence, it.gamma.sum(), beta, it.map_iterations,
                  it.accepted ? "" : " (lower: undone, step halved)");
    settings.progress(line);
    return CallbackReturn::kContinue;
  };
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

MethodOutput run_map_cv(const UciSplit& split, const MethodSettings& settings) {
  const Index m = split.train.X.rows();
  const int folds = settings.cv_folds;
  if (folds < 2 || folds > m) {
    throw Error(ErrorKind::kInvalidArgument,
                "map-cv needs between 2 and " + std::to_string(m) + " folds, got " + std::to_string(folds));
  }
  // The folds are cut from the split standardised once, on its whole training part.
  const Standardizer standardizer = Standardizer::fit(split.train, Standardize::kBoth);
  Dataset standardized;
  standardized.X = standardizer.transform_inputs(split.train.X);
  standardized.Y = standardizer.transform_targets(split.train.Y);
  const std::vector<double>& grid = settings.cv_grid;
  // The library's seeded k-fold (cv.h), a seed of its own per split.
  KFoldOptions fold_options;
  fold_options.folds = folds;
  fold_options.seed = settings.seed * 1000003u + static_cast<std::uint64_t>(split.index);
  const std::vector<Fold> cv_folds = kfold(m, fold_options);
  // β = 1 and α = λ: the same minimiser as any (α, β) with α/β = λ. L-BFGS: an iteration costs
  // O(mW) against Levenberg–Marquardt's O(mW² + W³), and a validation MSE does not need the last
  // digits of w_MAP that LM's extra iterations buy.
  ModelSpec path_spec = network_spec(settings, PriorKind::kRidge);
  path_spec.likelihood.beta = 1.0;
  path_spec.standardize = Standardize::kNone;
  MapMethod path;
  path.map.optimizer = Optimizer::kLbfgs;
  path.map.max_iterations = kCvMaxIterations;

  Eigen::VectorXd sse = Eigen::VectorXd::Zero(static_cast<Index>(grid.size()));
  bool all_converged = true;
  int cv_iterations = 0;
  for (const Fold& fold : cv_folds) {
    Dataset fit_part, validation;
    fit_part.X = take_rows(standardized.X, fold.train);
    fit_part.Y = take_rows(standardized.Y, fold.train);
    validation.X = take_rows(standardized.X, fold.test);
    validation.Y = take_rows(standardized.Y, fold.test);
    path.start = split_start(split, settings);
    for (std::size_t j = 0; j < grid.size(); ++j) {
      path_spec.prior.alpha = grid[j];
      const FittedModel fitted = fit(path_spec, fit_part, path);
      all_converged = all_converged && fitted.summary.termination == Termination::kConverged;
      cv_iterations += fitted.summary.map->iterations;
      path.start.weights = std::get<PointEstimate>(fitted.posterior).weights;
      sse[static_cast<Index>(j)] += (fitted.predict(validation.X).mean - validation.Y.col(0)).squaredNorm();
    }
  }
  Index best = 0;
  sse.minCoeff(&best);
  const double lambda = grid[static_cast<std::size_t>(best)];
  const double mse = sse[best] / static_cast<double>(m);
  const double beta = 1.0 / mse;

  ModelSpec final_spec = network_spec(settings, PriorKind::kRidge);
  final_spec.likelihood.beta = beta;
  final_spec.prior.alpha = lambda * beta;
  MapMethod final_fit;
  final_fit.map.optimizer = map_optimizer_for(settings, m);
  final_fit.map.max_iterations = settings.max_map_iterations;
  final_fit.start = split_start(split, settings);
  const FittedModel fitted = fit(final_spec, split.train, final_fit, fit_progress(settings, split.index));

  MethodOutput out = gaussian_output(fitted.predict(split.test.X));
  out.termination = to_string(fitted.summary.termination);
  char detail[240];
  std::snprintf(detail, sizeof detail, "lambda %.3g, beta %.4g (validation MSE %.4g), %d + %d MAP iterations%s", lambda,
                beta, mse, cv_iterations, fitted.summary.map->iterations,
                all_converged ? "" : "; some CV fits stopped at their iteration limit");
  out.detail = detail;
  return out;
}

// ---------------------------------------------------------------------------------------------
// laplace / laplace-integrate: the evidence with the Gauss–Newton Hessian and the linearised
// predictive N(f(x; w_MAP), gᵀA⁻¹g + 1/β) (MacKay 1992a). laplace re-estimates one α per weight
// group (MacKay's four); laplace-integrate integrates out one α for all weights: integrating out
// an α of its own for the single output bias has no interior optimum (−½ log E_W,g → +∞ as that
// weight → 0; MacKay 1994, §3), and the optimiser duly drives it to zero.

LaplaceMethod evidence_method(const UciSplit& split, const MethodSettings& settings, HyperStrategy strategy) {
  LaplaceMethod method;
  method.evidence.strategy = strategy;
  method.evidence.hessian = HessianKind::kGgn;
  // The full Gauss–Newton evidence on every data set, never the online loop `auto` takes on the largest.
  method.evidence.loop = EvidenceLoop::kJoint;
  // The evidence ascent starts from a converged mode and moves w with θ by Newton steps, so under
  // `auto` kEvidence runs Levenberg–Marquardt on every data set. With L-BFGS (auto's choice above
  // lm_max_rows for the other methods) the first MAP run on kin8nm split 0 spent the whole budget
  // of 5000 iterations without converging and the fit ended with no re-estimation, at α = 1,
  // β = 10 (test LL 1.24, against 1.34 with LM after 15 rounds).
  method.evidence.map.optimizer = strategy == HyperStrategy::kEvidence && settings.map_optimizer == Optimizer::kAuto
                                      ? Optimizer::kLevenbergMarquardt
                                      : map_optimizer_for(settings, split.train.X.rows());
  method.evidence.map.max_iterations = settings.max_map_iterations;
  // kIntegrate maximises its objective with L-BFGS, whose iterations cost O(mW) against LM's
  // O(mW² + W³) and which needs many more of them: at least the library's default 5000.
  if (strategy == HyperStrategy::kIntegrate) {
    method.evidence.map.max_iterations = std::max(settings.max_map_iterations, MapOptions{}.max_iterations);
  }
  method.evidence.max_outer_iterations = settings.max_rounds;
  method.start = split_start(split, settings);
  return method;
}

MethodOutput run_evidence(const UciSplit& split, const MethodSettings& settings, HyperStrategy strategy,
                          PriorKind prior) {
  const LaplaceMethod method = evidence_method(split, settings, strategy);
  const FittedModel fitted =
      fit(network_spec(settings, prior), split.train, method, fit_progress(settings, split.index));
  const EvidenceSummary& e = *fitted.summary.evidence;

  MethodOutput out = gaussian_output(fitted.predict(split.test.X));
  out.termination = to_string(e.termination);
  char detail[200];
  std::snprintf(detail, sizeof detail, "log-evidence %.6g, gamma %.4g, beta %.4g, %d rounds, %d MAP iterations",
                e.log_evidence, e.gamma_total, e.beta, e.outer_iterations, e.map_iterations);
  out.detail = detail;
  // Why a fit that did not converge stopped (a saddle of S, the norms): the progress line only.
  if (e.termination != Termination::kConverged) out.detail += " (" + e.message + ")";
  return out;
}

// ---------------------------------------------------------------------------------------------
// laplace-committee: `laplace` from settings.committee_members independent starts (member 1 from
// the split's common initial weights: the laplace row's own fit; the others from seeds derived
// from it), weighted by their evidence with the symmetry count, π_k ∝ Z_k S_k (MacKay 1992b;
// LaplaceMethod::committee, committee.h). Scored like nuts and vi-meanfield by the Gaussian with the
// mixture's mean and variance.
// laplace-ensemble: the same members, every one weighted 1/K (MacKay's plain committee average; a
// mixture of Laplace approximations with equal weights): the predictive spreads over the modes the
// members found however far apart their evidences are.

// The last committee this process fitted, kept so that laplace-committee and laplace-ensemble on
// one split (consecutive rows of a serial run) fit their members once: the ensemble is the same
// committee reweighted (reweight_committee, bit for bit what fitting it afresh gives). Keyed by data
// set, split and member count; everything else that shapes the fits is fixed for the process.
struct LastCommittee {
  std::string dataset;
  int split = -1;
  int members = 0;
  std::shared_ptr<const Committee> committee;
};

std::mutex last_committee_mutex;
LastCommittee last_committee;

MethodOutput run_laplace_committee(const UciSplit& split, const MethodSettings& settings,
                                   CommitteeWeighting weighting) {
  std::shared_ptr<const Committee> shared;
  {
    const std::lock_guard<std::mutex> lock(last_committee_mutex);
    const LastCommittee& l = last_committee;
    if (l.committee && l.dataset == split.dataset && l.split == split.index &&
        l.members == settings.committee_members) {
      shared = l.committee;
    }
  }
  Committee c;
  double reused_seconds = 0.0;
  if (shared) {
    c = *shared;
    reweight_committee(&c, weighting);
    reused_seconds = shared->seconds;
  } else {
    LaplaceMethod method = evidence_method(split, settings, HyperStrategy::kEvidence);
    method.committee = CommitteeOptions{};
    method.committee->members = settings.committee_members;
    method.committee->weighting = weighting;
    // With a run folder, each member's fit kept in <run_directory>/<dataset>_<split>_committee as it
    // ends and read back by a later run (CommitteeOptions::directory): a killed row loses at most the
    // member under way, and the row's seconds count the members' own fitting time.
    if (!settings.run_directory.empty()) {
      method.committee->directory = (std::filesystem::path(settings.run_directory) /
                                     (split.dataset + "_" + std::to_string(split.index) + "_committee"))
                                        .string();
    }
    const FittedModel model =
        fit(network_spec(settings, PriorKind::kGroups), split.train, method, fit_progress(settings, split.index));
    c = *model.committee();
    // The row's own time is measured around it; what the members read back took is added.
    reused_seconds = read_back_seconds(c);
    const std::lock_guard<std::mutex> lock(last_committee_mutex);
    last_committee = {split.dataset, split.index, settings.committee_members, std::make_shared<const Committee>(c)};
  }
  MethodOutput out = gaussian_output(c.predict(split.test.X));
  out.reused_seconds = reused_seconds;
  // Converged only when every member is; a failure when one failed; otherwise the first member's
  // ending that is not convergence.
  Termination termination = Termination::kConverged;
  std::string evidences, weights;
  Index i = 0;
  for (const CommitteeMember& m : c.members) {
    char item[64];
    if (!m.failure.empty()) {
      termination = Termination::kFailure;
      evidences += " failed";
      weights += " -";
      continue;
    }
    const Termination t = c.models[static_cast<std::size_t>(i++)].summary.termination;
    if (termination == Termination::kConverged) termination = t;
    std::snprintf(item, sizeof item, " %.6g", m.log_evidence);
    evidences += item;
    std::snprintf(item, sizeof item, " %.3g", m.weight);
    weights += item;
  }
  out.termination = to_string(termination);
  out.detail = "log-evidence + log symmetry" + evidences + "; weights" + weights;
  if (shared) out.detail += "; the members of the row before";
  std::string read_back;
  for (const CommitteeMember& m : c.members)
    if (m.read_back) read_back += " " + std::to_string(m.index + 1);
  if (!shared && !read_back.empty()) out.detail += "; members read back from the run folder:" + read_back;
  return out;
}

// ---------------------------------------------------------------------------------------------
// laplace-hetero: the laplace fit as the mean, then a network of the same shape for log σ²(x) fitted
// by the evidence to the mean's leverage-corrected residuals r_n/√(1 − h_n) (fit_heteroscedastic,
// heteroscedastic.h, with no weighted refit); predictive N(f(x), gᵀA⁻¹g + σ²(x)). The mean is the
// laplace row's own fit, so the two rows differ only in the noise model; with --run-dir it is read
// back from the committee's folder when a laplace-committee row kept its member 1 there (that same
// fit), so that the row fits only the noise network.
// laplace-hetero-refit: the same, then (hetero_refits times) the mean refitted from there by
// weighted least squares, ω_n ∝ 1/σ²(x_n), α and β by the evidence, and the noise network refitted
// to its residuals: the library's default for fit_heteroscedastic.

MethodOutput run_heteroscedastic(const UciSplit& split, const MethodSettings& settings, int refits) {
  const LaplaceMethod method = evidence_method(split, settings, HyperStrategy::kEvidence);
  HeteroscedasticOptions options = heteroscedastic_options_like(method);
  options.weighted_refits = refits;
  const ModelSpec spec = network_spec(settings, PriorKind::kGroups);
  // With a run folder, the mean is the committee's member 1 when that row kept it (the same fit
  // as the laplace row's, read back rather than fitted again: committee.h, read_committee_member);
  // the row's seconds count its fitting time.
  std::optional<FittedModel> kept;
  if (!settings.run_directory.empty()) {
    kept = read_committee_member((std::filesystem::path(settings.run_directory) /
                                  (split.dataset + "_" + std::to_string(split.index) + "_committee"))
                                     .string(),
                                 0, spec, split.train, method);
  }
  MethodOutput out;
  Termination mean_ended = Termination::kConverged;
  double mean_gamma = 0.0, mean_beta = 0.0;
  std::optional<FittedModel> fitted;
  if (kept) {
    out.reused_seconds = kept->summary.seconds;
    mean_ended = kept->summary.termination;
    mean_gamma = kept->report.value("gamma_total", std::numeric_limits<double>::quiet_NaN());
    mean_beta = kept->likelihood->precision();
    fitted = fit_heteroscedastic(std::move(*kept), split.train, method, options, fit_progress(settings, split.index));
  } else {
    fitted = fit_heteroscedastic(spec, split.train, method, options, fit_progress(settings, split.index));
  }
  const FittedModel& m = *fitted;
  if (m.summary.evidence) {  // the mean's own fit, or its refit
    mean_ended = m.summary.evidence->termination;
    mean_gamma = m.summary.evidence->gamma_total;
    mean_beta = m.summary.evidence->beta;
  }
  const MethodOutput predicted = gaussian_output(m.predict(split.test.X));
  out.mean = predicted.mean;
  out.std = predicted.std;
  // Converged only when both stages are; otherwise the first that is not (fit_heteroscedastic).
  out.termination = to_string(m.summary.termination);
  const EvidenceSummary& noise = *m.summary.noise_evidence;
  char detail[260];
  std::snprintf(detail, sizeof detail,
                "mean: %s%s, gamma %.4g, beta %.4g; noise: %s, log-evidence %.6g, gamma %.4g, %d rounds",
                to_string(mean_ended), m.summary.evidence ? "" : " (the committee's member 1, read back)", mean_gamma,
                mean_beta, to_string(noise.termination), noise.log_evidence, noise.gamma_total, noise.outer_iterations);
  out.detail = detail;
  return out;
}

MethodOutput run_laplace_hetero(const UciSplit& split, const MethodSettings& settings) {
  return run_heteroscedastic(split, settings, 0);
}

MethodOutput run_laplace_hetero_refit(const UciSplit& split, const MethodSettings& settings) {
  return run_heteroscedastic(split, settings, settings.hetero_refits);
}

// ---------------------------------------------------------------------------------------------
// vi-meanfield: the MAP at the starting α = 1 (MacKay's four groups), β = 10 gives the start
// N(w_MAP, 1/diag A); mean-field q, α and β are then fitted jointly by the ELBO (docs/vi.md) and
// the predictive is the Monte Carlo one over q, w ~ q, y ~ N(f(x; w), 1/β), summarised by its
// mean and standard deviation: the Gaussian with the mixture's first two moments, scored like
// every other method here.

MethodOutput run_vi_meanfield(const UciSplit& split, const MethodSettings& settings) {
  VariationalMethod method;
  method.start_map.hessian = HessianKind::kGgn;
  method.start_map.map.optimizer = map_optimizer_for(settings, split.train.X.rows());
  method.start_map.map.max_iterations = settings.max_map_iterations;
  method.laplace_at_end = false;
  method.variational.family = parse_variational_family("meanfield");
  method.variational.seed = settings.seed + static_cast<std::uint64_t>(split.index);
  method.start = split_start(split, settings);
  const FittedModel fitted =
      fit(network_spec(settings, PriorKind::kGroups), split.train, method, fit_progress(settings, split.index));
  PredictOptions predict_options;
  predict_options.method = PredictiveMethod::kMonteCarlo;
  predict_options.samples = 1000;
  predict_options.seed = method.variational.seed;
  const VariationalSummary& v = *fitted.summary.variational;

  MethodOutput out = gaussian_output(fitted.predict(split.test.X, predict_options));
  out.termination = to_string(v.termination);
  char detail[200];
  std::snprintf(detail, sizeof detail, "ELBO %.6g, beta %.4g, %d VI steps, %d MAP iterations to the start", v.elbo,
                fitted.likelihood->precision(), v.iterations, fitted.summary.evidence->map_iterations);
  out.detail = detail;
  if (v.termination == Termination::kFailure) out.detail += " (" + v.message + ")";
  return out;
}

// ---------------------------------------------------------------------------------------------
// nuts: NUTS over the weights, alternating with Gibbs draws of α and β from their Gamma full
// conditionals (Neal 1996; the library's default vague Gamma(0.01, 0.01) hyperpriors), from α = 1,
// β = 10 on standardised data. One α for all weights: with MacKay's four groups each α_g and its
// weights form a funnel under the vague hyperprior, and the chains mix badly (docs/mcmc.md).
// Each chain starts from its own MAP fit from its own random initial weights — chain 1 from the
// initial weights every method uses on the split, Rng(seed, split) — so the chains also act like
// a committee over modes. The predictive is the mixture over the kept draws s of
// N(f(x; w_s), 1/β_s), summarised by its mean and variance like vi-meanfield's.
//
// mile: Microcanonical Langevin Ensembles (Sommer et al. 2025, ICLR): the same chains from
// independent MAP fits — the members of a deep ensemble — each moved by MCLMC (docs/mcmc.md,
// "Microcanonical samplers") instead of NUTS, with the same Gibbs steps and predictive. Sommer et
// al. run ten members with a fixed prior; here the chains, priors and hyperparameter draws are
// nuts's, so that the two rows differ in the kernel alone.

// At most this many draws (evenly thinned over every chain) go into the predictive.
constexpr Index kMaxPredictiveDraws = 1000;
// With a run folder: iterations between a chain's checkpoints (the library's default of
// `occam sample`), and the most seconds between updates of the row's record of its time.
constexpr int kRowCheckpointEvery = 100;
constexpr double kTimeRecordSeconds = 10.0;

// Whether `folder` holds a run that was stopped before its end with at least one checkpoint:
// run.json, written last, is absent, and some chain's checkpoint is there.
bool interrupted_run(const std::filesystem::path& folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec) || std::filesystem::exists(folder / "run.json", ec)) return false;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint_", 0) == 0 && entry.path().extension() == ".json") return true;
  }
  return false;
}

// The seconds a row's earlier sessions recorded (0 when there is no record or it is unreadable).
double recorded_seconds(const std::string& path) {
  std::ifstream in(path);
  double seconds = 0.0;
  return in >> seconds && std::isfinite(seconds) && seconds >= 0.0 ? seconds : 0.0;
}

// `progress`, which also writes earlier + the seconds since `start` to `path` (atomically, by a
// rename) every `interval` seconds: a killed session loses at most that much of the row's time.
FitCallback recording_time(FitCallback progress, const std::string& path, double earlier,
                           std::chrono::steady_clock::time_point start, double interval) {
  struct Record {
    std::mutex mutex;
    std::chrono::steady_clock::time_point last;
  };
  auto record = std::make_shared<Record>();
  record->last = start;
  return [progress = std::move(progress), path, earlier, start, interval, record](const FitProgress& p) {
    {
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard<std::mutex> lock(record->mutex);
      if (std::chrono::duration<double>(now - record->last).count() >= interval) {
        record->last = now;
        const std::string partial = path + ".partial";
        std::FILE* f = std::fopen(partial.c_str(), "w");
        if (f != nullptr) {
          const bool ok = std::fprintf(f, "%.3f\n", earlier + std::chrono::duration<double>(now - start).count()) > 0;
          std::error_code ec;
          if (std::fclose(f) == 0 && ok) std::filesystem::rename(partial, path, ec);
        }
      }
    }
    return progress ? progress(p) : CallbackReturn::kContinue;
  };
}

MethodOutput run_chains(const UciSplit& split, const MethodSettings& settings, mcmc::SamplerKind kind) {
  const bool nuts = kind == mcmc::SamplerKind::kNuts;
  SamplingMethod method;
  method.chains.gibbs = true;
  method.chains.init = mcmc::InitKind::kMap;
  method.chains.map_max_iterations = settings.max_map_iterations;
  method.first_chain_start = split_start(split, settings);
  mcmc::SamplerOptions& options = method.sampler;
  options.method = kind;
  options.chains = nuts ? settings.nuts_chains : settings.mile_chains;
  options.threads = settings.nuts_threads;
  options.num_warmup = nuts ? settings.nuts_warmup : settings.mile_warmup;
  options.num_draws = nuts ? settings.nuts_draws : settings.mile_draws;
  options.nuts.max_depth = settings.nuts_max_depth;
  options.microcanonical.max_steps = settings.mile_max_steps;
  // A seed of its own per (seed, split): reruns give the same row, whatever the thread count.
  Rng seeder(settings.seed, (nuts ? 0x6e757473u : 0x6d696c65u) + static_cast<std::uint64_t>(split.index));
  options.seed = seeder.engine()();
  options.validate();
  if (options.num_draws < 4) {
    throw Error(ErrorKind::kInvalidArgument, std::string(nuts ? "nuts" : "mile") + " needs at least 4 draws per chain");
  }
  FitCallback progress = fit_progress(settings, split.index);
  double earlier_seconds = 0.0;
  if (!settings.run_directory.empty()) {
    const std::filesystem::path folder =
        std::filesystem::path(settings.run_directory) /
        (split.dataset + "_" + std::to_string(split.index) + (nuts ? "_nuts" : "_mile"));
    const std::string time_record = folder.string() + ".seconds";
    method.run_directory = folder.string();
    options.checkpoint_every = kRowCheckpointEvery;
    method.resume = interrupted_run(folder);
    if (method.resume) {
      earlier_seconds = recorded_seconds(time_record);
      if (settings.progress) {
        char line[120];
        std::snprintf(line, sizeof line, "resuming the interrupted run in its folder (%.0f s spent on it before)",
                      earlier_seconds);
        settings.progress("split " + std::to_string(split.index) + ", " + line + ": " + folder.string());
      }
    }
    // As often as the progress lines (--heartbeat), and at least every kTimeRecordSeconds.
    progress = recording_time(std::move(progress), time_record, earlier_seconds, std::chrono::steady_clock::now(),
                              std::min(settings.heartbeat_seconds, kTimeRecordSeconds));
  }
  const FittedModel fitted = fit(network_spec(settings, PriorKind::kRidge), split.train, method, progress);
  const mcmc::SamplerSummary& s = *fitted.summary.sampler;
  PredictOptions predict_options;
  predict_options.max_draws = kMaxPredictiveDraws;
  predict_options.seed = options.seed;
  const Prediction p = fitted.predict(split.test.X, predict_options);

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
  double step_min = std::numeric_limits<double>::infinity(), step_max = 0.0, depth = 0.0, length = 0.0;
  double warmup_seconds = 0.0, sampling_seconds = 0.0;
  long long gradients = 0;
  for (const mcmc::ChainSummary& c : s.chains) {
    warmup_seconds += c.warmup_seconds;
    sampling_seconds += c.sampling_seconds;
    divergences += c.divergences;
    depth_hits += c.max_depth_hits;
    step_min = std::min(step_min, c.step_size);
    step_max = std::max(step_max, c.step_size);
    depth += c.mean_tree_depth / static_cast<double>(s.chains.size());
    length += c.trajectory_length / static_cast<double>(s.chains.size());
    gradients += c.gradient_evaluations;
  }
  const auto& draws = std::get<PosteriorDraws>(fitted.posterior);
  const Index S = draws.weights.rows();
  const Index thin = (S + kMaxPredictiveDraws - 1) / kMaxPredictiveDraws;
  const Index used = (S + thin - 1) / thin;  // every thin-th draw (FittedModel::predict)

  MethodOutput out = gaussian_output(p);
  out.reused_seconds = earlier_seconds;
  out.termination = !s.interrupted && max_rhat <= 1.01 ? "converged" : "not_converged";
  char kernel[120];
  if (nuts) {
    std::snprintf(kernel, sizeof kernel, "mean tree depth %.2f (%d at the maximum)", depth, depth_hits);
  } else {
    std::snprintf(kernel, sizeof kernel, "mean L %.3g, %.0f gradients per iteration", length,
                  static_cast<double>(gradients) /
                      (static_cast<double>(s.chains.size()) * (options.num_warmup + options.num_draws)));
  }
  char detail[460];
  std::snprintf(detail, sizeof detail,
                "%zu chains x (%d + %d), %lld draws in the predictive; max R-hat %.3f (%s), min bulk ESS %.0f; "
                "%d divergences, step size %.3g-%.3g, %s; beta %.4g; "
                "chain time %.0f s MAP + warm-up, %.0f s sampling",
                s.chains.size(), options.num_warmup, options.num_draws, static_cast<long long>(used), max_rhat,
                worst.c_str(), min_ess, divergences, step_min, step_max, kernel, draws.betas.mean(), warmup_seconds,
                sampling_seconds);
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
      {"map-cv", "MAP weights; lambda = alpha/beta by k-fold cross-validation, beta = 1/validation MSE", run_map_cv},
      {"laplace", "Laplace (Gauss-Newton) with alpha per weight group and beta by MacKay's evidence",
       [](const UciSplit& s, const MethodSettings& m) {
         return run_evidence(s, m, HyperStrategy::kEvidence, PriorKind::kGroups);
       }},
      {"laplace-integrate", "Laplace (Gauss-Newton) with one alpha and beta integrated out under 1/sigma priors",
       [](const UciSplit& s, const MethodSettings& m) {
         return run_evidence(s, m, HyperStrategy::kIntegrate, PriorKind::kRidge);
       }},
      {"laplace-committee", "committee of laplace fits from independent starts, weighted by their evidence",
       [](const UciSplit& s, const MethodSettings& m) {
         return run_laplace_committee(s, m, CommitteeWeighting::kEvidence);
       }},
      {"laplace-ensemble", "the laplace-committee's members, weighted equally",
       [](const UciSplit& s, const MethodSettings& m) {
         return run_laplace_committee(s, m, CommitteeWeighting::kEqual);
       }},
      {"laplace-hetero",
       "laplace's mean and a second network for the log noise variance, fitted by the evidence "
       "to the leverage-corrected residuals",
       run_laplace_hetero},
      {"laplace-hetero-refit",
       "laplace-hetero, then the mean refitted by weighted least squares (weights "
       "1/sigma^2(x) from the noise network) and the noise network refitted to its residuals",
       run_laplace_hetero_refit},
      {"vi-meanfield",
       "mean-field Gaussian q with alpha per weight group and beta learned by the ELBO; Monte Carlo "
       "predictive",
       run_vi_meanfield},
      {"nuts",
       "NUTS over the weights with one alpha and beta by Gibbs; chains from MAP fits; Monte Carlo "
       "predictive",
       [](const UciSplit& s, const MethodSettings& m) { return run_chains(s, m, mcmc::SamplerKind::kNuts); }},
      {"mile",
       "Microcanonical Langevin Ensembles: MCLMC over the weights from independent MAP fits, one alpha and "
       "beta by Gibbs; Monte Carlo predictive",
       [](const UciSplit& s, const MethodSettings& m) { return run_chains(s, m, mcmc::SamplerKind::kMclmc); }},
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

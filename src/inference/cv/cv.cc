// cv.cc — folds, splits, and cross-validation over a grid of prior precisions.

#include "occam/cv.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>

#include "model/likelihoods/gauss_hermite.h"
#include "occam/fit.h"
#include "occam/laplace.h"
#include "occam/map.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam {
namespace {

// Stream ids keep the fold shuffle independent of every other use of the same seed.
constexpr std::uint64_t kFoldStream = 0x666f6c64;

std::vector<Index> permutation(Index n, std::uint64_t seed, bool shuffle) {
  std::vector<Index> order(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  if (!shuffle) return order;
  Rng rng(seed, kFoldStream);
  // Fisher–Yates with the platform-independent Rng (std::shuffle's output is library-specific).
  for (Index i = n - 1; i > 0; --i) {
    const auto j = static_cast<Index>(rng.uniform_int(static_cast<std::uint64_t>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

// Rows grouped by class, each group in shuffled order, classes in ascending label order.
std::vector<std::vector<Index>> shuffled_classes(const Eigen::VectorXd& labels, std::uint64_t seed, bool shuffle) {
  std::map<double, std::vector<Index>> by_class;
  for (Index i : permutation(labels.size(), seed, shuffle)) by_class[labels[i]].push_back(i);
  std::vector<std::vector<Index>> classes;
  for (auto& [label, rows] : by_class) classes.push_back(std::move(rows));
  return classes;
}

std::vector<Fold> folds_from_assignment(const std::vector<int>& fold_of, int k) {
  std::vector<Fold> folds(static_cast<std::size_t>(k));
  for (std::size_t i = 0; i < fold_of.size(); ++i) {
    for (int f = 0; f < k; ++f) {
      auto& fold = folds[static_cast<std::size_t>(f)];
      (fold_of[i] == f ? fold.test : fold.train).push_back(static_cast<Index>(i));
    }
  }
  return folds;
}

double mean_of(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// The standard error of the mean over folds, s/√k (0 for one fold).
double standard_error(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double mu = mean_of(v);
  double ss = 0.0;
  for (double x : v) ss += (x - mu) * (x - mu);
  return std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size()));
}

// The spec at one grid value: every α_g (kAlpha), or λ_s with the α_g held (kSmoothing).
ModelSpec at_grid_value(const ModelSpec& spec, CvTarget target, double value) {
  ModelSpec out = spec;
  (target == CvTarget::kSmoothing ? out.prior.smoothing : out.prior.alpha) = value;
  return out;
}

// The rows of a data set (its offset too).
Dataset take(const Dataset& data, const std::vector<Index>& rows) {
  Dataset out = data;
  out.X = take_rows(data.X, rows);
  out.Y = take_rows(data.Y, rows);
  if (data.offset.size() > 0) out.offset = data.offset(rows);
  return out;
}

// The fit at one grid value: the prior held, β (Gaussian) re-estimated by the evidence; without
// β there is nothing to re-estimate and it is one MAP run.
FittedModel fit_at(const ModelSpec& spec, const Dataset& data, const CvOptions& options, const FitCallback& callback) {
  LaplaceMethod method;
  method.evidence = options.fit;
  method.evidence.fix_prior = true;
  if (spec.likelihood.kind != LikelihoodKind::kGaussian) method.evidence.strategy = HyperStrategy::kFixed;
  method.start.seed = options.fit.map.seed;
  method.memory = options.memory;
  return fit(spec, data, method, callback);
}

}  // namespace

void KFoldOptions::validate(Index rows) const {
  if (folds < 2) invalid_option("KFoldOptions", "folds", folds, "must be at least 2");
  if (folds > rows) invalid_option("KFoldOptions", "folds", folds, "must not exceed the number of rows");
}

std::vector<Fold> kfold(Index n, const KFoldOptions& options) {
  options.validate(n);
  const std::vector<Index> order = permutation(n, options.seed, options.shuffle);
  std::vector<int> fold_of(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i)
    fold_of[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = static_cast<int>(i % options.folds);
  return folds_from_assignment(fold_of, options.folds);
}

std::vector<Fold> stratified_kfold(const Eigen::VectorXd& labels, const KFoldOptions& options) {
  options.validate(labels.size());
  std::vector<int> fold_of(static_cast<std::size_t>(labels.size()));
  // Deal each class's rows round the folds, continuing where the previous class stopped so that
  // fold sizes stay within one of each other as well.
  int next = 0;
  for (const auto& rows : shuffled_classes(labels, options.seed, options.shuffle)) {
    for (Index i : rows) {
      fold_of[static_cast<std::size_t>(i)] = next;
      next = (next + 1) % options.folds;
    }
  }
  return folds_from_assignment(fold_of, options.folds);
}

Fold holdout_split(Index n, double fraction, std::uint64_t seed, const Eigen::VectorXd* labels) {
  if (!(fraction > 0.0 && fraction < 1.0)) invalid_option("holdout_split", "fraction", fraction, "must lie in (0, 1)");
  if (n < 2) throw Error(ErrorKind::kInvalidArgument, "holdout_split: needs at least 2 rows");
  Fold fold;
  std::vector<char> held(static_cast<std::size_t>(n), 0);
  if (labels != nullptr) {
    if (labels->size() != n) throw Error(ErrorKind::kInvalidArgument, "holdout_split: one label per row is needed");
    // Per class, the same fraction (rounded) is held out.
    for (const auto& rows : shuffled_classes(*labels, seed, true)) {
      const auto take = static_cast<std::size_t>(std::llround(fraction * static_cast<double>(rows.size())));
      for (std::size_t i = 0; i < std::min(take, rows.size()); ++i) held[static_cast<std::size_t>(rows[i])] = 1;
    }
  } else {
    const std::vector<Index> order = permutation(n, seed, true);
    const auto take = std::clamp<Index>(std::llround(fraction * static_cast<double>(n)), 1, n - 1);
    for (Index i = 0; i < take; ++i) held[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 1;
  }
  for (Index i = 0; i < n; ++i) (held[static_cast<std::size_t>(i)] ? fold.test : fold.train).push_back(i);
  if (fold.test.empty() || fold.train.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "holdout_split: the split leaves an empty part; change the fraction");
  }
  return fold;
}

ThreeWaySplit train_validation_test_split(Index n, double validation_fraction, double test_fraction, std::uint64_t seed,
                                          const Eigen::VectorXd* labels) {
  if (!(validation_fraction > 0.0 && test_fraction > 0.0 && validation_fraction + test_fraction < 1.0)) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "train_validation_test_split: the validation and test fractions must be positive and sum to less than 1");
  }
  // Test first, then validation out of the rest, so that the test rows do not depend on the
  // validation fraction.
  const Fold outer = holdout_split(n, test_fraction, seed, labels);
  Eigen::VectorXd rest_labels;
  if (labels != nullptr) {
    rest_labels.resize(static_cast<Index>(outer.train.size()));
    for (std::size_t i = 0; i < outer.train.size(); ++i) rest_labels[static_cast<Index>(i)] = (*labels)[outer.train[i]];
  }
  const Fold inner = holdout_split(static_cast<Index>(outer.train.size()), validation_fraction / (1.0 - test_fraction),
                                   seed + 1, labels != nullptr ? &rest_labels : nullptr);
  ThreeWaySplit split;
  split.test = outer.test;
  for (Index i : inner.train) split.train.push_back(outer.train[static_cast<std::size_t>(i)]);
  for (Index i : inner.test) split.validation.push_back(outer.train[static_cast<std::size_t>(i)]);
  return split;
}

Eigen::MatrixXd take_rows(const Eigen::MatrixXd& M, const std::vector<Index>& rows) { return M(rows, Eigen::all); }

std::vector<double> log_grid(double lo, double hi, int count) {
  if (!(lo > 0.0) || !(hi > lo) || !std::isfinite(hi) || count < 2 || count > kMaxGridPoints) {
    throw Error(ErrorKind::kInvalidArgument,
                "a log grid needs 0 < lo < hi < ∞ and from 2 to " + std::to_string(kMaxGridPoints) + " points");
  }
  std::vector<double> grid;
  for (int i = 0; i < count; ++i) {
    grid.push_back(std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * i / (count - 1)));
  }
  return grid;
}

std::vector<double> parse_log_grid(std::string_view text) {
  const auto bad = [&] {
    return Error(ErrorKind::kInvalidArgument,
                 "grid must be LO:HI:COUNT with 0 < LO < HI, both finite, and COUNT from 2 to " +
                     std::to_string(kMaxGridPoints) + " (e.g. 1e-3:1e3:25), got '" + std::string(text) + "'");
  };
  const auto c1 = text.find(':');
  const auto c2 = c1 == std::string_view::npos ? c1 : text.find(':', c1 + 1);
  if (c2 == std::string_view::npos) throw bad();
  try {
    std::size_t used = 0;
    const std::string a(text.substr(0, c1)), b(text.substr(c1 + 1, c2 - c1 - 1)), c(text.substr(c2 + 1));
    const double lo = std::stod(a, &used);
    if (used != a.size()) throw bad();
    const double hi = std::stod(b, &used);
    if (used != b.size()) throw bad();
    const int count = std::stoi(c, &used);
    if (used != c.size()) throw bad();
    return log_grid(lo, hi, count);
  } catch (const std::logic_error&) {
    throw bad();
  } catch (const Error&) {
    throw bad();
  }
}

void CvOptions::validate(Index rows) const {
  folds.validate(rows);
  fit.validate();
  if (alphas.empty()) throw Error(ErrorKind::kInvalidArgument, "CvOptions: the grid of alphas is empty");
  for (double a : alphas) {
    if (!(a > 0.0) || !std::isfinite(a)) invalid_option("CvOptions", "alphas", a, "every value must be positive");
  }
}

void latent_belief(const Network& network, const LaplaceApproximation& q, const Eigen::MatrixXd& X,
                   Eigen::MatrixXd* f_mean, Eigen::MatrixXd* f_var) {
  linearized_outputs(network, q, X, /*centre_outputs=*/false, f_mean, f_var);
}

Eigen::VectorXd log_predictive_density(const Likelihood& likelihood, const Eigen::MatrixXd& f_mean,
                                       const Eigen::MatrixXd& f_var, const Eigen::MatrixXd& Y) {
  const Index n = f_mean.rows();
  Eigen::VectorXd out(n);
  if (likelihood.num_classes() > 0 && likelihood.num_outputs() > 1) {
    const Eigen::MatrixXd P = likelihood.predictive_probabilities(f_mean, f_var);
    for (Index i = 0; i < n; ++i) out[i] = std::log(std::max(P(i, static_cast<Index>(Y(i, 0))), 1e-300));
    return out;
  }
  if (likelihood.num_outputs() > 1 || likelihood.has_precision()) {
    // Gaussian in y: exact for the Gaussian likelihood, the moment-matched approximation for hetero.
    Eigen::VectorXd mean, var, lower, upper;
    likelihood.predictive_outputs(f_mean, f_var, 0.5, &mean, &var, &lower, &upper);
    for (Index i = 0; i < n; ++i) {
      const double r = Y(i, 0) - mean[i];
      out[i] = -0.5 * std::log(2.0 * std::numbers::pi * var[i]) - 0.5 * r * r / var[i];
    }
    return out;
  }
  // log ∫ p(y|f) N(f; μ, s²) df by Gauss–Hermite with log-sum-exp over the nodes.
  static const internal::GaussHermite rule(32);
  Eigen::MatrixXd F(1, 1);
  for (Index i = 0; i < n; ++i) {
    const Eigen::MatrixXd y = Y.row(i);
    double top = -std::numeric_limits<double>::infinity();
    Eigen::VectorXd terms(rule.nodes.size());
    for (Index j = 0; j < rule.nodes.size(); ++j) {
      F(0, 0) = f_mean(i, 0) + std::sqrt(std::max(f_var(i, 0), 0.0)) * rule.nodes[j];
      terms[j] = std::log(rule.weights[j]) + likelihood.log_likelihood(F, y, nullptr);
      top = std::max(top, terms[j]);
    }
    out[i] = top + std::log((terms.array() - top).exp().sum());
  }
  return out;
}

CvSummary cross_validate(const ModelSpec& spec, const Dataset& data, const CvOptions& options,
                         const FitCallback& callback) {
  options.validate(data.X.rows());
  spec.validate();
  check_value_scales(data, spec.standardization(), spec.likelihood.real_valued_targets());
  if (options.target == CvTarget::kSmoothing && spec.prior.kind != PriorKind::kLaplacian) {
    throw Error(ErrorKind::kInvalidArgument, "cross-validating the smoothing precision needs a laplacian prior");
  }
  const auto start = std::chrono::steady_clock::now();
  CvSummary summary;
  const bool classification =
      spec.likelihood.kind == LikelihoodKind::kBernoulli || spec.likelihood.kind == LikelihoodKind::kCategorical;
  summary.classification = classification;
  const std::vector<Fold> folds = classification && options.stratify ? stratified_kfold(data.Y.col(0), options.folds)
                                                                     : kfold(data.X.rows(), options.folds);
  bool stopped = false;
  const FitCallback watch = [&](const FitProgress& p) {
    if (callback && callback(p) == CallbackReturn::kAbort) stopped = true;
    return stopped ? CallbackReturn::kAbort : CallbackReturn::kContinue;
  };
  const int total = static_cast<int>(options.alphas.size());
  for (int a = 0; a < total && !stopped; ++a) {
    CvPoint point;
    point.alpha = options.alphas[static_cast<std::size_t>(a)];
    const ModelSpec grid_spec = at_grid_value(spec, options.target, point.alpha);
    std::vector<double> lls, mses, accs, briers;
    for (const Fold& fold : folds) {
      const FittedModel model = fit_at(grid_spec, take(data, fold.train), options, watch);
      if (stopped) break;
      if (model.summary.termination == Termination::kFailure) ++point.failed_fits;
      const Dataset test = take(data, fold.test);
      const Likelihood& likelihood = *model.likelihood;
      const LaplaceApproximation& q = std::get<LaplaceApproximation>(model.posterior);
      Eigen::MatrixXd f_mean, f_var;
      const bool softmax = likelihood.num_classes() > 0 && likelihood.num_outputs() > 1;
      linearized_outputs(*model.network, q, model.standardizer.transform_inputs(test.X), softmax, &f_mean, &f_var);
      if (test.offset.size() > 0) f_mean.col(0) += test.offset;
      const Standardizer& s = model.standardizer;
      const Eigen::MatrixXd Yt = s.standardizes_targets() ? s.transform_targets(test.Y) : test.Y;
      // In the target's original units: the density of y carries the Jacobian 1/y_scale.
      lls.push_back(log_predictive_density(likelihood, f_mean, f_var, Yt).mean() - std::log(s.y_scale));
      if (classification) {
        const Eigen::MatrixXd P = likelihood.predictive_probabilities(f_mean, f_var);
        double correct = 0.0, brier = 0.0;
        for (Index i = 0; i < P.rows(); ++i) {
          Index best;
          P.row(i).maxCoeff(&best);
          const auto label = static_cast<Index>(test.Y(i, 0));
          correct += best == label ? 1.0 : 0.0;
          for (Index c = 0; c < P.cols(); ++c) brier += std::pow(P(i, c) - (c == label ? 1.0 : 0.0), 2);
        }
        accs.push_back(correct / static_cast<double>(P.rows()));
        briers.push_back(brier / static_cast<double>(P.rows()));
      } else {
        Eigen::VectorXd mean, var, lower, upper;
        likelihood.predictive_outputs(f_mean, f_var, 0.5, &mean, &var, &lower, &upper);
        const Eigen::VectorXd y_hat = s.standardizes_targets() ? Eigen::VectorXd(s.targets_to_original(mean)) : mean;
        mses.push_back((test.Y.col(0) - y_hat).squaredNorm() / static_cast<double>(test.Y.rows()));
      }
    }
    if (stopped) break;
    point.test_log_likelihood = mean_of(lls);
    point.test_log_likelihood_se = standard_error(lls);
    if (classification) {
      point.accuracy = mean_of(accs);
      point.accuracy_se = standard_error(accs);
      point.brier = mean_of(briers);
      point.brier_se = standard_error(briers);
    } else {
      point.mse = mean_of(mses);
      point.mse_se = standard_error(mses);
    }
    point.log_evidence = std::numeric_limits<double>::quiet_NaN();
    if (options.with_evidence) {
      const FittedModel whole = fit_at(grid_spec, data, options, watch);
      if (stopped) break;
      point.log_evidence = whole.summary.log_evidence;
    }
    summary.points.push_back(point);
    FitProgress progress;
    progress.grid_point = a;
    progress.iteration = a + 1;
    progress.total = total;
    watch(progress);
  }
  for (int a = 0; a < static_cast<int>(summary.points.size()); ++a) {
    const CvPoint& p = summary.points[static_cast<std::size_t>(a)];
    if (summary.best_cv < 0 ||
        p.test_log_likelihood > summary.points[static_cast<std::size_t>(summary.best_cv)].test_log_likelihood) {
      summary.best_cv = a;
    }
    if (options.with_evidence &&
        (summary.best_evidence < 0 ||
         p.log_evidence > summary.points[static_cast<std::size_t>(summary.best_evidence)].log_evidence)) {
      summary.best_evidence = a;
    }
  }
  summary.interrupted = stopped;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace occam

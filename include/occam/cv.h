// cv.h — cross-validation beside the evidence: folds, splits, and a grid of prior precisions.
//
// k-fold splits (shuffled with a seed; stratified by class for classification), a held-out
// validation split and a train/validation/test split. cross_validate() (fit.h) fits the model on
// every training fold for each α of a grid and scores the held-out fold (test log-likelihood,
// MSE or accuracy and Brier score, mean ± standard error over folds); over the same grid it
// reports the Laplace log-evidence of the whole data set, so that the two maxima can be compared.
//
//   occam::CvOptions options;  options.alphas = occam::log_grid(1e-3, 1e3, 25);
//   occam::CvSummary cv = occam::cross_validate(spec, data, options);
//   double alpha_cv = cv.points[cv.best_cv].alpha, alpha_ev = cv.points[cv.best_evidence].alpha;
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "occam/data.h"
#include "occam/evidence.h"
#include "occam/likelihood.h"
#include "occam/memory.h"
#include "occam/network.h"
#include "occam/prior.h"

namespace occam {

struct Fold {
  std::vector<Index> train;  // row indices, ascending
  std::vector<Index> test;   // row indices, ascending
};

struct KFoldOptions {
  int folds = 10;
  std::uint64_t seed = 1;
  bool shuffle = true;
  void validate(Index rows) const;  // throws Error(kInvalidArgument) (e.g. more folds than rows)
};

// k folds of rows 0..n−1: each row is in exactly one test fold; fold sizes differ by at most one.
std::vector<Fold> kfold(Index n, const KFoldOptions& options);
// The same with each class's rows dealt round the folds in turn, so every fold holds each class
// in (nearly) its overall proportion. `labels` are class indices (any integers).
std::vector<Fold> stratified_kfold(const Eigen::VectorXd& labels, const KFoldOptions& options);

// A held-out validation split: round(fraction·n) rows (at least one) go to `test`.
// With labels, the split is stratified.
Fold holdout_split(Index n, double fraction, std::uint64_t seed, const Eigen::VectorXd* labels = nullptr);

struct ThreeWaySplit {
  std::vector<Index> train, validation, test;
};
ThreeWaySplit train_validation_test_split(Index n, double validation_fraction, double test_fraction, std::uint64_t seed,
                                          const Eigen::VectorXd* labels = nullptr);

// The rows `rows` of M.
Eigen::MatrixXd take_rows(const Eigen::MatrixXd& M, const std::vector<Index>& rows);

// Each grid value is a full k-fold cross-validation: more points than this is a typing error, and
// the grid is refused before it is allocated.
inline constexpr int kMaxGridPoints = 10000;
// count values log-spaced from lo to hi (2 ≤ count ≤ kMaxGridPoints, hi finite), and
// "1e-3:1e3:25" parsed into one. Throw Error(kInvalidArgument).
std::vector<double> log_grid(double lo, double hi, int count);
std::vector<double> parse_log_grid(std::string_view text);

// Which prior hyperparameter the grid sets: every α_g (ridge, groups, ard), or λ_s with the
// α_g held at their values in the prior given (laplacian).
enum class CvTarget { kAlpha, kSmoothing };

struct CvOptions {
  std::vector<double> alphas;  // the grid (standardised units when inputs are standardised)
  CvTarget target = CvTarget::kAlpha;
  KFoldOptions folds;
  bool stratify = true;       // classification only
  EvidenceOptions fit;        // MAP options; β (Gaussian) is re-estimated with α held
  bool with_evidence = true;  // the log-evidence curve on the whole data
  MemoryLimit memory;         // every fit's limit (fit.h)
  void validate(Index rows) const;
};

struct CvPoint {
  double alpha = 0.0;
  double test_log_likelihood = 0.0, test_log_likelihood_se = 0.0;  // mean per row, over folds
  double mse = 0.0, mse_se = 0.0;                                  // regression (original units)
  double accuracy = 0.0, accuracy_se = 0.0;                        // classification
  double brier = 0.0, brier_se = 0.0;                              // classification
  double log_evidence = 0.0;  // whole data, original units (NaN without with_evidence)
  int failed_fits = 0;        // folds whose MAP did not converge (their scores are still used)
};

struct CvSummary {
  std::vector<CvPoint> points;  // one per grid value done (all of them unless interrupted)
  bool classification = false;
  int best_cv = -1;          // highest mean test log-likelihood
  int best_evidence = -1;    // highest log-evidence (-1 without with_evidence)
  bool interrupted = false;  // a callback stopped the run before the end of the grid
  double seconds = 0.0;
};

// Mean log predictive density log p(y | x, D) per row under the linearised Laplace predictive:
// exact for Gaussian, Gauss–Hermite over f for Bernoulli and Poisson, the extended probit for
// categorical, the Gaussian approximation for hetero. f_mean, f_var are m × K.
Eigen::VectorXd log_predictive_density(const Likelihood& likelihood, const Eigen::MatrixXd& f_mean,
                                       const Eigen::MatrixXd& f_var, const Eigen::MatrixXd& Y);

// The linearised latent belief N(f_mean, f_var) (m × K each) at the rows of X.
void latent_belief(const Network& network, const LaplaceApproximation& q, const Eigen::MatrixXd& X,
                   Eigen::MatrixXd* f_mean, Eigen::MatrixXd* f_var);

}  // namespace occam

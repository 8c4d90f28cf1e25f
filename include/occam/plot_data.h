// plot_data.h — the numbers behind occam's diagnostic pictures (`occam plot`, occam.plot_* in
// Python): rank histograms of a sampling run's chains, the calibration curve and the predictive
// band of a fitted model on data, and the evidence ascent of a fit report. Computed here, once,
// so that every front end draws the same numbers; drawing them is the front end's job.
//
//   occam::FittedModel model = occam::load_model("model.json");
//   occam::CalibrationCurve c = occam::calibration_curve(model, occam::read_csv("test.csv"));
//   for (Eigen::Index k = 0; k < c.nominal.size(); ++k) std::cout << c.nominal(k) << ' ' << c.empirical(k) << '\n';
#pragma once

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/fitted_model.h"
#include "occam/predict.h"

namespace occam {

// Rank plots (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021, "Rank-normalization, folding,
// and localization", Sec. 4.1): every draw of every chain is ranked among all of them (ties
// share their average rank; ranks 1 … S·C) and each chain's ranks are counted in `bins` equal
// bins. Chains that explore the same distribution give flat histograms of about S/bins each.
// `draws` is iterations × chains (SamplerSummary::column). Returns bins × chains counts. Throws
// Error(kInvalidArgument) when bins < 1 or there are no draws.
Eigen::MatrixXi rank_histograms(const Eigen::MatrixXd& draws, int bins);

// Counts of `values` in `bins` equal bins over [lower, upper] (a value equal to `upper` falls in
// the last bin; values outside are not counted). Throws Error(kInvalidArgument) when bins < 1 or
// the range is empty or not finite.
struct Histogram {
  Eigen::VectorXd edges;   // bins + 1
  Eigen::VectorXi counts;  // bins
};
Histogram histogram(const Eigen::VectorXd& values, int bins, double lower, double upper);

// Empirical coverage of the model's central predictive intervals on data with known targets:
// for each nominal level p, the fraction of rows whose target lies in the central p interval
// (FittedModel::predict at level p; Monte Carlo predictives use the same seed at every level,
// so the intervals nest). A calibrated model follows the diagonal within about
// ±2·√(p(1−p)/m). For regression and count models; a classifier is refused
// (Error(kInvalidArgument)), as is a table without the model's target column.
struct CalibrationCurve {
  Eigen::VectorXd nominal;    // the levels asked for, increasing
  Eigen::VectorXd empirical;  // fraction of rows inside, per level
  Eigen::VectorXd std_error;  // √(p(1−p)/m): the binomial spread of `empirical` for a calibrated model
  Eigen::Index rows = 0;
};
// Levels 0.05, 0.10, …, 0.95 when `levels` is empty.
CalibrationCurve calibration_curve(const FittedModel& model, const Table& data, std::vector<double> levels = {},
                                   PredictOptions options = {});

// The targets of `data` (the model's target column) beside the model's prediction at its rows.
struct PredictedObserved {
  Eigen::VectorXd observed;
  Prediction prediction;  // at options.level
};
PredictedObserved predicted_observed(const FittedModel& model, const Table& data, const PredictOptions& options = {});

// The predictive along one input: `points` values evenly over the range of that input in `data`
// (widened by 5% each side), every other input held at its mean over `data`. Throws
// Error(kInvalidArgument) for an input the model does not have or points < 2.
struct PredictiveBand {
  std::string input;
  Eigen::VectorXd x;              // the input's values, increasing
  Prediction prediction;          // at those rows
  std::vector<std::string> held;  // the other inputs, each held at its mean
  Eigen::VectorXd held_at;
};
PredictiveBand predictive_band(const FittedModel& model, const Table& data, const std::string& input, int points = 200,
                               const PredictOptions& options = {});

// The evidence framework's ascent from a fit report (fit_report(), or a model file's "summary"):
// one entry per re-estimation round, with the log-evidence at the α, β that round's MAP ran at
// (standardised units, as the report's trace holds it). Throws Error(kInvalidInput) when the
// report has no evidence trace (a fit without re-estimation: MCMC, VI's own loop, fixed α and β).
struct EvidenceAscent {
  std::vector<int> step;
  Eigen::VectorXd log_evidence;  // NaN where the report has null
  std::vector<std::string> alpha_names;
  Eigen::MatrixXd alpha;       // steps × groups
  Eigen::VectorXd beta;        // NaN for likelihoods without β
  std::vector<bool> accepted;  // false: a round whose step was undone
};
EvidenceAscent evidence_ascent(const nlohmann::json& report);

}  // namespace occam

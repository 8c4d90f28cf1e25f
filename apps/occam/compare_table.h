// compare_table.h — the table of networks side by side that `compare` and `demo` print: the
// evidence of each, and how it does on test data.
#pragma once

#include <Eigen/Core>
#include <optional>
#include <string>
#include <vector>

#include "occam/fitted_model.h"

namespace occam::cli {

// The mean Gaussian log predictive density log N(y; mean, std²) over the rows, and the RMSE, of
// a model's default predictive.
struct TestMetrics {
  double rmse = 0.0;
  double mean_log_likelihood = 0.0;
};
TestMetrics test_metrics(const FittedModel& model, const Eigen::MatrixXd& X, const Eigen::VectorXd& y);

struct CompareRow {
  Index hidden = 0;
  std::optional<FittedModel> fit;  // empty when the fit failed
  std::string failure;             // why, when it failed
  std::optional<TestMetrics> test;
};
// The table as text, the row with the highest evidence including the symmetry term marked '*'.
// Returns the index of that row in *best (-1 if every fit failed).
std::string compare_table(const std::vector<CompareRow>& rows, bool with_test, int* best);
// The same as CSV (one row per successful fit; `best` is 1 on the marked row).
std::string compare_csv(const std::vector<CompareRow>& rows, bool with_test, int best);

}  // namespace occam::cli

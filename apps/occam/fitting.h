// fitting.h — what `fit`, `compare` and `demo` share: the model options, one evidence fit on a
// data set, and the numbers reported about it.
#pragma once

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "occam/data.h"
#include "occam/evidence.h"
#include "occam/io.h"
#include "occam/vi.h"
#include "progress.h"

namespace occam::cli {

// The command-line choices that define a model and how it is fitted, as the user typed them.
struct ModelOptions {
  std::string model = "mlp";                  // mlp | linear
  std::vector<Index> hidden = {50};           // hidden layer sizes (mlp)
  std::string activation = "tanh";
  std::string method = "laplace";             // laplace | vi
  std::string hyper = "evidence";             // evidence | periodic | quick | integrate | fixed (laplace);
                                              // elbo | elbo-closed | fixed (vi; "evidence" means elbo)
  std::optional<double> alpha;                // fixed value, or the starting value
  std::optional<double> beta;
  std::string hessian = "ggn";
  std::string alpha_groups = "default";
  std::string standardize = "both";
  bool no_intercept = false;                  // linear only
  std::string optimizer = "auto";
  int max_iterations = MapOptions{}.max_iterations;
  std::uint64_t seed = 1;
  // GLMs and priors (docs/likelihoods/, docs/priors/).
  std::string likelihood = "gaussian";        // gaussian | bernoulli | poisson | categorical | hetero
  std::string prior;                          // ridge | groups | ard | laplacian; empty: from --alpha-groups
  std::string grid;                           // laplacian: "20x20" or a chain length "40"
  std::string edges;                          // laplacian: an edge-list file instead of --grid
  std::optional<double> smoothing;            // laplacian: λ_s, fixed or starting value
  std::string offset;                         // poisson: the column added to the linear predictor
  std::vector<std::string> labels;            // categorical: the class labels (set from the data)
  // --method vi (docs/vi.md)
  std::string family = "fullrank";            // fullrank | meanfield | lowrank:R
  int mc_samples = VariationalOptions{}.mc_samples;
  Index batch_size = 0;                       // rows per VI step, 0 = all
  int vi_iterations = VariationalOptions{}.max_iterations;
  double learning_rate = VariationalOptions{}.learning_rate;
  double vi_tolerance = VariationalOptions{}.relative_tolerance;
};

// True for the families whose targets are standardised with the inputs (gaussian, hetero).
bool real_valued_targets(const ModelOptions& options);
// Reads the training table for the chosen likelihood: categorical targets may be words or
// numbers (the sorted label set goes into options->labels, Y holds class indices); a Poisson
// --offset column leaves the inputs and becomes Y's second column.
Dataset load_training_data(const std::string& path, const std::string& target, ModelOptions* options);
// The prior the options ask for, on `network` (input names for ARD's groups).
Prior make_prior_from_options(const Network& network, const ModelOptions& options,
                              const std::vector<std::string>& input_names);

// Starting values when the user gives none. With standardised data a unit prior precision is a
// weak prior on O(1) weights, and β = 10 says "noise is a third of the target's spread": both are
// only starting points for the evidence updates.
inline constexpr double kDefaultAlpha = 1.0;
inline constexpr double kDefaultBeta = 10.0;

// Parses "50" or "20,20" into layer sizes; throws Error(kInvalidArgument).
std::vector<Index> parse_layer_sizes(const std::string& text, const char* option);
// A CLI11 validator for such a list.
CLI::Validator LayerSizesValidator();

// Registers the model options on a subcommand. `with_hidden` is false for `compare`, which has
// its own --hidden (a list of sizes to compare).
void add_model_options(CLI::App* command, ModelOptions* options, bool with_hidden);
// Cross-option checks CLI11 cannot express (e.g. --no-intercept only with --model linear).
void check_model_options(const CLI::App& command, const ModelOptions& options);

// One fitted model and what is reported about it.
struct FitResult {
  ModelFile model;                  // ready for save_model; model.summary holds report_json()
  EvidenceSummary summary;
  double log_evidence = 0.0;        // in the target's original units (see fitting.cc)
  double symmetry_log_factor = 0.0; // log(H!) + H log 2 over well-determined hidden units (evidence.h)
  double train_rmse = 0.0;          // original units (NaN for classifiers)
  double train_accuracy = 0.0;      // classifiers only (NaN otherwise)
  Index num_data = 0;
  Index num_params = 0;
  std::vector<Index> hidden;        // hidden layer sizes (empty for a linear model)
  // --method vi: the variational fit. `summary` then holds the Laplace fit at the α, β the ELBO
  // chose (same model, same hyperparameters), and `elbo` its lower bound in the target's units.
  std::optional<VariationalSummary> vi;
  double elbo = 0.0;
};

// Standardises `train`, builds the network and prior, and runs fit_evidence. `hidden` overrides
// options.hidden (compare, demo). Progress goes to `progress` (which may be disabled).
FitResult fit_model(const Dataset& train, const ModelOptions& options, const std::vector<Index>& hidden,
                    Progress* progress, const std::string& progress_prefix = "");

// The fit's report: termination, log-evidence, α per group, β, γ, train RMSE, timings, the
// network and the options used.
nlohmann::json report_json(const FitResult& result, const ModelOptions& options);
// A few lines for a person: termination, log-evidence, α per group, β, γ, train RMSE, time.
std::string brief_report(const FitResult& result);

// The mean Gaussian log predictive density log N(y; mean, std²) over the rows, and the RMSE.
struct TestMetrics {
  double rmse = 0.0;
  double mean_log_likelihood = 0.0;
};
TestMetrics test_metrics(const ModelFile& model, const Eigen::MatrixXd& X, const Eigen::VectorXd& y);

// A row of the compare table (also printed by the demo).
struct CompareRow {
  Index hidden = 0;
  std::optional<FitResult> fit;             // empty when the fit failed
  std::string failure;                      // why, when it failed
  std::optional<TestMetrics> test;
};
// The table as text, the row with the highest evidence including the symmetry term marked '*'.
// Returns the index of that row in *best (-1 if every fit failed).
std::string compare_table(const std::vector<CompareRow>& rows, bool with_test, int* best);
// The same as CSV (one row per successful fit; `best` is 1 on the marked row).
std::string compare_csv(const std::vector<CompareRow>& rows, bool with_test, int best);

// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Throws Error(kIo) now, before any work, if `path` could not be written later (no such
// directory), so that a long fit does not end in a failed write.
void check_output_path(const std::string& path);

}  // namespace occam::cli

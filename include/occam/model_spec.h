// model_spec.h — the model a user asks for, as one typed value: network, likelihood, prior and
// standardisation, with the starting values of the hyperparameters.
//
// A front end (the command line, the Python module, a C++ program) turns its strings into a
// ModelSpec in one place; the library builds every model from it (fit.h) and reads data for it.
// The defaults here are the only ones: α = 1 and β = 10 on standardised data start the evidence
// (a weak prior on O(1) weights; noise a third of the target's spread).
//
//   occam::ModelSpec spec;                          // mlp 50 tanh, gaussian, MacKay's α groups
//   spec.network.hidden = {20};
//   spec.likelihood.kind = occam::LikelihoodKind::kPoisson;
//   occam::Dataset data = occam::read_training_data("spikes.csv", "count", spec);
#pragma once

#include <Eigen/Core>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "occam/data.h"
#include "occam/likelihood.h"
#include "occam/mlp.h"
#include "occam/network.h"
#include "occam/prior.h"

namespace occam {

enum class NetworkKind { kMlp, kLinear };
NetworkKind parse_network_kind(std::string_view name);  // "mlp" | "linear"
const char* to_string(NetworkKind kind);

struct NetworkSpec {
  NetworkKind kind = NetworkKind::kMlp;
  std::vector<Index> hidden = {50};           // mlp: units per hidden layer (none: a GLM with bias)
  Activation activation = Activation::kTanh;  // mlp
  bool intercept = true;                      // linear
};

enum class LikelihoodKind { kGaussian, kBernoulli, kPoisson, kCategorical, kHetero };
LikelihoodKind parse_likelihood_kind(std::string_view name);  // gaussian|bernoulli|poisson|categorical|hetero
const char* to_string(LikelihoodKind kind);

struct LikelihoodSpec {
  LikelihoodKind kind = LikelihoodKind::kGaussian;
  double beta = 10.0;         // gaussian: the noise precision β, fixed or the starting value
  std::string offset_column;  // poisson: the data column added to f (log exposure); "" for none
  // hetero: the noise variance's floor, σ² = e^{f2} + variance_floor (likelihood.h): without one
  // the MAP can drive σ² to 0 where the mean fits exactly, and A stops being positive definite.
  // 10⁻⁶ of the standardised target's variance is a noise std of 0.1% of its spread.
  double variance_floor = 1e-6;

  // The families whose targets are real numbers and are standardised with the inputs (gaussian,
  // hetero); counts, 0/1 targets and class indices keep their values.
  bool real_valued_targets() const;
};

// The largest α, β or λ_s a spec may start from (or fix): beyond it a precision times a sum of
// squares (β·E_D, α·E_W) overflows a double, and on standardised data 1e100 is already a spread of
// 10⁻⁵⁰ of the data's.
inline constexpr double kMaxPrecision = 1e100;

struct ModelSpec {
  NetworkSpec network;
  LikelihoodSpec likelihood;
  // The prior's kind, the α of every group (fixed, or the starting value: 1) and, for a
  // laplacian prior, λ_s and the graph over the inputs. ARD's group names come from the data.
  PriorSpec prior;
  // kBoth is reduced to kInputs for targets that are not real-valued (standardization()); kCenter
  // is for real-valued targets only.
  Standardize standardize = Standardize::kBoth;

  // The standardisation fit() applies: `standardize`, without the targets when they are counts,
  // 0/1 or classes.
  Standardize standardization() const;

  // Throws Error(kInvalidArgument) naming the field and its value, e.g.
  // "ModelSpec.network.hidden[1] = 0: must be at least 1".
  void validate() const;

  nlohmann::json to_json() const;
  static ModelSpec from_json(const nlohmann::json& j);  // throws Error(kInvalidInput)
};

// The pieces of a model, as fit() builds them (exposed for engines used directly).
// `outputs` is the likelihood's num_outputs().
std::unique_ptr<Network> make_network(const NetworkSpec& spec, Index inputs, Index outputs);
// class_labels: the categorical likelihood's classes (Dataset::class_labels).
std::unique_ptr<Likelihood> make_likelihood(const LikelihoodSpec& spec, const std::vector<std::string>& class_labels);

// The training data as `spec` reads them from a table: the target column; for a categorical
// likelihood its cells as class labels (words or numbers, sorted as numbers first); for a
// Poisson offset column, that column as Dataset::offset and not as an input. Throws
// Error(kInvalidInput) naming the file and column.
Dataset make_training_data(const Table& table, const std::string& target, const ModelSpec& spec);
// read_csv (the target's cells as text for a categorical likelihood) and make_training_data.
Dataset read_training_data(const std::string& path, const std::string& target, const ModelSpec& spec);
// The same when the rows are spread over processes (DataParallel, fit.h): called by every process
// together, each counts the file's rows (count_csv_rows) and reads only the rows RowBlocks deals
// it with `block_rows` (read_csv_rows), so no process holds or parses the whole file. The result
// is its share (Dataset::is_shard); the class labels of a categorical target are those of every
// row. A problem in any process's rows is an Error on every process, with that process's message.
Dataset read_training_data(const std::string& path, const std::string& target, const ModelSpec& spec,
                           const Communicator& processes, Index block_rows);

}  // namespace occam

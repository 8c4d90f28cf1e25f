// model_options.h — the command-line options that define a model and how it is fitted, and the
// one place where they become the library's ModelSpec and method options (fit, compare, cv, sample).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "method_flags.h"
#include "occam/fit.h"
#include "occam/model_spec.h"

namespace occam::cli {

// The options as the user typed them.
struct ModelArgs {
  std::string model = "mlp";  // mlp | linear
  std::vector<Index> hidden = ModelSpec{}.network.hidden;
  std::string activation = "tanh";
  std::string method = "laplace";  // laplace | vi | map
  std::optional<double> alpha;     // fixed value, or the starting value
  std::optional<double> beta;
  std::string alpha_groups = "default";
  std::string standardize = "both";
  bool no_intercept = false;  // linear only
  // GLMs and priors (docs/likelihoods/, docs/priors/).
  std::string likelihood = "gaussian";
  std::string prior;                // empty: from --alpha-groups
  std::string grid;                 // laplacian: "20x20" or a chain length "40"
  std::string edges;                // laplacian: an edge-list file instead of --grid
  std::optional<double> smoothing;  // laplacian: λ_s, fixed or starting value
  std::string offset;               // poisson: the column added to the linear predictor
  // --hyper, --hessian, --hessian-structure, --evidence-loop, --optimizer, --max-iterations, --seed,
  // the minibatch flags (--epochs, ...) and VI's (--family, ...): the options of the library's
  // table of method options that were given (method_flags.h).
  MethodFlags method_flags;
  // --max-memory: MemoryLimit::max_bytes (0: the memory available, negative: no limit).
  double max_memory = 0.0;
};

// Which options a command offers: `compare` has its own --hidden (a list of sizes), `cv` sets the
// prior by its grid and has no --method or --hyper (of the method options, only those of the
// evidence fit at each grid point: --hessian, --hessian-structure, --optimizer, --max-iterations,
// --seed), `sample` has its own engine (no --method or method options of the MAP fit).
struct ModelOptionSet {
  bool hidden = true;
  bool method = true;
  bool engine = true;
  bool noise_model = true;  // --noise-model, --noise-refits (compare fits one noise level)
};

// Registers the model options on a subcommand.
void add_model_options(CLI::App* command, ModelArgs* args, ModelOptionSet set = {});

// The spec the options ask for; cross-option checks CLI11 cannot express (e.g. --no-intercept
// only with --model linear) throw Error(kInvalidArgument) naming the flags.
ModelSpec model_spec(const CLI::App& command, const ModelArgs& args);
// spec.validate(), unless its graph comes from --edges, which is read with the data.
void validate_spec(const ModelSpec& spec, const ModelArgs& args);
// The training data as the spec reads them (read_training_data), and the graph of
// --prior laplacian --edges, whose node count is the number of inputs read. With `parallel`'s
// processes (mpirun), this process's share of the rows alone.
Dataset read_data(const std::string& path, const std::string& target, const ModelArgs& args, ModelSpec* spec,
                  const DataParallel* parallel = nullptr);
// The method (laplace or vi) and its options. "empirical-bayes" is the evidence strategy: the
// hyperparameters by maximum marginal likelihood, then the MAP at them, which that loop ends on.
MethodOptions fit_method(const CLI::App& command, const ModelArgs& args);
// The MAP and evidence options the flags set (--hessian, --hessian-structure, --optimizer,
// --max-iterations, --seed), for commands that fit by the evidence.
EvidenceOptions evidence_options(const ModelArgs& args);

// --max-memory SIZE on a command that fits: bytes, or with a unit K, M, G or T (powers of 1024,
// e.g. 512M, 4G, 1.5G), 0 for the memory available (the default) or "none" for no limit.
void add_max_memory_option(CLI::App* command, double* max_bytes);
// Parses such a size into bytes (-1 for "none"); throws Error(kInvalidArgument).
double parse_memory_size(const std::string& text);
// The fit's peak memory estimated from the sizes (occam/memory.h) against --max-memory: throws
// Error(kInvalidArgument) naming the size, its largest term and the flags that avoid it, before
// the fit allocates anything. (fit() checks too, in library terms.)
void check_fit_memory(const ModelSpec& spec, const Dataset& data, const MethodOptions& method);
// The same for a request of the caller's (a committee's, committee_memory_request).
void check_fit_memory(const FitMemoryRequest& request, const MethodOptions& method);

// Parses "50" or "20,20" into layer sizes; throws Error(kInvalidArgument).
std::vector<Index> parse_layer_sizes(const std::string& text, const char* option);
// A CLI11 validator for such a list.
CLI::Validator LayerSizesValidator();
// Validators whose messages say what is wrong in words ("must be positive"), not a numeric range.
CLI::Validator Positive();
CLI::Validator NonNegative();
// A precision (α, β, λ_s): positive and at most kMaxPrecision (model_spec.h).
CLI::Validator Precision();
// A number in [lo, hi] (NaN is not in any range), the bounds in the message as written.
CLI::Validator InRange(double lo, double hi);
// A seed: a whole number from 0 to 2⁶⁴ − 1, written in digits (no sign, no wrap-around, no clamping).
CLI::Validator Seed();

}  // namespace occam::cli

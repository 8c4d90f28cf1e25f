// model_options.cc — the model options of `fit`, `compare`, `cv` and `sample`, parsed into a ModelSpec and
// method options in one place.

#include "model_options.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>

#include "enum_choices.h"
#include "occam/memory.h"
#include "occam/method_options.h"
#include "occam/status.h"
#include "occam/text.h"

namespace occam::cli {
namespace {

std::string layer_sizes_text(const std::vector<Index>& sizes) {
  std::string text;
  for (Index h : sizes) text += (text.empty() ? "" : ",") + std::to_string(h);
  return text;
}

bool given(const CLI::App& command, const char* option) {
  return command.get_option_no_throw(option) != nullptr && command.count(option) > 0;
}

// A validator on a number, with a message in words (CLI11's own ranges print their bounds, which
// for "positive" is DBL_MAX in full, and let NaN through): `problem` says what is wrong with a
// value that parsed, or "".
CLI::Validator number_validator(std::function<std::string(double)> problem, std::string name) {
  return CLI::Validator(
      [problem = std::move(problem)](std::string& text) -> std::string {
        // strtod, not stod: stod throws on a number it reads but cannot hold (1e-320, 1e400),
        // which is out of range, not "not a number".
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(begin, &end);
        const bool whole =
            end != begin && end == begin + text.size() && !std::isspace(static_cast<unsigned char>(text[0]));
        if (!whole || std::isnan(value)) return "'" + text + "' is not a number";
        if (std::isinf(value) && errno != ERANGE) return "'" + text + "' is not a finite number";
        if (errno == ERANGE) {
          return text + " is out of range: " +
                 (std::abs(value) > 1.0 ? "beyond the largest double (about 1.8e308)"
                                        : "below the smallest normal double (about 2.2e-308); use 0 or a larger value");
        }
        const std::string why = problem(value);
        return why.empty() ? why : text + " " + why;
      },
      std::move(name));
}

CLI::Validator number_validator(std::function<bool(double)> ok, std::string rule, std::string name) {
  return number_validator(
      [ok = std::move(ok), rule = std::move(rule)](double v) { return ok(v) ? std::string() : rule; }, std::move(name));
}

// The online evidence loop with a method or --hyper it does not go with (docs/scale.md, "Minibatch
// MAP and online evidence"). The flags that do nothing without the online loop or a minibatch
// optimiser are the library's to refuse (method_from_json).
void check_online_loop(const std::string& method, const std::string& hyper, bool online) {
  if (online && (method != "laplace" || (!hyper.empty() && hyper != "evidence"))) {
    throw Error(ErrorKind::kInvalidArgument, "--evidence-loop online needs --method laplace with --hyper evidence");
  }
}

}  // namespace

CLI::Validator Positive() {
  return number_validator([](double v) { return v > 0.0; }, "is not positive (the value must be > 0)", "POSITIVE");
}

CLI::Validator Precision() {
  return number_validator(
      [](double v) -> std::string {
        if (!(v > 0.0)) return "is not positive (the value must be > 0)";
        if (v > kMaxPrecision) {
          return "is too large for a precision (at most 1e100: beyond it a precision times a sum of squares, β·E_D or "
                 "α·E_W, overflows a double)";
        }
        return {};
      },
      "POSITIVE");
}

CLI::Validator NonNegative() {
  return number_validator([](double v) { return v >= 0.0; }, "is negative (the value must be >= 0)", "NONNEGATIVE");
}

CLI::Validator InRange(double lo, double hi) {
  const std::string range = "[" + format("%g", lo) + ", " + format("%g", hi) + "]";
  return number_validator([lo, hi](double v) { return v >= lo && v <= hi; }, "is outside " + range, range);
}

CLI::Validator Seed() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || ptr != end ||
            ec == std::errc::invalid_argument) {
          return "'" + text + "' is not a seed (a whole number from 0 to 18446744073709551615)";
        }
        if (ec == std::errc::result_out_of_range)
          return text + " is too large for a seed (at most 18446744073709551615)";
        return {};
      },
      "SEED");
}

std::vector<Index> parse_layer_sizes(const std::string& text, const char* option) {
  std::vector<Index> sizes;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::size_t used = 0;
    long long value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value <= 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  std::string(option) + ": '" + item + "' is not a positive layer size (expected e.g. 50 or 20,20)");
    }
    sizes.push_back(static_cast<Index>(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

CLI::Validator LayerSizesValidator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          parse_layer_sizes(text, "");
        } catch (const Error&) {
          return "'" + text + "' is not a comma-separated list of positive sizes (e.g. 50 or 20,20)";
        }
        return {};
      },
      "SIZES");
}

void add_model_options(CLI::App* command, ModelArgs* args, ModelOptionSet set) {
  command->add_option("--model", args->model, "mlp (a multilayer perceptron) or linear (Bayesian linear regression)")
      ->check(one_of<NetworkKind>());
  if (set.hidden) {
    command
        ->add_option_function<std::string>(
            "--hidden", [args](const std::string& text) { args->hidden = parse_layer_sizes(text, "--hidden"); },
            "hidden units per layer, comma-separated for deeper nets (e.g. 50 or 20,20); mlp only")
        ->check(LayerSizesValidator())
        ->default_str(layer_sizes_text(args->hidden));
  }
  command->add_option("--activation", args->activation, "hidden-unit activation; mlp only")
      ->check(one_of<Activation>());
  if (set.method && set.engine) {
    command
        ->add_option("--method", args->method,
                     "posterior approximation: laplace (MAP + Laplace, evidence framework), vi (variational "
                     "Gaussian fitted by the ELBO; docs/vi.md) or map (the MAP weights at --alpha, --beta: a point "
                     "estimate without a posterior spread; under mpirun its rows are spread over the processes)")
        ->check(CLI::IsMember({"laplace", "vi", "map"}));
  }
  command
      ->add_option_function<double>(
          "--alpha", [args](const double& a) { args->alpha = a; },
          "prior precision α for --hyper fixed, else its starting value (default 1; standardised units)")
      ->check(Precision());
  command
      ->add_option_function<double>(
          "--beta", [args](const double& b) { args->beta = b; },
          "noise precision β for --hyper fixed, else its starting value (default 10; standardised units)")
      ->check(Precision());
  command
      ->add_option("--alpha-groups", args->alpha_groups,
                   "default: one α per weight group (MacKay's input weights, hidden biases, output weights, "
                   "output biases); single: one α")
      ->check(one_of<AlphaGroups>());
  command
      ->add_option("--standardize", args->standardize,
                   "standardise inputs and target (both), inputs only, or none; predictions are always in the "
                   "original units")
      ->check(one_of<Standardize>({Standardize::kCenter}));
  command->add_flag("--no-intercept", args->no_intercept, "fit a linear model without an intercept; linear only");
  if (set.engine) {
    // --hyper, --hessian, --optimizer, --seed, ...: the options of the library's table for the
    // methods the command fits by (its --threads, if any, is the command's own).
    if (set.method) {
      std::vector<std::string> except = {"threads"};
      if (!set.noise_model) except.insert(except.end(), {"noise_model", "noise_refits"});
      add_method_flags(command, {"laplace", "map", "vi"}, &args->method_flags, except);
    } else {
      add_method_flags(command, {"laplace"}, &args->method_flags, {},
                       {"hessian", "hessian_structure", "optimizer", "max_iterations", "seed"});
    }
  }
  command
      ->add_option("--likelihood", args->likelihood,
                   "gaussian (β), bernoulli (0/1, logit link), poisson (counts, log link), categorical "
                   "(classes, softmax; labels may be words), hetero (Gaussian with a learned log-variance)")
      ->check(one_of<LikelihoodKind>());
  command
      ->add_option("--prior", args->prior,
                   "ridge (one α), groups (one α per weight group, the default), ard (one α per input), "
                   "laplacian (graph smoothing λ_s·L + λ_r·I on the first-layer weights; needs --grid or --edges)")
      ->check(one_of<PriorKind>());
  command->add_option("--grid", args->grid,
                      "laplacian: the inputs lie on a ROWSxCOLS grid in row-major order (e.g. 20x20) or on a "
                      "chain (e.g. 40)");
  command->add_option("--edges", args->edges,
                      "laplacian: a file of edges 'i,j[,weight]' between inputs (0-based, in column order)");
  command
      ->add_option_function<double>(
          "--smoothing", [args](const double& s) { args->smoothing = s; },
          "laplacian: the smoothing precision λ_s for --hyper fixed, else its starting value (default 1)")
      ->check(Precision());
  command->add_option("--offset", args->offset,
                      "poisson: a column added to the linear predictor (log exposure); it is not an input");
  add_max_memory_option(command, &args->max_memory);
}

ModelSpec model_spec(const CLI::App& command, const ModelArgs& args) {
  const bool linear = args.model == "linear";
  if (linear && given(command, "--hidden"))
    throw Error(ErrorKind::kInvalidArgument, "--hidden applies to --model mlp only");
  if (linear && given(command, "--activation")) {
    throw Error(ErrorKind::kInvalidArgument, "--activation applies to --model mlp only");
  }
  if (!linear && args.no_intercept)
    throw Error(ErrorKind::kInvalidArgument, "--no-intercept applies to --model linear only");
  const bool vi = args.method == "vi";
  const MethodFlags& flags = args.method_flags;
  const std::string hyper = flags.text("hyper");  // "": the method's own default
  if (args.method == "map" && !hyper.empty() && hyper != "fixed") {
    throw Error(ErrorKind::kInvalidArgument,
                "--method map fits the weights at --alpha and --beta; --hyper " + hyper + " needs --method laplace");
  }
  const bool elbo_hyper = hyper == "elbo" || hyper == "elbo-closed";
  if (!vi && elbo_hyper) throw Error(ErrorKind::kInvalidArgument, "--hyper " + hyper + " needs --method vi");
  if (vi && !hyper.empty() && !elbo_hyper && hyper != "fixed") {
    throw Error(ErrorKind::kInvalidArgument,
                "--method vi sets α and β by --hyper elbo, elbo-closed or fixed, not " + hyper);
  }
  check_online_loop(args.method, hyper, flags.text("evidence_loop") == "online");
  const bool gaussian = args.likelihood == "gaussian";
  if (hyper == "fixed" && (!args.alpha || (gaussian && !args.beta))) {
    throw Error(ErrorKind::kInvalidArgument,
                gaussian ? "--hyper fixed needs both --alpha and --beta" : "--hyper fixed needs --alpha");
  }
  if (!gaussian && args.beta) {
    throw Error(ErrorKind::kInvalidArgument, "--beta applies to --likelihood gaussian only (the " + args.likelihood +
                                                 " likelihood has no noise precision)");
  }
  if (!args.offset.empty() && args.likelihood != "poisson") {
    throw Error(ErrorKind::kInvalidArgument, "--offset applies to --likelihood poisson only");
  }
  const bool laplacian = args.prior == "laplacian";
  if (laplacian && args.grid.empty() == args.edges.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--prior laplacian needs exactly one of --grid and --edges");
  }
  if (!laplacian && (!args.grid.empty() || !args.edges.empty() || args.smoothing)) {
    throw Error(ErrorKind::kInvalidArgument, "--grid, --edges and --smoothing apply to --prior laplacian only");
  }
  if (!args.prior.empty() && given(command, "--alpha-groups")) {
    throw Error(ErrorKind::kInvalidArgument, "--alpha-groups and --prior both choose the prior: give one");
  }

  ModelSpec spec;
  spec.network.kind = parse_network_kind(args.model);
  spec.network.hidden = args.hidden;
  spec.network.activation = parse_activation(args.activation);
  spec.network.intercept = !args.no_intercept;
  spec.likelihood.kind = parse_likelihood_kind(args.likelihood);
  if (args.beta) spec.likelihood.beta = *args.beta;
  spec.likelihood.offset_column = args.offset;
  spec.prior.kind = args.prior.empty() ? (args.alpha_groups == "single" ? PriorKind::kRidge : PriorKind::kGroups)
                                       : parse_prior_kind(args.prior);
  if (args.alpha) spec.prior.alpha = *args.alpha;
  if (args.smoothing) spec.prior.smoothing = *args.smoothing;
  if (laplacian && !args.grid.empty()) spec.prior.graph = parse_grid(args.grid);
  spec.standardize = parse_standardize(args.standardize);
  return spec;
}

void validate_spec(const ModelSpec& spec, const ModelArgs& args) {
  if (args.edges.empty()) spec.validate();
}

Dataset read_data(const std::string& path, const std::string& target, const ModelArgs& args, ModelSpec* spec,
                  const DataParallel* parallel) {
  // Spread over processes, each reads only its rows of the file (docs/scale.md).
  Dataset data = parallel != nullptr && parallel->communicator != nullptr
                     ? read_training_data(path, target, *spec, *parallel->communicator, parallel->block_rows)
                     : read_training_data(path, target, *spec);
  // An edge list names its nodes by input column: its size is known once the data are read.
  if (!args.edges.empty()) spec->prior.graph = read_edge_list(args.edges, data.X.cols());
  return data;
}

namespace {

// The method flags given, under their keys, for `method` (method_options.h). Which of them apply to
// the method, and do anything with the others given, is the library's to say: method_from_json
// refuses the rest by their flags.
nlohmann::json method_json(const ModelArgs& args, const std::string& method) {
  nlohmann::json j = args.method_flags.given;
  j["method"] = method;
  return j;
}

}  // namespace

EvidenceOptions evidence_options(const ModelArgs& args) {
  return std::get<LaplaceMethod>(method_from_json(method_json(args, "laplace"), OptionSpelling::kFlag)).evidence;
}

MethodOptions fit_method(const CLI::App& command, const ModelArgs& args) {
  model_spec(command, args);  // the cross-option checks
  MethodOptions method = method_from_json(method_json(args, args.method), OptionSpelling::kFlag);
  std::visit(
      [&](auto& m) {
        if constexpr (requires { m.memory.max_bytes; }) m.memory.max_bytes = args.max_memory;
      },
      method);
  return method;
}

}  // namespace occam::cli

namespace occam::cli {

double parse_memory_size(const std::string& text) {
  if (text == "none") return -1.0;
  const auto bad = [&] {
    return Error(ErrorKind::kInvalidArgument, "--max-memory: '" + text +
                                                  "' is not a size (bytes, or a number with K, M, G or T, e.g. 512M or "
                                                  "4G; 0 for the memory available, none for no limit)");
  };
  std::size_t end = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    throw bad();
  }
  if (!text.empty() && (text[0] == '-' || text[0] == '+' || std::isspace(static_cast<unsigned char>(text[0]))))
    throw bad();
  std::string unit = text.substr(end);
  if (unit.size() > 1 && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();  // "4GB"
  double scale = 1.0;
  if (unit.size() == 1) {
    const std::string units = "KMGT";
    const std::size_t power = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (power == std::string::npos) throw bad();
    scale = std::pow(1024.0, static_cast<double>(power + 1));
  } else if (!unit.empty() && unit != "B" && unit != "b") {
    throw bad();
  }
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 0.0) throw bad();
  if (bytes > 0.0 && bytes < 1.0) throw bad();
  return bytes;
}

void add_max_memory_option(CLI::App* command, double* max_bytes) {
  command
      ->add_option_function<std::string>(
          "--max-memory", [max_bytes](const std::string& text) { *max_bytes = parse_memory_size(text); },
          "refuse, before it starts, a fit whose estimated peak memory exceeds SIZE (bytes, or 512M, 4G: K, M, G, T "
          "are powers of 1024); 0: the memory available now; none: no limit")
      ->check(CLI::Validator(
          [](std::string& text) {
            try {
              parse_memory_size(text);
            } catch (const Error& e) {
              return std::string(e.what()).substr(std::string("--max-memory: ").size());
            }
            return std::string();
          },
          "SIZE"))
      ->default_str("0");
}

void check_fit_memory(const ModelSpec& spec, const Dataset& data, const MethodOptions& method) {
  check_fit_memory(fit_memory_request(spec, data, method), method);
}

void check_fit_memory(const FitMemoryRequest& request, const MethodOptions& method) {
  const MemoryLimit& limit = memory_limit(method);
  const double bytes = limit.resolve();
  const MemoryEstimate estimate = estimate_fit_memory(request);
  if (!(bytes > 0.0) || estimate.bytes <= bytes || estimate.terms.empty()) return;
  std::string avoid;
  switch (estimate.terms.front().kind) {
    case MemoryTermKind::kLaplace:
      avoid =
          "fewer hidden units (--hidden) or inputs, or 'occam sample' with --metric diag, which holds no W × W matrix";
      if (request.fits_at_once > 1) avoid += ", or fewer members at once (--threads)";
      break;
    case MemoryTermKind::kCommittee:
      avoid = "fewer --committee members, or fewer hidden units (--hidden)";
      break;
    case MemoryTermKind::kFullRank:
      avoid = "--family meanfield or --family lowrank:R";
      break;
    case MemoryTermKind::kLowRank:
      avoid = "a smaller R in --family lowrank:R, or --family meanfield";
      break;
    case MemoryTermKind::kDenseMetric:
      avoid = "--metric diag, or fewer --chains";
      break;
    case MemoryTermKind::kDraws:
      avoid = "fewer --draws, --thin, fewer --chains, or --log-lik off";
      break;
    case MemoryTermKind::kSmoothingGraph:
      avoid = "a smaller graph (--grid, --edges) or another --prior";
      break;
    case MemoryTermKind::kCurvatureVectors:
      avoid = "a smaller K in --hessian-structure lowrank:K, or --hessian-structure kron, diag or last-layer";
      break;
    case MemoryTermKind::kCurvatureBlocks:
      avoid = "fewer hidden units (--hidden), or --hessian-structure diag";
      break;
    default:
      avoid = "fewer rows or a smaller network";
  }
  throw Error(ErrorKind::kInvalidArgument,
              "this fit needs " + estimate.describe() + ", more than the " + format_bytes(bytes) +
                  (limit.max_bytes > 0.0 ? " --max-memory allows" : " of memory available") + "; to need less use " +
                  avoid + (limit.max_bytes > 0.0 ? ", or raise --max-memory" : ", or --max-memory none to try anyway"));
}

}  // namespace occam::cli

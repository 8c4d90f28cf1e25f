#include "fitting.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <numbers>

#include "occam/laplace.h"
#include "occam/likelihood.h"
#include "occam/linear.h"
#include "occam/map.h"
#include "occam/mlp.h"
#include "occam/posterior.h"
#include "occam/predict.h"
#include "occam/prior.h"
#include "occam/rng.h"
#include "occam/status.h"

namespace occam::cli {
namespace {

std::unique_ptr<Network> make_network(Index inputs, Index outputs, const ModelOptions& options,
                                      const std::vector<Index>& hidden) {
  if (options.model == "linear") return std::make_unique<Linear>(inputs, outputs, !options.no_intercept);
  return std::make_unique<Mlp>(inputs, hidden, parse_activation(options.activation), outputs);
}

// Numbers sort as numbers ("2" before "10"), anything else as text.
bool label_less(const std::string& a, const std::string& b) {
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a), y = std::strtod(b.c_str(), &end_b);
  const bool num_a = end_a != a.c_str() && *end_a == '\0', num_b = end_b != b.c_str() && *end_b == '\0';
  if (num_a && num_b && x != y) return x < y;
  if (num_a != num_b) return num_a;
  return a < b;
}

// {name: value} for per-group quantities.
nlohmann::json per_group(const std::vector<std::string>& names, const Eigen::VectorXd& values) {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t g = 0; g < names.size() && static_cast<Index>(g) < values.size(); ++g) {
    j[names[g]] = values[static_cast<Index>(g)];
  }
  return j;
}

std::vector<std::string> group_names(const FitResult& r) {
  if (!r.summary.group_names.empty()) return r.summary.group_names;
  std::vector<std::string> names;
  for (const ParamGroup& g : r.model.prior.groups()) names.push_back(g.name);
  return names;
}

std::string layer_sizes_text(const std::vector<Index>& sizes) {
  std::string text;
  for (Index h : sizes) text += (text.empty() ? "" : ",") + std::to_string(h);
  return text;
}

// Display width of UTF-8 text: code points, not bytes (the table uses α, β, γ).
std::size_t display_width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

}  // namespace

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(static_cast<std::size_t>(std::max(n, 0)), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
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
      throw Error(ErrorKind::kInvalidArgument, std::string(option) + ": '" + item +
                                                   "' is not a positive layer size (expected e.g. 50 or 20,20)");
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

bool real_valued_targets(const ModelOptions& options) {
  return options.likelihood == "gaussian" || options.likelihood == "hetero";
}

Dataset load_training_data(const std::string& path, const std::string& target, ModelOptions* options) {
  const bool categorical = options->likelihood == "categorical";
  const Table table = categorical ? read_csv(path, target) : read_csv(path);
  Dataset data = make_dataset(table, target);
  if (categorical) {
    std::vector<std::string> labels = table.labels;
    std::sort(labels.begin(), labels.end(), label_less);
    labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
    if (labels.size() < 2) {
      throw Error(ErrorKind::kInvalidInput, path + ": the target '" + target + "' has " +
                                                std::to_string(labels.size()) +
                                                " distinct label; a categorical likelihood needs at least 2");
    }
    for (std::size_t n = 0; n < table.labels.size(); ++n) {
      const auto it = std::lower_bound(labels.begin(), labels.end(), table.labels[n], label_less);
      data.Y(static_cast<Index>(n), 0) = static_cast<double>(it - labels.begin());
    }
    options->labels = std::move(labels);
  }
  if (!options->offset.empty()) {
    const auto it = std::find(data.feature_names.begin(), data.feature_names.end(), options->offset);
    if (it == data.feature_names.end()) {
      throw Error(ErrorKind::kInvalidInput, path + ": no column '" + options->offset + "' (the --offset)");
    }
    data.feature_names.erase(it);
    if (data.feature_names.empty()) {
      throw Error(ErrorKind::kInvalidInput, path + ": no input columns besides the target and the offset");
    }
    Eigen::MatrixXd Y(data.Y.rows(), 2);
    Y << data.Y.col(0), select_columns(table, {options->offset});
    data.Y = std::move(Y);
    data.X = select_columns(table, data.feature_names);
  }
  return data;
}

Prior make_prior_from_options(const Network& network, const ModelOptions& options,
                              const std::vector<std::string>& input_names) {
  PriorSpec spec;
  spec.kind = options.prior.empty()
                  ? (options.alpha_groups == "single" ? PriorKind::kRidge : PriorKind::kGroups)
                  : parse_prior_kind(options.prior);
  spec.alpha = options.alpha.value_or(kDefaultAlpha);
  spec.smoothing = options.smoothing.value_or(kDefaultAlpha);
  spec.input_names = input_names;
  if (spec.kind == PriorKind::kLaplacian) {
    if (!options.grid.empty()) spec.graph = parse_grid(options.grid);
    if (!options.edges.empty()) spec.graph = read_edge_list(options.edges, network.num_inputs());
  }
  return make_prior(network, spec);
}

void add_model_options(CLI::App* command, ModelOptions* options, bool with_hidden) {
  command->add_option("--model", options->model, "mlp (a multilayer perceptron) or linear (Bayesian linear regression)")
      ->check(CLI::IsMember({"mlp", "linear"}));
  if (with_hidden) {
    command
        ->add_option_function<std::string>(
            "--hidden", [options](const std::string& text) { options->hidden = parse_layer_sizes(text, "--hidden"); },
            "hidden units per layer, comma-separated for deeper nets (e.g. 50 or 20,20); mlp only")
        ->check(LayerSizesValidator())
        ->default_str(layer_sizes_text(options->hidden));
  }
  command->add_option("--activation", options->activation, "hidden-unit activation; mlp only")
      ->check(CLI::IsMember({"tanh", "relu", "sigmoid", "softplus", "identity"}));
  command
      ->add_option("--method", options->method,
                   "posterior approximation: laplace (MAP + Laplace, evidence framework) or vi (variational "
                   "Gaussian fitted by the ELBO; docs/vi.md)")
      ->check(CLI::IsMember({"laplace", "vi"}));
  command
      ->add_option("--hyper", options->hyper,
                   "how α and β are set: evidence (MacKay's re-estimation loop), periodic (re-estimate during "
                   "training), quick (γ≈W, for m≫W), integrate (integrated out under 1/σ priors), empirical-bayes (λ by "
                   "maximum evidence, then the MAP at it), fixed; with --method vi: elbo (gradient on log α, log β; the "
                   "default), elbo-closed (closed-form updates), fixed")
      ->check(CLI::IsMember({"evidence", "empirical-bayes", "periodic", "quick", "integrate", "fixed", "elbo", "elbo-closed"}));
  command
      ->add_option("--family", options->family,
                   "VI: fullrank (V = LLᵀ), meanfield (diagonal V) or lowrank:R (V = BBᵀ + diagonal, B of rank R)")
      ->check([](const std::string& text) -> std::string {
        try {
          parse_variational_family(text);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      });
  command->add_option("--mc-samples", options->mc_samples, "VI: Monte Carlo draws of the weights per gradient step")
      ->check(CLI::PositiveNumber);
  command->add_option("--batch-size", options->batch_size, "VI: rows per gradient step (0 = all rows)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--vi-iterations", options->vi_iterations, "VI: the most Adam steps")->check(CLI::PositiveNumber);
  command->add_option("--learning-rate", options->learning_rate, "VI: Adam's initial step size")
      ->check(CLI::PositiveNumber);
  command
      ->add_option("--vi-tolerance", options->vi_tolerance,
                   "VI: converged when the mean or median relative ELBO change over the last 5 evaluations is below this")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option_function<double>(
          "--alpha", [options](const double& a) { options->alpha = a; },
          "prior precision α for --hyper fixed, else its starting value (default 1; standardised units)")
      ->check(CLI::PositiveNumber);
  command
      ->add_option_function<double>(
          "--beta", [options](const double& b) { options->beta = b; },
          "noise precision β for --hyper fixed, else its starting value (default 10; standardised units)")
      ->check(CLI::PositiveNumber);
  command->add_option("--hessian", options->hessian, "Hessian in the Laplace approximation: ggn (Gauss-Newton) or exact")
      ->check(CLI::IsMember({"ggn", "exact"}));
  command
      ->add_option("--alpha-groups", options->alpha_groups,
                   "default: one α per weight group (MacKay's input weights, hidden biases, output weights, "
                   "output biases); single: one α")
      ->check(CLI::IsMember({"default", "single"}));
  command
      ->add_option("--standardize", options->standardize,
                   "standardise inputs and target (both), inputs only, or none; predictions are always in the "
                   "original units")
      ->check(CLI::IsMember({"both", "inputs", "none"}));
  command->add_flag("--no-intercept", options->no_intercept, "fit a linear model without an intercept; linear only");
  command->add_option("--optimizer", options->optimizer, "MAP optimiser: auto (up to 3000 weights newton for --model linear, lm otherwise; else lbfgs), "
                      "lm (Levenberg-Marquardt), newton (Newton/IRLS with a line search), lbfgs, or adam (minibatches)")
      ->check(CLI::IsMember({"auto", "lm", "newton", "lbfgs", "adam"}));
  command->add_option("--max-iterations", options->max_iterations, "MAP iterations (LM, Newton, L-BFGS) or epochs (Adam) per run")
      ->check(CLI::PositiveNumber);
  command->add_option("--seed", options->seed, "seed of the initial weights (and of Adam's minibatches)");
  command
      ->add_option("--likelihood", options->likelihood,
                   "gaussian (β), bernoulli (0/1, logit link), poisson (counts, log link), categorical "
                   "(classes, softmax; labels may be words), hetero (Gaussian with a learned log-variance)")
      ->check(CLI::IsMember({"gaussian", "bernoulli", "poisson", "categorical", "hetero"}));
  command
      ->add_option("--prior", options->prior,
                   "ridge (one α), groups (one α per weight group, the default), ard (one α per input), "
                   "laplacian (graph smoothing λ_s·L + λ_r·I on the first-layer weights; needs --grid or --edges)")
      ->check(CLI::IsMember({"ridge", "groups", "ard", "laplacian"}));
  command->add_option("--grid", options->grid,
                      "laplacian: the inputs lie on a ROWSxCOLS grid in row-major order (e.g. 20x20) or on a "
                      "chain (e.g. 40)");
  command->add_option("--edges", options->edges,
                      "laplacian: a file of edges 'i,j[,weight]' between inputs (0-based, in column order)");
  command
      ->add_option_function<double>(
          "--smoothing", [options](const double& s) { options->smoothing = s; },
          "laplacian: the smoothing precision λ_s for --hyper fixed, else its starting value (default 1)")
      ->check(CLI::PositiveNumber);
  command->add_option("--offset", options->offset,
                      "poisson: a column added to the linear predictor (log exposure); it is not an input");
}

void check_model_options(const CLI::App& command, const ModelOptions& options) {
  const bool linear = options.model == "linear";
  if (linear && command.get_option_no_throw("--hidden") != nullptr && command.count("--hidden") > 0) {
    throw Error(ErrorKind::kInvalidArgument, "--hidden applies to --model mlp only");
  }
  if (linear && command.count("--activation") > 0) {
    throw Error(ErrorKind::kInvalidArgument, "--activation applies to --model mlp only");
  }
  if (!linear && options.no_intercept) {
    throw Error(ErrorKind::kInvalidArgument, "--no-intercept applies to --model linear only");
  }
  const bool vi = options.method == "vi";
  const bool elbo_hyper = options.hyper == "elbo" || options.hyper == "elbo-closed";
  if (!vi && elbo_hyper) throw Error(ErrorKind::kInvalidArgument, "--hyper " + options.hyper + " needs --method vi");
  if (vi && !elbo_hyper && options.hyper != "fixed" && command.count("--hyper") > 0) {
    throw Error(ErrorKind::kInvalidArgument,
                "--method vi sets α and β by --hyper elbo, elbo-closed or fixed, not " + options.hyper);
  }
  if (!vi) {
    for (const char* option : {"--family", "--mc-samples", "--batch-size", "--vi-iterations", "--learning-rate",
                               "--vi-tolerance"}) {
      if (command.get_option_no_throw(option) != nullptr && command.count(option) > 0) {
        throw Error(ErrorKind::kInvalidArgument, std::string(option) + " applies to --method vi only");
      }
    }
  }
  const bool gaussian = options.likelihood == "gaussian";
  if (options.hyper == "fixed" && (!options.alpha || (gaussian && !options.beta))) {
    throw Error(ErrorKind::kInvalidArgument,
                gaussian ? "--hyper fixed needs both --alpha and --beta" : "--hyper fixed needs --alpha");
  }
  if (!gaussian && options.beta) {
    throw Error(ErrorKind::kInvalidArgument, "--beta applies to --likelihood gaussian only (the " +
                                                 options.likelihood + " likelihood has no noise precision)");
  }
  if (!options.offset.empty() && options.likelihood != "poisson") {
    throw Error(ErrorKind::kInvalidArgument, "--offset applies to --likelihood poisson only");
  }
  const bool laplacian = options.prior == "laplacian";
  if (laplacian && options.grid.empty() == options.edges.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "--prior laplacian needs exactly one of --grid and --edges");
  }
  if (!laplacian && (!options.grid.empty() || !options.edges.empty() || options.smoothing)) {
    throw Error(ErrorKind::kInvalidArgument, "--grid, --edges and --smoothing apply to --prior laplacian only");
  }
  if (!options.prior.empty() && command.count("--alpha-groups") > 0) {
    throw Error(ErrorKind::kInvalidArgument, "--alpha-groups and --prior both choose the prior: give one");
  }
}

FitResult fit_model(const Dataset& train, const ModelOptions& options, const std::vector<Index>& hidden,
                    Progress* progress, const std::string& progress_prefix) {
  // Counts, 0/1 and class indices keep their values: only real-valued targets are standardised.
  Standardize mode = parse_standardize(options.standardize);
  if (!real_valued_targets(options) && mode == Standardize::kBoth) mode = Standardize::kInputs;
  const Standardizer standardizer = Standardizer::fit(Dataset{train.X, train.Y.leftCols(1), {}, {}}, mode);
  std::unique_ptr<Likelihood> likelihood = make_likelihood(options.likelihood, options.beta.value_or(kDefaultBeta),
                                                           !options.offset.empty(), options.labels);
  std::unique_ptr<Network> network = make_network(train.X.cols(), likelihood->num_outputs(), options, hidden);

  Rng rng(options.seed);
  Eigen::VectorXd w = network->initial_params(rng);
  Prior prior = make_prior_from_options(*network, options, train.feature_names);
  Eigen::MatrixXd Y = train.Y;
  if (real_valued_targets(options)) Y = standardizer.transform_targets(train.Y);
  Posterior posterior(network->clone(), std::move(likelihood), std::move(prior), standardizer.transform_inputs(train.X),
                      std::move(Y));

  EvidenceOptions evidence;
  // Empirical Bayes: the hyperparameters by maximum marginal likelihood (the evidence loop), then
  // the MAP at those values, which that loop ends on.
  evidence.strategy = parse_hyper_strategy(options.hyper == "empirical-bayes" ? "evidence" : options.hyper);
  evidence.hessian = parse_hessian_kind(options.hessian);
  evidence.map.optimizer = parse_optimizer(options.optimizer);
  evidence.map.max_iterations = options.max_iterations;
  evidence.map.seed = options.seed;
  if (progress != nullptr && progress->enabled()) {
    // The last re-estimation's line stays in front of the MAP iterations that follow it.
    auto outer = std::make_shared<std::string>();
    evidence.callback = [progress, outer, progress_prefix](const EvidenceIteration& it) {
      *outer = format("round %d: log-evidence %.6g, gamma %.4g, beta %.4g", it.iteration, it.log_evidence,
                      it.gamma.sum(), it.beta);
      progress->update(progress_prefix + *outer);
    };
    evidence.map.callback = [progress, outer, progress_prefix](const MapIteration& it) {
      if (!progress->due()) return;  // formatting costs more than the check
      progress->update(progress_prefix + *outer + (outer->empty() ? "" : " | ") +
                       format("MAP %d: S %.6g, |grad| %.1e", it.iteration, it.objective, it.gradient_norm));
    };
  }

  FitResult result;
  std::optional<VariationalResult> variational;
  if (options.method == "vi") {
    // VI starts from the MAP weights at the starting α, β, then fits q (and α, β) by the ELBO. The
    // Laplace fit below is then made at the α, β the ELBO chose: the same model, so its
    // log-evidence and the ELBO (a lower bound on that same log-evidence) can be compared.
    evidence.strategy = HyperStrategy::kFixed;
    const EvidenceResult start = fit_evidence(&posterior, evidence, &w);
    VariationalOptions vo;
    vo.family = parse_variational_family(options.family);
    vo.hyper = options.hyper == "fixed"         ? VariationalHyper::kFixed
               : options.hyper == "elbo-closed" ? VariationalHyper::kClosedForm
                                                : VariationalHyper::kGradient;
    vo.mc_samples = options.mc_samples;
    vo.batch_size = options.batch_size;
    vo.max_iterations = options.vi_iterations;
    vo.learning_rate = options.learning_rate;
    vo.relative_tolerance = options.vi_tolerance;
    vo.seed = options.seed;
    if (progress != nullptr && progress->enabled()) {
      vo.callback = [progress, progress_prefix](const VariationalIteration& it) {
        progress->update(progress_prefix + format("VI %d: ELBO %.6g, relative change %.2e", it.iteration, it.elbo,
                                                  it.relative_change));
      };
    }
    // q starts at the Laplace approximation N(w_MAP, A⁻¹), or its nearest member of the family.
    Rng init_rng(options.seed, /*stream=*/4);
    variational = fit_variational(&posterior, vo, GaussianVariational::from_laplace(vo.family, start.laplace, &init_rng));
    w = variational->q.mean();
    evidence.strategy = HyperStrategy::kFixed;
  }
  EvidenceResult fitted = fit_evidence(&posterior, evidence, &w);
  if (progress != nullptr) progress->clear();

  result.summary = std::move(fitted.summary);
  result.num_data = train.X.rows();
  result.num_params = posterior.dim();
  if (options.model == "mlp") result.hidden = hidden;
  result.symmetry_log_factor = result.summary.symmetry_log_factor;
  // The evidence is a density of the standardised targets t = (y − ȳ)/s; as a density of y it
  // carries the Jacobian 1/s per example. Reporting it in y's units makes the number comparable
  // across --standardize choices and with the test log-likelihood.
  result.log_evidence = result.summary.log_evidence - static_cast<double>(result.num_data) * std::log(standardizer.y_scale);
  if (variational) {
    result.vi = variational->summary;
    result.elbo = variational->summary.elbo - static_cast<double>(result.num_data) * std::log(standardizer.y_scale);
  }

  Eigen::MatrixXd F;
  posterior.network().forward(variational ? variational->q.mean() : fitted.laplace.mean, posterior.X(), &F);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  result.train_rmse = result.train_accuracy = nan;
  if (posterior.likelihood().num_classes() > 0) {
    const Eigen::MatrixXd P = posterior.likelihood().class_probabilities(F);
    double correct = 0.0;
    for (Index n = 0; n < P.rows(); ++n) {
      Index best;
      P.row(n).maxCoeff(&best);
      correct += static_cast<double>(best) == train.Y(n, 0) ? 1.0 : 0.0;
    }
    result.train_accuracy = correct / static_cast<double>(P.rows());
  } else {
    if (options.likelihood == "poisson") {
      // The fitted mean count e^{f + offset}.
      if (train.Y.cols() > 1) F.col(0) += train.Y.col(1);
      F = F.array().exp().matrix();
    }
    const Eigen::ArrayXd fitted_y = standardizer.y_mean + standardizer.y_scale * F.col(0).array();
    result.train_rmse = std::sqrt((train.Y.col(0).array() - fitted_y).square().mean());
  }

  ModelFile& model = result.model;
  model.network = posterior.network().clone();
  model.likelihood = posterior.likelihood().clone();
  model.prior = posterior.prior();
  model.standardizer = standardizer;
  model.feature_names = train.feature_names;
  model.target_name = train.target_name;
  model.offset_name = options.offset;
  if (variational) {
    model.variational = std::move(variational->q);
  } else {
    model.posterior = std::move(fitted.laplace);
  }
  model.summary = report_json(result, options);
  return result;
}

nlohmann::json report_json(const FitResult& r, const ModelOptions& options) {
  const EvidenceSummary& s = r.summary;
  const std::vector<std::string> names = group_names(r);
  nlohmann::json trace = nlohmann::json::array();
  for (const EvidenceIteration& it : s.trace) {
    trace.push_back({{"iteration", it.iteration},
                     {"log_evidence", it.log_evidence},
                     {"alpha", per_group(names, it.alpha)},
                     {"beta", it.beta},
                     {"gamma_total", it.gamma.sum()},
                     {"map_iterations", it.map_iterations},
                     {"accepted", it.accepted}});
  }
  nlohmann::json used = {{"model", options.model},
                         {"activation", options.activation},
                         {"method", options.method},
                         {"hyper", options.hyper},
                         {"alpha_initial", options.alpha.value_or(kDefaultAlpha)},
                         {"beta_initial", options.beta.value_or(kDefaultBeta)},
                         {"hessian", options.hessian},
                         {"alpha_groups", options.alpha_groups},
                         {"standardize", options.standardize},
                         {"optimizer", options.optimizer},
                         {"max_iterations", options.max_iterations},
                         {"seed", options.seed},
                         {"likelihood", options.likelihood},
                         {"prior", options.prior.empty() ? (options.alpha_groups == "single" ? "ridge" : "groups")
                                                         : options.prior}};
  if (!options.grid.empty()) used["grid"] = options.grid;
  if (!options.edges.empty()) used["edges"] = options.edges;
  if (!options.offset.empty()) used["offset"] = options.offset;
  if (options.model == "mlp") {
    used["hidden"] = r.hidden;
  } else {
    used["intercept"] = !options.no_intercept;
  }
  nlohmann::json vi;
  if (r.vi) {
    used["family"] = options.family;
    used["mc_samples"] = options.mc_samples;
    used["batch_size"] = options.batch_size;
    used["vi_iterations"] = options.vi_iterations;
    used["learning_rate"] = options.learning_rate;
    used["vi_tolerance"] = options.vi_tolerance;
    nlohmann::json vi_trace = nlohmann::json::array();
    for (const VariationalIteration& it : r.vi->trace) {
      vi_trace.push_back({{"iteration", it.iteration}, {"elbo", it.elbo}, {"relative_change", it.relative_change}});
    }
    vi = {{"termination", to_string(r.vi->termination)},
          {"message", r.vi->message},
          {"family", r.vi->family.name()},
          {"hyper", to_string(r.vi->hyper)},
          {"elbo_standardized", r.vi->elbo},
          {"expected_log_likelihood", r.vi->expected_log_likelihood},
          {"expected_log_prior", r.vi->expected_log_prior},
          {"entropy", r.vi->entropy},
          {"iterations", r.vi->iterations},
          {"failed_steps", r.vi->failed_steps},
          {"learning_rate_chosen", r.vi->learning_rate},
          {"adapt_iterations", r.vi->adapt_iterations},
          {"seconds", r.vi->seconds},
          {"seconds_per_iteration", r.vi->seconds_per_iteration},
          {"trace", vi_trace}};
  }
  nlohmann::json report = {{"termination", to_string(r.vi ? r.vi->termination : s.termination)},
          {"message", s.message},
          {"log_evidence", r.log_evidence},
          {"log_evidence_standardized", s.log_evidence},
          {"symmetry_log_factor", r.symmetry_log_factor},
          {"alpha", per_group(names, s.alpha)},
          {"beta", std::isfinite(s.beta) ? nlohmann::json(s.beta) : nlohmann::json()},
          {"gamma", per_group(names, s.gamma)},
          {"gamma_total", s.gamma_total},
          {"E_W", per_group(names, s.E_W)},
          {"E_D", s.E_D},
          {"train_rmse", std::isfinite(r.train_rmse) ? nlohmann::json(r.train_rmse) : nlohmann::json()},
          {"train_accuracy", std::isfinite(r.train_accuracy) ? nlohmann::json(r.train_accuracy) : nlohmann::json()},
          {"seconds", s.seconds},
          {"clipped_eigenvalues", s.clipped_eigenvalues},
          {"iterations", s.outer_iterations},
          {"map_iterations", s.map_iterations},
          {"num_data", r.num_data},
          {"num_params", r.num_params},
          {"network",
           {{"description", r.model.network ? r.model.network->describe() : std::string()},
            {"architecture", r.model.network ? r.model.network->to_json() : nlohmann::json()}}},
          {"likelihood", r.model.likelihood ? r.model.likelihood->to_json() : nlohmann::json()},
          {"options", used},
          {"trace", trace}};
  if (r.vi) {
    // The ELBO, a lower bound on the log-evidence, beside the Laplace value at the same α, β.
    report["message"] = r.vi->message;
    report["elbo"] = r.elbo;
    report["elbo_std_error"] = r.vi->elbo_std_error;
    report["laplace_termination"] = to_string(s.termination);
    report["vi"] = vi;
  }
  return report;
}

std::string brief_report(const FitResult& r) {
  const EvidenceSummary& s = r.summary;
  const std::vector<std::string> names = group_names(r);
  const auto groups = [&](const Eigen::VectorXd& v, const char* fmt) {
    std::string text;
    for (std::size_t g = 0; g < names.size() && static_cast<Index>(g) < v.size(); ++g) {
      text += (g ? ", " : "") + names[g] + " " + format(fmt, v[static_cast<Index>(g)]);
    }
    return text;
  };
  std::string out;
  out += format("%-14s%s", "network", r.model.network ? r.model.network->describe().c_str() : "?");
  out += format(", %lld parameters, %lld examples\n", static_cast<long long>(r.num_params),
                static_cast<long long>(r.num_data));
  out += format("%-14s%s", "termination", to_string(r.vi ? r.vi->termination : s.termination));
  const std::string& message = r.vi ? r.vi->message : s.message;
  if (!message.empty()) out += " (" + message + ")";
  out += '\n';
  if (r.vi) {
    out += format("%-14s%s, hyper %s, %d iterations\n", "VI", r.vi->family.name().c_str(), to_string(r.vi->hyper),
                  r.vi->iterations);
    out += format("%-14s%.6g ± %.2g (a lower bound on the log-evidence)\n", "ELBO", r.elbo, r.vi->elbo_std_error);
    out += format("%-14s%.6g (Laplace at the same α, β; with the symmetry term %.6g)\n", "log-evidence",
                  r.log_evidence, r.log_evidence + r.symmetry_log_factor);
  } else {
    out += format("%-14s%.6g (with the symmetry term %.6g)\n", "log-evidence", r.log_evidence,
                  r.log_evidence + r.symmetry_log_factor);
  }
  out += format("%-15s%s\n", "α", groups(s.alpha, "%.4g").c_str());
  if (std::isfinite(s.beta)) out += format("%-15s%.4g (noise std %.4g)\n", "β", s.beta, 1.0 / std::sqrt(s.beta));
  out += format("%-15s%.4g of %lld (%s)\n", "γ", s.gamma_total, static_cast<long long>(r.num_params),
                groups(s.gamma, "%.3g").c_str());
  // ARD groups are named "input:<column>" (make_prior_from_options passes the column names).
  if (std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("input:"); })) {
    // ARD: an input's relevance is the prior std of its weights, 1/√α (MacKay 1994).
    std::string text;
    for (std::size_t g = 0; g < names.size() && static_cast<Index>(g) < s.alpha.size(); ++g) {
      if (!names[g].starts_with("input:")) continue;
      const std::string name = names[g].substr(6);
      text += (text.empty() ? "" : ", ") + name + " " + format("%.3g", 1.0 / std::sqrt(s.alpha[static_cast<Index>(g)]));
    }
    out += format("%-14s%s\n", "relevance", text.c_str());
  }
  if (std::isfinite(r.train_rmse)) out += format("%-14s%.6g\n", "train RMSE", r.train_rmse);
  if (std::isfinite(r.train_accuracy)) out += format("%-14s%.4g\n", "accuracy", r.train_accuracy);
  if (r.vi) {
    out += format("%-14s%.3g s VI (%.3g ms per step) + %.3g s Laplace\n", "time", r.vi->seconds,
                  1e3 * r.vi->seconds_per_iteration, s.seconds);
  } else {
    out += format("%-14s%.3g s (%d re-estimations, %d MAP iterations)\n", "time", s.seconds, s.outer_iterations,
                  s.map_iterations);
  }
  if (s.clipped_eigenvalues > 0) {
    out += format("%-14s%d negative Hessian eigenvalues clipped to zero\n", "note", s.clipped_eigenvalues);
  }
  if (r.model.standardizer.mode != Standardize::kNone) {
    const bool standardised_targets = r.model.standardizer.mode == Standardize::kBoth;
    out += standardised_targets
               ? "(α and β are for the standardised data; RMSE and log-evidence are in the target's units)\n"
               : "(α are for the standardised inputs)\n";
  }
  return out;
}

TestMetrics test_metrics(const ModelFile& model, const Eigen::MatrixXd& X, const Eigen::VectorXd& y) {
  PredictOptions options;
  if (model.variational) options.method = PredictiveMethod::kMonteCarlo;  // VI's default predictive
  const Prediction p = predict(model, X, options);
  const Eigen::ArrayXd residual = y.array() - p.mean.array();
  const Eigen::ArrayXd variance = p.std.array().square();
  TestMetrics metrics;
  metrics.rmse = std::sqrt(residual.square().mean());
  metrics.mean_log_likelihood =
      (-0.5 * (2.0 * std::numbers::pi * variance).log() - residual.square() / (2.0 * variance)).mean();
  return metrics;
}

std::string compare_table(const std::vector<CompareRow>& rows, bool with_test, int* best) {
  *best = -1;
  double best_value = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].fit) continue;
    const double value = rows[i].fit->log_evidence + rows[i].fit->symmetry_log_factor;
    if (value > best_value) {
      best_value = value;
      *best = static_cast<int>(i);
    }
  }

  std::vector<std::string> group_legend;
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = {"", "H", "W", "log-evidence", "+ symmetry", "γ", "α", "β", "train RMSE"};
  constexpr std::size_t kAlphaColumn = 6;  // text (a list), left-aligned; the rest are numbers
  if (with_test) {
    header.push_back("test RMSE");
    header.push_back("test log-lik");
  }
  cells.push_back(header);
  std::string failures;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CompareRow& row = rows[i];
    std::vector<std::string> line = {static_cast<int>(i) == *best ? "*" : "", std::to_string(row.hidden)};
    if (!row.fit) {
      line.resize(header.size(), "-");
      failures += format("H=%lld failed: %s\n", static_cast<long long>(row.hidden), row.failure.c_str());
    } else {
      const FitResult& r = *row.fit;
      if (group_legend.empty()) group_legend = group_names(r);
      std::string alphas;
      for (Index g = 0; g < r.summary.alpha.size(); ++g) alphas += (g ? "/" : "") + format("%.3g", r.summary.alpha[g]);
      line.push_back(std::to_string(r.num_params));
      line.push_back(format("%.2f", r.log_evidence));
      line.push_back(format("%.2f", r.log_evidence + r.symmetry_log_factor));
      line.push_back(format("%.2f", r.summary.gamma_total));
      line.push_back(alphas);
      line.push_back(format("%.4g", r.summary.beta));
      line.push_back(format("%.4g", r.train_rmse));
      if (with_test) {
        line.push_back(row.test ? format("%.4g", row.test->rmse) : "-");
        line.push_back(row.test ? format("%.4f", row.test->mean_log_likelihood) : "-");
      }
    }
    cells.push_back(line);
  }

  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], display_width(line[c]));
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      const std::string padding(width[c] - display_width(line[c]), ' ');
      text += (c == 0 ? "" : "  ") + (c == kAlphaColumn ? line[c] + padding : padding + line[c]);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + '\n';
  }
  if (!group_legend.empty()) {
    std::string legend;
    for (const auto& name : group_legend) legend += (legend.empty() ? "" : "/") + name;
    out += "α per group: " + legend + "\n";
  }
  out += "'*' marks the highest evidence including the hidden-unit symmetry term, log H! + H log 2 for odd\n"
         "activations such as tanh (MacKay 1992b)\n";
  out += failures;
  return out;
}

std::string compare_csv(const std::vector<CompareRow>& rows, bool with_test, int best) {
  std::vector<std::string> names;
  for (const auto& row : rows) {
    if (row.fit) {
      names = group_names(*row.fit);
      break;
    }
  }
  std::vector<std::string> header = {"hidden", "params", "log_evidence", "log_evidence_symmetry", "gamma"};
  for (const auto& name : names) header.push_back("alpha_" + name);
  header.insert(header.end(), {"beta", "train_rmse"});
  if (with_test) header.insert(header.end(), {"test_rmse", "test_log_likelihood"});
  header.push_back("best");

  std::vector<Eigen::VectorXd> lines;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].fit) continue;
    const FitResult& r = *rows[i].fit;
    std::vector<double> v = {static_cast<double>(rows[i].hidden), static_cast<double>(r.num_params), r.log_evidence,
                             r.log_evidence + r.symmetry_log_factor, r.summary.gamma_total};
    for (std::size_t g = 0; g < names.size(); ++g) {
      v.push_back(static_cast<Index>(g) < r.summary.alpha.size() ? r.summary.alpha[static_cast<Index>(g)]
                                                                  : std::numeric_limits<double>::quiet_NaN());
    }
    v.insert(v.end(), {r.summary.beta, r.train_rmse});
    if (with_test) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      v.insert(v.end(), {rows[i].test ? rows[i].test->rmse : nan, rows[i].test ? rows[i].test->mean_log_likelihood : nan});
    }
    v.push_back(static_cast<int>(i) == best ? 1.0 : 0.0);
    lines.push_back(Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Index>(v.size())));
  }
  Eigen::MatrixXd values(static_cast<Index>(lines.size()), static_cast<Index>(header.size()));
  for (std::size_t i = 0; i < lines.size(); ++i) values.row(static_cast<Index>(i)) = lines[i].transpose();
  return format_csv(header, values);
}

void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(ErrorKind::kIo, "cannot write '" + path + "': it is a directory");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw Error(ErrorKind::kIo, "cannot write '" + path + "': no directory '" + parent.string() + "'");
  }
}

}  // namespace occam::cli

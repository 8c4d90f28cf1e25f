// occam predict — the predictive distribution of a saved model at the rows of a CSV table.

#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "enum_choices.h"
#include "occam/data.h"
#include "occam/heteroscedastic.h"
#include "occam/io.h"
#include "occam/predict.h"
#include "occam/status.h"
#include "model_options.h"
#include "output.h"

namespace occam::cli {
namespace {

struct PredictArgs {
  std::string model;
  std::string data;
  std::string out;
  double level = PredictOptions{}.level;
  std::string predictive = "auto";
  int samples = PredictOptions{}.samples;
  std::uint64_t seed = PredictOptions{}.seed;
  std::string draws;      // an `occam sample` run directory instead of --model
  std::string draws_out;  // with --draws: the predictive draws, one row per posterior draw
};

constexpr const char* kPredictExample = R"(
Example:
  occam predict --model model.json --data test.csv --out pred.csv --level 0.9

pred.csv has one row per row of test.csv and the columns mean,std,lower,upper, in the target's
original units (for counts: the predictive mean, std and interval of the count). For a classifier
(bernoulli, categorical) the columns are the class probabilities p_<label> (p_0,p_1 for
bernoulli). test.csv needs the model's input columns (and its offset column, if it has one); the
target column may be absent. Without --out the table goes to standard output. A committee file
(occam fit --committee K) predicts with the mixture of its members' predictives: the same
columns, the interval between the mixture's own quantiles.

From MCMC draws (a directory written by 'occam sample'):
  occam predict --draws run/ --data test.csv --out pred.csv --draws-out ydraws.csv

The Monte Carlo predictive over every draw of every chain: mean, std (total variance: spread of the
network outputs plus the noise 1/β of each draw) and the empirical central interval of one
predictive draw y ~ N(f(x; w), 1/β) per posterior draw. --draws-out writes those draws, one row per
posterior draw and one column (y.1, y.2, ...) per row of test.csv.)";

// The table to standard output without --out.
void write_table(const std::string& out, const std::string& csv) {
  if (out.empty()) {
    std::cout << csv;
  } else {
    write_file_atomic(out, csv);
  }
}

// The predictive options the flags ask for, validated; no file is read.
PredictOptions predict_options(const PredictArgs& args) {
  const bool from_draws = !args.draws.empty();
  if (!from_draws && args.model.empty()) {
    throw Error(ErrorKind::kInvalidArgument, "predict needs --model (a fitted model) or --draws (a sample run)");
  }
  if (!from_draws && !args.draws_out.empty()) throw Error(ErrorKind::kInvalidArgument, "--draws-out needs --draws");
  PredictOptions options;
  options.method = parse_predictive_method(args.predictive);
  options.level = args.level;
  options.samples = args.samples;
  options.seed = args.seed;
  options.keep_draws = !args.draws_out.empty();
  options.validate();
  return options;
}

void run_predict(const PredictArgs& args) {
  const bool from_draws = !args.draws.empty();
  const PredictOptions options = predict_options(args);
  check_output_path({"--out", args.out}, {{"--data", args.data}, {"--model", args.model}, {"--draws", args.draws}});
  check_output_path({"--draws-out", args.draws_out},
                    {{"--data", args.data}, {"--model", args.model}, {"--draws", args.draws}, {"--out", args.out}});

  const FittedModel model = load_model(from_draws ? args.draws : args.model);
  if (from_draws && !std::holds_alternative<PosteriorDraws>(model.posterior)) {
    throw Error(ErrorKind::kInvalidInput, "--draws '" + args.draws +
                                              "' is not a run folder written by occam sample (it "
                                              "holds a " +
                                              posterior_kind(model.posterior) + " model: read it with --model)");
  }
  // A class-label target column may hold words; it is not needed, but it may be present.
  const Table table =
      model.likelihood->num_classes() > 0 ? read_csv(args.data, model.target_name) : read_csv(args.data);
  const Prediction p = model.predict(table, options);

  std::string csv;
  if (!p.labels.empty()) {
    // One probability column per class, named after its label.
    std::vector<std::string> header;
    for (const auto& label : p.labels) header.push_back("p_" + label);
    csv = format_csv(header, p.probabilities);
  } else if (model.noise) {
    // A noise model's own σ(x) beside the predictive std (which adds the mean's uncertainty).
    Eigen::MatrixXd values(p.mean.size(), 5);
    values << p.mean, p.std, p.lower, p.upper, noise_std(model, select_columns(table, model.feature_names));
    csv = format_csv({"mean", "std", "lower", "upper", "noise_std"}, values);
  } else {
    Eigen::MatrixXd values(p.mean.size(), 4);
    values << p.mean, p.std, p.lower, p.upper;
    csv = format_csv({"mean", "std", "lower", "upper"}, values);
  }
  if (!args.draws_out.empty()) {
    std::vector<std::string> header;
    for (Index i = 0; i < p.draws.cols(); ++i) header.push_back("y." + std::to_string(i + 1));
    write_file_atomic(args.draws_out, format_csv(header, p.draws));
  }
  write_table(args.out, csv);
}

}  // namespace

Command add_predict_command(CLI::App& parent) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* command = parent.add_subcommand(
      "predict", "Predict with a saved model or MCMC draws: mean, std and a central interval per row");
  CLI::Option* model_option =
      command->add_option("--model", args->model, "a model (or committee) written by 'occam fit --out'");
  command->add_option("--draws", args->draws, "a run directory written by 'occam sample' (instead of --model)")
      ->excludes(model_option);
  command->add_option("--draws-out", args->draws_out, "with --draws: write the predictive draws (CSV) to this file");
  command->add_option("--data", args->data, "inputs: CSV with the model's input columns")->required();
  command->add_option("--out", args->out, "write the predictions (CSV) to this file");
  command->add_option("--level", args->level, "probability of the central interval [lower, upper], in (0, 1)");
  command
      ->add_option("--predictive", args->predictive,
                   "linearized (Gaussian, MacKay 1992; classes by the probit), mc (Monte Carlo over the posterior), "
                   "linearized-mc (the linearized predictive sampled), bridge (classes by the Laplace bridge) or "
                   "plug-in (the posterior mean's); auto: bridge for a Laplace classifier, linearized for another "
                   "Laplace model, mc for a VI model and for MCMC draws")
      ->check(one_of<PredictiveMethod>());
  command->add_option("--samples", args->samples, "Monte Carlo draws of the weights (--predictive mc)");
  command->add_option("--seed", args->seed, "seed of the Monte Carlo draws")->check(Seed());
  command->footer(kPredictExample);
  return {command, [args] { run_predict(*args); }, [args] { predict_options(*args); }};
}

}  // namespace occam::cli

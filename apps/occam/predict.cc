// occam predict — the predictive distribution of a saved model at the rows of a CSV table.

#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "fitting.h"
#include "occam/data.h"
#include "occam/io.h"
#include "occam/predict.h"

namespace occam::cli {
namespace {

struct PredictArgs {
  std::string model;
  std::string data;
  std::string out;
  double level = PredictOptions{}.level;
  std::string predictive;  // empty: linearized for a Laplace model, mc for a VI one
  int samples = PredictOptions{}.samples;
  std::uint64_t seed = PredictOptions{}.seed;
};

constexpr const char* kPredictExample = R"(
Example:
  occam predict --model model.json --data test.csv --out pred.csv --level 0.9

pred.csv has one row per row of test.csv and the columns mean,std,lower,upper, in the target's
original units. test.csv needs the model's input columns; the target column may be absent.
Without --out the table goes to standard output.)";

void run_predict(const PredictArgs& args) {
  PredictOptions options;
  if (!args.predictive.empty()) options.method = parse_predictive_method(args.predictive);
  options.level = args.level;
  options.samples = args.samples;
  options.seed = args.seed;
  options.validate();
  if (!args.out.empty()) check_output_path(args.out);

  const ModelFile model = load_model(args.model);
  if (args.predictive.empty() && model.variational) options.method = PredictiveMethod::kMonteCarlo;
  const Table table = read_csv(args.data);
  const Eigen::MatrixXd X = select_columns(table, model.feature_names);
  const Prediction p = predict(model, X, options);

  Eigen::MatrixXd values(X.rows(), 4);
  values << p.mean, p.std, p.lower, p.upper;
  const std::string csv = format_csv({"mean", "std", "lower", "upper"}, values);
  if (args.out.empty()) {
    std::cout << csv;
  } else {
    write_file_atomic(args.out, csv);
  }
}

}  // namespace

Command add_predict_command(CLI::App& parent) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* command =
      parent.add_subcommand("predict", "Predict with a saved model: mean, std and a central interval per row");
  command->add_option("--model", args->model, "a model written by 'occam fit --out'")->required();
  command->add_option("--data", args->data, "inputs: CSV with the model's input columns")->required();
  command->add_option("--out", args->out, "write the predictions (CSV) to this file");
  command->add_option("--level", args->level, "probability of the central interval [lower, upper], in (0, 1)");
  command
      ->add_option("--predictive", args->predictive,
                   "linearized (Gaussian, MacKay 1992) or mc (Monte Carlo over the posterior); default linearized "
                   "for a Laplace model, mc for a VI one")
      ->check(CLI::IsMember({"linearized", "mc"}));
  command->add_option("--samples", args->samples, "Monte Carlo draws of the weights (--predictive mc)");
  command->add_option("--seed", args->seed, "seed of the Monte Carlo draws");
  command->footer(kPredictExample);
  return {command, [args] { run_predict(*args); }};
}

}  // namespace occam::cli

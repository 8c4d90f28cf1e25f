// occam compare — Occam's razor in a table: the evidence of networks with different numbers of
// hidden units, fitted to the same data (MacKay 1992b, §4), beside their test performance.

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "compare_table.h"
#include "interrupt.h"
#include "model_options.h"
#include "occam/data.h"
#include "occam/fit.h"
#include "occam/method_options.h"
#include "occam/status.h"
#include "output.h"
#include "progress.h"

namespace occam::cli {
namespace {

struct CompareArgs {
  std::string data;
  std::string target;
  std::string test;
  std::string out;
  std::vector<Index> hidden = {1, 2, 4, 8, 16, 32, 50};
  ModelArgs model;
  std::string progress;  // --progress, empty when not given
};

constexpr const char* kCompareExample = R"(
Example:
  occam compare --data train.csv --target y --hidden 1,2,4,8,16 --test test.csv --out compare.csv

Each H is one hidden layer of H units, fitted with the same options. Log-evidence and test
log-likelihood are in the target's original units; '*' marks the highest evidence including the
hidden-unit symmetry term (log H! + H log 2 for tanh, H the well-determined hidden units).)";

// The spec and method, and what compare itself needs of them; no file is read.
std::pair<ModelSpec, MethodOptions> plan_compare(const CLI::App& command, const CompareArgs& args) {
  if (args.model.model != "mlp") {
    throw Error(ErrorKind::kInvalidArgument,
                "compare varies the number of hidden units, so it needs --model mlp (fit a linear model with "
                "'occam fit --model linear' and compare its log_evidence)");
  }
  ModelSpec spec = model_spec(command, args.model);
  const MethodOptions method = fit_method(command, args.model);
  if (std::holds_alternative<MapMethod>(method)) {
    throw Error(
        ErrorKind::kInvalidArgument,
        "compare ranks the sizes by their log-evidence, which --method map does not compute: use laplace or vi");
  }
  if (args.model.likelihood != "gaussian") {
    throw Error(ErrorKind::kInvalidArgument, "compare supports --likelihood gaussian only; use 'occam cv' for GLMs");
  }
  for (const Index h : args.hidden) {
    ModelSpec sized = spec;
    sized.network.hidden = {h};
    validate_spec(sized, args.model);
  }
  return {spec, method};
}

void run_compare(const CLI::App& command, const CompareArgs& args) {
  auto [spec, method] = plan_compare(command, args);
  check_output_path({"--out", args.out}, {{"--data", args.data}, {"--test", args.test}, {"--edges", args.model.edges}});
  const Dataset train = read_data(args.data, args.target, args.model, &spec);
  std::optional<Eigen::MatrixXd> X_test;
  Eigen::VectorXd y_test;
  if (!args.test.empty()) {
    const Table test_table = read_csv(args.test);
    make_dataset(test_table, args.target);  // refuses a test file without the target, by name
    X_test = select_columns(test_table, train.feature_names);
    y_test = select_columns(test_table, {args.target}).col(0);
  }

  // Every size before the first fit: the largest would otherwise be refused after the others ran.
  for (const Index h : args.hidden) {
    ModelSpec sized = spec;
    sized.network.hidden = {h};
    check_fit_memory(sized, train, method);
  }

  Progress progress(progress_mode(args.progress, false));
  std::vector<CompareRow> rows;
  for (const Index h : args.hidden) {
    CompareRow row;
    row.hidden = h;
    spec.network.hidden = {h};
    try {
      row.fit = fit(spec, train, method, progress_callback(&progress, format("H=%lld: ", static_cast<long long>(h))));
      if (row.fit->summary.termination == Termination::kAborted) {
        throw Interrupted{"stopped at H=" + std::to_string(h) + "; nothing was written"};
      }
      if (X_test) row.test = test_metrics(*row.fit, *X_test, y_test);
    } catch (const Error& e) {
      // One size that cannot be fitted does not invalidate the others; bad data fails them all.
      if (e.kind() != ErrorKind::kNumerical) throw;
      row.failure = e.what();
      row.fit.reset();
    }
    rows.push_back(std::move(row));
  }
  progress.clear();

  int best = -1;
  const std::string table_text = compare_table(rows, X_test.has_value(), &best);
  if (best < 0) throw Error(ErrorKind::kNumerical, "every fit failed:\n" + table_text);
  if (!args.out.empty()) write_file_atomic(args.out, compare_csv(rows, X_test.has_value(), best));

  // The method's --hyper and --hessian as given, else its defaults (the table's).
  std::string settings = "--method " + args.model.method;
  for (const char* key : {"hyper", "hessian"}) {
    const MethodOption* o = find_method_option(key);
    if (o == nullptr || !o->applies_to(args.model.method)) continue;
    settings +=
        format(", %s %s", o->flag, args.model.method_flags.value(key, args.model.method).get<std::string>().c_str());
  }
  std::cout << format("%lld examples, %lld inputs, target '%s'; %s, %s, --standardize %s\n",
                      static_cast<long long>(train.X.rows()), static_cast<long long>(train.X.cols()),
                      train.target_name.c_str(), args.model.activation.c_str(), settings.c_str(),
                      args.model.standardize.c_str())
            << table_text;
  if (!args.out.empty()) std::cout << "table written to " << args.out << '\n';
}

}  // namespace

Command add_compare_command(CLI::App& parent) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* command =
      parent.add_subcommand("compare", "Compare networks with different numbers of hidden units by their evidence");
  command->add_option("--data", args->data, "training data: CSV with a header row of column names")->required();
  command->add_option("--target", args->target, "the column to predict; every other column is an input")->required();
  command
      ->add_option_function<std::string>(
          "--hidden", [args](const std::string& text) { args->hidden = parse_layer_sizes(text, "--hidden"); },
          "comma-separated numbers of hidden units, one network each")
      ->check(LayerSizesValidator())
      ->default_str("1,2,4,8,16,32,50");
  command->add_option("--test", args->test, "test data (with the target column): adds test RMSE and log-likelihood");
  command->add_option("--out", args->out, "write the table (CSV) to this file");
  add_progress_option(command, &args->progress);
  add_model_options(command, &args->model, {.hidden = false, .noise_model = false});
  command->footer(kCompareExample);
  return {command, [command, args] { run_compare(*command, *args); },
          [command, args] { plan_compare(*command, *args); }};
}

}  // namespace occam::cli

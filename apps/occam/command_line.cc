#include "command_line.h"

#include <algorithm>

#include "occam/status.h"
#include "occam/version.h"

namespace occam::cli {
namespace {

constexpr const char* kFooter = R"(
Exit codes:
  0  success
  1  usage error (unknown option, missing or malformed argument)
  2  invalid input or argument (bad CSV cell, missing column, NaN/Inf, bad option value)
  3  I/O error (a file, or standard output, that cannot be read or written; a run folder another
     process writes)
  4  numerical failure (a fit that could not be completed)
  5  internal error (please report it)
  130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM: the command stops at the next iteration and
      writes nothing half-done (occam sample keeps the draws so far, its run folder marked
      interrupted; occam fit --on-interrupt save keeps the best state so far)

Run 'occam <command> --help' for a command's options and an example.
Try it without any data: occam demo --out-dir demo-output)";

// The number of single-character edits between two words (Levenshtein).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate closest to `word` when it is close enough to be a typo of it, else "".
std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

// "did you mean ...?" for the words of a command line that CLI11 refused: an unknown subcommand or
// an option the chosen command does not have.
std::string suggestion(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    commands.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    const std::string match = closest(argv[1], commands);
    return "unknown command '" + std::string(argv[1]) + "'" + (match.empty() ? "" : "; did you mean '" + match + "'?");
  }
  // The deepest parsed command's options.
  const CLI::App* command = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (const CLI::App* sub : command->get_subcommands()) {
      command = sub;
      deeper = true;
      break;
    }
  }
  std::vector<std::string> options;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) options.push_back("--" + name);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (!word.starts_with("--")) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(options.begin(), options.end(), name) != options.end()) continue;
    // Named first, before what it hides ("--data is required" when `--bogus 1` came first).
    const std::string match = closest(name, options);
    return "unknown option '" + name + "'" + (match.empty() ? "" : "; did you mean '" + match + "'?");
  }
  return {};
}

// CLI11 gives an option the words after it as its values even when they are options themselves:
// `--data --target y` sets --data to "--target" and then reports "--target is required". Each
// option that takes a value refuses one that names an option of its command, which CLI11 reports
// before missing options, so the message says what happened. (No help text: the description is empty.)
void refuse_options_as_values(CLI::App* command) {
  for (CLI::Option* option : command->get_options({})) {
    if (option->get_items_expected_max() == 0) continue;  // a flag
    option->check(CLI::Validator(
        [command, name = option->get_name()](std::string& value) -> std::string {
          if (!value.starts_with("--")) return {};
          const std::string word = value.substr(0, value.find('='));
          if (command->get_option_no_throw(word) == nullptr) return {};
          return "'" + value + "' is an option, not a value: " + name + " needs its value before it";
        },
        ""));
  }
  for (CLI::App* sub : command->get_subcommands({})) refuse_options_as_values(sub);
}

}  // namespace

CommandLine::CommandLine()
    : app("occam — Bayesian neural networks that learn their own hyperparameters\n"
          "(evidence framework, GLMs and cross-validation, MCMC, variational inference: predictive\n"
          "distributions, not points)",
          "occam") {
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("occam ") + occam::version());
  app.require_subcommand(1, 1);
  app.option_defaults()->always_capture_default();
  commands = {add_fit_command(app),  add_predict_command(app), add_compare_command(app),
              add_demo_command(app), add_cv_command(app),      add_sample_command(app),
              add_loo_command(app),  add_summary_command(app), add_plot_command(app)};
  refuse_options_as_values(&app);
}

const Command* CommandLine::chosen() const {
  for (const Command& command : commands) {
    if (command.app->parsed()) return &command;
  }
  return nullptr;
}

std::string usage_message(const CLI::App& app, const CLI::ParseError& error, int argc, const char* const* argv) {
  const std::string hint = suggestion(app, argc, argv);
  return "occam: error: " + (hint.empty() ? std::string(error.what()) : hint) +
         "\nRun 'occam --help' or 'occam <command> --help' for usage.\n";
}

int check_command_line(const std::vector<std::string>& args, std::string* message) {
  CommandLine line;
  std::vector<const char*> argv = {"occam"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  const int argc = static_cast<int>(argv.size());
  try {
    line.app.parse(argc, argv.data());
  } catch (const CLI::Success&) {  // --help, --version
    return 0;
  } catch (const CLI::ParseError& e) {
    *message = usage_message(line.app, e, argc, argv.data());
    return 1;
  }
  try {
    if (const Command* command = line.chosen()) command->check();
  } catch (const Error& e) {
    *message = std::string("occam: error: ") + e.what() + "\n";
    return e.kind() == ErrorKind::kInvalidArgument || e.kind() == ErrorKind::kInvalidInput ? 2 : 3;
  }
  return 0;
}

}  // namespace occam::cli

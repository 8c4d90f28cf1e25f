// commands.h — the subcommands of the occam command-line tool.
//
// Each subcommand lives in its own file and registers its options on the parent CLI::App; the
// returned `run` does the work after a successful parse, and `check` (where the command has
// options to combine) builds and validates its ModelSpec and options without reading a file or
// fitting: what run would refuse before any work. Errors are thrown as occam::Error and turned
// into a message and an exit code in main.cc, in one place.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace occam::cli {

struct Command {
  CLI::App* app = nullptr;              // the subcommand, to ask whether it was parsed
  std::function<void()> run;            // does the work; throws occam::Error
  std::function<void()> check = [] {};  // the options alone; throws occam::Error(kInvalidArgument)
};

Command add_fit_command(CLI::App& parent);
Command add_predict_command(CLI::App& parent);
Command add_compare_command(CLI::App& parent);
Command add_demo_command(CLI::App& parent);
Command add_cv_command(CLI::App& parent);
// `occam demo glm`, a subcommand of `demo`.
Command add_demo_glm_command(CLI::App& demo);
Command add_sample_command(CLI::App& parent);
Command add_loo_command(CLI::App& parent);
Command add_summary_command(CLI::App& parent);
Command add_plot_command(CLI::App& parent);

}  // namespace occam::cli

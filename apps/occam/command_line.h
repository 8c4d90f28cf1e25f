// command_line.h — the occam command line: every command and its options, parsed and checked.
//
// main.cc parses with it and runs the chosen command; check_command_line() parses and checks a
// command line without running anything, for tests and the command-line fuzz target
// (fuzz/cli_options_fuzz.cc). Its contract: any argument list is accepted or refused with a
// usage error (exit code 1) or an invalid argument (exit code 2), never anything else.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"

namespace occam::cli {

struct CommandLine {
  CommandLine();
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;
  CLI::App app;
  std::vector<Command> commands;
  // The command CLI11 parsed (nullptr before a successful parse).
  const Command* chosen() const;
};

// The message for a command line CLI11 refused: "unknown option '--hiden'; did you mean
// '--hidden'?" where a word is close to a command or option, else CLI11's own.
std::string usage_message(const CLI::App& app, const CLI::ParseError& error, int argc, const char* const* argv);

// Parses `args` (without the program name) and runs the chosen command's check: 0 when accepted
// (help and --version included), 1 for a usage error, 2 for an invalid argument, the exit codes
// the program would end with before any work; `message` gets what it would print on stderr.
int check_command_line(const std::vector<std::string>& args, std::string* message);

}  // namespace occam::cli

// method_flags.h — a command's method flags made from the library's table of method options
// (occam/method_options.h): each option of the command's methods becomes its flag, with the
// table's help line, range or choices and default. The values given are kept by the option's key
// as JSON; method_from_json turns them into the method's options and names a bad one by its flag.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace occam::cli {

// The method flags given on a command line, by the option's key ({"max_depth": 8, ...}).
struct MethodFlags {
  nlohmann::json given = nlohmann::json::object();
};

// Registers the flag of every option of the table that applies to one of `methods` (the first
// method's default is the one --help shows), but those in `except`, which the command registers
// itself.
void add_method_flags(CLI::App* command, const std::vector<std::string>& methods, MethodFlags* flags,
                      const std::vector<std::string>& except = {});

}  // namespace occam::cli

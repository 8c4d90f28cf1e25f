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

  bool has(const char* key) const { return given.contains(key); }
  // The text given for a choice or text option (--hyper fixed: "fixed"); "" when not given.
  std::string text(const char* key) const { return has(key) ? given.at(key).get<std::string>() : std::string(); }
  // The value of option `key` for `method`: the one given, else the table's default.
  nlohmann::json value(const char* key, const std::string& method) const;
};

// Registers the flag of every option of the table that applies to one of `methods` (the first
// method's default is the one --help shows), but those in `except`, which the command registers
// itself or does not offer, and, when `only` is not empty, but those not in it.
void add_method_flags(CLI::App* command, const std::vector<std::string>& methods, MethodFlags* flags,
                      const std::vector<std::string>& except = {}, const std::vector<std::string>& only = {});

}  // namespace occam::cli

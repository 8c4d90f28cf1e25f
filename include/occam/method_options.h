// method_options.h — every option of fit()'s methods declared once (mlpack's PARAM_* declarations
// are the model): its key (the JSON key and the Python keyword), the command line's flag, its type,
// range or choices, a help line and the methods it applies to, bound to the field of the method's
// options struct (fit.h) it reads and writes. Its default is that field's value in the method's
// default options (default_method), not written again. method_from_json and method_to_json are
// made from the table, and the front ends read their method options through it.
//
//   occam::MethodOptions m = occam::method_from_json({{"method", "mclmc"}, {"max_steps", 64}});
//   nlohmann::json j = occam::method_to_json(m);  // every option of mclmc, max_steps 64
//   for (const occam::MethodOption& o : occam::method_option_table()) std::cout << o.key << ": " << o.help << "\n";
#pragma once

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "occam/fit.h"

namespace occam {

enum class MethodOptionType { kInteger, kNumber, kBoolean, kChoice, kText };

// How a message names an option: by its key ('max_steps', as JSON and Python spell it) or by its
// flag (--max-steps, as the command line does).
enum class OptionSpelling { kKey, kFlag };

struct MethodOption {
  const char* key;   // snake_case: the JSON key and the Python keyword
  const char* flag;  // the command line's flag, or nullptr (no_flag says why)
  MethodOptionType type;
  std::vector<std::string> methods;  // the methods it applies to (method_names())
  // kInteger, kNumber: the values allowed, [minimum, maximum], minimum itself excluded when
  // minimum_excluded (a positive number).
  double minimum = -std::numeric_limits<double>::infinity();
  double maximum = std::numeric_limits<double>::infinity();
  bool minimum_excluded = false;
  // kChoice: the names allowed for one method (from the enum tables of types.h where the option is
  // an enum).
  std::function<std::vector<std::string>(std::string_view method)> choices;
  const char* help = "";
  const char* no_flag = nullptr;     // why the command line has no flag for it
  const char* no_keyword = nullptr;  // why Python has no keyword for it
  // false: a setting of how the run is carried out that no number depends on (threads,
  // checkpoint_every); method_to_json leaves it out, so that a fit reports the same options
  // however it ran, and method_from_json(method_to_json(m)) has its default.
  bool reported = true;
  // The binding: the option's value in a method's options (read), and the value set (write; it is
  // already checked against type, range and choices; `as_typed` names the option in a message).
  std::function<nlohmann::json(const MethodOptions&)> read;
  std::function<void(MethodOptions&, const nlohmann::json&, const std::string& as_typed)> write;

  bool applies_to(std::string_view method) const;
  // The value in default_method(method).
  nlohmann::json default_value(std::string_view method) const;
  // Every method's choices, each once, in the order the methods give them.
  std::vector<std::string> all_choices() const;
  // "--max-steps" or "max_steps".
  std::string spelled(OptionSpelling spelling) const;
};

// Every option, in the order a reader meets them (the method's, then the optimiser's, ...).
const std::vector<MethodOption>& method_option_table();
// The option of `key`; nullptr when there is none.
const MethodOption* find_method_option(std::string_view key);

// The methods a front end names: laplace, map, vi and the samplers (enum_names<mcmc::SamplerKind>).
std::vector<std::string> method_names();
// The options a method runs with when none is given: the option structs' defaults, except that a
// sampling run draws α and β by Gibbs (chains.gibbs) and a step size of 0 (Metropolis: 2.38/√W;
// sgld, sghmc: none, it must be given). Throws Error(kInvalidArgument) for an unknown name.
MethodOptions default_method(std::string_view name);

// {"method": "laplace"|"map"|"vi"|"nuts"|..., key: value, ...}: the options the keys set on the
// method's defaults, checked and validated. Throws Error(kInvalidArgument) naming the option as
// `spelling` writes it: an unknown key or one that does not apply to the method, a value of the
// wrong type, outside its range or not among its choices, options that do not go together.
MethodOptions method_from_json(const nlohmann::json& j, OptionSpelling spelling = OptionSpelling::kKey);
// Every option of the method by its key (but the unreported run settings), with "method": the
// inverse of method_from_json (method_from_json(method_to_json(m)) holds the same options, the run
// settings at their defaults). A report keeps it.
// CrossValidatedMethod, which cross_validate() runs and method_from_json does not read, is
// written by its own keys (folds, grid).
nlohmann::json method_to_json(const MethodOptions& method);

}  // namespace occam

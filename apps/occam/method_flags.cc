// method_flags.cc — the method flags of a command, made from the table of method options.
#include "method_flags.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>

#include "model_options.h"
#include "occam/method_options.h"
#include "occam/status.h"

namespace occam::cli {
namespace {

// The check of a number against the option's range, in words (model_options.h's validators).
std::optional<CLI::Validator> range_check(const MethodOption& o) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (std::string_view(o.key) == "seed") return Seed();
  if (o.minimum_excluded && o.minimum == 0.0 && o.maximum == kInf) return Positive();
  if (o.minimum == 0.0 && o.maximum == kInf) return NonNegative();
  if (std::isfinite(o.minimum) && std::isfinite(o.maximum)) return InRange(o.minimum, o.maximum);
  return std::nullopt;
}

std::string default_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.is_null() ? std::string() : value.dump();
}

bool listed(const std::vector<std::string>& keys, const char* key) {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

// The check of a text (--family lowrank:R, --hessian-structure kron) at parsing: the option's own
// parser, run by writing the text into the method's default options.
std::function<std::string(const std::string&)> parses(const MethodOption& o, const std::string& method) {
  return [&o, method](const std::string& text) -> std::string {
    MethodOptions m = default_method(method);
    try {
      o.write(m, text, o.flag);
    } catch (const Error& e) {
      return e.what();
    }
    return {};
  };
}

}  // namespace

nlohmann::json MethodFlags::value(const char* key, const std::string& method) const {
  return given.contains(key) ? given.at(key) : find_method_option(key)->default_value(method);
}

void add_method_flags(CLI::App* command, const std::vector<std::string>& methods, MethodFlags* flags,
                      const std::vector<std::string>& except, const std::vector<std::string>& only) {
  nlohmann::json* given = &flags->given;
  for (const MethodOption& o : method_option_table()) {
    if (o.flag == nullptr || listed(except, o.key) || (!only.empty() && !listed(only, o.key))) continue;
    const auto method =
        std::find_if(methods.begin(), methods.end(), [&](const std::string& m) { return o.applies_to(m); });
    if (method == methods.end()) continue;
    const std::string key = o.key;
    // "sgld, sghmc: ..." for an option of some of the command's methods.
    std::string help = o.help;
    std::vector<std::string> its;
    for (const std::string& m : methods) {
      if (o.applies_to(m)) its.push_back(m);
    }
    if (its.size() < methods.size()) {
      std::string names;
      for (const std::string& m : its) names += (names.empty() ? "" : ", ") + m;
      help = names + ": " + help;
    }
    CLI::Option* option = nullptr;
    switch (o.type) {
      case MethodOptionType::kBoolean:
        command->add_flag_callback(
            o.flag, [given, key] { (*given)[key] = true; }, help);
        continue;  // a flag has no value, default or check
      case MethodOptionType::kInteger:
        if (key == "seed") {
          option = command->add_option_function<std::uint64_t>(
              o.flag, [given, key](const std::uint64_t& v) { (*given)[key] = v; }, help);
        } else {
          option = command->add_option_function<long long>(
              o.flag, [given, key](const long long& v) { (*given)[key] = v; }, help);
        }
        break;
      case MethodOptionType::kNumber:
        option = command->add_option_function<double>(
            o.flag, [given, key](const double& v) { (*given)[key] = v; }, help);
        break;
      case MethodOptionType::kChoice:
      case MethodOptionType::kText:
        option = command->add_option_function<std::string>(
            o.flag, [given, key](const std::string& v) { (*given)[key] = v; }, help);
        break;
    }
    if (o.type == MethodOptionType::kChoice) {
      // The names the command's methods take, e.g. sample's --hyper gibbs|fixed.
      std::vector<std::string> names;
      for (const std::string& m : methods) {
        if (!o.applies_to(m)) continue;
        for (const std::string& c : o.choices(m)) {
          if (std::find(names.begin(), names.end(), c) == names.end()) names.push_back(c);
        }
      }
      option->check(CLI::IsMember(names));
    } else if (o.type == MethodOptionType::kText) {
      option->check(parses(o, *method));
    } else if (const std::optional<CLI::Validator> check = range_check(o)) {
      option->check(*check);
    }
    option->default_str(default_text(o.default_value(*method)));
  }
}

}  // namespace occam::cli

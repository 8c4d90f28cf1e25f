// types.h — every enum's names in one place (src/core/types.cc, as Ceres' types.cc): one table per enum
// from which the enum is parsed and printed, its error message is built and a front end's list of
// choices is made.
//
//   occam::Activation a = occam::enum_names<occam::Activation>().parse("tanh");
//   const char* name = occam::enum_names<occam::Activation>().name(a);       // "tanh"
//   std::vector<std::string> choices = occam::enum_names<occam::Activation>().names();
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace occam {

// One name of an enum value. A value's first entry in its table is its name; later entries for the
// same value are aliases that parse() accepts too.
template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

namespace internal {
// Error(kInvalidArgument): "unknown <what> '<name>' (known: a, b, c)".
[[noreturn]] void throw_unknown_name(const char* what, std::string_view name, const std::vector<std::string>& known);
}  // namespace internal

template <typename Enum>
struct EnumNames {
  const char* what;  // how a message calls the value: "activation", "sampler"
  std::vector<EnumName<Enum>> entries;

  // The value of `name` (a name or an alias); throws Error(kInvalidArgument) naming the known names.
  Enum parse(std::string_view name) const {
    for (const EnumName<Enum>& e : entries) {
      if (name == e.name) return e.value;
    }
    internal::throw_unknown_name(what, name, names());
  }
  // The value's name ("unknown" for a value outside the table).
  const char* name(Enum value) const {
    for (const EnumName<Enum>& e : entries) {
      if (e.value == value) return e.name;
    }
    return "unknown";
  }
  // Every value's name, in the table's order, without aliases: what a front end offers.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      bool first = true;
      for (std::size_t j = 0; j < i; ++j) first = first && entries[j].value != entries[i].value;
      if (first) out.emplace_back(entries[i].name);
    }
    return out;
  }
  // names() less `excluded` (a front end that offers only some of them).
  std::vector<std::string> names_except(const std::vector<Enum>& excluded) const {
    std::vector<std::string> out;
    for (const std::string& n : names()) {
      bool keep = true;
      for (Enum e : excluded) keep = keep && n != name(e);
      if (keep) out.push_back(n);
    }
    return out;
  }
};

// The table of each enum below (types.cc).
template <typename Enum>
const EnumNames<Enum>& enum_names();

// The enums whose tables types.cc holds (declared where they are defined).
enum class Activation;
enum class AlphaGroups;
enum class CommitteeWeighting;
enum class CurvatureForm;
enum class EvidenceGradient;
enum class EvidenceLoop;
enum class HessianKind;
enum class HyperStrategy;
enum class LearningRateSchedule;
enum class LikelihoodKind;
enum class NetworkKind;
enum class Optimizer;
enum class PredictiveMethod;
enum class PriorKind;
enum class Standardize;
enum class Termination;
enum class VariationalHyper;
namespace mcmc {
enum class InitKind;
enum class IsokineticIntegrator;
enum class MetricKind;
enum class SamplerKind;
}  // namespace mcmc

template <>
const EnumNames<Activation>& enum_names<Activation>();
template <>
const EnumNames<AlphaGroups>& enum_names<AlphaGroups>();
template <>
const EnumNames<CommitteeWeighting>& enum_names<CommitteeWeighting>();
template <>
const EnumNames<CurvatureForm>& enum_names<CurvatureForm>();
template <>
const EnumNames<EvidenceGradient>& enum_names<EvidenceGradient>();
template <>
const EnumNames<EvidenceLoop>& enum_names<EvidenceLoop>();
template <>
const EnumNames<HessianKind>& enum_names<HessianKind>();
template <>
const EnumNames<HyperStrategy>& enum_names<HyperStrategy>();
template <>
const EnumNames<LearningRateSchedule>& enum_names<LearningRateSchedule>();
template <>
const EnumNames<LikelihoodKind>& enum_names<LikelihoodKind>();
template <>
const EnumNames<NetworkKind>& enum_names<NetworkKind>();
template <>
const EnumNames<Optimizer>& enum_names<Optimizer>();
template <>
const EnumNames<PredictiveMethod>& enum_names<PredictiveMethod>();
template <>
const EnumNames<PriorKind>& enum_names<PriorKind>();
template <>
const EnumNames<Standardize>& enum_names<Standardize>();
template <>
const EnumNames<Termination>& enum_names<Termination>();
template <>
const EnumNames<VariationalHyper>& enum_names<VariationalHyper>();
template <>
const EnumNames<mcmc::InitKind>& enum_names<mcmc::InitKind>();
template <>
const EnumNames<mcmc::IsokineticIntegrator>& enum_names<mcmc::IsokineticIntegrator>();
// Parsed by the names a user types (unit, diag, dense); a Stan CSV file and a run's settings write
// Stan's names (mcmc::to_string: unit_e, diag_e, dense_e).
template <>
const EnumNames<mcmc::MetricKind>& enum_names<mcmc::MetricKind>();
template <>
const EnumNames<mcmc::SamplerKind>& enum_names<mcmc::SamplerKind>();

}  // namespace occam

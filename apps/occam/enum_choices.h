// enum_choices.h — an option's choices made from the library's table of the enum's names
// (occam/types.h), so that the command line offers exactly the names the library parses.
#pragma once

#include <CLI/CLI.hpp>
#include <vector>

#include "occam/types.h"

namespace occam::cli {

// CLI::IsMember over the enum's names, less those the command does not offer.
template <typename Enum>
CLI::IsMember one_of(const std::vector<Enum>& excluded = {}) {
  return CLI::IsMember(enum_names<Enum>().names_except(excluded));
}

}  // namespace occam::cli

// json_error_path.h — where in a JSON document parsing fails, as a field path (internal).
//
// nlohmann's messages give a byte position for a syntax error and nothing at all for a number
// too large for a double ("number overflow parsing '1e400'"); a user fixing a model file needs
// the field. A second, event-driven pass over the text records the path of the value being read
// when the parser gives up.
//
//   std::string where = occam::internal::json_error_path(R"({"prior": {"dim": 1e400}})");  // "prior.dim"
#pragma once

#include <string>
#include <string_view>

namespace occam::internal {

// The path ("prior.groups[0].alpha") of the value at which parsing `text` fails; "" when it does
// not fail or fails outside any field (e.g. at the top level).
std::string json_error_path(std::string_view text);

// What no occam file holds, found before the document is parsed: nesting deeper than
// kMaxJsonDepth (a model file is a few levels deep; a parser's stack and every later walk of the
// document grow with it) or a number longer than kMaxJsonNumber characters (occam writes at most
// 24; a 10-million-digit number is a damaged file, not a value). The message says which and where
// ("nested more than 256 levels deep at line 1, column 257"); "" when neither.
inline constexpr std::size_t kMaxJsonDepth = 256;
inline constexpr std::size_t kMaxJsonNumber = 1000;
std::string json_limit_problem(std::string_view text);

}  // namespace occam::internal

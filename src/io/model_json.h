// model_json.h — one model as the JSON object of its model file (io.h), for the files that hold
// models inside them (a committee's, committee_file.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "occam/fitted_model.h"

namespace occam::internal {

// The "format" of each kind of file (a run directory's model.json is run_directory.h's kRunFormat).
inline constexpr const char* kModelFormat = "occam-model";
inline constexpr const char* kCommitteeFormat = "occam-committee";

// The top-level "format" string of the JSON file at `path`, parsed only as far as that entry (a
// committee file holds megabytes of models after it); empty when the file cannot be read, is not
// a JSON object, or has no such string before a syntax error or the end.
std::string json_file_format(const std::string& path);

// The model file's object: {"format": "occam-model", "version", "network", ...}. Throws
// Error(kInvalidArgument) for a model without a network or likelihood, or with MCMC draws (those
// are saved as a run directory).
nlohmann::json model_to_json(const FittedModel& model);
// The model an object written by model_to_json describes, every piece checked; `path` names
// where it was read in the messages. Throws Error(kInvalidInput) when it is corrupt or of a newer
// version.
FittedModel model_from_json(const std::string& path, const nlohmann::json& j);

// What the versioned JSON files share. nlohmann's message without its "[json.exception.…] " tag;
// `text` parsed, or Error(kInvalidInput) "<path> is not a valid <file_kind>: JSON …" naming the
// field where it fails; and the file's "version": Error(kInvalidInput) unless a positive integer
// no newer than `newest` ("<path> was written by a newer occam (<format_name> version N) …").
std::string without_json_tag(const char* what);
// The one message of a damaged file: Error(kInvalidInput) "<path> is not a valid <file_kind>: <what>".
[[noreturn]] void corrupt_file(const std::string& path, const std::string& file_kind, const std::string& what);
// j[name], or corrupt_file(path, file_kind, "missing field '<name>'").
const nlohmann::json& required_field(const std::string& path, const std::string& file_kind, const nlohmann::json& j,
                                     const char* name);
nlohmann::json parse_json_file(const std::string& path, const std::string& text, const std::string& file_kind);
void check_format_version(const std::string& path, const nlohmann::json& j, long long newest,
                          const std::string& file_kind, const std::string& format_name);

}  // namespace occam::internal

// json_error_path.cc — a SAX pass that tracks the key path and stops at the first error.

#include "io/json_error_path.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace occam::internal {
namespace {

class PathTracker {
 public:
  using json = nlohmann::json;

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool key(json::string_t& name) {
    frames_.back().key = name;
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    failed_ = true;
    return false;
  }

  bool failed() const { return failed_; }
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.array) {
        out.append("[").append(std::to_string(f.index)).append("]");
      } else if (!f.key.empty()) {
        if (!out.empty()) out += '.';
        out += f.key;
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool array = false;
    std::size_t index = 0;  // arrays: the element being read
    std::string key;        // objects: the member being read
  };

  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    return true;
  }
  bool open(bool array) {
    frames_.push_back({array, 0, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();  // the finished container was one value of its parent
  }

  std::vector<Frame> frames_;
  bool failed_ = false;
};

}  // namespace

std::string json_error_path(std::string_view text) {
  PathTracker tracker;
  nlohmann::json::sax_parse(text.begin(), text.end(), &tracker, nlohmann::json::input_format_t::json, /*strict=*/true);
  return tracker.failed() ? tracker.path() : std::string();
}

std::string json_limit_problem(std::string_view text) {
  std::size_t depth = 0, line = 1, line_start = 0, number_start = 0;
  bool in_string = false, escaped = false, in_number = false;
  const auto where = [&](std::size_t offset) {
    return " at line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    const bool number_char = (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    if (number_char && !in_number) {
      in_number = true;
      number_start = i;
    } else if (!number_char) {
      in_number = false;
    }
    if (in_number && i - number_start + 1 > kMaxJsonNumber) {
      std::size_t end = i;
      while (end < text.size() && std::string_view("0123456789+-.eE").find(text[end]) != std::string_view::npos) ++end;
      return "a number of " + std::to_string(end - number_start) + " characters" + where(number_start) +
             ", longer than any number an occam file holds (at most " + std::to_string(kMaxJsonNumber) + ")";
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth) {
          return "nested more than " + std::to_string(kMaxJsonDepth) + " levels deep" + where(i) +
                 "; an occam file is a few levels deep";
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case '\n':
        line += 1;
        line_start = i + 1;
        break;
      default:
        break;
    }
  }
  return {};
}

}  // namespace occam::internal

// json_error_path.cc — a SAX pass that tracks the key path and stops at the first error.

#include "json_error_path.h"

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

}  // namespace occam::internal

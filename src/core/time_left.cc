#include "occam/time_left.h"

#include <algorithm>
#include <cmath>

#include "occam/text.h"

namespace occam {

void TimeLeft::begin(double done, Clock::time_point now) {
  started_ = true;
  first_ = done;
  start_ = now;
}

std::optional<double> TimeLeft::seconds(double done, double total, Clock::time_point now) {
  if (!started_) {
    begin(done, now);
    return std::nullopt;
  }
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double progressed = done - first_;
  if (done >= total || elapsed < kMinSeconds || progressed <= 0.0 || progressed < 0.01 * total) return std::nullopt;
  return elapsed * (total - done) / progressed;
}

std::string TimeLeft::describe(double done, double total, Clock::time_point now) {
  const std::optional<double> left = seconds(done, total, now);
  return left ? "ETA " + format_duration(*left) : std::string();
}

std::string format_duration(double seconds) {
  const long long s = std::isfinite(seconds) ? std::llround(std::max(0.0, seconds)) : 0;
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return format("%lldm%02llds", s / 60, s % 60);
  return format("%lldh%02lldm", s / 3600, (s % 3600) / 60);
}

}  // namespace occam

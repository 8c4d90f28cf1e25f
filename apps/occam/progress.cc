#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "interrupt.h"

namespace occam::cli {
namespace {
// At most five updates a second: readable, and no measurable cost to the fit.
constexpr std::chrono::milliseconds kMinInterval{200};
// Fits that finish quickly show nothing at all, rather than a line that flickers and vanishes.
constexpr std::chrono::milliseconds kQuietStart{500};

// Longer lines would wrap, and '\r' only returns to the start of the last row.
std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col - 1;
  return 79;
}
}  // namespace

Progress::Progress(bool wanted)
    : enabled_(wanted && ::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { clear(); }

bool Progress::due() const {
  if (!enabled_) return false;
  const auto now = std::chrono::steady_clock::now();
  return showing_ ? now - last_ >= kMinInterval : now - start_ >= kQuietStart;
}

void Progress::update(const std::string& line, bool force) {
  if (!enabled_ || (!force && !due())) return;
  last_ = std::chrono::steady_clock::now();
  // "\x1b[K" erases what is left of a longer previous line.
  std::fprintf(stderr, "\r%s\x1b[K", line.substr(0, terminal_width()).c_str());
  std::fflush(stderr);
  showing_ = true;
}

void Progress::clear() {
  if (!showing_) return;
  std::fprintf(stderr, "\r\x1b[K");
  std::fflush(stderr);
  showing_ = false;
}

FitCallback progress_callback(Progress* progress, const std::string& prefix) {
  auto round = std::make_shared<std::string>();
  return [progress, prefix, round](const FitProgress& p) {
    if (interrupted()) return CallbackReturn::kAbort;
    if (!progress->enabled()) return CallbackReturn::kContinue;
    if (p.evidence != nullptr) {
      *round = p.describe();
      progress->update(prefix + *round);
    } else if (progress->due()) {  // formatting costs more than the check
      const std::string line = p.describe();
      progress->update(prefix + (p.map != nullptr && !round->empty() ? *round + " | " : std::string()) + line);
    }
    return CallbackReturn::kContinue;
  };
}

}  // namespace occam::cli

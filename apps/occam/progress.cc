#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "interrupt.h"
#include "occam/status.h"
#include "occam/time_left.h"

namespace occam::cli {
namespace {
// A bar: at most five updates a second, readable, and no measurable cost to the fit.
constexpr std::chrono::milliseconds kBarInterval{200};
// Fits that finish quickly show no bar at all, rather than a line that flickers and vanishes.
constexpr std::chrono::milliseconds kQuietStart{500};
// Lines: one every ten seconds unless OCCAM_PROGRESS_INTERVAL says otherwise.
constexpr double kLineSeconds = 10.0;

// Longer lines would wrap, and '\r' only returns to the start of the last row.
std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 1) return size.ws_col - 1;
  return 79;
}

std::chrono::steady_clock::duration line_interval() {
  double seconds = kLineSeconds;
  if (const char* text = std::getenv("OCCAM_PROGRESS_INTERVAL")) {
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (end != text && *end == '\0' && value > 0.0 && value < 1e6) seconds = value;
  }
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}
}  // namespace

void add_progress_option(CLI::App* command, std::string* mode) {
  command
      ->add_option("--progress", *mode,
                   "auto (a bar on a terminal, else a line every few seconds: OCCAM_PROGRESS_INTERVAL seconds, "
                   "default 10), bar, lines or none; --quiet means none")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
      ->default_str("auto");
}

ProgressMode progress_mode(const std::string& text, bool quiet) {
  if (text.empty()) return quiet ? ProgressMode::kNone : ProgressMode::kAuto;
  if (text == "bar") return ProgressMode::kBar;
  if (text == "lines") return ProgressMode::kLines;
  if (text == "none") return ProgressMode::kNone;
  if (text == "auto") return ProgressMode::kAuto;
  throw Error(ErrorKind::kInvalidArgument, "--progress: '" + text + "' is not auto, bar, lines or none");
}

Progress::Progress(ProgressMode mode) : mode_(mode), start_(std::chrono::steady_clock::now()) {
  if (mode_ == ProgressMode::kAuto) mode_ = ::isatty(STDERR_FILENO) == 1 ? ProgressMode::kBar : ProgressMode::kLines;
  interval_ = mode_ == ProgressMode::kLines ? line_interval() : std::chrono::steady_clock::duration(kBarInterval);
  last_ = start_;
}

Progress::~Progress() { clear(); }

bool Progress::due() const {
  const auto now = std::chrono::steady_clock::now();
  switch (mode_) {
    case ProgressMode::kBar:
      return showing_ ? now - last_ >= interval_ : now - start_ >= kQuietStart;
    case ProgressMode::kLines:
      return now - last_ >= interval_;
    default:
      return false;
  }
}

void Progress::update(const std::string& line, bool force) {
  if (!enabled() || (!force && !due())) return;
  last_ = std::chrono::steady_clock::now();
  if (mode_ == ProgressMode::kLines) {
    const double elapsed = std::chrono::duration<double>(last_ - start_).count();
    std::fprintf(stderr, "occam: %.1f s: %s\n", elapsed, line.c_str());
    std::fflush(stderr);
    return;
  }
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
  auto eta = std::make_shared<TimeLeft>();
  eta->begin(0.0);  // the work starts now
  return [progress, prefix, round, eta](const FitProgress& p) {
    if (interrupted()) return CallbackReturn::kAbort;
    if (!progress->enabled()) return CallbackReturn::kContinue;
    if (p.grid_point >= 0 && p.total > 0 && p.evidence == nullptr && p.map == nullptr && p.variational == nullptr) {
      // Cross-validation's grid points: countable, so the line says when it will be done.
      const std::string left = eta->describe(p.iteration, p.total);
      *round = p.describe() + (left.empty() ? "" : ", " + left);
      progress->update(prefix + *round, true);
    } else if (p.evidence != nullptr) {
      *round = p.describe();
      progress->update(prefix + *round);
    } else if (progress->due()) {  // formatting costs more than the check
      std::string line = p.describe();
      if (p.map != nullptr && p.map->total > 0) {  // minibatch epochs: countable, so with an ETA
        const std::string left = eta->describe(p.map->iteration - 1 + p.map->epoch_fraction, p.map->total);
        if (!left.empty()) line += ", " + left;
      }
      progress->update(prefix + (p.map != nullptr && !round->empty() ? *round + " | " : std::string()) + line);
    }
    return CallbackReturn::kContinue;
  };
}

}  // namespace occam::cli

#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace occam::cli {
namespace {

// The first signal received (0: none). Only this flag is touched in the handler.
std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
  // A second Ctrl-C (or SIGTERM) ends the process at once.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace

void catch_interrupts() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

bool interrupted() { return g_signal.load() != 0; }

int interrupt_signal() { return g_signal.load(); }

Interrupted::Interrupted(std::string what) : message(std::move(what)), signal(interrupt_signal()) {
  if (signal == 0) signal = SIGINT;
}

const char* Interrupted::signal_name() const { return signal == SIGTERM ? "SIGTERM" : "Ctrl-C"; }

}  // namespace occam::cli

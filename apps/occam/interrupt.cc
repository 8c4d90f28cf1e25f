#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace occam::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

}  // namespace

void catch_interrupts() { std::signal(SIGINT, on_sigint); }

bool interrupted() { return g_interrupted.load(); }

}  // namespace occam::cli

// interrupt.h — Ctrl-C (SIGINT) and SIGTERM stop a long command cleanly.
//
// The signal handler only records the signal; the fit's callback (progress.h) turns it into
// kAbort, the library returns its best consistent state with termination kAborted, and the
// command throws Interrupted: main.cc prints the message and exits with 128 + the signal's number
// (130 for Ctrl-C, 143 for SIGTERM, the shell's codes), and nothing is half-written (sample keeps
// the draws made so far in valid files, its run folder marked "interrupted"). A second signal ends
// the process at once.
#pragma once

#include <string>

namespace occam::cli {

// Installs the handlers (main.cc does, for the whole run).
void catch_interrupts();
bool interrupted();
// The signal that stopped the command (SIGINT or SIGTERM), 0 while none has arrived.
int interrupt_signal();

// Thrown by a command that stopped on a signal; `message` says what was kept.
struct Interrupted {
  explicit Interrupted(std::string what);
  std::string message;
  int signal = 0;  // the signal received (SIGINT when the command stopped for another reason)
  int exit_code() const { return 128 + signal; }
  const char* signal_name() const;  // "Ctrl-C" or "SIGTERM"
};

}  // namespace occam::cli

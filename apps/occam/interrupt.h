// interrupt.h — Ctrl-C stops a long command cleanly.
//
// The signal handler only raises a flag; the fit's callback (progress.h) turns it into kAbort, the
// library returns its best consistent state with termination kAborted, and the command throws
// Interrupted: main.cc prints the message and exits with code 130, and nothing is half-written
// (sample keeps the draws made so far in valid files). A second Ctrl-C ends the process at once.
#pragma once

#include <string>

namespace occam::cli {

// Installs the handler (main.cc does, for the whole run).
void catch_interrupts();
bool interrupted();

// Thrown by a command that stopped on Ctrl-C; `message` says what was kept.
struct Interrupted {
  std::string message;
};

}  // namespace occam::cli

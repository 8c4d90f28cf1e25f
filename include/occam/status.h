// status.h — errors and termination kinds shared by every engine.
//
// The library never prints and never exits: it returns a Summary or throws occam::Error,
// whose kind tells the command line which exit code to use.
//
//   try { occam::fit_laplace(&posterior, options, &w); }
//   catch (const occam::Error& e) { std::cerr << e.what() << '\n'; return exit_code(e.kind()); }
#pragma once

#include <stdexcept>
#include <string>

namespace occam {

enum class ErrorKind {
  kInvalidArgument,  // a bad option value or an inconsistent call
  kInvalidInput,     // bad data: a malformed file, NaN in a column, a wrong target
  kIo,               // a file that cannot be opened, read or written
  kNumerical,        // a computation that cannot be completed (e.g. a non-finite objective)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

// How an iterative engine stopped. Never confused: a run that hit its iteration limit is not
// reported as converged, and a failure is not reported as either.
enum class Termination {
  kConverged,
  kMaxIterations,
  kFailure,
  kNoProgress,  // no step improves the objective any more, yet the optimality conditions do not hold
  kAborted,     // a callback asked the run to stop (callback.h); the state is the best so far
};

const char* to_string(Termination termination);

// Throws Error(kInvalidArgument) "Options.field = value: rule", the message every Options
// struct's validate() gives, e.g. invalid_option("MapOptions", "max_iterations", 0, "must be at least 1").
[[noreturn]] void invalid_option(const char* options, const char* field, double value, const char* rule);

}  // namespace occam

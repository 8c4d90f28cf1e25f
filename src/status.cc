#include "occam/status.h"

#include <sstream>

namespace occam {

const char* to_string(Termination termination) {
  switch (termination) {
    case Termination::kConverged: return "converged";
    case Termination::kMaxIterations: return "maximum_iterations";
    case Termination::kFailure: return "failure";
    case Termination::kNoProgress: return "no_progress";
    case Termination::kAborted: return "aborted";
  }
  return "unknown";
}

void invalid_option(const char* options, const char* field, double value, const char* rule) {
  std::ostringstream msg;
  msg << options << '.' << field << " = " << value << ": " << rule;
  throw Error(ErrorKind::kInvalidArgument, msg.str());
}

}  // namespace occam

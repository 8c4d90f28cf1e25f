#include "occam/status.h"

namespace occam {

const char* to_string(Termination termination) {
  switch (termination) {
    case Termination::kConverged: return "converged";
    case Termination::kMaxIterations: return "maximum_iterations";
    case Termination::kFailure: return "failure";
  }
  return "unknown";
}

}  // namespace occam

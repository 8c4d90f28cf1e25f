#include "occam/status.h"

#include <sstream>

#include "occam/types.h"

namespace occam {

const char* to_string(Termination termination) { return enum_names<Termination>().name(termination); }

void invalid_option(const char* options, const char* field, double value, const char* rule) {
  std::ostringstream msg;
  msg << options << '.' << field << " = " << value << ": " << rule;
  throw Error(ErrorKind::kInvalidArgument, msg.str());
}

}  // namespace occam

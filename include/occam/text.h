// text.h — printf into a std::string, for the reports the library writes and its front ends.
//
//   std::string line = occam::format("log-evidence %.6g", value);
#pragma once

#include <string>

namespace occam {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace occam

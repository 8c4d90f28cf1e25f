// output.h — files for the commands: output paths checked before the work, the command line for
// reports. (occam::format, text.h, formats their lines.)
#pragma once

#include <string>

#include "occam/text.h"

namespace occam::cli {

// Throws Error(kIo) now, before any work, if `path` could not be written later (no such
// directory), so that a long fit does not end in a failed write.
void check_output_path(const std::string& path);

// The command line as typed (main.cc records it), for reports.
void set_command_line(int argc, char** argv);
const std::string& command_line();

}  // namespace occam::cli

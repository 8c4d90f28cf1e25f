// output.h — files for the commands: output paths checked before the work, the command line for
// reports. (occam::format, text.h, formats their lines.)
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "occam/text.h"

namespace occam::cli {

// Throws Error(kIo) now, before any work, if `path` could not be written later (no such
// directory), so that a long fit does not end in a failed write.
void check_output_path(const std::string& path);
// The same, and refuses (Error(kInvalidArgument)) an output that would write over an input or a
// run: one that names one of the command's inputs — the same file by device and inode, however
// spelt (relative, through symbolic links) — one inside an input that is a folder, and one inside
// any run folder (is_run_directory, io.h: a run holds only what occam sample writes there, and
// run.json vouches for those files). `option` and the inputs' names are for the message ("--out
// names the same file as --data").
struct NamedPath {
  const char* option;
  const std::string& path;
};
void check_output_path(const NamedPath& output, std::initializer_list<NamedPath> inputs);
void check_output_path(const NamedPath& output, const std::vector<NamedPath>& inputs);

// Creates the directory (and its parents) for a command's output files, or throws Error(kIo)
// naming it: a path that is a file, or one the system refuses (under /proc, no permission).
void make_output_directory(const std::string& directory);

// The command line as typed (main.cc records it), for reports.
void set_command_line(int argc, char** argv);
const std::string& command_line();

}  // namespace occam::cli

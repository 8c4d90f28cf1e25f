#include "output.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "occam/data.h"
#include "occam/io.h"
#include "occam/status.h"

namespace occam::cli {
namespace {
std::string g_command_line;
}  // namespace

void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(ErrorKind::kIo, "cannot write '" + path + "': it is a directory");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw Error(ErrorKind::kIo, "cannot write '" + path + "': no directory '" + parent.string() + "'");
  }
}

void check_output_path(const NamedPath& output, std::initializer_list<NamedPath> inputs) {
  check_output_path(output, std::vector<NamedPath>(inputs));
}

void check_output_path(const NamedPath& output, const std::vector<NamedPath>& inputs) {
  namespace fs = std::filesystem;
  if (output.path.empty()) return;
  check_output_path(output.path);
  const std::string named = std::string(output.option) + " '" + output.path + "'";
  for (const NamedPath& input : inputs) {
    if (!input.path.empty() && same_file(output.path, input.path)) {
      throw Error(ErrorKind::kInvalidArgument, named + " names the same file as " + input.option + " '" + input.path +
                                                   "': writing it would destroy the input; choose another path");
    }
  }
  // The folder the file would be written in, symbolic links followed (the output's own too).
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(fs::absolute(output.path, ec), ec).parent_path();
  const auto inside = [&](const std::string& run) {
    return Error(ErrorKind::kInvalidArgument, named + " is inside the run folder '" + run +
                                                  "', which holds only what occam sample writes there (its manifest "
                                                  "run.json vouches for those files); choose a path outside it");
  };
  // The command's input folders (run folders: --draws, loo's and summary's runs) as the user spelt
  // them, then any run folder.
  for (const NamedPath& input : inputs) {
    if (!input.path.empty() && fs::is_directory(input.path, ec) && fs::equivalent(folder, input.path, ec)) {
      throw inside(input.path);
    }
  }
  if (is_run_directory(folder.string())) throw inside(folder.string());
}

void make_output_directory(const std::string& directory) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory)) {
    const std::string why = ec ? ec.message() : "it is not a directory";
    throw Error(ErrorKind::kIo, "cannot create the directory '" + directory + "': " + why);
  }
}

void set_command_line(int argc, char** argv) {
  g_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) g_command_line += ' ';
    const std::string word = argv[i];
    const bool plain = !word.empty() && word.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (plain) {
      g_command_line += word;
    } else {
      g_command_line += '\'';
      for (char c : word) g_command_line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      g_command_line += '\'';
    }
  }
}

const std::string& command_line() { return g_command_line; }

}  // namespace occam::cli

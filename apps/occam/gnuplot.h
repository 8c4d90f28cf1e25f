// gnuplot.h — running gnuplot on a script written beside the data, for `cv` and the demos.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>

namespace occam::cli {

inline std::string shell_quoted(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

inline bool gnuplot_installed() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// gnuplot-nox is usually built with cairo; fall back to libgd's png terminal when it is not.
inline std::string gnuplot_png_terminal() {
  FILE* pipe = ::popen("gnuplot -e 'set terminal' 2>&1", "r");
  if (pipe == nullptr) return "png";
  std::string listing;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) listing += buffer;
  ::pclose(pipe);
  return listing.find("pngcairo") != std::string::npos ? "pngcairo" : "png";
}

// Runs `gnuplot script` in dir; false when gnuplot is missing or fails.
inline bool run_gnuplot(const std::string& dir, const std::string& script) {
  if (!gnuplot_installed()) return false;
  const std::string command = "cd " + shell_quoted(dir) + " && gnuplot " + shell_quoted(script) + " 2>/dev/null";
  return std::system(command.c_str()) == 0;
}

// Runs `gnuplot script` in dir and tells the user where the plot is; without gnuplot, or when it
// fails, says how to make the plot from the data files already written.
inline void render_plot(const std::string& dir, const std::string& script, const std::string& png_path,
                        std::ostream& out) {
  const std::string command = "cd " + shell_quoted(dir) + " && gnuplot " + script;
  if (!gnuplot_installed()) {
    out << "gnuplot is not installed, so there is no " << png_path << "; install it with\n"
        << "  sudo apt-get install gnuplot-nox\n"
        << "and run: " << command << '\n';
    return;
  }
  if (std::system(command.c_str()) != 0) {
    out << "gnuplot failed; the data files are complete, plot them with: " << command << '\n';
    return;
  }
  out << "plot written to " << png_path << '\n';
}

}  // namespace occam::cli

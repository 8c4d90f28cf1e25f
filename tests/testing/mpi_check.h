// mpi_check.h — runs tests/mpi/mpi_check.cc under `mpirun -n K` and returns the lines its processes
// printed, each a result's bits (bits() writes a vector the same way, for comparison).
#pragma once

#include <Eigen/Core>
#include <cstdio>
#include <string>
#include <vector>

namespace occam::testing {

inline std::string bits(const Eigen::VectorXd& v) {
  std::string line = "bits";
  char number[64];
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    std::snprintf(number, sizeof number, " %a", v(k));
    line += number;
  }
  return line;
}

#ifdef OCCAM_MPIRUN
// The start of a shell command that runs a program on `processes` processes on this machine (as
// root too; shared-memory transport only), ending in a space.
inline std::string mpirun(int processes) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader '" +
         std::string(OCCAM_MPIRUN) + "' -n " + std::to_string(processes) + " --oversubscribe ";
}
#endif

#ifdef OCCAM_MPI_CHECK
// The "bits …" lines of `mpirun -n processes mpi_check args` (empty on failure; *output holds all
// it printed, for the failure message).
inline std::vector<std::string> mpi_check_lines(int processes, const std::string& args, std::string* output) {
  const std::string command = mpirun(processes) + "'" + std::string(OCCAM_MPI_CHECK) + "' " + args + " 2>&1";
  output->clear();
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) *output += buffer;
  if (pclose(pipe) != 0) return {};
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < output->size();) {
    const std::size_t eol = output->find('\n', at);
    const std::string line = output->substr(at, eol == std::string::npos ? std::string::npos : eol - at);
    at = eol == std::string::npos ? output->size() : eol + 1;
    if (line.rfind("bits", 0) == 0) lines.push_back(line);
  }
  return lines;
}
#endif

}  // namespace occam::testing

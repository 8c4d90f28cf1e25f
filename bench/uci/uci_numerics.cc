#include "uci/uci_numerics.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "occam/status.h"
#include "occam/version.h"
#include "uci/build_commit.h"
#include "uci/build_flags.h"

namespace occam::uci {
namespace {

constexpr const char* kPinnedMark = "OCCAM_UCI_NUMERICS";
constexpr const char* kCoreType = "Prescott";
constexpr const char* kHwcaps = "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4";

bool pinned() {
  const char* mark = std::getenv(kPinnedMark);
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return mark != nullptr && std::strcmp(mark, "pinned") == 0 && core != nullptr && std::strcmp(core, kCoreType) == 0 &&
         tunables != nullptr && std::strstr(tunables, kHwcaps) != nullptr;
}

}  // namespace

void pin_numerics(char** argv, bool native) {
  if (native) {
    ::setenv(kPinnedMark, "native", 1);
    return;
  }
  if (pinned()) return;
  ::setenv("OPENBLAS_CORETYPE", kCoreType, 1);
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string joined = tunables != nullptr && *tunables != '\0' ? std::string(tunables) + ":" + kHwcaps : kHwcaps;
  ::setenv("GLIBC_TUNABLES", joined.c_str(), 1);
  ::setenv(kPinnedMark, "pinned", 1);
  ::execv("/proc/self/exe", argv);
  throw Error(ErrorKind::kIo, std::string("cannot run occam_uci again with pinned numerics: ") + std::strerror(errno) +
                                  " (--native-numerics runs without)");
}

std::string numerics_description() {
  if (pinned()) return std::string("pinned (OPENBLAS_CORETYPE=") + kCoreType + ", GLIBC_TUNABLES=" + kHwcaps + ")";
  // Kernels chosen in the environment are named: the rows then reproduce wherever the same ones run.
  std::string chosen;
  for (const char* name : {"OPENBLAS_CORETYPE", "GLIBC_TUNABLES"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') chosen += std::string(chosen.empty() ? "" : ", ") + name + "=" + value;
  }
  if (!chosen.empty())
    return "native, set by the environment (" + chosen + ": rows may differ where these do not hold)";
  return "native (the CPU's own kernels: rows may differ on another CPU)";
}

std::string build_provenance() {
  return std::string("occam_uci ") + version() + "; commit " + kSourceCommit + "; " + kCompiler + " " + kBuildType +
         " " + kCompileFlags + (kNativeBuild ? " (native build)" : " (portable build)") + "; numerics " +
         numerics_description();
}

}  // namespace occam::uci

// pinned_numerics.h — for tests whose example follows one path of the arithmetic.
//
// Which end an evidence ascent reaches from a start (a fold, a saddle, another maximum) moves with
// the last bits of the linear algebra, and those differ between OpenBLAS's kernels for one CPU and
// another's (and between glibc's functions with and without FMA). A test built on one such path
// runs with the numerics the UCI rows pin, the same on every x86-64 machine (docs/RESULTS.md):
// OpenBLAS's Prescott (SSE3) kernels and glibc's functions without AVX2 and FMA. tests/CMakeLists.txt
// runs the tests named there with this environment; run by hand without it, they skip.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace occam::testing {

inline constexpr const char* kPinnedCoreType = "Prescott";
inline constexpr const char* kPinnedHwcaps = "glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4";

inline bool numerics_pinned() {
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return core != nullptr && std::strcmp(core, kPinnedCoreType) == 0 && tunables != nullptr &&
         std::strstr(tunables, kPinnedHwcaps) != nullptr;
}

}  // namespace occam::testing

// The first statement of such a test: it skips, saying how to run it, unless the numerics are pinned.
#define OCCAM_REQUIRE_PINNED_NUMERICS()                                                                          \
  do {                                                                                                           \
    if (!::occam::testing::numerics_pinned())                                                                    \
      GTEST_SKIP() << "its example follows one path of the arithmetic: run it with OPENBLAS_CORETYPE="           \
                   << ::occam::testing::kPinnedCoreType << " GLIBC_TUNABLES=" << ::occam::testing::kPinnedHwcaps \
                   << " (ctest does)";                                                                           \
  } while (0)

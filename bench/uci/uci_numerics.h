// uci_numerics.h — the same floating point on any x86-64 machine, for results that reproduce.
//
// A portable build (no -march=native) runs the same instructions everywhere, except where a
// library chooses its code by the CPU when the process starts:
// - OpenBLAS (the LAPACK/BLAS behind Cholesky and eigendecompositions) picks its kernels by core
//   type; OPENBLAS_CORETYPE=Prescott fixes the SSE3 kernels, which every x86-64 CPU runs.
// - glibc's libm has FMA and AVX2 variants of exp, log, pow, sin, cos, tan and atan whose last
//   bits differ from the SSE2 versions; GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4 selects
//   the SSE2 versions, which every x86-64 CPU runs.
// Both are read before main(), so pin_numerics() sets them and executes the program again, once.
#pragma once

#include <string>

namespace occam::uci {

// Unless the environment is already pinned, or `native` is true: sets the variables above and
// re-executes /proc/self/exe with the same arguments (does not return). Throws Error(kIo) when
// the program cannot be executed again.
void pin_numerics(char** argv, bool native);

// How this process's floating point is set: "pinned (OPENBLAS_CORETYPE=Prescott, glibc hwcaps
// -AVX2,-FMA,-FMA4)", "native (the CPU's own kernels: rows may differ on another CPU)", or, with
// --native-numerics under OPENBLAS_CORETYPE or GLIBC_TUNABLES, "native, set by the environment
// (...)" naming their values.
std::string numerics_description();

// One line naming everything the rows depend on: program version, source commit, compiler and
// flags, and the numerics. A results file records it first and is only appended to by a run
// with the same line.
std::string build_provenance();

}  // namespace occam::uci

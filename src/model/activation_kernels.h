// activation_kernels.h (internal) — tanh over an array with a kernel chosen when the program runs.
//
// The portable build targets x86-64's baseline, SSE2: Eigen's packets, and so the activations of
// mlp.cc, hold two doubles. On a CPU with AVX2 the same arithmetic four doubles at a time does the
// tanh of a forward pass in about half the time (OpenBLAS picks its matrix kernels the same way).
// The AVX2 kernel repeats tanh_of's operations one for one — no fused multiply-adds, which the
// portable kernel has not — so both give the same bits on every input, and a fit's numbers do not
// depend on which one ran (ActivationKernels.Avx2TanhHasThePortableBits).
#pragma once

#include <Eigen/Core>

namespace occam::internal {

// x[i] ← tanh(x[i]) for i < n, by mlp.cc's portable kernel (Eigen packets).
void tanh_portable(double* x, Eigen::Index n);

// The same four doubles at a time with AVX2; false, with x untouched, where the CPU has no AVX2, the
// build already vectorises with AVX2 (Eigen's own packets are then four wide), or the kernel is
// switched off.
bool tanh_avx2(double* x, Eigen::Index n);

// x[i] ← tanh(x[i]): the AVX2 kernel where it runs, else the portable one.
inline void tanh_in_place(double* x, Eigen::Index n) {
  if (!tanh_avx2(x, n)) tanh_portable(x, n);
}

// Whether tanh_avx2 may run (default: yes). For tests and benchmarks that compare the kernels.
void allow_avx2_kernels(bool allowed);

}  // namespace occam::internal

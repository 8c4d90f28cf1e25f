// linear_algebra.h — which library runs occam's dense symmetric kernels, and on how many threads.
//
// The Gauss–Newton matrix (symmetric rank-k updates), the Cholesky factorisations of the posterior
// precision and the symmetric eigendecompositions run on LAPACKE + OpenBLAS in a build with
// OCCAM_LAPACK=ON, and on Eigen otherwise (docs/BENCHMARKS.md compares them). The rest of occam is
// Eigen either way. OpenBLAS runs one thread unless told otherwise here; the results are the same
// for any thread count (tests/core/linear_algebra_test.cc), though not across CPUs of different kinds,
// for which OpenBLAS picks different kernels at run time (pin them with OPENBLAS_CORETYPE, or
// build with OCCAM_LAPACK=OFF; see docs/BENCHMARKS.md).
//
//   std::cout << occam::linear_algebra_backend();   // "openblas" or "eigen"
//   occam::set_linear_algebra_threads(2);
#pragma once

namespace occam {

// "openblas" (LAPACKE + OpenBLAS) or "eigen".
const char* linear_algebra_backend();

// The threads the dense kernels may use (at least 1; the default is 1). Has no effect with the
// Eigen backend, which occam builds single-threaded. Throws Error(kInvalidArgument) below 1.
void set_linear_algebra_threads(int threads);
int linear_algebra_threads();

}  // namespace occam

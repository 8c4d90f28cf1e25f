// activation_kernels.cc — the AVX2 tanh kernel, chosen at run time (activation_kernels.h).
//
// Only this function's own code is compiled for AVX2 (the target attribute), with intrinsics and
// no Eigen, so that no inline function shared with the rest of the program is compiled for an
// instruction set a CPU may lack. Its steps are those of mlp.cc's tanh_of and expm1_reduced, in the
// same order: read them there for the why.
#include "model/activation_kernels.h"

#include <atomic>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__)
#include <immintrin.h>
#define OCCAM_AVX2_AT_RUN_TIME 1
#endif

namespace occam::internal {
namespace {

std::atomic<bool> avx2_allowed{true};

#ifdef OCCAM_AVX2_AT_RUN_TIME
// tanh of four doubles.
__attribute__((target("avx2"), always_inline)) inline __m256d tanh4(__m256d a) {
  // 1/13! … 1/1!: expm1(f) = f·(1 + f/2 + f²/6 + …) by Horner's rule from its highest term.
  constexpr double kInverseFactorials[] = {1.0 / 479001600, 1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880,
                                           1.0 / 40320,     1.0 / 5040,     1.0 / 720,     1.0 / 120,
                                           1.0 / 24,        1.0 / 6,        1.0 / 2,       1.0};
  const __m256d one = _mm256_set1_pd(1.0);
  // pmin(pmax(a, −cap), cap): the first argument (a) is kept when either is NaN.
  const __m256d clamped = _mm256_min_pd(_mm256_set1_pd(20.0), _mm256_max_pd(_mm256_set1_pd(-20.0), a));
  const __m256d t = _mm256_mul_pd(_mm256_set1_pd(-2.0), clamped);
  // expm1_reduced(t): k = rint(t/ln 2), f = t − k·ln 2 in two parts, q = expm1(f), scale = 2^k.
  const __m256d k = _mm256_round_pd(_mm256_mul_pd(t, _mm256_set1_pd(1.4426950408889634)), _MM_FROUND_CUR_DIRECTION);
  const __m256d f = _mm256_sub_pd(_mm256_sub_pd(t, _mm256_mul_pd(k, _mm256_set1_pd(0.693145751953125))),
                                  _mm256_mul_pd(k, _mm256_set1_pd(1.42860682030941723212e-6)));
  __m256d q = _mm256_set1_pd(1.0 / 6227020800);
  for (const double c : kInverseFactorials) q = _mm256_add_pd(_mm256_mul_pd(q, f), _mm256_set1_pd(c));
  q = _mm256_mul_pd(q, f);
  const __m256i biased = _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(k)), _mm256_set1_epi64x(1023));
  const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52));
  // tanh a = −u/(2 + u), u = 2^k·q + (2^k − 1).
  const __m256d u = _mm256_add_pd(_mm256_mul_pd(scale, q), _mm256_sub_pd(scale, one));
  return _mm256_div_pd(_mm256_xor_pd(u, _mm256_set1_pd(-0.0)), _mm256_add_pd(_mm256_set1_pd(2.0), u));
}

__attribute__((target("avx2"))) void tanh_avx2_kernel(double* x, Eigen::Index n) {
  Eigen::Index i = 0;
  // Four vectors a round: each tanh4 is one chain of dependent operations (Horner's rule, then the
  // division), so four independent chains keep the pipelines full where one leaves them waiting on
  // latency. The same operations on each element: the bits do not change.
  for (; i + 16 <= n; i += 16) {
    const __m256d r0 = tanh4(_mm256_loadu_pd(x + i)), r1 = tanh4(_mm256_loadu_pd(x + i + 4));
    const __m256d r2 = tanh4(_mm256_loadu_pd(x + i + 8)), r3 = tanh4(_mm256_loadu_pd(x + i + 12));
    _mm256_storeu_pd(x + i, r0);
    _mm256_storeu_pd(x + i + 4, r1);
    _mm256_storeu_pd(x + i + 8, r2);
    _mm256_storeu_pd(x + i + 12, r3);
  }
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, tanh4(_mm256_loadu_pd(x + i)));
  if (i < n) tanh_portable(x + i, n - i);  // the last one to three, as the portable kernel does them
}

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

}  // namespace

bool tanh_avx2(double* x, Eigen::Index n) {
#ifdef OCCAM_AVX2_AT_RUN_TIME
  if (!avx2_allowed.load(std::memory_order_relaxed) || !cpu_has_avx2()) return false;
  tanh_avx2_kernel(x, n);
  return true;
#else
  (void)x;
  (void)n;
  return false;
#endif
}

void allow_avx2_kernels(bool allowed) { avx2_allowed.store(allowed, std::memory_order_relaxed); }

}  // namespace occam::internal

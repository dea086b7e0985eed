/* The FP32 FMA peak of one core, for judging GEMM figures (bench/README.md):
 *   cc -O2 -mavx2 -mfma bench/fma_peak.c -o /tmp/fma_peak && /tmp/fma_peak
 * 12 independent vfmadd231ps chains on ymm registers (enough to cover the
 * FMA latency on two pipes); 16 FLOP per FMA (8 lanes, multiply and add). */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

int main(void) {
  __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  /* Named accumulators, not an array: every compiler keeps them in
   * registers (gcc kept an array in memory: a store-forwarding chain). */
  __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2),
         a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
         a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8),
         a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10),
         a11 = _mm256_set1_ps(11);
  const long iterations = 200000000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long k = 0; k < iterations; ++k) {
    a0 = _mm256_fmadd_ps(a0, x, y);
    a1 = _mm256_fmadd_ps(a1, x, y);
    a2 = _mm256_fmadd_ps(a2, x, y);
    a3 = _mm256_fmadd_ps(a3, x, y);
    a4 = _mm256_fmadd_ps(a4, x, y);
    a5 = _mm256_fmadd_ps(a5, x, y);
    a6 = _mm256_fmadd_ps(a6, x, y);
    a7 = _mm256_fmadd_ps(a7, x, y);
    a8 = _mm256_fmadd_ps(a8, x, y);
    a9 = _mm256_fmadd_ps(a9, x, y);
    a10 = _mm256_fmadd_ps(a10, x, y);
    a11 = _mm256_fmadd_ps(a11, x, y);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  /* The sum keeps the chains alive. */
  __m256 sum = _mm256_add_ps(
      _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
      _mm256_add_ps(
          _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)),
          _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11))));
  printf("%.1f GFLOP/s on one core (AVX2 FMA; checksum %g)\n",
         iterations * 12.0 * 16 / seconds / 1e9, sum[0]);
  return 0;
}

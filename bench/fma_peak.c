/* The FP32 FMA peak of one core, for judging GEMM figures (bench/README.md):
 *   cc -O2 -mavx2 -mfma bench/fma_peak.c -o /tmp/fma_peak && /tmp/fma_peak
 * 12 independent vfmadd231ps chains on ymm registers (enough to cover the
 * FMA latency on two pipes); 16 FLOP per FMA (8 lanes, multiply and add). */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

int main(void) {
  __m256 acc[12];
  __m256 x = _mm256_set1_ps(1.0000001f), y = _mm256_set1_ps(0.9999999f);
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_ps((float)i);
  const long iterations = 200000000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long k = 0; k < iterations; ++k)
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm256_fmadd_ps(acc[i], x, y);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
  float sum = 0;
  for (int i = 0; i < 12; ++i)
    sum += acc[i][0];
  /* The sum keeps the chains alive. */
  printf("%.1f GFLOP/s on one core (AVX2 FMA; checksum %g)\n",
         iterations * 12.0 * 16 / seconds / 1e9, sum);
  return 0;
}

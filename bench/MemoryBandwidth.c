/* The memory bandwidth a decode step is judged against (issue 30, the KV
 * cache's roofline; bench/README.md): the bytes per second that T threads
 * read from a buffer far larger than the caches, as STREAM's read kernels
 * do. Each thread sums its contiguous slice with eight independent integer
 * accumulators (no FP latency chain, nothing written); the buffer is
 * touched once first so that page faults are not timed.
 *
 *   attnc-memory-bandwidth [--threads T] [--mib N] [--passes P]
 *                          [--load-bytes 16|32|64]
 *
 * prints the best and the median of P passes in GB/s (10^9 bytes).
 * --load-bytes is the width of each load: 16 (SSE2, the default and the
 * roofline), 32 (AVX2) or 64 (AVX-512F), where the CPU has it. The same
 * stream reads more slowly with wider loads on some CPUs (Zen 4: fewer
 * loads per cache line, docs/toolchain.md), which a vectorized kernel
 * cannot avoid: the wider figures say how much. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const uint64_t *begin;
  size_t count;
  uint64_t sum;
} slice;

/* Sums a slice with eight independent accumulators of BYTES-byte vectors
 * of 64-bit lanes (ATTRS: the function's attributes, its ISA); the loop
 * does not depend on the compiler's vectorizer (which made a
 * shuffle-bound mess of eight scalar sums at x86-64's baseline). */
#define READ_SLICE(NAME, BYTES, ATTRS)                                         \
  ATTRS static void *NAME(void *arg) {                                         \
    typedef uint64_t lanes __attribute__((vector_size(BYTES)));                \
    enum { words = BYTES / 8 };                                                \
    slice *s = arg;                                                            \
    const lanes *v = (const lanes *)s->begin;                                  \
    size_t vectors = s->count / words;                                         \
    lanes a0 = {0}, a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,      \
          a7 = a0;                                                             \
    size_t i = 0;                                                              \
    for (; i + 8 <= vectors; i += 8) {                                         \
      a0 += v[i];                                                              \
      a1 += v[i + 1];                                                          \
      a2 += v[i + 2];                                                          \
      a3 += v[i + 3];                                                          \
      a4 += v[i + 4];                                                          \
      a5 += v[i + 5];                                                          \
      a6 += v[i + 6];                                                          \
      a7 += v[i + 7];                                                          \
    }                                                                          \
    for (; i < vectors; ++i)                                                   \
      a0 += v[i];                                                              \
    lanes sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;                         \
    uint64_t total = 0;                                                        \
    for (int w = 0; w < words; ++w)                                            \
      total += sum[w];                                                         \
    for (size_t j = words * vectors; j < s->count; ++j)                        \
      total += s->begin[j];                                                    \
    s->sum = total;                                                            \
    return NULL;                                                               \
  }

/* 16 bytes: SSE2's width, which every x86-64 and AArch64 build has. */
READ_SLICE(read_slice, 16, )

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATTNC_WIDE_LOADS 1
/* 32 and 64 bytes, each compiled for the ISA that has them (called only
 * where the CPU reports it). */
READ_SLICE(read_slice_32, 32, __attribute__((target("avx2"))))
READ_SLICE(read_slice_64, 64, __attribute__((target("avx512f"))))
#endif

/* The reader of --load-bytes, or NULL (with a message) where this CPU or
 * build has no such loads. */
static void *(*reader(long load_bytes))(void *) {
  if (load_bytes == 16)
    return read_slice;
#ifdef ATTNC_WIDE_LOADS
  __builtin_cpu_init();
  if (load_bytes == 32 && __builtin_cpu_supports("avx2"))
    return read_slice_32;
  if (load_bytes == 64 && __builtin_cpu_supports("avx512f"))
    return read_slice_64;
#endif
  if (load_bytes != 32 && load_bytes != 64)
    fprintf(stderr, "--load-bytes is 16, 32 or 64, got %ld\n", load_bytes);
  else
    fprintf(stderr,
            "--load-bytes %ld: this CPU (or build) has no %ld-byte "
            "vector loads\n",
            load_bytes, load_bytes);
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static long option(int argc, char **argv, const char *name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (strcmp(argv[i], name) == 0) {
      char *end;
      long value = strtol(argv[i + 1], &end, 10);
      if (*end || value <= 0) {
        fprintf(stderr, "%s takes a positive integer, got '%s'\n", name,
                argv[i + 1]);
        exit(2);
      }
      return value;
    }
  return fallback;
}

int main(int argc, char **argv) {
  long threads = option(argc, argv, "--threads", 1);
  long mib = option(argc, argv, "--mib", 1024);
  long passes = option(argc, argv, "--passes", 9);
  long load_bytes = option(argc, argv, "--load-bytes", 16);
  void *(*sum_slice)(void *) = reader(load_bytes);
  if (!sum_slice)
    return 2;
  if (threads > 256 || passes > 1000) {
    fprintf(stderr, "at most 256 threads and 1000 passes\n");
    return 2;
  }
  size_t bytes = (size_t)mib << 20, count = bytes / sizeof(uint64_t);
  uint64_t *buffer = aligned_alloc(4096, bytes);
  if (!buffer) {
    fprintf(stderr, "cannot allocate %ld MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < count; ++i)
    buffer[i] = i;

  slice slices[256];
  pthread_t ids[256];
  double *rates = calloc((size_t)passes, sizeof(double));
  uint64_t check = 0;
  for (long p = 0; p < passes; ++p) {
    double start = now();
    for (long t = 0; t < threads; ++t) {
      size_t first = count * (size_t)t / (size_t)threads;
      size_t last = count * (size_t)(t + 1) / (size_t)threads;
      slices[t] = (slice){buffer + first, last - first, 0};
      if (t > 0 && pthread_create(&ids[t], NULL, sum_slice, &slices[t])) {
        fprintf(stderr, "cannot start thread %ld\n", t);
        return 1;
      }
    }
    sum_slice(&slices[0]);
    for (long t = 1; t < threads; ++t)
      pthread_join(ids[t], NULL);
    rates[p] = bytes / (now() - start) / 1e9;
    for (long t = 0; t < threads; ++t)
      check += slices[t].sum;
  }
  qsort(rates, (size_t)passes, sizeof(double), compare);
  /* The sums keep the reads alive: each pass sums 0 .. count-1. */
  uint64_t expected = (uint64_t)passes * ((uint64_t)count * (count - 1) / 2);
  printf("read bandwidth, %ld thread(s), %ld MiB, %ld passes, %ld-byte loads: "
         "best %.1f GB/s, median %.1f GB/s%s\n",
         threads, mib, passes, load_bytes, rates[passes - 1], rates[passes / 2],
         check == expected ? "" : " (checksum WRONG)");
  free(rates);
  free(buffer);
  return check == expected ? 0 : 1;
}

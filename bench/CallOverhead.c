/*===- CallOverhead.c - Time one small kernel call through the C API ------===*
 *
 * The C side of bench/python_overhead.py: compiles a spec's block with the
 * JIT (the C API, as a C host would), binds random params, prepares them,
 * then times batches of attnc_kernel_run calls on the same buffers and
 * prints the median time per call in microseconds. Inputs are random;
 * `valid_lens`-like i32 inputs are filled with 1.
 *
 *   attnc-call-overhead SPEC [CALLS_PER_BATCH [BATCHES]]
 *
 *===----------------------------------------------------------------------===*/

#include "attnc/attnc.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SPEC [CALLS_PER_BATCH [BATCHES]]\n", argv[0]);
    return 2;
  }
  int calls = argc > 2 ? atoi(argv[2]) : 2000;
  int batches = argc > 3 ? atoi(argv[3]) : 15;
  if (calls < 1 || batches < 1 || batches > 1000) {
    fprintf(stderr, "attnc-call-overhead: bad CALLS_PER_BATCH or BATCHES\n");
    return 2;
  }
  attnc_kernel *k = attnc_compile_file(argv[1], NULL, NULL, 2);
  if (!k) {
    fprintf(stderr, "attnc-call-overhead: %s\n", attnc_last_error());
    return 1;
  }
  int n = attnc_kernel_num_args(k);
  attnc_buffer *run = calloc((size_t)n, sizeof(attnc_buffer));
  int count = 0;
  srand(1);
  for (int i = 0; i < n; ++i) {
    int64_t elements = 1;
    for (int d = 0; d < attnc_kernel_arg_rank(k, i); ++d)
      elements *= attnc_kernel_arg_shape(k, i)[d];
    attnc_buffer b = {attnc_kernel_arg_name(k, i), malloc((size_t)elements * 4),
                      attnc_kernel_arg_dtype(k, i), attnc_kernel_arg_rank(k, i),
                      attnc_kernel_arg_shape(k, i)};
    for (int64_t e = 0; e < elements; ++e) {
      if (b.dtype == ATTNC_I32)
        ((int32_t *)b.data)[e] = 1;
      else
        ((float *)b.data)[e] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    if (attnc_kernel_arg_role(k, i) == ATTNC_PARAM) {
      if (attnc_kernel_bind_param(k, &b)) {
        fprintf(stderr, "attnc-call-overhead: %s\n", attnc_last_error());
        return 1;
      }
    } else {
      run[count++] = b;
    }
  }
  if (attnc_kernel_prepare_params(k)) {
    fprintf(stderr, "attnc-call-overhead: %s\n", attnc_last_error());
    return 1;
  }
  double *perCall = calloc((size_t)batches, sizeof(double));
  for (int warm = 0; warm < calls; ++warm)
    attnc_kernel_run(k, run, count);
  for (int b = 0; b < batches; ++b) {
    double start = now();
    for (int c = 0; c < calls; ++c)
      if (attnc_kernel_run(k, run, count)) {
        fprintf(stderr, "attnc-call-overhead: %s\n", attnc_last_error());
        return 1;
      }
    perCall[b] = (now() - start) / calls * 1e6;
  }
  qsort(perCall, (size_t)batches, sizeof(double), compare);
  printf("%.3f\n", perCall[batches / 2]);
  return 0;
}

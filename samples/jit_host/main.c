/*===- main.c - Compile and run an attnc kernel from C at run time --------===*
 *
 * Usage: attnc-sample-jit-host SPEC.attn
 *
 * JIT-compiles block d2l_mha of the spec with the runtime's C API, prints
 * the kernel's arguments as the runtime reports them, binds the four weights
 * once, runs the kernel on two different inputs, and finally passes a
 * misshapen buffer to show that buffers are checked before the kernel runs.
 *
 * Compiled kernels are cached on disk (ATTNC_CACHE_DIR, else
 * ~/.cache/attnc): a second start does not compile again.
 *
 *===----------------------------------------------------------------------===*/

#include "attnc/attnc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A linear congruential generator: uniform in [-1, 1), the same numbers on
   every machine. */
static float lcg_next(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) * (2.0f / 16777216.0f) - 1.0f;
}

static void fill(float *values, int64_t count, uint32_t seed, float scale) {
  for (int64_t i = 0; i < count; ++i)
    values[i] = scale * lcg_next(&seed);
}

static int64_t numel(const attnc_kernel *kernel, int index) {
  const int64_t *shape = attnc_kernel_arg_shape(kernel, index);
  int64_t count = 1;
  for (int d = 0; d < attnc_kernel_arg_rank(kernel, index); ++d)
    count *= shape[d];
  return count;
}

/* The index of the argument called `name`, or -1. */
static int find_arg(const attnc_kernel *kernel, const char *name) {
  for (int i = 0; i < attnc_kernel_num_args(kernel); ++i)
    if (strcmp(attnc_kernel_arg_name(kernel, i), name) == 0)
      return i;
  return -1;
}

/* A buffer for argument `index` of `kernel`, with its shape as declared. */
static attnc_buffer buffer_for(const attnc_kernel *kernel, int index,
                               void *data) {
  attnc_buffer buffer;
  buffer.name = attnc_kernel_arg_name(kernel, index);
  buffer.data = data;
  buffer.dtype = attnc_kernel_arg_dtype(kernel, index);
  buffer.rank = attnc_kernel_arg_rank(kernel, index);
  buffer.shape = attnc_kernel_arg_shape(kernel, index);
  return buffer;
}

static void print_arguments(const attnc_kernel *kernel) {
  static const char *const roles[] = {"input", "param", "output"};
  static const char *const dtypes[] = {"f32", "i32"};
  printf("kernel %s, %d arguments:\n", attnc_kernel_name(kernel),
         attnc_kernel_num_args(kernel));
  for (int i = 0; i < attnc_kernel_num_args(kernel); ++i) {
    const int64_t *shape = attnc_kernel_arg_shape(kernel, i);
    printf("  %d: %-6s %-10s %s[", i, roles[attnc_kernel_arg_role(kernel, i)],
           attnc_kernel_arg_name(kernel, i),
           dtypes[attnc_kernel_arg_dtype(kernel, i)]);
    for (int d = 0; d < attnc_kernel_arg_rank(kernel, i); ++d)
      printf("%s%lld", d ? ", " : "", (long long)shape[d]);
    printf("]\n");
  }
}

/* Runs the kernel on X (from `seed`) and `valid_lens`; prints Y[b, 0, :4].
   Returns 0 when the run succeeded and no output is NaN. */
static int run_once(const attnc_kernel *kernel, int x_index, int vl_index,
                    int y_index, uint32_t seed, int32_t *valid_lens) {
  int64_t x_count = numel(kernel, x_index), y_count = numel(kernel, y_index);
  const int64_t *y_shape = attnc_kernel_arg_shape(kernel, y_index);
  float *x = malloc(sizeof(float) * (size_t)x_count);
  float *y = malloc(sizeof(float) * (size_t)y_count);
  attnc_buffer buffers[3];
  int status = 1;
  if (x && y) {
    fill(x, x_count, seed, 1.0f);
    buffers[0] = buffer_for(kernel, x_index, x);
    buffers[1] = buffer_for(kernel, vl_index, valid_lens);
    buffers[2] = buffer_for(kernel, y_index, y);
    status = attnc_kernel_run(kernel, buffers, 3);
    if (status != 0)
      fprintf(stderr, "jit_host: run failed: %s\n", attnc_last_error());
  }
  if (status == 0) {
    printf("run with X from seed %u, valid_lens = [%d, %d]:\n", seed,
           valid_lens[0], valid_lens[1]);
    for (int64_t b = 0; b < y_shape[0]; ++b) {
      const float *row = y + b * y_shape[1] * y_shape[2];
      printf("  Y[%lld, 0, :4] = %+.6f %+.6f %+.6f %+.6f\n", (long long)b,
             row[0], row[1], row[2], row[3]);
    }
    for (int64_t i = 0; i < y_count && status == 0; ++i)
      if (y[i] != y[i]) {
        fprintf(stderr, "jit_host: Y[%lld] is NaN\n", (long long)i);
        status = 1;
      }
  }
  free(x);
  free(y);
  return status;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SPEC.attn (e.g. samples/d2l_mha.attn)\n",
            argv[0]);
    return 2;
  }

  attnc_kernel *kernel = attnc_compile_file(argv[1], "d2l_mha", NULL, 3);
  if (!kernel) {
    fprintf(stderr, "jit_host: %s\n", attnc_last_error());
    return 1;
  }
  print_arguments(kernel);

  int x_index = find_arg(kernel, "X"),
      vl_index = find_arg(kernel, "valid_lens"),
      y_index = find_arg(kernel, "Y");
  if (x_index < 0 || vl_index < 0 || y_index < 0) {
    fprintf(stderr, "jit_host: the kernel has no X, valid_lens or Y\n");
    attnc_kernel_free(kernel);
    return 1;
  }

  /* Bind every param once (the runtime copies it); runs then pass only the
     inputs and the output. Weights like nn.Linear's init, +-1/sqrt(100). */
  int status = 0;
  for (int i = 0; i < attnc_kernel_num_args(kernel) && status == 0; ++i) {
    if (attnc_kernel_arg_role(kernel, i) != ATTNC_PARAM)
      continue;
    int64_t count = numel(kernel, i);
    float *weights = malloc(sizeof(float) * (size_t)count);
    if (!weights) {
      status = 1;
      break;
    }
    fill(weights, count, 100u + (uint32_t)i, 0.1f);
    attnc_buffer param = buffer_for(kernel, i, weights);
    if (attnc_kernel_bind_param(kernel, &param) != 0) {
      fprintf(stderr, "jit_host: binding %s failed: %s\n", param.name,
              attnc_last_error());
      status = 1;
    } else {
      printf("bound %s\n", param.name);
    }
    free(weights);
  }

  /* Two runs with different inputs and lengths. */
  int32_t lens1[2] = {3, 2}, lens2[2] = {4, 0};
  if (status == 0)
    status = run_once(kernel, x_index, vl_index, y_index, 1u, lens1);
  if (status == 0)
    status = run_once(kernel, x_index, vl_index, y_index, 2u, lens2);

  /* A checked error: X given as [2, 4, 99] is refused before the kernel
     runs, with a message naming the argument and both shapes. */
  if (status == 0) {
    const int64_t *x_shape = attnc_kernel_arg_shape(kernel, x_index);
    int64_t bad_shape[3] = {x_shape[0], x_shape[1], x_shape[2] - 1};
    float *x = calloc((size_t)numel(kernel, x_index), sizeof(float));
    float *y = calloc((size_t)numel(kernel, y_index), sizeof(float));
    attnc_buffer buffers[3];
    buffers[0] = buffer_for(kernel, x_index, x);
    buffers[0].shape = bad_shape;
    buffers[1] = buffer_for(kernel, vl_index, lens1);
    buffers[2] = buffer_for(kernel, y_index, y);
    if (!x || !y) {
      status = 1;
    } else if (attnc_kernel_run(kernel, buffers, 3) == 0) {
      fprintf(stderr, "jit_host: a misshapen X was accepted\n");
      status = 1;
    } else {
      printf("misshapen X refused: %s\n", attnc_last_error());
    }
    free(x);
    free(y);
  }

  attnc_kernel_free(kernel);
  if (status == 0)
    printf("jit_host: done\n");
  return status;
}

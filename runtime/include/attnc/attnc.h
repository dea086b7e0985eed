/*===- attnc.h - The attnc runtime's C API --------------------------------===*
 *
 * Compile a .attn spec for a block (for the CPU or an NVIDIA GPU), look up
 * its arguments, bind params once, run with host buffers (or device buffers
 * on a GPU; checked before the kernel runs). Functions that can
 * fail return NULL or a non-zero int; attnc_last_error() then says why
 * (per thread). Kernels may be run from many threads at once.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTNC_ATTNC_H
#define ATTNC_ATTNC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attnc_kernel attnc_kernel;

/* Element types. ATTNC_BF16 and ATTNC_F16 buffers hold 16-bit patterns
   (uint16_t): bfloat16 (the upper half of an f32) and IEEE half. */
typedef enum {
  ATTNC_F32 = 0,
  ATTNC_I32 = 1,
  ATTNC_BF16 = 2,
  ATTNC_F16 = 3
} attnc_dtype;
typedef enum {
  ATTNC_INPUT = 0,
  ATTNC_PARAM = 1,
  ATTNC_OUTPUT = 2,
  /* Read and updated in place; the caller keeps it between calls. */
  ATTNC_STATE = 3
} attnc_role;

/* A host buffer: dense, row-major, any alignment. */
typedef struct {
  const char *name;
  void *data;
  attnc_dtype dtype;
  int rank;
  const int64_t *shape;
} attnc_buffer;

/* Compiles block `block` (NULL: the spec's only block) for `cpu` (NULL or
   "native": this machine) at -O`opt_level` (0..3). */
attnc_kernel *attnc_compile_string(const char *spec, const char *block,
                                   const char *cpu, int opt_level);
attnc_kernel *attnc_compile_file(const char *path, const char *block,
                                 const char *cpu, int opt_level);
/* The same for `target`: "cpu" (NULL), or "nvptx" for an NVIDIA GPU, `cpu`
   then naming its compute capability (NULL: "sm_90a"); docs/gpu.md. */
attnc_kernel *attnc_compile_string_for(const char *spec, const char *block,
                                       const char *target, const char *cpu,
                                       int opt_level);
attnc_kernel *attnc_compile_file_for(const char *path, const char *block,
                                     const char *target, const char *cpu,
                                     int opt_level);
void attnc_kernel_free(attnc_kernel *kernel);

/* The last error of this thread, or "" (valid until the next call). */
const char *attnc_last_error(void);

const char *attnc_kernel_name(const attnc_kernel *kernel);
/* Arguments in ABI order: inputs and params as declared, then outputs. */
int attnc_kernel_num_args(const attnc_kernel *kernel);
const char *attnc_kernel_arg_name(const attnc_kernel *kernel, int index);
attnc_role attnc_kernel_arg_role(const attnc_kernel *kernel, int index);
attnc_dtype attnc_kernel_arg_dtype(const attnc_kernel *kernel, int index);
int attnc_kernel_arg_rank(const attnc_kernel *kernel, int index);
const int64_t *attnc_kernel_arg_shape(const attnc_kernel *kernel, int index);

/* Copies a param into the kernel; runs then need not pass it. 0 on
   success. */
int attnc_kernel_bind_param(attnc_kernel *kernel, const attnc_buffer *param);
/* Once every param is bound: does the work that depends on the params only
   (weights laid out for the GEMMs) now rather than in the first run. Runs
   that pass no param use it; binding a param again undoes it. 0 on
   success. */
int attnc_kernel_prepare_params(attnc_kernel *kernel);
/* Runs with `count` buffers: every input and output, and the params not
   bound. 0 on success. */
int attnc_kernel_run(const attnc_kernel *kernel, const attnc_buffer *buffers,
                     int count);
/* A GPU kernel on device buffers (`data` holds CUdeviceptr values): every
   input, param and output, enqueued on `stream` (a CUstream; NULL: the
   default stream); returns before the GPU is done. 0 on success. */
int attnc_kernel_run_cuda(const attnc_kernel *kernel, void *stream,
                          const attnc_buffer *buffers, int count);

/* Forgets every kernel compiled so far from the in-memory cache, which
   otherwise keeps each distinct kernel for the life of the process. Kernels
   the host still holds stay valid; the disk cache stays. */
void attnc_clear_memory_cache(void);

void attnc_set_num_threads(int threads);
int attnc_get_num_threads(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_ATTNC_H */

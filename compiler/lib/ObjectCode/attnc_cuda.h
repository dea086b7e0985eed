/*===- attnc_cuda.h - The CUDA loader inside every GPU object -----*- C -*-===//
 *
 * Every object attnc builds for --target=nvptx carries its own copy of this
 * loader (attnc_cuda.c, compiled to LLVM bitcode when attnc is built and
 * linked into the object with internal linkage), so that the object links
 * with libc and libdl only. It opens the CUDA driver (libcuda.so.1) at the
 * first call (ATTNC_CUDA_DRIVER in the environment names another library,
 * such as a test's fake driver), loads the object's GPU modules into device 0's
 * primary context, and provides the `mgpu*` functions that MLIR's `gpu-to-llvm`
 * host code calls. Its status codes are attn/Target/KernelStatus.h's.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTNC_CUDA_H
#define ATTNC_CUDA_H

#include "attn/Target/KernelStatus.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel's arguments for the host-pointer entry NAME: argument i has
   bytes[i] bytes and copies[i] says where it is copied: to the device
   before the call (inputs and params), back after it (outputs), or both
   (states, updated in place). */
enum { ATTNC_CUDA_COPY_IN = 1, ATTNC_CUDA_COPY_OUT = 2 };
typedef struct attnc_cuda_arguments {
  int32_t count;
  const int64_t *bytes;
  const uint8_t *copies;
} attnc_cuda_arguments;

/* The entries the generated code calls. */
int attnc_cuda_begin(void *stream);
int attnc_cuda_end(void);
int attnc_cuda_call_host(const attnc_cuda_arguments *arguments,
                         int (*device_entry)(void **), void **host_args);
const char *attnc_cuda_last_error(void);

/* What the object defines for the loader: its compute capability
   (`sm_90a`) and the function that loads its GPU modules (what MLIR emits
   as global constructors, run here once, after the driver is open). */
extern const char attnc_cuda_object_chip[];
void attnc_cuda_object_load_modules(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_CUDA_H */

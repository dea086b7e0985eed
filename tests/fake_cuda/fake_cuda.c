/*===- fake_cuda.c - A CUDA driver without a GPU, for the loader's tests --===//
 *
 * A GPU object opens this library instead of libcuda.so.1 when
 * ATTNC_CUDA_DRIVER names it. "Device" memory is host memory (filled with
 * the byte 0x7f when allocated, so that an output nobody wrote reads
 * 0x7f7f7f7f), copies are memcpy, and a launch runs nothing: it checks its
 * function and sizes and logs itself. What the loader and the generated host
 * code do -- which calls, in which order, on which stream, what they do when
 * a call fails -- can then be tested on any machine.
 *
 * Environment:
 *   FAKE_CUDA_LOG=FILE      append one line per call that matters
 *   FAKE_CUDA_CC=90         the device's compute capability (major, minor)
 *   FAKE_CUDA_DEVICES=1     how many devices cuDeviceGetCount reports
 *   FAKE_CUDA_INIT=0        the result of cuInit
 *   FAKE_CUDA_FAIL=NAME:N   the N-th call of NAME (1-based) fails
 *
 *===----------------------------------------------------------------------===*/

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNoDevice = 100,
  kInvalidImage = 200,
  kNotFound = 500,
  kLaunchFailed = 719,
};

static void note(const char *format, ...) {
  const char *path = getenv("FAKE_CUDA_LOG");
  if (!path)
    return;
  FILE *log = fopen(path, "a");
  if (!log)
    return;
  va_list args;
  va_start(args, format);
  vfprintf(log, format, args);
  va_end(args);
  fputc('\n', log);
  fclose(log);
}

/* FAKE_CUDA_FAIL=NAME:N: counts NAME's calls, fails the N-th. */
static CUresult injected(const char *name, CUresult failure) {
  static int calls;
  const char *rule = getenv("FAKE_CUDA_FAIL");
  if (!rule)
    return kSuccess;
  const char *colon = strchr(rule, ':');
  if (!colon || strncmp(rule, name, (size_t)(colon - rule)) != 0 ||
      name[colon - rule] != 0)
    return kSuccess;
  if (++calls != atoi(colon + 1))
    return kSuccess;
  note("fail %s", name);
  return failure;
}

static int env_int(const char *name, int fallback) {
  const char *value = getenv(name);
  return value ? atoi(value) : fallback;
}

CUresult cuInit(unsigned flags) {
  (void)flags;
  return env_int("FAKE_CUDA_INIT", kSuccess);
}

CUresult cuDeviceGetCount(int *count) {
  *count = env_int("FAKE_CUDA_DEVICES", 1);
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  int cc = env_int("FAKE_CUDA_CC", 90);
  switch (attribute) {
  case 75:
    *value = cc / 10;
    return kSuccess;
  case 76:
    *value = cc % 10;
    return kSuccess;
  case 115: /* memory pools */
    *value = 1;
    return kSuccess;
  default:
    return kInvalidValue;
  }
}

static int context_storage;

CUresult cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  *context = &context_storage;
  return kSuccess;
}

/* The contexts pushed and not popped: every call must give the caller's
   context back. */
static int context_depth;

CUresult cuCtxPushCurrent_v2(void *context) {
  if (context != &context_storage)
    return kInvalidValue;
  ++context_depth;
  return kSuccess;
}

CUresult cuCtxPopCurrent_v2(void **context) {
  if (context_depth == 0) {
    note("unbalanced cuCtxPopCurrent");
    return kInvalidValue;
  }
  --context_depth;
  if (context)
    *context = &context_storage;
  if (context_depth == 0)
    note("context given back");
  return kSuccess;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case kOutOfMemory:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return kSuccess;
  case kNoDevice:
    *name = "CUDA_ERROR_NO_DEVICE";
    return kSuccess;
  case kInvalidImage:
    *name = "CUDA_ERROR_INVALID_IMAGE";
    return kSuccess;
  case kNotFound:
    *name = "CUDA_ERROR_NOT_FOUND";
    return kSuccess;
  case kLaunchFailed:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return kSuccess;
  default:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return kSuccess;
  }
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == kOutOfMemory ? "out of memory" : "fake failure";
  return kSuccess;
}

/* A module: its image (PTX text or a fatbin), kept as given. */
struct module {
  const char *image;
};

static CUresult load(void **module, const void *image, const char *how) {
  const unsigned char *bytes = image;
  int ptx = bytes[0] == '/' && bytes[1] == '/';
  int fatbin = bytes[0] == 0x50 && bytes[1] == 0xed && bytes[2] == 0x55 &&
               bytes[3] == 0xba;
  if (!ptx && !fatbin)
    return kInvalidImage;
  CUresult failure = injected(how, kInvalidImage);
  if (failure)
    return failure;
  struct module *m = malloc(sizeof *m);
  m->image = ptx ? image : NULL;
  *module = m;
  note("%s %s", how, ptx ? "ptx" : "fatbin");
  return kSuccess;
}

CUresult cuModuleLoadData(void **module, const void *image) {
  return load(module, image, "cuModuleLoadData");
}

CUresult cuModuleLoadDataEx(void **module, const void *image, unsigned count,
                            int *options, void **values) {
  (void)count;
  (void)options;
  (void)values;
  return load(module, image, "cuModuleLoadDataEx");
}

CUresult cuModuleUnload(void *module) {
  free(module);
  return kSuccess;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  struct module *m = module;
  if (m->image) {
    char entry[512];
    snprintf(entry, sizeof entry, ".entry %s(", name);
    if (!strstr(m->image, entry))
      return kNotFound;
  }
  *function = strdup(name);
  return kSuccess;
}

CUresult cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        void *stream, void **params, void **extra) {
  (void)params;
  (void)extra;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024)
    return kInvalidValue;
  CUresult failure = injected("cuLaunchKernel", kLaunchFailed);
  if (failure)
    return failure;
  note("launch %s grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%p",
       (const char *)function, gx, gy, gz, bx, by, bz, smem, stream);
  return kSuccess;
}

static CUresult allocate(CUdeviceptr *pointer, size_t bytes, const char *how,
                         void *stream) {
  CUresult failure = injected(how, kOutOfMemory);
  if (failure)
    return failure;
  void *memory = malloc(bytes);
  if (!memory)
    return kOutOfMemory;
  memset(memory, 0x7f, bytes);
  *pointer = (CUdeviceptr)(uintptr_t)memory;
  note("%s %zu stream=%p", how, bytes, stream);
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
  return allocate(pointer, bytes, "cuMemAlloc_v2", NULL);
}

CUresult cuMemAllocAsync(CUdeviceptr *pointer, size_t bytes, void *stream) {
  return allocate(pointer, bytes, "cuMemAllocAsync", stream);
}

CUresult cuMemFree_v2(CUdeviceptr pointer) {
  free((void *)(uintptr_t)pointer);
  note("cuMemFree_v2");
  return kSuccess;
}

CUresult cuMemFreeAsync(CUdeviceptr pointer, void *stream) {
  free((void *)(uintptr_t)pointer);
  note("cuMemFreeAsync stream=%p", stream);
  return kSuccess;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       void *stream) {
  CUresult failure = injected("cuMemcpyAsync", kInvalidValue);
  if (failure)
    return failure;
  memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
  note("cuMemcpyAsync %zu stream=%p", bytes, stream);
  return kSuccess;
}

CUresult cuStreamSynchronize(void *stream) {
  note("cuStreamSynchronize stream=%p", stream);
  return kSuccess;
}

/*===- attnc_cuda.c - The CUDA loader inside every GPU object -------------===//
 *
 * See attnc_cuda.h. The CUDA driver API is declared here, not included:
 * attnc builds (and its GPU objects link) on machines without the CUDA
 * toolkit. Every CUDA call goes through `check`, which turns a failure into
 * the object's status and message; after the first failure of a call the
 * rest of its GPU work is skipped (launches would read buffers that were
 * never allocated or filled).
 *
 * One call runs at a time per object (a recursive lock from
 * attnc_cuda_begin to attnc_cuda_end): the mgpu* functions MLIR's host code
 * calls take no context, so the stream and status of the call in progress
 * are the object's. The GPU work itself is asynchronous: holding the lock
 * costs the enqueueing, not the kernels.
 *
 *===----------------------------------------------------------------------===*/

/* secure_getenv (glibc, musl). */
#define _GNU_SOURCE

#include "attnc_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*--- The driver API, as much as is used ----------------------------------*/

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;

enum {
  kDeviceAttributeCcMajor = 75,
  kDeviceAttributeCcMinor = 76,
  kDeviceAttributeMemoryPools = 115,
  kJitErrorLogBuffer = 5,
  kJitErrorLogBufferBytes = 6,
  kJitOptimizationLevel = 7,
};

static struct {
  CUresult (*init)(unsigned);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*ctxPushCurrent)(CUcontext);
  CUresult (*ctxPopCurrent)(CUcontext *);
  CUresult (*getErrorName)(CUresult, const char **);
  CUresult (*getErrorString)(CUresult, const char **);
  CUresult (*moduleLoadData)(CUmodule *, const void *);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *,
                               void **);
  CUresult (*moduleUnload)(CUmodule);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memAllocAsync)(CUdeviceptr *, size_t, CUstream);
  CUresult (*memFreeAsync)(CUdeviceptr, CUstream);
  CUresult (*memcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*streamSynchronize)(CUstream);
} cu;

/*--- State ----------------------------------------------------------------*/

enum { kMessageBytes = 1024 };

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static int driver_status;
static char driver_message[kMessageBytes];
static CUcontext context;
static int async_allocation;

static pthread_mutex_t call_lock;
static int modules_loaded;
static int modules_status;
static char modules_message[kMessageBytes];

/* The call in progress (under call_lock). */
static CUstream current_stream;
static int call_status;
static char last_error[kMessageBytes];

static void set_message(char *to, const char *format, va_list args) {
  vsnprintf(to, kMessageBytes, format, args);
}

/* Records the first failure of the call in progress. */
static void fail(int status, const char *format, ...) {
  if (call_status)
    return;
  call_status = status;
  va_list args;
  va_start(args, format);
  set_message(last_error, format, args);
  va_end(args);
}

static void describe(CUresult result, const char **name, const char **text) {
  const char *found = NULL;
  *name = "CUDA_ERROR_UNKNOWN";
  *text = "unknown error";
  /* For a code it does not know, the driver fails and leaves NULL. */
  if (cu.getErrorName && cu.getErrorName(result, &found) == 0 && found)
    *name = found;
  found = NULL;
  if (cu.getErrorString && cu.getErrorString(result, &found) == 0 && found)
    *text = found;
}

/* 0 on success; otherwise records the failure and returns its status. */
static int check(CUresult result, const char *what) {
  if (result == 0)
    return 0;
  const char *name, *text;
  describe(result, &name, &text);
  fail(ATTNC_STATUS_CUDA_ERROR, "CUDA error in %s: %s (%s)", what, name, text);
  return ATTNC_STATUS_CUDA_ERROR;
}

static void driver_failure(int status, const char *format, ...) {
  driver_status = status;
  va_list args;
  va_start(args, format);
  set_message(driver_message, format, args);
  va_end(args);
}

/* `sm_90a` -> 9, 0, 1; `sm_80` -> 8, 0, 0; `sm_120` -> 12, 0, 0. */
static int parse_chip(const char *chip, int *major, int *minor, int *specific) {
  if (strncmp(chip, "sm_", 3) != 0)
    return 0;
  char *end;
  long number = strtol(chip + 3, &end, 10);
  if (number < 10)
    return 0;
  *major = (int)(number / 10);
  *minor = (int)(number % 10);
  *specific = *end == 'a';
  return 1;
}

static void open_driver(void) {
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&call_lock, &attributes);
  pthread_mutexattr_destroy(&attributes);

  /* ATTNC_CUDA_DRIVER names another driver library (a test's fake one).
   * Not in a set-uid or set-gid program (secure_getenv): whoever runs it
   * could otherwise make it load any library. */
  const char *driver = secure_getenv("ATTNC_CUDA_DRIVER");
  void *library = dlopen(driver && *driver ? driver : "libcuda.so.1",
                         RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    driver_failure(ATTNC_STATUS_NO_CUDA_DRIVER, "no CUDA driver/GPU: %s",
                   dlerror());
    return;
  }
#define ATTNC_CUDA_SYMBOL(field, name, required)                               \
  do {                                                                         \
    *(void **)&cu.field = dlsym(library, name);                                \
    if (!cu.field && (required)) {                                             \
      driver_failure(ATTNC_STATUS_NO_CUDA_DRIVER,                              \
                     "no CUDA driver/GPU: the driver has no %s (older than "   \
                     "CUDA 11.2?)",                                            \
                     name);                                                    \
      return;                                                                  \
    }                                                                          \
  } while (0)
  ATTNC_CUDA_SYMBOL(init, "cuInit", 1);
  ATTNC_CUDA_SYMBOL(deviceGetCount, "cuDeviceGetCount", 1);
  ATTNC_CUDA_SYMBOL(deviceGet, "cuDeviceGet", 1);
  ATTNC_CUDA_SYMBOL(deviceGetAttribute, "cuDeviceGetAttribute", 1);
  ATTNC_CUDA_SYMBOL(primaryCtxRetain, "cuDevicePrimaryCtxRetain", 1);
  ATTNC_CUDA_SYMBOL(ctxPushCurrent, "cuCtxPushCurrent_v2", 1);
  ATTNC_CUDA_SYMBOL(ctxPopCurrent, "cuCtxPopCurrent_v2", 1);
  ATTNC_CUDA_SYMBOL(getErrorName, "cuGetErrorName", 1);
  ATTNC_CUDA_SYMBOL(getErrorString, "cuGetErrorString", 1);
  ATTNC_CUDA_SYMBOL(moduleLoadData, "cuModuleLoadData", 1);
  ATTNC_CUDA_SYMBOL(moduleLoadDataEx, "cuModuleLoadDataEx", 1);
  ATTNC_CUDA_SYMBOL(moduleUnload, "cuModuleUnload", 1);
  ATTNC_CUDA_SYMBOL(moduleGetFunction, "cuModuleGetFunction", 1);
  ATTNC_CUDA_SYMBOL(launchKernel, "cuLaunchKernel", 1);
  ATTNC_CUDA_SYMBOL(memAlloc, "cuMemAlloc_v2", 1);
  ATTNC_CUDA_SYMBOL(memFree, "cuMemFree_v2", 1);
  ATTNC_CUDA_SYMBOL(memAllocAsync, "cuMemAllocAsync", 0);
  ATTNC_CUDA_SYMBOL(memFreeAsync, "cuMemFreeAsync", 0);
  ATTNC_CUDA_SYMBOL(memcpyAsync, "cuMemcpyAsync", 1);
  ATTNC_CUDA_SYMBOL(streamSynchronize, "cuStreamSynchronize", 1);
#undef ATTNC_CUDA_SYMBOL

  const char *name, *text;
  CUresult result = cu.init(0);
  if (result != 0) {
    describe(result, &name, &text);
    driver_failure(ATTNC_STATUS_NO_CUDA_DRIVER,
                   "no CUDA driver/GPU: cuInit failed: %s (%s)", name, text);
    return;
  }
  int count = 0;
  if (cu.deviceGetCount(&count) != 0 || count == 0) {
    driver_failure(ATTNC_STATUS_NO_CUDA_DRIVER,
                   "no CUDA driver/GPU: the driver sees no GPU");
    return;
  }
  CUdevice device;
  int major = 0, minor = 0, pools = 0;
  if (cu.deviceGet(&device, 0) != 0 ||
      cu.deviceGetAttribute(&major, kDeviceAttributeCcMajor, device) != 0 ||
      cu.deviceGetAttribute(&minor, kDeviceAttributeCcMinor, device) != 0) {
    driver_failure(ATTNC_STATUS_NO_CUDA_DRIVER,
                   "no CUDA driver/GPU: GPU 0 cannot be queried");
    return;
  }
  int want_major, want_minor, specific;
  if (!parse_chip(attnc_cuda_object_chip, &want_major, &want_minor,
                  &specific)) {
    driver_failure(ATTNC_STATUS_WRONG_GPU,
                   "the object names an unknown GPU '%s'",
                   attnc_cuda_object_chip);
    return;
  }
  int same = major == want_major && minor == want_minor;
  int newer =
      major > want_major || (major == want_major && minor >= want_minor);
  if (specific ? !same : !newer) {
    driver_failure(ATTNC_STATUS_WRONG_GPU,
                   "GPU 0 is sm_%d%d; this object was compiled for %s, which "
                   "%s (recompile with --mcpu=sm_%d%d)",
                   major, minor, attnc_cuda_object_chip,
                   specific ? "runs on that exact chip only"
                            : "needs that compute capability or newer",
                   major, minor);
    return;
  }
  result = cu.primaryCtxRetain(&context, device);
  if (result != 0) {
    describe(result, &name, &text);
    driver_failure(ATTNC_STATUS_CUDA_ERROR,
                   "CUDA error in cuDevicePrimaryCtxRetain: %s (%s)", name,
                   text);
    return;
  }
  async_allocation =
      cu.memAllocAsync && cu.memFreeAsync &&
      cu.deviceGetAttribute(&pools, kDeviceAttributeMemoryPools, device) == 0 &&
      pools;
}

/*--- Each thread's last failure -------------------------------------------*/

/* NAME_cuda_last_error() answers for the calling thread: the message of its
   last failing call, kept in one of these slots (the oldest is reused when
   more threads fail). No thread-local storage: the runtime's JIT links
   objects without a TLS runtime. */
enum { kErrorSlots = 16 };
static pthread_mutex_t errors_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  pthread_t thread;
  int used;
  unsigned long long stamp;
  char message[kMessageBytes];
} errors[kErrorSlots];
static unsigned long long error_stamp;

/* The calling thread's slot (a new one when `claim`); errors_lock held. */
static int error_slot(int claim) {
  pthread_t self = pthread_self();
  int oldest = 0;
  for (int i = 0; i < kErrorSlots; ++i) {
    if (errors[i].used && pthread_equal(errors[i].thread, self))
      return i;
    if (!errors[i].used ||
        (errors[oldest].used && errors[i].stamp < errors[oldest].stamp))
      oldest = i;
  }
  if (!claim)
    return -1;
  errors[oldest].used = 1;
  errors[oldest].thread = self;
  return oldest;
}

/* Keeps the failure of the call in progress (call_lock held) as the
   calling thread's last error. */
static void publish_failure(void) {
  if (!call_status)
    return;
  pthread_mutex_lock(&errors_lock);
  int slot = error_slot(1);
  memcpy(errors[slot].message, last_error, kMessageBytes);
  errors[slot].stamp = ++error_stamp;
  pthread_mutex_unlock(&errors_lock);
}

/* Starts a call: opens the driver (once), takes the call lock and pushes
   GPU 0's primary context. Non-zero: the call cannot run, and the lock is
   not held. */
static int start_call(void) {
  pthread_once(&driver_once, open_driver);
  if (driver_status) {
    /* No lock without a driver (call_lock may not be initialized). */
    return driver_status;
  }
  pthread_mutex_lock(&call_lock);
  call_status = 0;
  if (check(cu.ctxPushCurrent(context), "cuCtxPushCurrent")) {
    publish_failure();
    pthread_mutex_unlock(&call_lock);
    return ATTNC_STATUS_CUDA_ERROR;
  }
  return 0;
}

/* Ends a call that start_call started. */
static int finish_call(void) {
  int status = call_status;
  CUcontext popped;
  cu.ctxPopCurrent(&popped);
  publish_failure();
  pthread_mutex_unlock(&call_lock);
  return status;
}

/*--- The entries the generated code calls ---------------------------------*/

/* start_call (the caller's context comes back at attnc_cuda_end), loads
   the object's modules the first time, and makes `stream` the stream of the
   call. Non-zero: the call cannot run (the lock
   is not held). */
int attnc_cuda_begin(void *stream) {
  int started = start_call();
  if (started)
    return started;
  if (!modules_loaded) {
    modules_loaded = 1;
    attnc_cuda_object_load_modules();
    modules_status = call_status;
    memcpy(modules_message, last_error, kMessageBytes);
  }
  if (modules_status) {
    call_status = modules_status;
    memcpy(last_error, modules_message, kMessageBytes);
    return finish_call();
  }
  current_stream = stream;
  return 0;
}

/* Ends the call that attnc_cuda_begin began: its status; the caller's
   context and the lock are given back. */
int attnc_cuda_end(void) {
  current_stream = NULL;
  return finish_call();
}

const char *attnc_cuda_last_error(void) {
  pthread_once(&driver_once, open_driver);
  if (driver_status)
    return driver_message;
  pthread_mutex_lock(&errors_lock);
  int slot = error_slot(0);
  const char *message = slot < 0 ? "" : errors[slot].message;
  pthread_mutex_unlock(&errors_lock);
  return message;
}

/* NAME: the buffers are copied to the device, NAME_cuda runs on the default
   stream, the outputs are copied back. */
int attnc_cuda_call_host(const attnc_cuda_arguments *arguments,
                         int (*device_entry)(void **), void **host_args) {
  int started = start_call();
  if (started)
    return started;
  int count = arguments->count;
  CUdeviceptr *device = calloc((size_t)count + 1, sizeof(CUdeviceptr));
  void **device_args = calloc((size_t)count + 1, sizeof(void *));
  int status = 0;
  if (!device || !device_args) {
    fail(ATTNC_STATUS_CUDA_ERROR, "out of host memory");
    status = call_status;
  }
  for (int i = 0; i < count && !status; ++i) {
    size_t bytes = (size_t)arguments->bytes[i];
    status = check(cu.memAlloc(&device[i], bytes ? bytes : 1), "cuMemAlloc");
    if (!status && (arguments->copies[i] & ATTNC_CUDA_COPY_IN))
      status = check(
          cu.memcpyAsync(device[i], (CUdeviceptr)host_args[i], bytes, NULL),
          "cuMemcpyAsync (to the device)");
  }
  /* The kernel's own status (> 0: embedding ids out of range, computed
     with clamped ids as on the CPU) still gets its outputs back. */
  int kernel_status = 0;
  if (!status) {
    device_args[0] = NULL; /* the stream: the default one */
    for (int i = 0; i < count; ++i)
      device_args[i + 1] = (void *)(size_t)device[i];
    kernel_status = device_entry(device_args);
    if (kernel_status < 0)
      status = kernel_status;
  }
  if (!status)
    status = check(cu.streamSynchronize(NULL), "cuStreamSynchronize");
  for (int i = 0; i < count && !status; ++i)
    if (arguments->copies[i] & ATTNC_CUDA_COPY_OUT)
      status = check(cu.memcpyAsync((CUdeviceptr)host_args[i], device[i],
                                    (size_t)arguments->bytes[i], NULL),
                     "cuMemcpyAsync (to the host)");
  if (!status)
    status = check(cu.streamSynchronize(NULL), "cuStreamSynchronize");
  else
    cu.streamSynchronize(NULL); /* nothing still uses what is freed below */
  if (!status)
    status = kernel_status;
  if (device)
    for (int i = 0; i < count; ++i)
      if (device[i])
        cu.memFree(device[i]);
  free(device);
  free(device_args);
  /* A failure inside NAME_cuda ended its own call: keep its message. */
  if (status < 0 && !call_status)
    call_status = status;
  finish_call();
  return status;
}

/*--- What MLIR's gpu-to-llvm host code calls -------------------------------*/

void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  CUmodule module = NULL;
  if (!call_status)
    check(cu.moduleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  CUmodule module = NULL;
  if (call_status)
    return NULL;
  static char log[kMessageBytes / 2];
  log[0] = 0;
  int options[] = {kJitOptimizationLevel, kJitErrorLogBuffer,
                   kJitErrorLogBufferBytes};
  void *values[] = {(void *)(size_t)optLevel, log, (void *)sizeof(log)};
  CUresult result = cu.moduleLoadDataEx(&module, data, 3, options, values);
  if (result != 0) {
    const char *name, *text;
    describe(result, &name, &text);
    fail(ATTNC_STATUS_CUDA_ERROR,
         "CUDA error in cuModuleLoadDataEx (PTX JIT): %s (%s)%s%s", name, text,
         log[0] ? ": " : "", log);
  }
  return module;
}

void mgpuModuleUnload(void *module) {
  if (module)
    cu.moduleUnload(module);
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  CUfunction function = NULL;
  if (!module || call_status)
    return NULL;
  check(cu.moduleGetFunction(&function, module, name), "cuModuleGetFunction");
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount) {
  (void)paramsCount;
  if (!function || call_status)
    return;
  check(cu.launchKernel(function, (unsigned)gridX, (unsigned)gridY,
                        (unsigned)gridZ, (unsigned)blockX, (unsigned)blockY,
                        (unsigned)blockZ, (unsigned)smem, stream, params,
                        extra),
        "cuLaunchKernel");
}

/* Every stream of the generated host code is the call's. */
void *mgpuStreamCreate(void) { return current_stream; }

void mgpuStreamDestroy(void *stream) { (void)stream; }

void mgpuStreamSynchronize(void *stream) {
  if (!call_status)
    check(cu.streamSynchronize(stream), "cuStreamSynchronize");
}

/* uint8_t, not bool: MLIR declares the flag as i8. */
void *mgpuMemAlloc(uint64_t size, void *stream, uint8_t isHostShared) {
  (void)isHostShared;
  CUdeviceptr pointer = 0;
  if (call_status)
    return NULL;
  size_t bytes = size ? (size_t)size : 1;
  if (async_allocation)
    check(cu.memAllocAsync(&pointer, bytes, stream), "cuMemAllocAsync");
  else
    check(cu.memAlloc(&pointer, bytes), "cuMemAlloc");
  return (void *)(size_t)pointer;
}

void mgpuMemFree(void *pointer, void *stream) {
  if (!pointer)
    return;
  if (async_allocation) {
    check(cu.memFreeAsync((CUdeviceptr)(size_t)pointer, stream),
          "cuMemFreeAsync");
    return;
  }
  /* cuMemFree is not stream-ordered: the stream's kernels finish first. */
  check(cu.streamSynchronize(stream), "cuStreamSynchronize");
  check(cu.memFree((CUdeviceptr)(size_t)pointer), "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  if (!call_status)
    check(cu.memcpyAsync((CUdeviceptr)(size_t)dst, (CUdeviceptr)(size_t)src,
                         sizeBytes, stream),
          "cuMemcpyAsync");
}

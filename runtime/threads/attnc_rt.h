/*===- attnc_rt.h - The thread pool behind attnc's parallel kernels -------===*
 *
 * Kernels compiled with parallel loops (the JIT by default, `attnc
 * --parallel` ahead of time) run their loops through the OpenMP entry points
 * that MLIR's OpenMP lowering calls (__kmpc_fork_call, static loop
 * scheduling, barriers). This small C library implements exactly those on
 * its own pthread pool, so a parallel object links against it alone.
 *
 * The pool size is ATTNC_NUM_THREADS (read once), else the CPUs this
 * process may use (attnc_rt_default_threads), until
 * attnc_rt_set_num_threads() changes it. With 1 thread, a parallel loop runs
 * entirely on the calling thread: the single-threaded code path. A parallel
 * region entered while another one runs (a kernel called from several host
 * threads at once, or a nested loop) runs on its calling thread alone.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ATTNC_RT_H
#define ATTNC_RT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Threads used by the next parallel regions (>= 1). */
void attnc_rt_set_num_threads(int threads);
int attnc_rt_get_num_threads(void);

/* The CPUs this process may use: its affinity mask (taskset, numactl),
 * capped by its cgroups' CPU quota (a container's --cpus), at least 1. The
 * default of the pool, of `attnc run` and of the Python module. */
int attnc_rt_default_threads(void);

/* The CPUs a cgroup v2 `cpu.max` line ("QUOTA PERIOD") gives, rounded up;
 * 0 for "max PERIOD" (no limit) or a line it cannot read. */
int attnc_rt_cpu_quota(const char *cpu_max);

/* malloc/free for kernel temporaries: blocks of 64 KB or more are kept and
   reused for the same size (up to 512 MB in all) instead of being returned
   to the OS and page-faulted in again on every call. A pointer from
   attnc_rt_malloc must be released by attnc_rt_free. */
void *attnc_rt_malloc(size_t size);
void attnc_rt_free(void *pointer);
/* calloc in the same scheme: LLVM turns a malloc whose block is then
   zero-filled into a calloc, which a JIT resolves here. */
void *attnc_rt_calloc(size_t count, size_t size);

/* The symbols kernels call (the OpenMP entry points, and malloc/free as the
   cache above), for a JIT that resolves symbols explicitly. */
typedef struct {
  const char *name;
  void *address;
} attnc_rt_symbol;
/* A null-terminated table of every entry point the kernels may call. */
const attnc_rt_symbol *attnc_rt_symbols(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_RT_H */

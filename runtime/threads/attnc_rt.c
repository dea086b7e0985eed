/*===- attnc_rt.c - The thread pool behind attnc's parallel kernels -------===*
 *
 * See attnc_rt.h. The subset of the LLVM OpenMP runtime interface that
 * MLIR's lowering of omp.parallel + omp.wsloop (static schedule) emits:
 *
 *   __kmpc_fork_call(loc, 1, microtask, captured)  run microtask on a team
 *   __kmpc_global_thread_num(loc)                  this thread's team index
 *   __kmpc_for_static_init_{4,4u,8,8u}             this thread's iterations
 *   __kmpc_for_static_fini, __kmpc_barrier
 *
 * A region is published by bumping a generation counter. Waiting threads
 * (workers between regions, the barrier, the caller for its team) spin for
 * a few tens of microseconds before they sleep on a condition variable: a
 * kernel runs several regions back to back, and waking a sleeping thread
 * costs more than a short region (BERT-base layer: ~10 regions per call).
 *
 *===----------------------------------------------------------------------===*/

/* sched_getaffinity and CPU_COUNT (glibc, musl). */
#define _GNU_SOURCE

#include "attnc_rt.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*attnc_microtask)(int32_t *gtid, int32_t *btid, ...);

enum { kMaxThreads = 256 };

static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t region_mutex = PTHREAD_MUTEX_INITIALIZER;

static int requested_threads = 0; /* 0: not read from the environment yet */
static int started_workers = 0;
/* The published region; written and read under pool_mutex. */
typedef struct {
  attnc_microtask task;
  int argc;
  void *args[4];
  int size; /* threads in the team */
} attnc_region;
static attnc_region region;
static atomic_ulong generation = 0;
static atomic_int pending = 0;

/* Barrier of the current team. */
static atomic_int barrier_count = 0;
static atomic_ulong barrier_phase = 0;

/* Pauses of a spin before sleeping: ~50 us on a 3-4 GHz x86 core. */
enum { kSpinPauses = 4000 };

static void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Spins until *value != old or the spin is over; true when it changed. */
static int spin_while_equal(atomic_ulong *value, unsigned long old) {
  for (int i = 0; i < kSpinPauses; ++i) {
    if (atomic_load(value) != old)
      return 1;
    cpu_pause();
  }
  return atomic_load(value) != old;
}

static _Thread_local int my_index = 0;
static _Thread_local int my_team = 1;

/* fork(): the child has only the forking thread, not the parent's workers.
 * The pool is quiesced around fork (no region running, its mutex held) and
 * the child starts from an empty pool, so that its first parallel region
 * starts workers of its own instead of waiting for the parent's. */
static void before_fork(void) {
  pthread_mutex_lock(&region_mutex);
  pthread_mutex_lock(&pool_mutex);
}

static void after_fork_in_parent(void) {
  pthread_mutex_unlock(&pool_mutex);
  pthread_mutex_unlock(&region_mutex);
}

static void after_fork_in_child(void) {
  started_workers = 0;
  atomic_store(&pending, 0);
  atomic_store(&barrier_count, 0);
  pthread_cond_init(&pool_wake, 0);
  pthread_cond_init(&pool_done, 0);
  pthread_mutex_unlock(&pool_mutex);
  pthread_mutex_unlock(&region_mutex);
}

static pthread_once_t fork_handlers_once = PTHREAD_ONCE_INIT;
static void install_fork_handlers(void) {
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

int attnc_rt_cpu_quota(const char *cpu_max) {
  char quota_text[32];
  long long period = 0;
  if (sscanf(cpu_max, "%31s %lld", quota_text, &period) != 2 || period <= 0)
    return 0;
  char *end = 0;
  long long quota = strtoll(quota_text, &end, 10);
  if (end == quota_text || *end || quota <= 0)
    return 0; /* "max": no limit */
  long long cpus = (quota + period - 1) / period;
  return cpus > kMaxThreads ? kMaxThreads : (int)cpus;
}

/* The first line of `path` into `line`; 0 when it cannot be read. */
static int read_line(const char *path, char *line, int size) {
  FILE *file = fopen(path, "re");
  if (!file)
    return 0;
  int read = fgets(line, size, file) != 0;
  fclose(file);
  return read;
}

/* The path of this process's cgroup v2 ("0::PATH" in /proc/self/cgroup)
 * into `path`; 0 without one. */
static int cgroup_v2_path(char *path, int size) {
  FILE *file = fopen("/proc/self/cgroup", "re");
  if (!file)
    return 0;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof line, file))
    if (strncmp(line, "0::", 3) == 0) {
      line[strcspn(line, "\n")] = 0;
      snprintf(path, size, "/sys/fs/cgroup%s", line + 3);
      found = 1;
    }
  fclose(file);
  return found;
}

/* The CPUs the cgroups of this process give it, rounded up; 0 without a
 * limit. cgroup v2: the smallest cpu.max quota from its own cgroup up to
 * the root. cgroup v1 (or a hybrid system, whose v2 tree has no cpu
 * controller): the cpu controller's cfs quota. A container's `--cpus=2`
 * is such a quota: the affinity mask still shows every core. */
static int cgroup_cpu_limit(void) {
  char path[4200];
  int limit = 0, read_any = 0;
  if (cgroup_v2_path(path, sizeof path))
    for (;;) {
      char file[4300], cpu_max[64];
      snprintf(file, sizeof file, "%s/cpu.max", path);
      if (read_line(file, cpu_max, sizeof cpu_max)) {
        read_any = 1;
        int cpus = attnc_rt_cpu_quota(cpu_max);
        if (cpus && (!limit || cpus < limit))
          limit = cpus;
      }
      char *slash = strrchr(path, '/');
      if (!slash || strcmp(path, "/sys/fs/cgroup") == 0)
        break;
      *slash = 0;
    }
  if (read_any)
    return limit;
  char quota[32], period[32];
  if (read_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", quota, sizeof quota) &&
      read_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us", period,
                sizeof period)) {
    char cpu_max[80];
    quota[strcspn(quota, "\n")] = 0;
    snprintf(cpu_max, sizeof cpu_max, "%s %s", quota, period);
    limit = attnc_rt_cpu_quota(cpu_max); /* -1: no limit, refused */
  }
  return limit;
}

int attnc_rt_default_threads(void) {
  int cpus = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    cpus = CPU_COUNT(&set);
  if (cpus < 1)
    cpus = 1;
  int quota = cgroup_cpu_limit();
  if (quota && quota < cpus)
    cpus = quota;
  return cpus > kMaxThreads ? kMaxThreads : cpus;
}

static int threads_from_environment(void) {
  const char *text = getenv("ATTNC_NUM_THREADS");
  if (!text)
    return attnc_rt_default_threads();
  char *end = 0;
  long value = strtol(text, &end, 10);
  if (end == text || *end || value < 1)
    return attnc_rt_default_threads();
  return value > kMaxThreads ? kMaxThreads : (int)value;
}

void attnc_rt_set_num_threads(int threads) {
  pthread_mutex_lock(&pool_mutex);
  requested_threads =
      threads < 1 ? 1 : (threads > kMaxThreads ? kMaxThreads : threads);
  pthread_mutex_unlock(&pool_mutex);
}

int attnc_rt_get_num_threads(void) {
  pthread_mutex_lock(&pool_mutex);
  if (!requested_threads)
    requested_threads = threads_from_environment();
  int threads = requested_threads;
  pthread_mutex_unlock(&pool_mutex);
  return threads;
}

/* microtask(&gtid, &btid, args[0], ...) for the argc pointers MLIR's
 * lowering passes (one: the captured values). Microtasks are not variadic:
 * each is called through its own, non-variadic type (calling one through
 * the variadic attnc_microtask is undefined behaviour; UBSan's function
 * check reports it). */
typedef void (*microtask0)(int32_t *, int32_t *);
typedef void (*microtask1)(int32_t *, int32_t *, void *);
typedef void (*microtask2)(int32_t *, int32_t *, void *, void *);
typedef void (*microtask3)(int32_t *, int32_t *, void *, void *, void *);
typedef void (*microtask4)(int32_t *, int32_t *, void *, void *, void *,
                           void *);
static void call_microtask(attnc_microtask microtask, int32_t index,
                           int32_t argc, void *const *args) {
  int32_t gtid = index, btid = index;
  switch (argc) {
  case 0:
    ((microtask0)microtask)(&gtid, &btid);
    break;
  case 1:
    ((microtask1)microtask)(&gtid, &btid, args[0]);
    break;
  case 2:
    ((microtask2)microtask)(&gtid, &btid, args[0], args[1]);
    break;
  case 3:
    ((microtask3)microtask)(&gtid, &btid, args[0], args[1], args[2]);
    break;
  default:
    ((microtask4)microtask)(&gtid, &btid, args[0], args[1], args[2], args[3]);
    break;
  }
}

static void run_task(int index, const attnc_region *team) {
  my_index = index;
  my_team = team->size;
  call_microtask(team->task, index, team->argc, team->args);
  my_index = 0;
  my_team = 1;
}

static void *worker_main(void *arg) {
  int index = (int)(intptr_t)arg;
  unsigned long seen = 0;
  for (;;) {
    /* Spin for the next generation, then read it and its region together
       under the mutex they are published under: a region is never run
       twice, nor with another region's fields. */
    (void)spin_while_equal(&generation, seen);
    pthread_mutex_lock(&pool_mutex);
    while (atomic_load(&generation) == seen)
      pthread_cond_wait(&pool_wake, &pool_mutex);
    seen = atomic_load(&generation);
    attnc_region mine = region;
    pthread_mutex_unlock(&pool_mutex);
    if (index >= mine.size)
      continue;
    run_task(index, &mine);
    if (atomic_fetch_sub(&pending, 1) == 1) {
      pthread_mutex_lock(&pool_mutex);
      pthread_cond_broadcast(&pool_done);
      pthread_mutex_unlock(&pool_mutex);
    }
  }
  return 0;
}

void __kmpc_fork_call(void *loc, int32_t argc, attnc_microtask microtask, ...) {
  (void)loc;
  void *args[4] = {0, 0, 0, 0};
  va_list list;
  va_start(list, microtask);
  for (int i = 0; i < argc && i < 4; ++i)
    args[i] = va_arg(list, void *);
  va_end(list);

  int threads = attnc_rt_get_num_threads();
  /* One team at a time; a nested or concurrent region runs serially. */
  if (threads == 1 || my_team > 1 || pthread_mutex_trylock(&region_mutex)) {
    int saved_index = my_index, saved_team = my_team;
    my_index = 0;
    my_team = 1;
    call_microtask(microtask, 0, argc, args);
    my_index = saved_index;
    my_team = saved_team;
    return;
  }

  pthread_once(&fork_handlers_once, install_fork_handlers);
  pthread_mutex_lock(&pool_mutex);
  while (started_workers < threads - 1) {
    pthread_t thread;
    if (pthread_create(&thread, 0, worker_main,
                       (void *)(intptr_t)(started_workers + 1)))
      break;
    pthread_detach(thread);
    ++started_workers;
  }
  int size = started_workers + 1 < threads ? started_workers + 1 : threads;
  region.task = microtask;
  region.argc = argc;
  for (int i = 0; i < 4; ++i)
    region.args[i] = args[i];
  region.size = size;
  attnc_region mine = region;
  atomic_store(&pending, size - 1);
  atomic_store(&barrier_count, 0);
  atomic_fetch_add(&generation, 1);
  pthread_cond_broadcast(&pool_wake);
  pthread_mutex_unlock(&pool_mutex);

  run_task(0, &mine);

  for (int i = 0; i < kSpinPauses && atomic_load(&pending) > 0; ++i)
    cpu_pause();
  if (atomic_load(&pending) > 0) {
    pthread_mutex_lock(&pool_mutex);
    while (atomic_load(&pending) > 0)
      pthread_cond_wait(&pool_done, &pool_mutex);
    pthread_mutex_unlock(&pool_mutex);
  }
  pthread_mutex_unlock(&region_mutex);
}

int32_t __kmpc_global_thread_num(void *loc) {
  (void)loc;
  return my_index;
}

void __kmpc_barrier(void *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
  if (my_team == 1)
    return;
  unsigned long phase = atomic_load(&barrier_phase);
  if (atomic_fetch_add(&barrier_count, 1) + 1 == my_team) {
    atomic_store(&barrier_count, 0);
    pthread_mutex_lock(&pool_mutex);
    atomic_fetch_add(&barrier_phase, 1);
    pthread_cond_broadcast(&pool_done);
    pthread_mutex_unlock(&pool_mutex);
  } else if (!spin_while_equal(&barrier_phase, phase)) {
    pthread_mutex_lock(&pool_mutex);
    while (atomic_load(&barrier_phase) == phase)
      pthread_cond_wait(&pool_done, &pool_mutex);
    pthread_mutex_unlock(&pool_mutex);
  }
}

/* Static schedule without chunks: iterations [lower, upper] (inclusive,
 * step incr) are split into my_team contiguous parts. */
#define ATTNC_STATIC_INIT(NAME, T, UT)                                         \
  void NAME(void *loc, int32_t gtid, int32_t schedule, int32_t *last,          \
            T *lower, T *upper, T *stride, T incr, T chunk) {                  \
    (void)loc;                                                                 \
    (void)gtid;                                                                \
    (void)schedule;                                                            \
    (void)chunk;                                                               \
    UT trips = incr > 0 ? (UT)(*upper - *lower) / (UT)incr + 1                 \
                        : (UT)(*lower - *upper) / (UT)(-incr) + 1;             \
    if ((incr > 0 && *upper < *lower) || (incr < 0 && *upper > *lower))        \
      trips = 0;                                                               \
    UT team = (UT)my_team, index = (UT)my_index;                               \
    UT base = trips / team, extra = trips % team;                              \
    UT first = index * base + (index < extra ? index : extra);                 \
    UT count = base + (index < extra ? 1 : 0);                                 \
    T begin = *lower + (T)first * incr;                                        \
    *stride = (T)trips * incr;                                                 \
    if (count == 0) {                                                          \
      /* An empty range: upper before lower. */                                \
      *lower = begin;                                                          \
      *upper = begin - incr;                                                   \
      if (last)                                                                \
        *last = 0;                                                             \
      return;                                                                  \
    }                                                                          \
    *lower = begin;                                                            \
    *upper = begin + (T)(count - 1) * incr;                                    \
    if (last)                                                                  \
      *last = first + count == trips;                                          \
  }

ATTNC_STATIC_INIT(__kmpc_for_static_init_4, int32_t, uint32_t)
ATTNC_STATIC_INIT(__kmpc_for_static_init_4u, uint32_t, uint32_t)
ATTNC_STATIC_INIT(__kmpc_for_static_init_8, int64_t, uint64_t)
ATTNC_STATIC_INIT(__kmpc_for_static_init_8u, uint64_t, uint64_t)

void __kmpc_for_static_fini(void *loc, int32_t gtid) {
  (void)loc;
  (void)gtid;
}

/*===----------------------------------------------------------------------===*
 * A cache of large blocks for kernel temporaries
 *
 * A kernel mallocs and frees its temporaries on every call. glibc returns
 * large blocks to the kernel on free (mmap, or trimming the heap), so each
 * call page-faults them in again: ~2 ms for a 9 MB weight transpose, and
 * ~0.5 ms of a 3 ms call for the 384 KB temporaries of (1, 128, 768, 12)
 * attention. Blocks of at least kCacheMin bytes are kept (up to kCacheBytes
 * in all) and handed out again for the same size.
 *===----------------------------------------------------------------------===*/

enum { kCacheMin = 64 << 10, kCacheSlots = 64 };
static const size_t kCacheBytes = (size_t)512 << 20;

typedef struct {
  size_t size; /* usable bytes after the header */
  size_t pad;  /* keeps the payload 16-byte aligned, like malloc's */
} attnc_block;

static pthread_mutex_t cache_mutex = PTHREAD_MUTEX_INITIALIZER;
static attnc_block *cache[kCacheSlots];
static size_t cached_bytes = 0;

void *attnc_rt_malloc(size_t size) {
  if (size >= kCacheMin) {
    pthread_mutex_lock(&cache_mutex);
    for (int i = 0; i < kCacheSlots; ++i)
      if (cache[i] && cache[i]->size == size) {
        attnc_block *block = cache[i];
        cache[i] = 0;
        cached_bytes -= size;
        pthread_mutex_unlock(&cache_mutex);
        return block + 1;
      }
    pthread_mutex_unlock(&cache_mutex);
  }
  if (size > SIZE_MAX - sizeof(attnc_block))
    return 0;
  attnc_block *block = malloc(sizeof(attnc_block) + size);
  if (!block)
    return 0;
  block->size = size;
  return block + 1;
}

void *attnc_rt_calloc(size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size)
    return 0;
  void *pointer = attnc_rt_malloc(count * size);
  if (pointer)
    memset(pointer, 0, count * size);
  return pointer;
}

void attnc_rt_free(void *pointer) {
  if (!pointer)
    return;
  attnc_block *block = (attnc_block *)pointer - 1;
  if (block->size >= kCacheMin) {
    pthread_mutex_lock(&cache_mutex);
    for (int i = 0; i < kCacheSlots; ++i)
      if (!cache[i] && cached_bytes + block->size <= kCacheBytes) {
        cache[i] = block;
        cached_bytes += block->size;
        pthread_mutex_unlock(&cache_mutex);
        return;
      }
    pthread_mutex_unlock(&cache_mutex);
  }
  free(block);
}

const attnc_rt_symbol *attnc_rt_symbols(void) {
  static const attnc_rt_symbol symbols[] = {
      {"attnc_rt_malloc", (void *)&attnc_rt_malloc},
      {"attnc_rt_free", (void *)&attnc_rt_free},
      /* Objects compiled without --parallel call malloc/free directly. */
      {"malloc", (void *)&attnc_rt_malloc},
      {"free", (void *)&attnc_rt_free},
      {"calloc", (void *)&attnc_rt_calloc},
      /* The Halide backend's parallel loops (attnc_halide_par_for.c). */
      {"attnc_rt_get_num_threads", (void *)&attnc_rt_get_num_threads},
      {"__kmpc_fork_call", (void *)&__kmpc_fork_call},
      {"__kmpc_global_thread_num", (void *)&__kmpc_global_thread_num},
      {"__kmpc_barrier", (void *)&__kmpc_barrier},
      {"__kmpc_for_static_init_4", (void *)&__kmpc_for_static_init_4},
      {"__kmpc_for_static_init_4u", (void *)&__kmpc_for_static_init_4u},
      {"__kmpc_for_static_init_8", (void *)&__kmpc_for_static_init_8},
      {"__kmpc_for_static_init_8u", (void *)&__kmpc_for_static_init_8u},
      {"__kmpc_for_static_fini", (void *)&__kmpc_for_static_fini},
      {0, 0}};
  return symbols;
}

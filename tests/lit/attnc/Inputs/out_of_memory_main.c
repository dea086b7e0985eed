/* Fault injection (tests/lit/attnc/out-of-memory.test): this program's own
   malloc and free stand in for the C library's, so it can make the k-th
   allocation of a kernel call fail, for every k. Each such call must return
   GEMM_STATUS_OUT_OF_MEMORY, free everything it allocated, and not crash;
   the allocations happen both in the body of the entries and inside loops
   (a GEMM's packed panel), the two ways attn-check-allocations handles.
   A call without failure afterwards gives the first call's outputs. */
#include "gemm.h"

#include <stdio.h>
#include <string.h>

/* glibc's allocator under its own names. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *pointer);

static int counting;         /* inside a kernel call */
static int allocations;      /* malloc calls during the call */
static int failAt;           /* the allocation to fail (0: none) */
static int allocated, freed; /* successful mallocs, frees of them */

void *malloc(size_t size) {
  if (!counting)
    return __libc_malloc(size);
  if (++allocations == failAt)
    return NULL;
  void *pointer = __libc_malloc(size);
  allocated += pointer != NULL;
  return pointer;
}

void free(void *pointer) {
  if (counting && pointer)
    ++freed;
  __libc_free(pointer);
}

static float x[GEMM_X_NUMEL], w[GEMM_W_NUMEL], s[GEMM_S_NUMEL],
    first[GEMM_S_NUMEL];
static const int32_t lengths[GEMM_VALID_LENS_NUMEL] = {5, 64};

static int call(int failing) {
  counting = 1;
  allocations = allocated = freed = 0;
  failAt = failing;
  int status = gemm(x, lengths, w, s);
  counting = 0;
  return status;
}

int main(void) {
  for (int i = 0; i < GEMM_X_NUMEL; ++i)
    x[i] = (float)(i % 13) / 13.0f - 0.5f;
  for (int i = 0; i < GEMM_W_NUMEL; ++i)
    w[i] = (float)(i % 7) / 14.0f - 0.25f;
  /* A first call sets up what lasts (the CPU variant, attnc_rt's threads):
     the calls counted after it allocate the same buffers each time. */
  gemm(x, lengths, w, s);
  int status = call(0);
  int perCall = allocations;
  memcpy(first, s, sizeof s);
  printf("no failure: status %d, %s allocations, %s\n", status,
         perCall > 1 ? "several" : "fewer than two",
         allocated == freed ? "all freed" : "some not freed");
  int wrong = 0;
  for (int k = 1; k <= perCall; ++k) {
    status = call(k);
    if (status != GEMM_STATUS_OUT_OF_MEMORY || allocated != freed) {
      printf("allocation %d of %d failing: status %d, %d allocated, %d "
             "freed\n",
             k, perCall, status, allocated, freed);
      wrong = 1;
    }
  }
  printf("each allocation failing: %s\n",
         wrong ? "wrong" : "OUT_OF_MEMORY, all freed");
  status = call(0);
  printf("no failure again: status %d, outputs %s\n", status,
         memcmp(first, s, sizeof s) ? "differ" : "the same");
  return 0;
}

/* Calls block `lookup` of run_small.attn (ids i32[4], table f32[3, 2]) with
   two ids out of range: the kernel returns 1 (one embedding was given ids
   out of range) and reads clamped rows, whichever backend built it
   (tests/lit/attnc/halide.test). */
#include "lookup.h"

#include <stdio.h>

int main(void) {
  const int32_t ids[LOOKUP_IDS_NUMEL] = {0, 7, 2, -1};
  const float table[LOOKUP_TABLE_NUMEL] = {1, 2, 3, 4, 5, 6};
  float e[LOOKUP_E_NUMEL];
  int status = lookup(ids, table, e);
  printf("status %d, rows %g %g %g %g\n", status, e[0], e[2], e[4], e[6]);
  return 0;
}

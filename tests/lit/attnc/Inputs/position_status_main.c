/* Calls block `step` of encoded-step.attn (a 6-row cache, an encoding table
   of 4 rows) at positions in the cache and in the table, in the cache but
   past the table, and past the cache: the kernel returns 0, then
   STEP_STATUS_CACHE_POSITION twice with neither cache written, whichever
   backend built it (tests/lit/attnc/position-status.test). */
#include "step.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  float x[STEP_X_NUMEL], w[STEP_W_NUMEL], y[STEP_Y_NUMEL];
  float k[STEP_K_NUMEL], v[STEP_V_NUMEL], k0[STEP_K_NUMEL], v0[STEP_V_NUMEL];
  for (int i = 0; i < STEP_X_NUMEL; ++i)
    x[i] = (float)(i % 5) / 5.0f;
  for (int i = 0; i < STEP_W_NUMEL; ++i)
    w[i] = (float)(i % 7) / 14.0f - 0.2f;
  memset(k, 0, sizeof k);
  memset(v, 0, sizeof v);
  const int32_t cases[3][STEP_POS_NUMEL] = {{0, 3}, {0, 4}, {0, 6}};
  for (int c = 0; c < 3; ++c) {
    memcpy(k0, k, sizeof k);
    memcpy(v0, v, sizeof v);
    int status = step(x, cases[c], k, v, w, y);
    int untouched = !memcmp(k, k0, sizeof k) && !memcmp(v, v0, sizeof v);
    printf("pos %d %d: status %d (%s), caches %s\n", cases[c][0], cases[c][1],
           status,
           status == STEP_STATUS_CACHE_POSITION ? "CACHE_POSITION" : "-",
           untouched ? "untouched" : "written");
  }
  return 0;
}

/* Used by dispatch.test: runs the d2l_mha kernel of the linked object on
   fixed inputs and prints its status and a hash of the output's bits, so
   that two objects (or two paths of one) can be compared exactly. */
#include "k.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static float x[D2L_MHA_X_NUMEL], wq[D2L_MHA_W_Q_NUMEL], wk[D2L_MHA_W_K_NUMEL],
    wv[D2L_MHA_W_V_NUMEL], wo[D2L_MHA_W_O_NUMEL], y[D2L_MHA_Y_NUMEL];

static void fill(float *values, int count, uint32_t seed) {
  int i;
  for (i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    values[i] = (float)(seed >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}

int main(void) {
  int32_t lens[D2L_MHA_VALID_LENS_NUMEL] = {3, 2};
  uint64_t hash = 1469598103934665603u;
  unsigned char bytes[sizeof y];
  size_t i;
  int status;
  fill(x, D2L_MHA_X_NUMEL, 1);
  fill(wq, D2L_MHA_W_Q_NUMEL, 2);
  fill(wk, D2L_MHA_W_K_NUMEL, 3);
  fill(wv, D2L_MHA_W_V_NUMEL, 4);
  fill(wo, D2L_MHA_W_O_NUMEL, 5);
  status = d2l_mha(x, lens, wq, wk, wv, wo, y);
  if (status == D2L_MHA_STATUS_UNSUPPORTED_CPU) {
    printf("status unsupported-cpu\n");
    return 0;
  }
  memcpy(bytes, y, sizeof y);
  for (i = 0; i < sizeof y; ++i)
    hash = (hash ^ bytes[i]) * 1099511628211u;
  printf("status %d hash %016llx\n", status, (unsigned long long)hash);
  return 0;
}

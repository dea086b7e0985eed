/*===- fake_driver_main.c - Calls a GPU object on the fake CUDA driver ----===//
 *
 *   fake_driver_main host|device STATUS...
 *
 * calls the book MHA's GPU object once per STATUS -- through NAME (host
 * pointers) or NAME_cuda (on the stream 0x5eed; the fake driver's device
 * memory is host memory, so host buffers serve) -- prints each call's status
 * and message, and exits 0 when each status is the one expected. After a
 * successful host call every output element must hold the fake device's fill
 * pattern: the output was copied back from the device.
 *
 *===----------------------------------------------------------------------===*/

#include "fake_mha.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 3 || (strcmp(argv[1], "host") && strcmp(argv[1], "device"))) {
    fprintf(stderr, "usage: fake_driver_main host|device STATUS...\n");
    return 2;
  }
  int host = strcmp(argv[1], "host") == 0;
  float *x = calloc(D2L_MHA_X_NUMEL, sizeof(float));
  float *w = calloc(D2L_MHA_W_Q_NUMEL, sizeof(float));
  float *y = calloc(D2L_MHA_Y_NUMEL, sizeof(float));
  int32_t valid_lens[D2L_MHA_VALID_LENS_NUMEL] = {3, 2};
  int failures = 0;
  for (int i = 2; i < argc; ++i) {
    memset(y, 0, D2L_MHA_Y_NUMEL * sizeof(float));
    int status =
        host ? d2l_mha(x, valid_lens, w, w, w, w, y)
             : d2l_mha_cuda((void *)0x5eed, x, valid_lens, w, w, w, w, y);
    printf("call %d: %d: %s\n", i - 1, status,
           status ? d2l_mha_cuda_last_error() : "ok");
    if (status != atoi(argv[i])) {
      printf("expected %s\n", argv[i]);
      ++failures;
    }
    if (host && status == 0)
      for (int e = 0; e < D2L_MHA_Y_NUMEL; ++e) {
        unsigned char pattern[sizeof(float)];
        memcpy(pattern, &y[e], sizeof pattern);
        if (pattern[0] != 0x7f || pattern[3] != 0x7f) {
          printf("Y[%d] was not copied back from the device\n", e);
          ++failures;
          break;
        }
      }
  }
  free(x);
  free(w);
  free(y);
  return failures ? 1 : 0;
}

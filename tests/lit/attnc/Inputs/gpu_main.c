/* A C host of a GPU object: calls both entries of d2l_mha and prints their
   status and message. Built with the C compiler alone (the object needs
   libc and libdl only). */
#include "mha_gpu.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  float *x = calloc(D2L_MHA_X_NUMEL, sizeof(float));
  float *w = calloc(D2L_MHA_W_Q_NUMEL, sizeof(float));
  float *y = calloc(D2L_MHA_Y_NUMEL, sizeof(float));
  int32_t valid_lens[D2L_MHA_VALID_LENS_NUMEL] = {3, 2};
  int host = d2l_mha(x, valid_lens, w, w, w, w, y);
  printf("host entry: %d: %s\n", host, d2l_mha_cuda_last_error());
  int device = d2l_mha_cuda(NULL, x, valid_lens, w, w, w, w, y);
  printf("device entry: %d: %s\n", device, d2l_mha_cuda_last_error());
  free(x);
  free(w);
  free(y);
  return host == D2L_MHA_STATUS_NO_CUDA_DRIVER &&
                 device == D2L_MHA_STATUS_NO_CUDA_DRIVER
             ? 0
             : 1;
}

/* Used by c-interface.test: calls free_list through its header, then
   through its packed entry. */
#include "k.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  float x[4] = {-1, 2, -3, 4}, w[4] = {0.5f, 0.25f, 0.125f, 1};
  float y[4], x_out[4], w_out[4];
  int i, status = free_list(x, w, y, x_out, w_out);
  if (status != 0)
    return 1;
  printf("Y =");
  for (i = 0; i < 4; ++i)
    printf(" %g", y[i]);
  printf("; free_out =");
  for (i = 0; i < 4; ++i)
    printf(" %g", x_out[i]);
  printf("; W_out =");
  for (i = 0; i < 4; ++i)
    printf(" %g", w_out[i]);
  printf("\n");
  {
    void *args[5];
    float y2[4] = {0};
    args[0] = x;
    args[1] = w;
    args[2] = y2;
    args[3] = x_out;
    args[4] = w_out;
    status = attnc_packed_free_list(args);
    printf("packed entry: %d, Y[1] = %g\n", status, y2[1]);
  }
  free(NULL); /* libc's free is still libc's */
  return 0;
}

#!/usr/bin/env bash
# Extra memory of long-sequence attention: D2L MultiHeadAttention(bias=False)
# self-attention at (B, T, D, heads) = (1, T, 512, 8), T = 8192 by default,
# compiled ahead of time (attnc --parallel) and called once through NAME and
# once through NAME_prepare + NAME_prepared. Prints the peak RSS (VmHWM)
# beyond what the program held with its inputs, weights and output already
# written, i.e. what the kernel itself allocates.
#   bench/memory.sh [T] [threads]
# Needs a built attnc (build/bin/attnc) and libattnc_rt.a (build/lib).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tokens=${1:-8192}
threads=${2:-1}
attnc=$root/build/bin/attnc
runtime=$root/build/lib/libattnc_rt.a
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/mha.attn" <<EOF
block mha {
  dim B = 1, T = $tokens, D = 512
  input X: f32[B, T, D]
  param W_q: f32[D, D]
  param W_k: f32[D, D]
  param W_v: f32[D, D]
  param W_o: f32[D, D]
  Y = multihead_attention(X, X, X, heads=8, w_q=W_q, w_k=W_k, w_v=W_v,
                          w_o=W_o)
  output Y
}
EOF

cat >"$work/main.c" <<'EOF'
#include "mha.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Peak resident set so far, in KB. */
static long peak_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6))
      kb = atol(line + 6);
  if (f)
    fclose(f);
  return kb;
}

/* Written, so that its pages count before the kernel runs. */
static float *filled(long count) {
  float *p = aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64);
  for (long i = 0; i < count; ++i)
    p[i] = (float)(i % 97) / 97.0f - 0.5f;
  return p;
}

int main(int argc, char **argv) {
  int prepared = argc > 1 && !strcmp(argv[1], "prepared");
  float *x = filled(MHA_X_NUMEL), *wq = filled(MHA_W_Q_NUMEL),
        *wk = filled(MHA_W_K_NUMEL), *wv = filled(MHA_W_V_NUMEL),
        *wo = filled(MHA_W_O_NUMEL), *y = filled(MHA_Y_NUMEL);
  float *packed = prepared ? filled(MHA_PACKED_NUMEL) : 0;
  long before = peak_kb();
  int status = prepared ? mha_prepare(wq, wk, wv, wo, packed) ||
                              mha_prepared(x, wq, wk, wv, wo, packed, y)
                        : mha(x, wq, wk, wv, wo, y);
  long after = peak_kb();
  if (status) {
    fprintf(stderr, "the kernel failed\n");
    return 1;
  }
  printf("%-28s inputs + weights %5.1f MB, output %5.1f MB; extra peak "
         "%5.1f MB\n",
         prepared ? "mha_prepare + mha_prepared" : "mha",
         (MHA_X_NUMEL + 4.0 * MHA_W_Q_NUMEL) * 4 / 1048576.0,
         MHA_Y_NUMEL * 4 / 1048576.0, (after - before) / 1024.0);
  return 0;
}
EOF

"$attnc" "$work/mha.attn" --parallel -o "$work/mha.o"
"$attnc" "$work/mha.attn" --emit=header -o "$work/mha.h"
"${CC:-cc}" -O2 -I"$work" "$work/main.c" "$work/mha.o" "$runtime" -lpthread \
  -lm -o "$work/main"
echo "(1, $tokens, 512, 8) self-attention, $threads thread(s):"
ATTNC_NUM_THREADS=$threads "$work/main"
ATTNC_NUM_THREADS=$threads "$work/main" prepared

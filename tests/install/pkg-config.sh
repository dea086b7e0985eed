#!/bin/sh
# The installed pkg-config files work as a build without CMake uses them:
#   cc main.c $(pkg-config --cflags --libs attnc)          the JIT runtime
#   cc main.c k.o $(pkg-config --cflags --libs attnc_rt)   a --parallel object
# Usage: pkg-config.sh PREFIX SOURCE_DIR WORK_DIR (PREFIX: an installed attnc;
# the .pc files are found through PKG_CONFIG_PATH alone).
set -eu
prefix=$1 source=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
export PKG_CONFIG_PATH
cc=${CC:-cc}

# The runtime's C API: the jit_host sample, built by hand, runs from where it
# is (the .pc gives the run path).
"$cc" "$source/samples/jit_host/main.c" $(pkg-config --cflags --libs attnc) \
  -o "$work/jit_host"
ATTNC_CACHE_DIR="$work/cache" "$work/jit_host" "$source/samples/d2l_mha.attn" \
  > "$work/jit_host.out" 2>&1
grep -q "jit_host: done" "$work/jit_host.out" ||
  { cat "$work/jit_host.out"; exit 1; }

# A parallel object from the installed attnc, linked with attnc_rt.
"$prefix/bin/attnc" "$source/samples/d2l_mha.attn" --parallel -o "$work/k.o"
"$prefix/bin/attnc" "$source/samples/d2l_mha.attn" --parallel --emit=header \
  -o "$work/k.h"
cat > "$work/main.c" <<'C'
#include "k.h"
#include <attnc_rt.h>
#include <stdio.h>
static float X[D2L_MHA_X_NUMEL], W[D2L_MHA_W_Q_NUMEL], Y[D2L_MHA_Y_NUMEL];
static int32_t lens[D2L_MHA_VALID_LENS_NUMEL] = {2, 3};
int main(void) {
  int status = d2l_mha(X, lens, W, W, W, W, Y);
  printf("status %d, %d threads\n", status, attnc_rt_get_num_threads());
  return status;
}
C
"$cc" -I "$work" "$work/main.c" "$work/k.o" \
  $(pkg-config --cflags --libs attnc_rt) -lm -o "$work/parallel"
ATTNC_NUM_THREADS=2 "$work/parallel" | tee "$work/parallel.out"
grep -q "status 0, 2 threads" "$work/parallel.out"
echo "pkg-config: attnc and attnc_rt work"

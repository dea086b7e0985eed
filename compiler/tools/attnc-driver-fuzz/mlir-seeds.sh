#!/bin/sh
# The seed corpus of attnc-mlir-fuzz, made afresh in CORPUS: every .mlir file
# of the lit tests, and each sample's blocks as `attnc --emit=attn` prints
# them (what users start hand-written kernels from).
#   mlir-seeds.sh CORPUS ATTNC SAMPLES_DIR LIT_DIR
set -eu
corpus=$1 attnc=$2 samples=$3 lit=$4
rm -rf "$corpus" && mkdir -p "$corpus"
find "$lit" -name '*.mlir' | while read -r f; do
  cp "$f" "$corpus/lit-$(echo "${f#"$lit"/}" | tr / -)"
done
for f in "$samples"/*.attn; do
  "$attnc" "$f" --emit=attn --mcpu=x86-64-v3 -o "$corpus/sample-$(basename "$f" .attn).mlir"
done

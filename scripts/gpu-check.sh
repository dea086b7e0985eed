#!/usr/bin/env bash
# The GPU check: attnc's GPU objects against the D2L goldens and against
# PyTorch, on a machine with an NVIDIA GPU, PyTorch and a C compiler but no
# LLVM/MLIR (the workplace's lent H200; docs/gpu.md).
#
#   scripts/gpu-check.sh prepare [BUILD]   here: compiles every golden case
#                                          and benchmark block for the GPU
#                                          into .gpu-check/ with BUILD/bin/attnc
#                                          (default: build)
#   scripts/gpu-check.sh run [OUT]         there, in the repository root, with
#                                          .gpu-check carried: links each
#                                          object into a shared library, runs
#                                          the goldens and the benchmarks
#                                          (scripts/gpu_check.py) and writes
#                                          OUT/gpu-check.md (default: $OUT or
#                                          .gpu-check/out)
#
# With the device tool: `scripts/gpu-check.sh prepare`, then
#   run(command="scripts/gpu-check.sh run", carry=[".gpu-check"], timeout_s=480)
# .gpu-check/ must be ignored by git (.git/info/exclude) to be carried.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.gpu-check
chip=${ATTNC_GPU_CHIP:-sm_90a}

case "${1:-}" in
prepare)
  attnc="${2:-build}/bin/attnc"
  [[ -x "$attnc" ]] || { echo "gpu-check: no $attnc; build first" >&2; exit 1; }
  rm -rf "$dir" && mkdir -p "$dir/specs"
  for spec in tests/data/goldens/*/*.attn; do
    case_name=$(basename "$spec" .attn)
    "$attnc" "$spec" --block "$case_name" --target=nvptx --mcpu="$chip" \
      -o "$dir/golden_$case_name.o"
  done
  # The benchmark shapes: (B, T, D, H) attention cores as D2L's
  # DotProductAttention on [B*H, T, D/H] (what SDPA computes on
  # [B, H, T, D/H]) and the BERT-base layer of samples/.
  # The first two also in bf16 (the tensor cores).
  for shape in 8,2048,1024,16,f32 1,8192,1024,16,f32 32,512,768,12,f32 \
    8,2048,1024,16,bf16 1,8192,1024,16,bf16; do
    IFS=, read -r b t d h type <<<"$shape"
    prefix=sdpa
    [[ $type == f32 ]] || prefix="sdpa_$type"
    n=$((b * h)) dh=$((d / h)) name="${prefix}_${b}_${t}_${d}_${h}"
    cat >"$dir/specs/$name.attn" <<EOF
block $name {
  input Q: $type[$n, $t, $dh]
  input K: $type[$n, $t, $dh]
  input V: $type[$n, $t, $dh]
  Y = attention(Q, K, V)
  output Y
}
EOF
    "$attnc" "$dir/specs/$name.attn" --target=nvptx --mcpu="$chip" \
      -o "$dir/bench_$name.o"
  done
  # Decode steps (one new token against a KV cache of L rows, batch 1,
  # every row before it written): GPT-2-small-sized (768, 12 heads) and
  # Llama-sized (2048, 32 heads over 8 kv heads) attention layers.
  for shape in gpt2,768,12,12,1024,f32 gpt2,768,12,12,8192,f32 \
    llama,2048,32,8,8192,f32 gpt2,768,12,12,8192,bf16 \
    llama,2048,32,8,8192,bf16; do
    IFS=, read -r model d h g l type <<<"$shape"
    kv=$((d / h * g)) name="decode_${model}_${l}_${type}" extra=""
    [[ $g == "$h" ]] || extra=", kv_heads=$g"
    cat >"$dir/specs/$name.attn" <<EOF
block $name {
  input  X: $type[1, 1, $d]
  input  pos: i32[1]
  state  K: $type[1, $l, $kv]
  state  V: $type[1, $l, $kv]
  param  W_q: $type[$d, $d]
  param  W_k: $type[$kv, $d]
  param  W_v: $type[$kv, $d]
  param  W_o: $type[$d, $d]
  Y = multihead_attention(X, X, X, heads=$h, w_q=W_q, w_k=W_k, w_v=W_v,
                          w_o=W_o, cache_k=K, cache_v=V, cache_pos=pos$extra)
  output Y
}
EOF
    "$attnc" "$dir/specs/$name.attn" --target=nvptx --mcpu="$chip" \
      -o "$dir/bench_$name.o"
  done
  cp samples/bert_base_layer.attn "$dir/specs/"
  "$attnc" samples/bert_base_layer.attn --target=nvptx --mcpu="$chip" \
    -o "$dir/bench_bert_base_layer.o"
  grep -qx '/.gpu-check/' .git/info/exclude 2>/dev/null ||
    echo '/.gpu-check/' >>.git/info/exclude
  du -sh "$dir"
  ;;
run)
  out="${2:-${OUT:-$dir/out}}"
  mkdir -p "$out"
  for object in "$dir"/*.o; do
    "${CC:-cc}" -shared -o "${object%.o}.so" "$object"
  done
  PYTHONUNBUFFERED=1 python3 scripts/gpu_check.py --objects "$dir" \
    --goldens tests/data/goldens --report "$out/gpu-check.md" 2>&1 |
    tee "$out/gpu-check.log"
  ;;
*)
  sed -n '2,20p' "$0" >&2
  exit 2
  ;;
esac

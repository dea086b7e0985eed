"""One decode step of a KV-cached attention layer (issue 30): attnc against
PyTorch with a static cache (gpt-fast's way: index_copy_ into a
max-length cache, then SDPA with the cache's mask) and, for f32, ONNX
Runtime's GroupQueryAttention with its past/present buffers shared
(bench/peer_ort_decode.py) and llama.cpp through llama-cpp-python (a
GGUF of random weights, bench/peer_llamacpp_decode.py), both in the bench
venv of bench/setup.sh, in one run, with the machine's read bandwidth
beside them.

    python bench/decode.py [--layers N] [--lengths 1024,8192] [--threads T]
                           [--dtype f32|bf16] [--model gpt2|llama]

Each step is timed over `--layers` independent layers (weights and caches
of their own, called in turn, as a model's layers are), so that no layer's
working set stays in the L3 cache between its calls: by default as many
layers as make twice the L3 cache (sysfs; 300 MiB on Emerald Rapids), at
least 12. The figure is the median time of one layer's step. Every entry's cache holds `L - 1` tokens
(the step writes row L - 1 and reads all L rows). The roofline is the
bytes one step must read (its weights and its caches' first L rows) over
attnc-memory-bandwidth's median read rate on the same threads.
"""

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import attnc

from decode_shapes import MODELS


def spec(model, length, dtype):
    d, heads, kv = MODELS[model]
    kv_dim = d // heads * kv
    extra = f", kv_heads={kv}, rope=true" if kv != heads else ""
    return f"""
block step {{
  dim B = 1, T = 1, D = {d}, L = {length}
  input  X: {dtype}[B, T, D]
  input  pos: i32[B]
  state  K: {dtype}[B, L, {kv_dim}]
  state  V: {dtype}[B, L, {kv_dim}]
  param  W_q: {dtype}[D, D]
  param  W_k: {dtype}[{kv_dim}, D]
  param  W_v: {dtype}[{kv_dim}, D]
  param  W_o: {dtype}[D, D]
  Y = multihead_attention(X, X, X, heads={heads}, w_q=W_q, w_k=W_k,
                          w_v=W_v, w_o=W_o, cache_k=K, cache_v=V,
                          cache_pos=pos{extra})
  output Y
}}
"""


def median_ms(fn, layers, min_time=1.0, max_rounds=200):
    for i in range(layers):  # warm-up: every layer once
        fn(i)
    times = []
    start = time.perf_counter()
    while len(times) < max_rounds and (len(times) < 5 or
                                       time.perf_counter() - start < min_time):
        for i in range(layers):
            t0 = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def l3_bytes():
    """The largest cache's size from sysfs (0 when unknown)."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    for index in os.listdir(base) if os.path.isdir(base) else []:
        try:
            text = open(os.path.join(base, index, "size")).read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        best = max(best, int(text.rstrip("KMG")) * scale)
    return best


def bandwidth(threads, load_bytes=16):
    tool = os.path.join(os.path.dirname(__file__), "..", "build", "bin",
                        "attnc-memory-bandwidth")
    out = subprocess.run([tool, "--threads", str(threads), "--mib", "512",
                          "--passes", "9", "--load-bytes", str(load_bytes)],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) GB/s", out).group(1))


def peer_step_ms(script, tag, name, extra):
    """A peer's median step from SCRIPT in the bench venv (checked against
    NumPy first), or None and the reason it has none."""
    here = os.path.dirname(os.path.abspath(__file__))
    venv = os.environ.get("ATTNC_BENCH_VENV",
                          os.path.join(here, "..", "build", "bench-venv"))
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        return None, f"{name}: no {venv} (bench/setup.sh)"
    run = subprocess.run([python, os.path.join(here, script), "--check"] +
                         extra, capture_output=True, text=True)
    found = re.search(rf"^{tag} (\S+) ([0-9.]+) ms", run.stdout, re.M)
    if run.returncode != 0 or not found:
        last = (run.stdout + run.stderr).strip().splitlines()[-1:]
        return None, f"{name}: not available: {' '.join(last)}"
    return float(found.group(2)), f"{name} {found.group(1)}"


def ort_step_ms(model, length, layers, threads):
    """ONNX Runtime's GroupQueryAttention (bench/peer_ort_decode.py)."""
    return peer_step_ms("peer_ort_decode.py", "ort", "onnxruntime",
                        ["--model", model, "--length", str(length),
                         "--layers", str(layers), "--threads", str(threads)])


def llamacpp_step_ms(model, length, layers, threads, dtype):
    """llama.cpp through llama-cpp-python (bench/peer_llamacpp_decode.py):
    a whole model's step over its layers."""
    return peer_step_ms("peer_llamacpp_decode.py", "llamacpp", "llama.cpp",
                        ["--model", model, "--length", str(length),
                         "--layers", str(layers), "--threads", str(threads),
                         "--dtype", dtype])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=0,
                        help="layers called in turn (0: twice the L3 cache's "
                             "worth, at least 12)")
    parser.add_argument("--lengths", default="1024,8192")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    parser.add_argument("--model", choices=sorted(MODELS), default="gpt2")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    attnc.set_num_threads(args.threads)
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    size = {"f32": 4, "bf16": 2}[args.dtype]
    d, heads, kv = MODELS[args.model]
    kv_dim = d // heads * kv
    gbps = bandwidth(args.threads)
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if " avx512f " in flags else "AVX2"
    # The same stream read with the kernels' widest loads: slower on some
    # CPUs (docs/toolchain.md); printed beside the roofline, not used by it.
    wide = 64 if " avx512f " in flags else 32 if " avx2 " in flags else 0
    wide_rate = (f" ({wide}-byte loads: "
                 f"{bandwidth(args.threads, wide):.1f} GB/s)" if wide else "")
    print(f"{platform.processor() or platform.machine()}, {isa}, "
          f"{args.threads} thread(s), {args.model} (D={d}, {heads} heads, "
          f"{kv} kv heads), {args.dtype}; L3 {l3_bytes() >> 20} MiB; read "
          f"bandwidth {gbps:.1f} GB/s{wide_rate}")
    print(f"{'L':>6} {'layers':>6} {'bytes/step':>11} {'roofline':>9} "
          f"{'attnc':>9} {'torch':>9} {'ort':>9} {'llama.cpp':>9} "
          f"{'attnc/roof':>10} "
          f"{'best/attnc':>10}")
    notes = set()
    for length in (int(x) for x in args.lengths.split(",")):
        rng = np.random.default_rng(0)

        def tensor(*shape, scale=1.0):
            return (torch.from_numpy(rng.standard_normal(shape, np.float32))
                    * scale).to(torch_dtype)

        step_bytes = size * (2 * d * d + 2 * kv_dim * d + 2 * length * kv_dim)
        count = args.layers or max(12, -(-2 * l3_bytes() // step_bytes))
        layers = []
        for _ in range(count):
            w = {"W_q": tensor(d, d, scale=d ** -0.5),
                 "W_k": tensor(kv_dim, d, scale=d ** -0.5),
                 "W_v": tensor(kv_dim, d, scale=d ** -0.5),
                 "W_o": tensor(d, d, scale=d ** -0.5)}
            layers.append({"w": w, "K": tensor(1, length, kv_dim),
                           "V": tensor(1, length, kv_dim)})
        x = tensor(1, 1, d)
        pos = torch.tensor([length - 1], dtype=torch.int32)
        ops = [attnc.compile(spec(args.model, length, args.dtype)).bind(
            **layer["w"]) for layer in layers]

        def attnc_step(i):
            ops[i](X=x, pos=pos, K=layers[i]["K"], V=layers[i]["V"])

        # PyTorch, gpt-fast style: caches [B, G, L, d]; write the new row,
        # then SDPA over the whole cache with a boolean mask of the rows
        # written so far (PyTorch has no cache API).
        caches = [(torch.zeros(1, kv, length, d // heads, dtype=torch_dtype),
                   torch.zeros(1, kv, length, d // heads, dtype=torch_dtype))
                  for _ in layers]
        mask = torch.ones(1, 1, 1, length, dtype=torch.bool)
        index = torch.tensor([length - 1])

        def torch_step(i):
            w = layers[i]["w"]
            k_cache, v_cache = caches[i]
            q = F.linear(x, w["W_q"]).view(1, 1, heads, -1).transpose(1, 2)
            k = F.linear(x, w["W_k"]).view(1, 1, kv, -1).transpose(1, 2)
            v = F.linear(x, w["W_v"]).view(1, 1, kv, -1).transpose(1, 2)
            k_cache.index_copy_(2, index, k)
            v_cache.index_copy_(2, index, v)
            o = F.scaled_dot_product_attention(q, k_cache, v_cache,
                                               attn_mask=mask,
                                               enable_gqa=kv != heads)
            F.linear(o.transpose(1, 2).reshape(1, 1, d), w["W_o"])

        with torch.inference_mode():
            t_attnc = median_ms(attnc_step, count)
            t_torch = median_ms(torch_step, count)
        # ONNX Runtime's CPU GroupQueryAttention has no bf16 kernel.
        t_ort, note = (None, "onnxruntime: no bf16 kernel on the CPU") \
            if args.dtype != "f32" else \
            ort_step_ms(args.model, length, count, args.threads)
        notes.add(str(note))
        t_llama, note = llamacpp_step_ms(args.model, length, count,
                                         args.threads, args.dtype)
        notes.add(note)
        best = min(t for t in (t_torch, t_ort, t_llama) if t is not None)

        def cell(t):
            return f"{t:>7.3f}ms" if t is not None else f"{'n/a':>9}"
        roof = step_bytes / (gbps * 1e9) * 1e3
        print(f"{length:>6} {count:>6} {step_bytes / 1e6:>9.1f}MB {roof:>8.3f}ms "
              f"{t_attnc:>7.3f}ms {t_torch:>7.3f}ms {cell(t_ort)} "
              f"{cell(t_llama)} "
              f"{roof / t_attnc:>10.2f} {best / t_attnc:>10.2f}")
    print(f"torch {torch.__version__}; " + "; ".join(sorted(notes)))


if __name__ == "__main__":
    sys.exit(main())

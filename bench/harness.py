#!/usr/bin/env python3
"""attnc benchmark harness: one command, one table (see bench/README.md).

    python3 bench/harness.py [--quick] [--threads 1,2] [--no-build]
                             [--update-doc] [--cases ID,ID...]

Times, in one run, on each thread count:
  attnc JIT   `attnc run SPEC --random-inputs --repeat N` (the runtime's
              Kernel::run, argument checks included), ATTNC_NUM_THREADS=n
  attnc AOT   `attnc SPEC --emit=obj` + `--emit=header`, linked with the
              system C compiler into a generated timing driver
  Halide      `attnc run SPEC --backend=halide --halide-schedule=S` for
              each S of --halide-schedules (default: attnc's own)
  PyTorch     Debian's python3-torch (/usr/bin/python3) and the PyPI torch
              of the bench venv, each in its own process (bench/peer_torch.py)
  ONNX Runtime  CPU EP, com.microsoft Attention and plain graphs
              (bench/peer_ort.py, bench venv)
on the D2L MHA shapes, a BERT layer, the model blocks of bench/blocks.py
(GPT-2, Llama, sliding-window attention; bench/check_peers.py checks that
the peers compute what their specs do) and the SGEMM ceiling (1024^3),
plus the JIT compile time of samples/bert_base_layer.attn and its cache
hits (build/bin/attnc-compile-time).  A peer that cannot run is reported as
`not available: REASON`, never dropped.

This script uses only the Python standard library; numpy/torch/onnxruntime
live in the peer processes.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import flops  # noqa: E402
import blocks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
SPECS = os.path.join(BENCH, "specs")
DEFAULT_BUILD = os.path.join(ROOT, "build")
DEFAULT_VENV = os.path.join(ROOT, "build", "bench-venv")
DEBIAN_PYTHON = "/usr/bin/python3"

# (id, kind, shape): shapes are (B, T, D, heads); F is the FFN width.
CASES = [
    {"id": "d2l_book", "kind": "mha", "B": 2, "T": 4, "D": 100, "H": 5},
    {"id": "b1_t128_d768_h12", "kind": "mha", "B": 1, "T": 128, "D": 768,
     "H": 12},
    {"id": "b8_t128_d768_h12", "kind": "mha", "B": 8, "T": 128, "D": 768,
     "H": 12},
    {"id": "b1_t512_d768_h12", "kind": "mha", "B": 1, "T": 512, "D": 768,
     "H": 12},
    {"id": "b4_t512_d1024_h16", "kind": "mha", "B": 4, "T": 512, "D": 1024,
     "H": 16},
    {"id": "b1_t2048_d512_h8", "kind": "mha", "B": 1, "T": 2048, "D": 512,
     "H": 8},
    {"id": "bert_layer_b8_t128", "kind": "bert", "B": 8, "T": 128, "D": 768,
     "H": 12, "F": 3072},
    # Issue 13's model blocks (bench/blocks.py): a GPT-2 block (pre-norm,
    # causal, biases, tanh GELU), a Llama block (RMSNorm, RoPE, KV kv heads,
    # causal, SwiGLU), and causal sliding-window attention (window W) at
    # three lengths, whose time should grow linearly in T.
    {"id": "gpt2_block", "kind": "gpt2", "B": 8, "T": 1024, "D": 768,
     "H": 12, "F": 3072},
    {"id": "llama_block", "kind": "llama", "B": 1, "T": 2048, "D": 2048,
     "H": 32, "KV": 8, "F": 5632},
    {"id": "window_t4096", "kind": "window", "B": 1, "T": 4096, "D": 512,
     "H": 8, "W": 1024},
    {"id": "window_t8192", "kind": "window", "B": 1, "T": 8192, "D": 512,
     "H": 8, "W": 1024},
    {"id": "window_t16384", "kind": "window", "B": 1, "T": 16384, "D": 512,
     "H": 8, "W": 1024},
    {"id": "sgemm_1024", "kind": "sgemm", "N": 1024},
    # bf16 (issue 29): every float tensor of the spec bf16 (as a model
    # stored in bf16 runs), the peers' modules and tensors .to(bfloat16).
    {"id": "sgemm_1024_bf16", "kind": "sgemm", "N": 1024, "dtype": "bf16"},
    {"id": "b8_t128_d768_h12_bf16", "kind": "mha", "B": 8, "T": 128,
     "D": 768, "H": 12, "dtype": "bf16"},
    {"id": "b1_t2048_d512_h8_bf16", "kind": "mha", "B": 1, "T": 2048,
     "D": 512, "H": 8, "dtype": "bf16"},
    {"id": "bert_layer_b8_t128_bf16", "kind": "bert", "B": 8, "T": 128,
     "D": 768, "H": 12, "F": 3072, "dtype": "bf16"},
    # f16, the same way (.to(float16) for the peers).
    {"id": "sgemm_1024_f16", "kind": "sgemm", "N": 1024, "dtype": "f16"},
    {"id": "b8_t128_d768_h12_f16", "kind": "mha", "B": 8, "T": 128,
     "D": 768, "H": 12, "dtype": "f16"},
    {"id": "bert_layer_b8_t128_f16", "kind": "bert", "B": 8, "T": 128,
     "D": 768, "H": 12, "F": 3072, "dtype": "f16"},
]
QUICK_CASES = ["d2l_book", "b1_t128_d768_h12", "bert_layer_b8_t128",
               "sgemm_1024"]

FULL_PROTOCOL = {"warmup": 3, "warmup_s": 0.3, "min_runs": 7,
                 "max_runs": 300, "min_time_s": 1.5}
QUICK_PROTOCOL = {"warmup": 1, "warmup_s": 0.05, "min_runs": 3,
                  "max_runs": 50, "min_time_s": 0.25}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# ----------------------------------------------------------------- specs --
MODEL_HEADS = {
    "gpt2": (
        "# A Hugging Face GPT2Block, eval (pre-norm): Y = X + attn(ln_1(X))\n"
        "# with causal attention and biases on the four projections, then\n"
        "# Z = Y + c_proj(gelu_new(c_fc(ln_2(Y)))), gelu_new being\n"
        "# gelu(approximate='tanh'); LayerNorm eps 1e-5. Generated by\n"
        "# bench/harness.py.\n"),
    "llama": (
        "# A Hugging Face LlamaDecoderLayer, eval: Y = X + attn(rms_norm(X))\n"
        "# with RoPE (base 10000), grouped-query attention, the causal mask,\n"
        "# no biases; Z = Y + down(silu(gate(N2)) * up(N2)), "
        "N2 = rms_norm(Y);\n"
        "# RMSNorm eps 1e-6. Generated by bench/harness.py.\n"),
    "window": (
        "# Causal sliding-window self-attention (Mistral: key j visible from\n"
        "# query i iff i - W < j <= i), D2L MultiHeadAttention(bias=False),\n"
        "# q = k = v = X. Generated by bench/harness.py.\n"),
}


def model_body(case):
    """The statements of a model-block spec (bench/blocks.py kinds)."""
    H = case["H"]
    if case["kind"] == "gpt2":
        return [
            "H1 = layer_norm(X, ln1_gamma, ln1_beta, eps=1e-5)",
            "A = multihead_attention(H1, H1, H1, heads=%d, w_q=W_q, w_k=W_k,"
            % H,
            "                        w_v=W_v, w_o=W_o, b_q=b_q, b_k=b_k, "
            "b_v=b_v,",
            "                        b_o=b_o, causal=true)",
            "Y = add(X, A)",
            "H2 = layer_norm(Y, ln2_gamma, ln2_beta, eps=1e-5)",
            "Z = add(Y, linear(gelu(linear(H2, W_fc, b_fc), "
            "approximate=true),",
            "                  W_proj, b_proj))",
            "output Z"]
    if case["kind"] == "llama":
        return [
            "H1 = rms_norm(X, attn_norm, eps=1e-6)",
            "A = multihead_attention(H1, H1, H1, heads=%d, kv_heads=%d, "
            "w_q=W_q," % (H, case["KV"]),
            "                        w_k=W_k, w_v=W_v, w_o=W_o, rope=true, "
            "causal=true)",
            "Y = add(X, A)",
            "H2 = rms_norm(Y, ffn_norm, eps=1e-6)",
            "Z = add(Y, linear(mul(silu(linear(H2, W_gate)), "
            "linear(H2, W_up)),",
            "                  W_down))",
            "output Z"]
    return [
        "Y = multihead_attention(X, X, X, heads=%d, w_q=W_q, w_k=W_k, w_v=W_v,"
        % H,
        "                        w_o=W_o, causal=true, window=%d)" % case["W"],
        "output Y"]


def model_spec_text(case):
    decls = ["%s %s: f32[%s]" % (role, name, ", ".join(shape))
             for name, role, shape in blocks.signature(case)
             if role != "output"]
    lines = (["dim " + ", ".join("%s = %d" % d for d in blocks.dims(case))]
             + decls + [""] + model_body(case))
    return "%sblock bench_%s {\n%s}\n" % (
        MODEL_HEADS[case["kind"]], case["id"],
        "".join(("  " + line if line else "") + "\n" for line in lines))


def spec_text(case):
    """The case's spec; with "dtype", every f32 tensor of it in that type."""
    text = f32_spec_text(case)
    if case.get("dtype"):
        text = text.replace("f32[", case["dtype"] + "[").replace(
            "Generated by", "In %s. Generated by" % case["dtype"])
    return text


def f32_spec_text(case):
    name = "bench_" + case["id"]
    if case["kind"] in blocks.KINDS:
        return model_spec_text(case)
    if case["kind"] == "sgemm":
        return (
            "# SGEMM ceiling: Y = A @ W^T, N x N x N (generated by "
            "bench/harness.py).\n"
            "block %s {\n"
            "  dim N = %d\n"
            "  input A: f32[N, N]\n"
            "  param W: f32[N, N]\n"
            "  Y = linear(A, W)\n"
            "  output Y\n"
            "}\n" % (name, case["N"]))
    head = (
        "# D2L MultiHeadAttention(bias=False) self-attention, q = k = v = X,\n"
        "# no valid_lens (nothing masked). Generated by bench/harness.py.\n")
    dims = "  dim B = %d, T = %d, D = %d" % (case["B"], case["T"], case["D"])
    params = "".join("  param W_%s: f32[D, D]\n" % n for n in "qkvo")
    mha = ("multihead_attention(X, X, X, heads=%d, w_q=W_q, w_k=W_k, "
           "w_v=W_v,\n                          w_o=W_o)" % case["H"])
    if case["kind"] == "mha":
        return (head + "block %s {\n%s\n  input X: f32[B, T, D]\n%s"
                "  Y = %s\n  output Y\n}\n" % (name, dims, params, mha))
    # bert: samples/bert_base_layer.attn without valid_lens.
    return (
        "# One BERT-base encoder layer (post-LayerNorm, FFN 3072 with ReLU,\n"
        "# attention without biases): samples/bert_base_layer.attn without\n"
        "# valid_lens (nothing masked). Generated by bench/harness.py.\n"
        "block %s {\n%s, F = %d\n  input X: f32[B, T, D]\n%s"
        "  param ln1_gamma: f32[D]\n  param ln1_beta: f32[D]\n"
        "  param W_1: f32[F, D]\n  param b_1: f32[F]\n"
        "  param W_2: f32[D, F]\n  param b_2: f32[D]\n"
        "  param ln2_gamma: f32[D]\n  param ln2_beta: f32[D]\n\n"
        "  A = %s\n"
        "  Y = add_norm(X, A, ln1_gamma, ln1_beta, eps=1e-12)\n"
        "  Z = add_norm(Y, ffn(Y, W_1, b_1, W_2, b_2), ln2_gamma, ln2_beta,"
        " eps=1e-12)\n"
        "  output Z\n}\n" % (name, dims, case["F"], params, mha))


def spec_arguments(case):
    """(name, is_output) in ABI order (SPEC section 5)."""
    if case["kind"] == "sgemm":
        return [("A", False), ("W", False), ("Y", True)]
    if case["kind"] in blocks.KINDS:
        return [(name, role == "output")
                for name, role, _ in blocks.signature(case)]
    args = [("X", False)] + [("W_" + n, False) for n in "qkvo"]
    if case["kind"] == "mha":
        return args + [("Y", True)]
    return args + [(n, False) for n in (
        "ln1_gamma", "ln1_beta", "W_1", "b_1", "W_2", "b_2", "ln2_gamma",
        "ln2_beta")] + [("Z", True)]


def write_specs(cases):
    os.makedirs(SPECS, exist_ok=True)
    paths = {}
    for case in cases:
        path = os.path.join(SPECS, case["id"] + ".attn")
        text = spec_text(case)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            with open(path, "w") as f:
                f.write(text)
        paths[case["id"]] = path
    return paths


# ----------------------------------------------------------------- attnc --
def run(cmd, env=None, timeout=900, cwd=None):
    return subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


def failure(proc):
    text = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    if proc.returncode < 0:  # SIGKILL: most often the kernel's OOM killer
        return "killed by signal %d%s" % (-proc.returncode,
                                           ": " + text[-1] if text else "")
    return "exit %d: %s" % (proc.returncode, text[-1] if text else "")


def thread_env(threads):
    env = dict(os.environ)
    for var in ("ATTNC_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    return env


def runs_for(estimate_ms, protocol):
    want = math.ceil(protocol["min_time_s"] * 1e3 / max(estimate_ms, 1e-3))
    return int(min(protocol["max_runs"], max(protocol["min_runs"], want)))


TIME_RE = re.compile(r"time per call: ([0-9.eE+-]+) ms \(median of (\d+)")


def attnc_jit(attnc, spec, threads, protocol, outdir, extra=()):
    env = thread_env(threads)

    def once(repeat):
        proc = run([attnc, "run", spec, "--random-inputs", "--seed", "1",
                    "--repeat", str(repeat), "--output-dir", outdir] +
                   list(extra), env)
        if proc.returncode != 0:
            raise RuntimeError(failure(proc))
        m = TIME_RE.search(proc.stdout)
        if not m:
            raise RuntimeError("no 'time per call' line in attnc run output")
        return float(m.group(1)), int(m.group(2))

    try:
        # The probe compiles (or hits the disk cache) and warms up.
        estimate, _ = once(max(1, protocol["warmup"]))
        ms, n = once(runs_for(estimate, protocol))
        return {"ms": ms, "runs": n}
    except Exception as e:
        return {"error": str(e)}


DRIVER = r"""/* Generated by bench/harness.py: times one attnc AOT kernel. */
#include "%(header)s"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static float *buffer(long n, unsigned *seed) {
  float *p = (float *)malloc(sizeof(float) * n);
  for (long i = 0; i < n; ++i) {
    *seed = *seed * 1664525u + 1013904223u;
    p[i] = ((*seed >> 8) / 16777216.0f * 2.0f - 1.0f) * 0.05f;
  }
  return p;
}
/* The same values in bf16 (their upper halves). */
static uint16_t *bf16_buffer(long n, unsigned *seed) {
  float *f = buffer(n, seed);
  uint16_t *p = (uint16_t *)malloc(sizeof(uint16_t) * n);
  for (long i = 0; i < n; ++i) {
    union { float f; uint32_t u; } v = {f[i]};
    p[i] = (uint16_t)(v.u >> 16);
  }
  free(f);
  return p;
}
/* The same values in f16, rounded to nearest even. */
static uint16_t *f16_buffer(long n, unsigned *seed) {
  float *f = buffer(n, seed);
  uint16_t *p = (uint16_t *)malloc(sizeof(uint16_t) * n);
  for (long i = 0; i < n; ++i) {
    _Float16 h = (_Float16)f[i];
    memcpy(&p[i], &h, sizeof(h));
  }
  free(f);
  return p;
}

int main(void) {
  unsigned seed = 1;
%(alloc)s
  /* The params are prepared once, as a host that keeps its weights would. */
  if (%(prepare)s) { fprintf(stderr, "preparing the params failed\n"); return 1; }
  int warmup = %(warmup)d, min_runs = %(min_runs)d, max_runs = %(max_runs)d;
  double warmup_ms = %(warmup_ms)f, min_ms = %(min_ms)f;
  double start = now_ms();
  for (int i = 0; i < warmup || now_ms() - start < warmup_ms; ++i) {
    if (%(call)s) { fprintf(stderr, "kernel returned an error\n"); return 1; }
    if (i + 1 >= max_runs) break;
  }
  double *times = (double *)malloc(sizeof(double) * max_runs);
  int n = 0;
  start = now_ms();
  while (n < max_runs && (n < min_runs || now_ms() - start < min_ms)) {
    double t0 = now_ms();
    %(call)s;
    times[n++] = now_ms() - t0;
  }
  qsort(times, n, sizeof(double), cmp);
  double median = n %% 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  printf("median_ms %%.6f runs %%d\n", median, n);
  return 0;
}
"""


def build_aot(attnc, case, spec, workdir, parallel):
    """Compiles the object and header; returns what the driver needs."""
    name = "bench_" + case["id"]
    obj = os.path.join(workdir, name + ".o")
    header = os.path.join(workdir, name + ".h")
    for emit, out in (("obj", obj), ("header", header)):
        flags = ["--parallel"] if parallel and emit == "obj" else []
        proc = run([attnc, spec, "--emit=" + emit, "-o", out] + flags)
        if proc.returncode != 0:
            raise RuntimeError("attnc --emit=%s: %s" % (emit, failure(proc)))
    upper = name.upper()
    alloc, params, call = [], [], []
    dtype = case.get("dtype", "f32")
    c_type, fill = {"f32": ("float", "buffer"),
                    "bf16": ("attnc_bf16", "bf16_buffer"),
                    "f16": ("attnc_f16", "f16_buffer")}[dtype]
    for arg, is_output in spec_arguments(case):
        alloc.append("  %s *%s = %s(%s_%s_NUMEL, &seed);"
                     % (c_type, arg, fill, upper, arg.upper()))
        if is_output and "packed" not in call:
            call.append("packed")
        call.append(arg)
        if not is_output and arg not in ("X", "A"):
            params.append(arg)
    alloc.append("  void *packed = aligned_alloc(64, "
                 "(%s_PACKED_BYTES + 127) / 64 * 64);" % upper)
    prepare = "%s_prepare(%s)" % (name, ", ".join(params + ["packed"]))
    return alloc, prepare, "%s_prepared(%s)" % (name, ", ".join(call)), \
        obj, header


def aot_driver(attnc, case, spec, protocol, workdir, rt_lib=None):
    """Compiles the case's object and links the timing driver; its path."""
    alloc, prepare, call, obj, header = build_aot(
        attnc, case, spec, workdir, rt_lib is not None)
    source = os.path.join(workdir, "bench_%s_driver.c" % case["id"])
    with open(source, "w") as f:
        f.write(DRIVER % {
            "header": header, "alloc": "\n".join(alloc),
            "prepare": prepare, "call": call,
            "warmup": protocol["warmup"], "min_runs": protocol["min_runs"],
            "max_runs": protocol["max_runs"],
            "warmup_ms": protocol["warmup_s"] * 1e3,
            "min_ms": protocol["min_time_s"] * 1e3})
    exe = os.path.join(workdir, "bench_%s_driver" % case["id"])
    cc = os.environ.get("CC") or shutil.which("cc") or "clang-22"
    libs = [rt_lib, "-lpthread"] if rt_lib else []
    proc = run([cc, "-O2", source, obj, "-o", exe] + libs + ["-lm"])
    if proc.returncode != 0:
        raise RuntimeError("%s: %s" % (cc, failure(proc)))
    return exe


def run_driver(exe, threads, pad):
    """One fresh process of the driver, its environment `8 * pad` bytes
    longer (the stack starts elsewhere): (median ms, runs)."""
    env = thread_env(threads)
    env["ATTNC_BENCH_PAD"] = "x" * (8 * pad)
    proc = run([exe], env=env)
    if proc.returncode != 0:
        raise RuntimeError(failure(proc))
    m = re.search(r"median_ms ([0-9.]+) runs (\d+)", proc.stdout)
    return float(m.group(1)), int(m.group(2))


def attnc_aot(attnc, case, spec, protocol, workdir, threads, rt_lib=None,
              processes=1):
    """The figure is the median over `processes` fresh processes whose
    environments differ in 8-byte steps, min-max beside it."""
    try:
        exe = aot_driver(attnc, case, spec, protocol, workdir, rt_lib)
        per_process, runs = [], 0
        for i in range(processes):
            ms, n = run_driver(exe, threads, i)
            per_process.append(ms)
            runs += n
        return {"ms": statistics.median(per_process), "runs": runs,
                "min_ms": min(per_process), "max_ms": max(per_process),
                "per_process_ms": per_process}
    except Exception as e:
        return {"error": str(e)}


def compile_time(tool, repeat):
    spec = os.path.join(ROOT, "samples", "bert_base_layer.attn")
    if not os.path.exists(tool):
        return "not available: %s is not built" % tool
    proc = run([tool, spec, "-n", str(repeat)])
    if proc.returncode != 0:
        return "not available: " + failure(proc)
    return proc.stdout.strip().replace(ROOT + "/", "")


# ----------------------------------------------------------------- peers --
def probe(python, module):
    """None when `python` can import `module`, else the reason."""
    if not os.path.exists(python):
        return "no interpreter %s" % python
    proc = run([python, "-c", "import %s; print(%s.__version__)"
                % (module, module)], timeout=300)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return "import %s failed under %s: %s" % (
            module, python, lines[-1] if lines else "exit %d"
            % proc.returncode)
    return None


def run_peer(python, script, cases, threads, protocol, tmp):
    """The shape cases in one peer process, each model-block case in its
    own (one that runs out of memory loses that case only); the results
    merged as one process's."""
    groups = [[c for c in cases if c["kind"] not in blocks.KINDS]] + [
        [c] for c in cases if c["kind"] in blocks.KINDS]
    merged, errors = {"results": {}}, []
    for group in [g for g in groups if g]:
        out = run_peer_process(python, script, group, threads, protocol, tmp)
        if "error" in out:
            errors.append(out["error"])
            merged["results"].update(
                {c["id"]: {"process": {"error": out["error"]}}
                 for c in group})
            continue
        for key, value in out.items():
            if key != "results":
                merged.setdefault(key, value)
        merged["results"].update(out["results"])
    if "version" not in merged:  # no process ran: the peer failed
        return {"error": errors[0] if errors else "no cases"}
    return merged


def run_peer_process(python, script, cases, threads, protocol, tmp,
                     extra=None):
    """One peer process; `extra` goes into its config (check_peers.py's
    check_dir and tag)."""
    config = os.path.join(tmp, "peer-%d.json" % threads)
    with open(config, "w") as f:
        json.dump(dict({"threads": threads, "protocol": protocol,
                        "cases": cases}, **(extra or {})), f)
    try:
        # The model-block cases take minutes per variant at full protocol.
        proc = run([python, os.path.join(BENCH, script), config],
                   env=thread_env(threads), timeout=7200)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 7200 s"}
    if proc.returncode != 0:
        return {"error": failure(proc)}
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except Exception as e:
        return {"error": "unreadable peer output (%s)" % e}


def blas_link():
    link = "/usr/lib/x86_64-linux-gnu/libblas.so.3"
    if not os.path.exists(link):
        return "libblas.so.3 not found"
    real = os.path.realpath(link)
    kind = "OpenBLAS" if "openblas" in real else (
        "BLIS" if "blis" in real else "netlib reference BLAS (slow!)"
        if "/blas/" in real else "?")
    return "%s -> %s (%s)" % (link, real, kind)


# ----------------------------------------------------------------- table --
TORCH_VARIANTS = ("d2l", "nn", "F", "mm", "eager", "sdpa", "flex")
ORT_VARIANTS = ("attention", "plain", "matmul", "gqa", "onnx")
PEERS = [
    # key, column title, variant keys whose min is "best"
    ("torch_debian", "PyTorch (Debian)", TORCH_VARIANTS),
    ("torch_pypi", "PyTorch (PyPI)", TORCH_VARIANTS),
    ("ort", "ONNX Runtime", ORT_VARIANTS),
]


def best(variants, keys):
    ok = [(v["ms"], k) for k, v in variants.items()
          if k in keys and "ms" in v]
    return min(ok) if ok else None


def shape_label(case):
    if case.get("dtype"):
        return shape_label(dict(case, dtype=None)) + " " + case["dtype"]
    if case["kind"] == "sgemm":
        return "SGEMM %d^3" % case["N"]
    label = "(%d, %d, %d, %d)" % (case["B"], case["T"], case["D"], case["H"])
    if case["kind"] == "gpt2":
        return "GPT-2 block " + label + " F=%d causal" % case["F"]
    if case["kind"] == "llama":
        return "Llama block " + label + " kv=%d F=%d RoPE causal" % (
            case["KV"], case["F"])
    if case["kind"] == "window":
        return "window %d " % case["W"] + label + " causal"
    if case["kind"] == "bert":
        label = "BERT layer " + label + " F=%d" % case["F"]
    elif case["id"] == "d2l_book":
        label += " book"
    return label


def fmt_ms(ms):
    return "%.4f" % ms if ms < 0.1 else "%.3f" % ms if ms < 10 else \
        "%.1f" % ms


def render(report):
    out = []
    peers = report["peers"]
    cols = ["shape (B, T, D, heads)", "thr", "GFLOP", "attnc JIT ms",
            "attnc AOT ms", "attnc GFLOP/s"]
    schedules = report.get("halide_schedules", [])
    cols += ["Halide backend (%s) ms (x)" % s for s in schedules]
    cols += ["%s ms (x)" % title for _, title, _ in PEERS]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] * len(cols)) + "|")
    for row in report["rows"]:
        case = row["case"]
        gflop = flops(case) / 1e9
        cells = [shape_label(case), str(row["threads"]),
                 "%.3g" % gflop]
        attnc = []
        for key in ("jit", "aot"):
            r = row[key]
            if "ms" in r:
                spread = ""
                if r.get("per_process_ms", [0])[1:]:
                    spread = " (%s-%s)" % (fmt_ms(r["min_ms"]),
                                           fmt_ms(r["max_ms"]))
                cells.append(fmt_ms(r["ms"]) + spread)
                attnc.append(r["ms"])
            else:
                cells.append("failed: " + r["error"][:60])
        base = min(attnc) if attnc else None
        cells.append("%.1f" % (gflop / base * 1e3) if base else "-")
        # attnc's Halide backend through the JIT, the ratio against the
        # MLIR backend's best as for the peers.
        for schedule in schedules:
            r = row.get("halide", {}).get(schedule, {"error": "not run"})
            if "ms" in r:
                ratio = " (%.2fx)" % (r["ms"] / base) if base else ""
                cells.append(fmt_ms(r["ms"]) + ratio)
            else:
                cells.append("failed: " + r["error"][:60])
        for key, _, keys in PEERS:
            peer = peers[key]
            if "unavailable" in peer:
                reason = peer["unavailable"]
                cells.append("not available: " + (
                    reason if len(reason) <= 60 else reason[:57] + "..."))
                continue
            per = peer["by_threads"].get(str(row["threads"]), {})
            if "error" in per:
                cells.append("failed")
                continue
            b = best(per["results"].get(case["id"], {}), keys)
            if b is None:
                cells.append("failed")
            else:
                ratio = " (%.2fx)" % (b[0] / base) if base else ""
                cells.append("%s%s %s" % (fmt_ms(b[0]), ratio, b[1]))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def render_details(report):
    out = ["Every peer variant (ms, median; `error` = it failed):", ""]
    for key, title, _ in PEERS:
        peer = report["peers"][key]
        if "unavailable" in peer:
            out.append("- %s: not available: %s" % (title, peer["unavailable"]))
            continue
        for threads, per in sorted(peer["by_threads"].items()):
            if "error" in per:
                out.append("- %s, %s thread(s): failed: %s"
                           % (title, threads, per["error"]))
                continue
            parts, seen = [], set()
            for case_id, variants in per["results"].items():
                vs = []
                for k, v in variants.items():
                    if "ms" in v:
                        vs.append("%s %s" % (k, fmt_ms(v["ms"])))
                    elif v["error"] in seen:
                        vs.append("%s error (as above)" % k)
                    else:
                        seen.add(v["error"])
                        vs.append("%s error (%s)" % (k, v["error"]))
                parts.append("%s: %s" % (case_id, ", ".join(vs)))
            out.append("- %s %s, %s thread(s): %s" % (
                title, per.get("version", ""), threads, "; ".join(parts)))
    return "\n".join(out)


def git_state():
    """The commit the attnc binaries were built from, as far as git knows."""
    try:
        head = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]
                   ).stdout.strip()
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--",
                     "compiler", "dialects", "runtime"]).stdout.strip()
        return head + (" + uncommitted changes in compiler/, dialects/ or "
                       "runtime/" if dirty else "")
    except Exception as e:
        return "unknown (%s)" % e


def machine():
    info = {"platform": platform.platform()}
    try:
        lscpu = run(["lscpu"]).stdout
        for key in ("Model name", "CPU family", "Model", "CPU(s)",
                    "Thread(s) per core", "L2 cache", "L3 cache",
                    "Hypervisor vendor"):
            m = re.search(r"^%s:\s+(.*)$" % re.escape(key), lscpu, re.M)
            if m:
                info[key] = m.group(1).strip()
        flags = re.search(r"^Flags:\s+(.*)$", lscpu, re.M)
        if flags:
            info["simd"] = " ".join(f for f in flags.group(1).split()
                                    if f in ("avx2", "fma", "avx512f",
                                             "avx512_bf16", "amx_tile"))
    except Exception:
        pass
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats, a subset of the shapes")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--cases", help="comma-separated case ids")
    ap.add_argument("--processes", type=int,
                    help="fresh processes per attnc AOT figure, their "
                    "environments 8 bytes apart (default: 5, --quick: 1)")
    ap.add_argument("--build-dir", default=DEFAULT_BUILD)
    ap.add_argument("--venv", default=DEFAULT_VENV,
                    help="venv with PyPI torch / onnxruntime / onnx")
    ap.add_argument("--no-build", action="store_true",
                    help="do not run ninja for attnc, attnc-compile-time")
    ap.add_argument("--jobs", default=os.environ.get("ATTNC_BENCH_JOBS"),
                    help="ninja -j for that build (default: "
                    "$ATTNC_BENCH_JOBS, else ninja's own)")
    ap.add_argument("--json", help="also write the raw results here "
                    "(default BUILD/bench/results.json)")
    ap.add_argument("--halide-schedules", default="attnc",
                    help="comma-separated --halide-schedule values timed "
                    "through attnc's Halide backend (attnc, Adams2019, "
                    "Mullapudi2016, Li2018; 'none': no Halide column)")
    ap.add_argument("--update-doc", action="store_true",
                    help="replace the measured section of "
                    "docs/performance.md")
    args = ap.parse_args()

    protocol = QUICK_PROTOCOL if args.quick else FULL_PROTOCOL
    if args.processes is None:
        args.processes = 1 if args.quick else 5
    if args.processes < 1:
        ap.error("--processes must be at least 1")
    wanted = args.cases.split(",") if args.cases else (
        QUICK_CASES if args.quick else [c["id"] for c in CASES])
    cases = [c for c in CASES if c["id"] in wanted]
    unknown = set(wanted) - {c["id"] for c in cases}
    if unknown:
        ap.error("unknown case(s): %s" % ", ".join(sorted(unknown)))
    threads = [int(t) for t in args.threads.split(",")]
    halide_schedules = [] if args.halide_schedules == "none" else \
        args.halide_schedules.split(",")

    bindir = os.path.join(args.build_dir, "bin")
    attnc = os.path.join(bindir, "attnc")
    if not args.no_build:
        jobs = ["-j" + args.jobs] if args.jobs else []
        cmd = ["ninja", "-C", args.build_dir] + jobs + [
            "attnc", "attnc-compile-time", "attnc_rt"]
        log("== " + " ".join(cmd))
        proc = run(cmd, timeout=3600)
        if proc.returncode != 0:
            log(proc.stdout[-3000:])
            log("warning: the build failed; timing the binaries already "
                "there")
    workdir = os.path.join(args.build_dir, "bench")
    os.makedirs(workdir, exist_ok=True)
    # Time private copies: a concurrent rebuild must not swap the binaries
    # in the middle of a run (they link only shared system libraries).
    snapshot = os.path.join(workdir, "bin")
    os.makedirs(snapshot, exist_ok=True)
    for tool in ("attnc", "attnc-compile-time"):
        if os.path.exists(os.path.join(bindir, tool)):
            shutil.copy2(os.path.join(bindir, tool),
                         os.path.join(snapshot, tool))
        elif os.path.exists(os.path.join(snapshot, tool)):
            os.remove(os.path.join(snapshot, tool))
    attnc = os.path.join(snapshot, "attnc")
    rt_lib = os.path.join(args.build_dir, "lib", "libattnc_rt.a")
    aot_rt = None  # the thread pool that `attnc --parallel` objects need
    if os.path.exists(rt_lib) and os.path.exists(attnc) and "--parallel" in \
            run([attnc, "--help"]).stdout:
        aot_rt = os.path.join(snapshot, "libattnc_rt.a")
        shutil.copy2(rt_lib, aot_rt)
    report_aot = ("attnc --parallel, linked with libattnc_rt.a" if aot_rt
                  else "serial object (no --parallel / libattnc_rt.a)")
    tmp = tempfile.mkdtemp(prefix="attnc-bench-")
    started = datetime.datetime.now()
    load_start = os.getloadavg()
    specs = write_specs(cases)

    report = {"started": started.isoformat(timespec="seconds"),
              "machine": machine(), "protocol": protocol,
              "quick": args.quick, "blas_link": blas_link(),
              "attnc_tree": git_state(), "aot_mode": report_aot,
              "processes": args.processes,
              "halide_schedules": [],
              "rows": [],
              "peers": {}}

    if halide_schedules and os.path.exists(attnc):
        version = run([attnc, "--version"]).stdout
        if "Halide " in version and "not in this build" not in version:
            report["halide_schedules"] = halide_schedules
        else:
            log("== Halide backend: not in this build, no Halide column")

    log("== compile time: attnc-compile-time samples/bert_base_layer.attn")
    report["compile_time"] = compile_time(
        os.path.join(snapshot, "attnc-compile-time"), 1 if args.quick else 5)
    log("   " + report["compile_time"])

    for case in cases:
        for t in threads:
            log("== attnc %s, %d thread(s)" % (case["id"], t))
            row = {"case": case, "threads": t}
            if not os.path.exists(attnc):
                row["jit"] = row["aot"] = {"error": "attnc is not built"}
            else:
                row["jit"] = attnc_jit(attnc, specs[case["id"]], t, protocol,
                                       os.path.join(tmp, "out"))
                row["aot"] = attnc_aot(attnc, case, specs[case["id"]],
                                       protocol, workdir, t, aot_rt,
                                       args.processes)
                row["halide"] = {
                    s: attnc_jit(attnc, specs[case["id"]], t, protocol,
                                 os.path.join(tmp, "out"),
                                 ["--backend=halide",
                                  "--halide-schedule=" + s])
                    for s in report["halide_schedules"]}
            log("   jit %s | aot %s | halide %s" % (row["jit"], row["aot"],
                                                  row.get("halide")))
            report["rows"].append(row)

    venv_python = os.path.join(args.venv, "bin", "python")
    peer_plan = [
        ("torch_debian", DEBIAN_PYTHON, "torch", "peer_torch.py"),
        ("torch_pypi", venv_python, "torch", "peer_torch.py"),
        ("ort", venv_python, "onnxruntime", "peer_ort.py"),
    ]
    for key, python, module, script in peer_plan:
        reason = probe(python, module)
        if reason:
            hint = " (run bench/setup.sh)" if python == venv_python else ""
            report["peers"][key] = {"unavailable": reason + hint}
            log("== %s: not available: %s" % (key, reason + hint))
            continue
        peer = {"python": python, "by_threads": {}}
        for t in threads:
            log("== %s, %d thread(s)" % (key, t))
            peer["by_threads"][str(t)] = run_peer(python, script, cases, t,
                                                  protocol, tmp)
        report["peers"][key] = peer

    load_end = os.getloadavg()
    report["load"] = {"start": load_start, "end": load_end}
    report["elapsed_s"] = (datetime.datetime.now() - started).total_seconds()
    shutil.rmtree(tmp, ignore_errors=True)

    text = format_report(report)
    print(text)
    out_json = args.json or os.path.join(workdir, "results.json")
    with open(out_json, "w") as f:
        json.dump(report, f, indent=1)
    log("raw results: %s" % out_json)
    if args.update_doc:
        update_doc(text)


def format_report(report):
    m = report["machine"]
    lines = [
        "Measured %s%s; %s, %s CPU(s) (%s), %s; load average %.2f at start, "
        "%.2f at end; %.0f s." % (
            report["started"], " (--quick)" if report["quick"] else "",
            m.get("Model name", "?"), m.get("CPU(s)", "?"),
            m.get("simd", ""),
            "VM (%s)" % m["Hypervisor vendor"] if "Hypervisor vendor" in m
            else "bare metal",
            report["load"]["start"][0], report["load"]["end"][0],
            report["elapsed_s"]),
        "",
        "attnc: built from %s; AOT: %s; each AOT figure is the median of "
        "%d fresh processes, environments 8 bytes apart (min-max in "
        "brackets)." % (
            report["attnc_tree"], report.get("aot_mode", "?"),
            report.get("processes", 1)),
    ]
    cpus = int(m.get("CPU(s)", "1") or 1)
    peak = max(report["load"]["start"][0], report["load"]["end"][0])
    if peak > 0.5 * cpus:
        lines += [
            "",
            "**Warning:** load average up to %.2f on %d CPU(s): other "
            "processes were using the cores, so these numbers are noisy and "
            "the 2-thread ones (OpenMP peers above all) unreliable."
            % (peak, cpus)]
    lines += [
        "",
        render(report),
        "",
        "ms: median after warm-up (protocol %s). GFLOP/s = FLOP / attnc's "
        "best of JIT and AOT. (x) = peer's best ms / attnc's best ms "
        "(> 1: attnc is faster), with the peer variant that was best. "
        "Halide backend (S): the same spec through `attnc run "
        "--backend=halide --halide-schedule=S` (JIT), (x) = its ms / "
        "attnc's best (> 1: the MLIR backend is faster)." % (
            json.dumps(report["protocol"])),
        "",
        "Peers:",
    ]
    for key, title, _ in PEERS:
        peer = report["peers"][key]
        if "unavailable" in peer:
            lines.append("- %s: not available: %s"
                         % (title, peer["unavailable"]))
            continue
        some = next(iter(peer["by_threads"].values()))
        desc = "%s under %s" % (some.get("version", "?"), peer["python"])
        if some.get("blas"):
            desc += "; " + some["blas"].replace(ROOT + "/", "")
        if some.get("providers"):
            desc += "; onnx %s, providers %s" % (
                some.get("onnx"), ", ".join(some["providers"]))
        lines.append("- %s: %s" % (title, desc))
    lines += ["- system libblas.so.3: %s" % report["blas_link"], "",
              "Compile time: " + report["compile_time"], "",
              render_details(report)]
    return "\n".join(lines)


BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def update_doc(text):
    path = os.path.join(ROOT, "docs", "performance.md")
    doc = open(path).read() if os.path.exists(path) else ""
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        doc = head + BEGIN + "\n" + text + "\n" + END + tail
    else:
        doc += "\n" + BEGIN + "\n" + text + "\n" + END + "\n"
    with open(path, "w") as f:
        f.write(doc)
    log("updated %s" % path)


if __name__ == "__main__":
    main()

"""What a Python call of a kernel costs over the C API's run.

    .venv/bin/python bench/python_overhead.py [--spec samples/d2l_mha.attn]

Times the same block (the book's MHA by default: B=2, T=4, D=100, 5 heads),
with its params bound and prepared, in batches of calls: through
attnc.Kernel.__call__ with NumPy arrays and with torch tensors, and through
the C API (build/bin/attnc-call-overhead, another process, run first and
last). Prints the median time per call of each and the difference. The
machine's CPU features are printed with them: the kernel is specialized
for this CPU.
"""

import argparse
import os
import statistics
import subprocess
import time

import numpy as np

import attnc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_per_call(k, arrays, calls, batches):
    for _ in range(calls):
        k(**arrays)
    per_call = []
    for _ in range(batches):
        start = time.perf_counter()
        for _ in range(calls):
            k(**arrays)
        per_call.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(per_call)


def c_per_call(binary, spec, calls, batches):
    out = subprocess.run([binary, spec, str(calls), str(batches)], check=True,
                         capture_output=True, text=True)
    return float(out.stdout)


def cpu_features():
    with open("/proc/cpuinfo") as f:
        flags = next(l for l in f if l.startswith("flags")).split()
    return "avx512f" if "avx512f" in flags else \
        "avx2" if "avx2" in flags else "neither avx2 nor avx512f"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--spec", default=os.path.join(ROOT, "samples",
                                                  "d2l_mha.attn"))
    p.add_argument("--binary", default=os.path.join(
        ROOT, "build", "bin", "attnc-call-overhead"))
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--batches", type=int, default=7)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()

    k = attnc.compile(args.spec)
    rng = np.random.default_rng(1)
    arrays, params = {}, {}
    for name, role, dtype, shape in k.signature:
        if role == "output":
            continue
        value = np.ones(shape, np.int32) if dtype == "i32" else \
            (rng.random(shape, np.float32) - 0.5)
        (params if role == "param" else arrays)[name] = value
    k.bind(**params)
    k.prepare()

    import torch
    tensors = {n: torch.from_numpy(a) for n, a in arrays.items()}
    c, numpy_, torch_ = [], [], []
    for _ in range(args.rounds):
        c.append(c_per_call(args.binary, args.spec, args.calls, args.batches))
        numpy_.append(python_per_call(k, arrays, args.calls, args.batches))
        torch_.append(python_per_call(k, tensors, args.calls, args.batches))
    median = statistics.median
    print(f"CPU: {cpu_features()}, threads: {attnc.get_num_threads()}, "
          f"{args.rounds} rounds of {args.batches} x {args.calls} calls")
    print(f"{'path':28} {'us/call':>9} {'over C':>8}   (min-max over rounds)")
    print(f"{'C API attnc_kernel_run':28} {median(c):9.2f} {'':>8}   "
          f"({min(c):.2f}-{max(c):.2f})")
    for label, times in (("Python, NumPy arrays", numpy_),
                         ("Python, torch tensors", torch_)):
        over = [t - ci for t, ci in zip(times, c)]
        print(f"{label:28} {median(times):9.2f} {median(over):+8.2f}   "
              f"({min(over):+.2f} to {max(over):+.2f})")


if __name__ == "__main__":
    main()

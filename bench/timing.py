"""Shared timing protocol of the peer scripts (stdlib only).

Every measurement is: warm-up calls (at least `warmup` calls and at least
`warmup_s` seconds), then timed calls until both `min_runs` calls and
`min_time_s` seconds have passed (never more than `max_runs`); the result is
the median, in milliseconds.  The attnc AOT driver (bench/harness.py writes
it) follows the same protocol in C.
"""

import statistics
import time


def measure(fn, protocol):
    warmup = protocol.get("warmup", 3)
    warmup_s = protocol.get("warmup_s", 0.2)
    min_runs = protocol.get("min_runs", 5)
    max_runs = protocol.get("max_runs", 200)
    min_time_s = protocol.get("min_time_s", 1.0)

    start = time.perf_counter()
    n = 0
    while n < warmup or time.perf_counter() - start < warmup_s:
        fn()
        n += 1
        if n >= max_runs:
            break
    times = []
    start = time.perf_counter()
    while len(times) < max_runs and (
        len(times) < min_runs or time.perf_counter() - start < min_time_s
    ):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"ms": statistics.median(times), "runs": len(times)}


def memory_available():
    """MemAvailable of /proc/meminfo in bytes, None where unknown (peers
    skip a variant whose score tensors would not fit)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except Exception:
        pass
    return None


def visible_pairs(t, causal=False, window=None):
    """(query, key) pairs a mask leaves: T^2; causal T(T+1)/2; a causal
    window W (key j visible from i iff i - W < j <= i) sum_i min(i+1, W)."""
    if not causal:
        return t * t
    if window is None or window >= t:
        return t * (t + 1) // 2
    return window * (window + 1) // 2 + (t - window) * window


def flops(case):
    """FLOPs of one call, the formulas stated in docs/performance.md (the
    attention term counts only the pairs the mask leaves visible)."""
    if case["kind"] == "sgemm":
        n = case["N"]
        return 2 * n ** 3
    b, t, d = case["B"], case["T"], case["D"]
    kind = case["kind"]
    pairs = visible_pairs(t, kind in ("gpt2", "llama", "window"),
                          case.get("W"))
    if kind == "llama":
        dkv = case["KV"] * (d // case["H"])
        return (4 * b * t * d * d + 4 * b * t * d * dkv + 4 * b * d * pairs
                + 6 * b * t * d * case["F"])
    total = 8 * b * t * d * d + 4 * b * d * pairs
    if kind in ("bert", "gpt2"):
        total += 4 * b * t * d * case["F"]
    return total

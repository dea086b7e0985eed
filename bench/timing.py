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


def flops(case):
    """FLOPs of one call, the formulas stated in docs/performance.md."""
    if case["kind"] == "sgemm":
        n = case["N"]
        return 2 * n ** 3
    b, t, d = case["B"], case["T"], case["D"]
    total = 8 * b * t * d * d + 4 * b * t * t * d
    if case["kind"] == "bert":
        total += 4 * b * t * d * case["F"]
    return total

#!/usr/bin/env python3
"""Is a slow attnc run attnc's, or the machine's?  (bench/README.md)

    python3 bench/stability.py [--case ID] [--rounds N] [--threads T]
                               [--build-dir DIR] [--venv DIR]

Alternates, for N rounds, one fresh process of the attnc AOT driver (its
environment 8 bytes longer each round, so that its stack starts elsewhere)
and one fresh ONNX Runtime process (bench/peer_ort.py, same shape and
threads), and prints each round's times beside each other, then each
side's min-max spread.  A slow attnc round that ONNX Runtime shares, a few
seconds apart, is the machine's (another tenant, the host); a slow round
of attnc alone, that follows the environment's length, is attnc's.

Uses the harness's own case table, driver and timing protocol.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

PROTOCOL = {"warmup": 2, "warmup_s": 0.2, "min_runs": 9, "max_runs": 40,
            "min_time_s": 1.0}


def ort_ms(python, case, threads, tmp):
    """The fastest ONNX Runtime variant's median of one fresh process."""
    result = harness.run_peer(python, "peer_ort.py", [case], threads,
                              PROTOCOL, tmp)
    if "error" in result:
        raise RuntimeError("ONNX Runtime: " + result["error"])
    variants = result["results"][case["id"]]
    best = harness.best(variants, harness.ORT_VARIANTS)
    if best is None:
        raise RuntimeError("ONNX Runtime: no variant ran: %s"
                           % json.dumps(variants))
    return best[0]


def spread(values):
    return "%.1f-%.1f ms, slowest %.0f%% above fastest" % (
        min(values), max(values), (max(values) / min(values) - 1) * 100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="b8_t128_d768_h12")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build-dir", default=harness.DEFAULT_BUILD)
    ap.add_argument("--venv", default=harness.DEFAULT_VENV)
    args = ap.parse_args()
    cases = [c for c in harness.CASES if c["id"] == args.case]
    if not cases:
        ap.error("unknown case %s (ids: %s)" % (args.case, ", ".join(
            c["id"] for c in harness.CASES)))
    case = cases[0]
    python = os.path.join(args.venv, "bin", "python")
    reason = harness.probe(python, "onnxruntime")
    if reason:
        sys.exit("stability: ONNX Runtime is not available: %s (run "
                 "bench/setup.sh)" % reason)

    workdir = os.path.join(args.build_dir, "bench", "stability")
    os.makedirs(workdir, exist_ok=True)
    spec = harness.write_specs([case])[case["id"]]
    attnc = os.path.join(args.build_dir, "bin", "attnc")
    # Threaded objects (--parallel, attnc_rt), as the harness times them.
    rt_lib = os.path.join(args.build_dir, "lib", "libattnc_rt.a")
    exe = harness.aot_driver(attnc, case, spec, PROTOCOL, workdir,
                             rt_lib if os.path.exists(rt_lib) else None)
    tmp = tempfile.mkdtemp(prefix="attnc-stability-")
    print("%s, %d thread(s): attnc AOT%s and ONNX Runtime in alternate "
          "fresh processes" % (harness.shape_label(case), args.threads,
                               " (--parallel)" if os.path.exists(rt_lib)
                               else ""))
    print("round  time      env+bytes  attnc ms  ORT ms")
    ours, theirs = [], []
    for i in range(args.rounds):
        ms, _ = harness.run_driver(exe, args.threads, i)
        peer = ort_ms(python, case, args.threads, tmp)
        ours.append(ms)
        theirs.append(peer)
        print("%5d  %s  %9d  %8.1f  %6.1f" % (
            i, time.strftime("%H:%M:%S"), 8 * i, ms, peer), flush=True)
    print("attnc:        " + spread(ours))
    print("ONNX Runtime: " + spread(theirs))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Do the peers compute what the attnc spec computes? For the model-block
cases of bench/harness.py (bench/blocks.py: gpt2, llama, window), at small
shapes of the same structure (blocks.CHECK), on the weights every peer is
timed with (blocks.arrays):

    python3 bench/check_peers.py [--cases ID,...] [--tol 1e-3]
                                 [--build-dir build] [--venv DIR] [--keep DIR]

writes the inputs as .npy, runs `attnc run SPEC --input-dir` (the spec is
harness.spec_text of the small case), runs every PyTorch and ONNX Runtime
variant once on the same inputs (peer_torch.py / peer_ort.py with
"check_dir"), and prints each variant's largest absolute difference from
attnc's output. Where attnc cannot run the spec, the reference is the PyPI
torch's eager variant (else Debian's), so the peers are still checked
against each other. Exit status 1 if a difference is above --tol or nothing
could be compared. Times nothing; needs numpy (without it, it reruns itself
under the bench venv's python, else /usr/bin/python3).
"""

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blocks  # noqa: E402
import harness  # noqa: E402

try:
    import numpy as np
except ImportError:  # e.g. a pyenv python3: rerun under one that has numpy
    for python in (os.path.join(harness.DEFAULT_VENV, "bin", "python"),
                   harness.DEBIAN_PYTHON):
        if os.path.exists(python) and \
                os.path.realpath(python) != os.path.realpath(sys.executable):
            os.execv(python, [python] + sys.argv)
    raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model_ids = [c["id"] for c in harness.CASES if c["kind"] in blocks.KINDS]
    ap.add_argument("--cases", help="comma-separated case ids (default: "
                    + ",".join(model_ids) + ")")
    ap.add_argument("--tol", type=float, default=1e-3,
                    help="largest absolute difference allowed")
    ap.add_argument("--build-dir", default=harness.DEFAULT_BUILD)
    ap.add_argument("--venv", default=harness.DEFAULT_VENV)
    ap.add_argument("--keep", help="write the inputs and outputs here "
                    "(default: a temporary folder, removed)")
    args = ap.parse_args()

    wanted = args.cases.split(",") if args.cases else model_ids
    unknown = set(wanted) - set(model_ids)
    if unknown:
        ap.error("not a model-block case: %s" % ", ".join(sorted(unknown)))
    # Distinct structures only: the three window lengths are one check.
    cases, seen = [], set()
    for case in harness.CASES:
        small = blocks.check_case(case) if case["id"] in wanted else None
        key = small and tuple(sorted((k, v) for k, v in small.items()
                                     if k != "id"))
        if small and key not in seen:
            seen.add(key)
            cases.append(small)

    tmp = args.keep or tempfile.mkdtemp(prefix="attnc-check-")
    os.makedirs(tmp, exist_ok=True)
    attnc = os.path.join(tmp, "attnc")  # a rebuild cannot swap it mid-run
    built = os.path.join(args.build_dir, "bin", "attnc")
    if os.path.exists(built):
        shutil.copy2(built, attnc)
    env = harness.thread_env(1)

    outputs = {}  # case id -> {source: array}
    notes = {}    # case id -> [lines]
    for case in cases:
        folder = os.path.join(tmp, case["id"])
        os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
        for name, array in blocks.arrays(case).items():
            np.save(os.path.join(folder, "inputs", name + ".npy"), array)
        spec = os.path.join(folder, case["id"] + ".attn")
        with open(spec, "w") as f:
            f.write(harness.spec_text(case))
        outputs[case["id"]], notes[case["id"]] = {}, []
        out_name = [n for n, role, _ in blocks.signature(case)
                    if role == "output"][0]
        if not os.path.exists(attnc):
            notes[case["id"]].append("attnc: not built")
            continue
        proc = harness.run([attnc, "run", spec, "--input-dir",
                            os.path.join(folder, "inputs"), "--output-dir",
                            os.path.join(folder, "attnc")], env)
        if proc.returncode != 0:
            notes[case["id"]].append("attnc run: " + harness.failure(proc))
        else:
            outputs[case["id"]]["attnc"] = np.load(
                os.path.join(folder, "attnc", out_name + ".npy"))

    venv_python = os.path.join(args.venv, "bin", "python")
    for tag, python, module, script in (
            ("torch_debian", harness.DEBIAN_PYTHON, "torch", "peer_torch.py"),
            ("torch_pypi", venv_python, "torch", "peer_torch.py"),
            ("ort", venv_python, "onnxruntime", "peer_ort.py")):
        reason = harness.probe(python, module)
        if reason:
            for case in cases:
                notes[case["id"]].append("%s: not available: %s"
                                         % (tag, reason))
            continue
        peer = harness.run_peer_process(
            python, script, cases, 1, harness.QUICK_PROTOCOL, tmp,
            {"check_dir": tmp, "tag": tag})
        for case in cases:
            if "error" in peer:
                notes[case["id"]].append("%s: failed: %s"
                                         % (tag, peer["error"]))
                continue
            for variant, r in peer["results"].get(case["id"], {}).items():
                if "saved" in r:
                    outputs[case["id"]]["%s %s" % (tag, variant)] = \
                        np.load(r["saved"])
                else:
                    notes[case["id"]].append("%s %s: %s"
                                             % (tag, variant, r["error"]))

    bad = False
    for case in cases:
        got = outputs[case["id"]]
        ref = next((k for k in ("attnc", "torch_pypi eager",
                                "torch_debian eager") if k in got), None)
        print("== %s: %s" % (case["id"], harness.shape_label(case)))
        for line in notes[case["id"]]:
            print("   " + line)
        if ref is None or len(got) < 2:
            print("   nothing to compare")
            bad = True
            continue
        scale = float(np.abs(got[ref]).max())
        for source, y in got.items():
            if source == ref:
                continue
            if y.shape != got[ref].shape:
                print("   %-26s shape %s, %s has %s  FAIL" % (
                    source, y.shape, ref, got[ref].shape))
                bad = True
                continue
            diff = float(np.abs(y.astype(np.float64) - got[ref]).max())
            ok = diff <= args.tol
            bad = bad or not ok
            print("   %-26s max |diff| vs %s %.2e (output max %.2f)  %s" % (
                source, ref, diff, scale, "ok" if ok else "FAIL"))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compile time, object size and run time of block calls (docs/spec.md §2).

samples/bert_base_encoder.attn writes BERT-base's layer once (bert_layer)
and calls it 12 times (bert_base_encoder). This compares, ahead of time
(`attnc SPEC --block NAME -o OBJ`) and through the JIT (attnc-compile-time:
a cold compile, the median of -n runs):

  - one layer:               --block bert_layer
  - 12 layers through calls: --block bert_base_encoder
  - 12 layers written out:   the same encoder with each call replaced by the
                             layer's statements (generated here), whose code
                             is the layer's 12 times (minutes to compile:
                             once each way, whatever -n says)

and, with --run, the time per call of both encoders (attnc run
--random-inputs --repeat N, one thread). A measurement, not a test: the
machine's load changes it. Standard library only.

  python3 bench/block_calls.py [--build build] [-n 3] [--run] [--repeat 3]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "samples", "bert_base_encoder.attn")


def block_text(text, name):
    start = text.index("block %s {" % name)
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    raise ValueError("unterminated block " + name)


def inline_encoder(text):
    """The encoder with every call of bert_layer written out."""
    layer = block_text(text, "bert_layer")
    encoder = block_text(text, "bert_base_encoder")
    body = layer[layer.index("\n") + 1:layer.rindex("}")]
    statements = re.sub(r"#[^\n]*", "", body)
    statements = re.sub(r"\(\s*\n\s*", "(", statements)
    lines = [l.strip() for l in re.split(r"\n(?![^()]*\))", statements)]
    params = [m.group(1) for l in lines for m in [re.match(r"param (\w+):", l)]
              if m]
    inputs = [m.group(1) for l in lines for m in [re.match(r"input (\w+):", l)]
              if m]
    computed = [l for l in lines
                if l and not l.startswith(("dim ", "input ", "param "))]
    output = [l for l in computed if l.startswith("output ")][0].split()[1]
    computed = [l for l in computed if not l.startswith("output ")]
    locals_ = [re.match(r"(\w+)\s*=", l).group(1) for l in computed]

    head, calls = encoder.split("\n  H1 = ", 1)
    calls = "  H1 = " + calls
    # The layer's dims (heads=H) are the inline encoder's too.
    dims = [l for l in lines if l.startswith("dim ")][0]
    head = re.sub(r"\n  dim [^\n]*", "\n  " + dims, head, count=1)
    out = [head]
    for call in re.finditer(r"(\w+) = bert_layer\(([^)]*)\)", calls, re.S):
        target, args = call.group(1), call.group(2)
        args = [a.strip() for a in args.split(",")]
        binding = dict(zip(inputs, args[:len(inputs)]))
        for keyword in args[len(inputs):]:
            key, value = keyword.split("=")
            binding[key] = value
        for name in locals_:
            binding[name] = name + "_" + target
        binding[output] = target
        for statement in computed:
            target, expression = statement.split("=", 1)
            # Names, not keywords (`w_q=`): those are followed by `=`.
            expression = re.sub(
                r"\b([A-Za-z_]\w*)\b(?!\s*=)",
                lambda m: binding.get(m.group(1), m.group(1)), expression)
            out.append("  %s =%s" % (binding[target.strip()], expression))
    out.append("  output H12\n}\n")
    return "\n".join(out)


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("-n", type=int, default=3, help="compiles per case")
    parser.add_argument("--run", action="store_true",
                        help="also time one call of each encoder")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    attnc = os.path.join(options.build, "bin", "attnc")
    jit_tool = os.path.join(options.build, "bin", "attnc-compile-time")

    text = open(SAMPLE).read()
    work = tempfile.mkdtemp(prefix="attnc-block-calls-")
    inline = os.path.join(work, "bert_base_encoder_inline.attn")
    with open(inline, "w") as f:
        f.write(block_text(text, "bert_layer") + "\n\n" +
                inline_encoder(text))
    cases = [("one layer", SAMPLE, "bert_layer"),
             ("12 layers, calls", SAMPLE, "bert_base_encoder"),
             ("12 layers, inline", inline, "bert_base_encoder")]

    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    print("| case | AOT compile s | object KB | JIT compile ms |")
    print("| --- | --- | --- | --- |")
    results = {}
    for label, spec, block in cases:
        obj = os.path.join(work, block + str(len(results)) + ".o")
        # The inline encoder takes minutes: compiled once each way.
        n = 1 if spec == inline else options.n
        seconds = median([timed([attnc, spec, "--block", block, "-o", obj])
                          for _ in range(n)])
        size = os.path.getsize(obj) / 1024
        jit = "-"
        if os.path.exists(jit_tool):
            output = subprocess.run(
                [jit_tool, spec, block, "-n", str(n)], check=True,
                capture_output=True, text=True).stdout
            match = re.search(r"JIT compile ([0-9.]+) ms", output)
            jit = match.group(1) if match else output.strip()
        results[label] = (seconds, size)
        print("| %s | %.2f | %.0f | %s |" % (label, seconds, size, jit))
    one, calls = results["one layer"], results["12 layers, calls"]
    print("calls / one layer: compile %.2fx, object %.2fx" %
          (calls[0] / one[0], calls[1] / one[1]))

    if options.run:
        for label, spec, block in cases[1:]:
            output = subprocess.run(
                [attnc, "run", spec, "--block", block, "--random-inputs",
                 "--threads", "1", "--repeat", str(options.repeat),
                 "--output-dir", work],
                check=True, capture_output=True, text=True).stdout
            match = re.search(r"time per call: ([0-9.]+ ms)", output)
            print("%s: %s per call (1 thread)" %
                  (label, match.group(1) if match else output.strip()))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

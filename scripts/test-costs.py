#!/usr/bin/env python3
"""The cost of the test suite, by family, from ctest's own records.

ctest keeps each test's average time in <build>/Testing/Temporary/
CTestCostData.txt ("NAME RUNS SECONDS" per line) after every run. This
prints a Markdown table per build: each family of tests (a parameterized
suite, a gtest suite, a prefix), how many tests, their total, median and
largest time, and the share of the tier; then the slowest tests.

    scripts/test-costs.py default=build sanitize=build-sanitize > table.md

Times are wall-clock seconds of each test as ctest ran it (two at a time
with the presets, so each test shares the machine with another).
"""

import statistics
import sys
from pathlib import Path


def family(name):
    """`Ops/Primitive.MatchesReference/case` -> `Ops/Primitive.Matches...`."""
    if "/" in name:
        return name.rsplit("/", 1)[0]
    if ":" in name:
        return name.split(":", 1)[0]
    if "." in name:
        return name.split(".", 1)[0]
    return name


def read_costs(build):
    path = Path(build) / "Testing" / "Temporary" / "CTestCostData.txt"
    costs = {}
    for line in path.read_text().splitlines():
        if line.strip() == "---":
            break  # the failed tests follow
        parts = line.rsplit(" ", 2)
        if len(parts) != 3:
            continue
        name = parts[0].split("  # GetParam()")[0]
        costs[name] = float(parts[2])
    return costs


def table(label, costs, slowest):
    groups = {}
    for name, seconds in costs.items():
        groups.setdefault(family(name), []).append(seconds)
    total = sum(costs.values())
    out = [f"### {label}: {len(costs)} tests, {total / 60:.1f} test-minutes "
           f"(about {total / 120:.1f} minutes at 2 at a time)", "",
           "| family | tests | total s | median s | max s | share |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, times in sorted(groups.items(), key=lambda g: -sum(g[1])):
        out.append(f"| `{name}` | {len(times)} | {sum(times):.0f} | "
                   f"{statistics.median(times):.2f} | {max(times):.1f} | "
                   f"{100 * sum(times) / total:.1f} % |")
    out += ["", f"Slowest {slowest}:", ""]
    for name, seconds in sorted(costs.items(), key=lambda c: -c[1])[:slowest]:
        out.append(f"- `{name}`: {seconds:.1f} s")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        sys.exit(__doc__)
    for argument in argv[1:]:
        label, build = argument.split("=", 1)
        print(table(label, read_costs(build), slowest=15))


if __name__ == "__main__":
    main(sys.argv)

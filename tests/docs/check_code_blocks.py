#!/usr/bin/env python3
"""Runs the code blocks of README.md and docs/*.md, so that the docs'
commands and examples work as written (ctest docs:code_blocks).

What runs, by the block's fence:
  (none)  a spec (a block with `block NAME {`): compiled with `attnc
          --emit=header`. When the next block is diagnostics (its first line
          `NAME.attn:LINE:COL: error: ...`), the spec is saved as NAME.attn
          and attnc must fail with exactly those lines.
          Other unlabelled blocks (diagrams, synopses) are text.
  mlir    attn IR: compiled with `attnc --emit=header`.
  python  run as a program from the repository's root (MPLBACKEND=Agg).
  sh      each line (its `# comment` dropped) in a scratch directory where
          spec.attn is samples/d2l_mha.attn, kernel.mlir a kernel in attn
          IR and `attnc` is on PATH. A line that is a synopsis rather than a
          command (`[optional]`, `a|b` alternatives, `...`, PREFIX, or a
          continuation) is reported as not run; --target=nvptx without a
          CUDA toolkit is reported as not run too.
  c, ebnf, others: not programs (prototypes, grammar); not run.
A block right after a `<!-- docs-test: skip: WHY -->` line is not run, and
WHY is printed: the docs say themselves what they leave out.

Usage: check_code_blocks.py ROOT ATTNC PYTHON WORK_DIR
"""

import os
import re
import shutil
import subprocess
import sys

FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
SKIP = re.compile(r"^\s*<!-- docs-test: skip: (.*?) -->\s*$")
DIAGNOSTIC = re.compile(r"^(\w+)\.attn:\d+:\d+: error: ")
SPEC = re.compile(r"^\s*block\s+\w+\s*\{", re.M)
# Marks of a synopsis line: optional parts, alternatives, elisions, names
# that stand for the reader's own.
SYNOPSIS = re.compile(r"\[|\||\.\.\.|PREFIX|\bDIR\b|\bNAME\b|\bCPU\b")


class Block:
    def __init__(self, path, line, lang, text, skip):
        self.path, self.line, self.lang = path, line, lang
        self.text, self.skip = text, skip

    def where(self):
        return f"{self.path}:{self.line}"


def blocks_of(root, name):
    lines = open(os.path.join(root, name), encoding="utf-8").read().split("\n")
    found, skip, i = [], None, 0
    while i < len(lines):
        marker = SKIP.match(lines[i])
        if marker:
            skip = marker.group(1)
            i += 1
            continue
        fence = FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                skip = None
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2)
        j = i + 1
        while j < len(lines) and not FENCE.match(lines[j]):
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l
                for l in lines[i + 1:j]]
        found.append(Block(name, i + 1, lang, "\n".join(body) + "\n", skip))
        skip = None
        i = j + 1
    return found


class Runner:
    def __init__(self, root, attnc, python, work):
        self.root, self.attnc, self.python, self.work = root, attnc, python, work
        self.failures, self.ran, self.not_run = [], 0, []
        self.env = dict(os.environ, MPLBACKEND="Agg",
                        PATH=os.path.dirname(attnc) + os.pathsep +
                        os.environ.get("PATH", ""))

    def fail(self, block, what):
        self.failures.append(f"{block.where()}: {what}")

    def skip(self, block, why):
        self.not_run.append(f"{block.where()}: {why}")

    def run(self, args, cwd, timeout=600):
        return subprocess.run(args, cwd=cwd, env=self.env, timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)

    def scratch(self, block):
        path = os.path.join(self.work, f"{block.path}-{block.line}".replace(
            "/", "_"))
        os.makedirs(path, exist_ok=True)
        return path

    def spec(self, block, diagnostics):
        directory = self.scratch(block)
        name = DIAGNOSTIC.match(diagnostics.text).group(1) \
            if diagnostics else "spec"
        path = os.path.join(directory, name + ".attn")
        with open(path, "w") as f:
            f.write(block.text)
        result = self.run([self.attnc, name + ".attn", "--emit=header", "-o",
                           "out.h"], directory)
        self.ran += 1
        if not diagnostics:
            if result.returncode != 0:
                self.fail(block, "the spec does not compile:\n" + result.stdout)
            return
        # The error's text as attnc prints it, source lines and carets too.
        expected = diagnostics.text.rstrip("\n")
        if result.returncode != 1 or result.stdout.rstrip("\n") != expected:
            self.fail(block, f"attnc (exit {result.returncode}) printed\n"
                      f"{result.stdout}\ninstead of the docs' "
                      f"{diagnostics.where()}:\n{expected}")

    def mlir(self, block):
        directory = self.scratch(block)
        with open(os.path.join(directory, "kernel.mlir"), "w") as f:
            f.write(block.text)
        result = self.run([self.attnc, "kernel.mlir", "--emit=header", "-o",
                           "out.h"], directory)
        self.ran += 1
        if result.returncode != 0:
            self.fail(block, "the attn IR does not compile:\n" + result.stdout)

    def python_block(self, block):
        result = self.run([self.python, "-c", block.text], self.root)
        self.ran += 1
        if result.returncode != 0:
            self.fail(block, "the Python example fails:\n" + result.stdout)

    def sh(self, block):
        directory = self.scratch(block)
        shutil.copy(os.path.join(self.root, "samples", "d2l_mha.attn"),
                    os.path.join(directory, "spec.attn"))
        shutil.copy(os.path.join(self.root, "tests", "lit", "attnc", "Inputs",
                                 "hand-written.mlir"),
                    os.path.join(directory, "kernel.mlir"))
        for number, line in enumerate(block.text.splitlines()):
            command = re.sub(r"\s+#.*$", "", line).strip()
            where = f"{block.path}:{block.line + 1 + number}"
            if not command or command.startswith("#"):
                continue
            if line[:1].isspace() or SYNOPSIS.search(command):
                self.not_run.append(f"{where}: a synopsis: {command}")
                continue
            result = self.run(["sh", "-c", command], directory)
            if result.returncode != 0 and "--target=nvptx" in command and \
                    "CUDA" in result.stdout:
                self.not_run.append(f"{where}: no CUDA toolkit: {command}")
                continue
            self.ran += 1
            if result.returncode != 0:
                self.failures.append(
                    f"{where}: `{command}` exits {result.returncode}:\n"
                    f"{result.stdout}")

    def check(self, blocks):
        for i, block in enumerate(blocks):
            if block.skip:
                self.skip(block, block.skip)
                continue
            if block.lang == "" and SPEC.search(block.text):
                following = blocks[i + 1] if i + 1 < len(blocks) else None
                diagnostics = following if following and \
                    following.lang == "" and \
                    DIAGNOSTIC.match(following.text) else None
                self.spec(block, diagnostics)
            elif block.lang == "mlir":
                self.mlir(block)
            elif block.lang == "python":
                self.python_block(block)
            elif block.lang == "sh":
                self.sh(block)


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    root, attnc, python, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    names = ["README.md"] + sorted(
        os.path.join("docs", name) for name in os.listdir(
            os.path.join(root, "docs")) if name.endswith(".md"))
    runner = Runner(root, os.path.abspath(attnc), python, work)
    for name in names:
        runner.check(blocks_of(root, name))
    for line in runner.not_run:
        print(f"not run: {line}")
    for failure in runner.failures:
        print(f"FAILED: {failure}")
    print(f"docs-test: {runner.ran} blocks and commands ran, "
          f"{len(runner.failures)} failed, {len(runner.not_run)} not run")
    # A change that left nothing to run would pass silently otherwise.
    if runner.ran < 15:
        print("docs-test: fewer than 15 ran; the block rules no longer find "
              "the docs' examples")
        return 1
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())

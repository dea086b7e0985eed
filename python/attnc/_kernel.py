"""Compiling kernels: compile's work and the registry of the kernels it
made, below the package's __init__ and the torch interop (_torch.py), which
both use them.

attnc.compile (__init__.py) is this compile, which also loads the torch
operators once torch is imported. The package's modules import one way only
(tests/python/test_import_cycles.py): this one imports none of them.
"""

import itertools
import os
import weakref

from ._attnc import Kernel, set_num_threads
from ._attnc import backends as _backends
from ._attnc import compile_file as _attnc_compile_file
from ._attnc import compile_text as _attnc_compile_text

# The code generators in this build: "mlir", and "halide" when attnc was
# built with Halide (docs/halide.md).
BACKENDS = _backends()

# The C++ half's call, before __init__.py puts the Python half's in its place
# (the torch operators run a kernel through this one).
_native_call = Kernel.__call__


def _is_path(spec):
    if isinstance(spec, os.PathLike):
        return True
    # A spec's text has a block (and so braces and usually lines); a path
    # has neither.
    return isinstance(spec, str) and "{" not in spec and "\n" not in spec


def compile(spec, block=None, target="cpu", mcpu="native", backend="mlir",
            opt_level=2, threads=None, halide_schedule="attnc"):
    """attnc.compile (its arguments and errors are documented there),
    without loading the torch operators."""
    if backend not in BACKENDS:
        raise ValueError(
            f"attnc.compile: backend {backend!r} is not in this build "
            f"(available: {', '.join(BACKENDS)})")
    if not isinstance(opt_level, int) or isinstance(opt_level, bool):
        raise ValueError(
            f"attnc.compile: opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    if mcpu is None:
        mcpu = "native"
    if threads is not None:
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(
                f"attnc.compile: threads must be a positive int, got {threads!r}")
        set_num_threads(threads)
    block = block or ""
    if _is_path(spec):
        path = os.fspath(spec)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"attnc.compile: no spec file {path!r} (pass a path to a "
                f".attn file or the spec's text)")
        return _register(_attnc_compile_file(path, block, target, mcpu,
                                             opt_level, backend,
                                             halide_schedule))
    if not isinstance(spec, str):
        raise TypeError(
            f"attnc.compile: spec must be a path or the spec's text, got "
            f"{type(spec).__name__}")
    return _register(_attnc_compile_text(spec, "<string>", block, target,
                                         mcpu, opt_level, backend,
                                         halide_schedule))


# Every kernel compile() made, by key (`Kernel._key`): torch.compile's
# graphs name a kernel by its key (the attnc::run operator, attnc/_torch.py).
_kernels = weakref.WeakValueDictionary()
_keys = itertools.count()


def _register(kernel):
    """Gives a new kernel what its Python half reads as plain Python values
    (torch.compile traces through them; it cannot call into the C++ half):
    its key, its argument names in signature order, its outputs, and the
    params bound so far."""
    signature = kernel.signature
    kernel._key = f"{kernel.name}#{next(_keys)}"
    kernel._inputs = tuple(n for n, role, _, _ in signature if role == "input")
    kernel._states = tuple(n for n, role, _, _ in signature if role == "state")
    kernel._state_types = {n: (dtype, tuple(shape))
                           for n, role, dtype, shape in signature
                           if role == "state"}
    kernel._arguments = tuple(n for n, role, _, _ in signature
                              if role != "output")
    kernel._outputs = tuple((n, dtype, tuple(shape))
                            for n, role, dtype, shape in signature
                            if role == "output")
    kernel._bound = frozenset()
    _kernels[kernel._key] = kernel
    return kernel

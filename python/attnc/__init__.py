"""attnc: compile attention blocks (.attn specs) into kernels and run them.

    import attnc
    k = attnc.compile("samples/d2l_mha.attn")     # a path, or the spec's text
    k.signature                                    # [(name, role, dtype, shape)]
    k.bind(W_q=wq, W_k=wk, W_v=wv, W_o=wo)         # params once
    Y = k(X=x, valid_lens=vl)                      # NumPy arrays or torch tensors

docs/spec.md §6b is the contract. Arrays that are C-contiguous float32/int32 CPU
arrays are passed without a copy; others are converted (integers to int32
when they fit, float64 to float32 only with cast=True). A wrong name, shape
or dtype raises ValueError with the runtime's message; a run-time failure
raises attnc.Error. The GIL is released while a kernel runs.
"""

import sys

from ._attnc import (  # noqa: F401
    Error,
    Kernel,
    cache_statistics,
    clear_memory_cache,
    compiler_version,
    get_num_threads,
    set_num_threads,
)
from ._attnc import _NeedsAutograd

# "attnc 0.1.0 <commit> LLVM ...": the version CMakeLists.txt sets.
__version__ = compiler_version().split()[1]

__all__ = [
    "Error",
    "Kernel",
    "compile",
    "from_torch",
    "DecoderBlock",
    "show_heatmaps",
    "set_num_threads",
    "get_num_threads",
    "clear_memory_cache",
    "cache_statistics",
    "compiler_version",
]

# compile's work and the kernels' registry are in _kernel.py, below this
# module and the torch interop (_torch.py), which both use them: the
# package's modules import one way only (tests/python/test_import_cycles.py).
from . import _kernel  # noqa: E402
from ._kernel import _native_call  # noqa: E402

# The code generators in this build: "mlir", and "halide" when attnc was
# built with Halide (docs/halide.md).
BACKENDS = _kernel.BACKENDS


def compile(spec, block=None, target="cpu", mcpu="native", backend="mlir",
            opt_level=2, threads=None, halide_schedule="attnc"):
    """Compiles block `block` (None: the spec's only block) of `spec`, a
    path to a .attn file or the text of one, and returns its Kernel. A path
    ending in .mlir is attn IR (docs/language.md), a kernel per public
    func.func.

    target: "cpu" or "nvptx" (an NVIDIA GPU; mcpu then names its compute
    capability, default sm_90a). mcpu: an LLVM CPU name or "native".
    backend: "mlir" (attnc's MLIR pipeline) or "halide" (the same kernel
    through Halide; see BACKENDS), with halide_schedule "attnc" (attnc's
    own schedules) or one of Halide's autoschedulers: "Adams2019",
    "Mullapudi2016", "Li2018".
    threads: if given, the number of threads kernels use (the runtime's
    process-wide pool, as set_num_threads). Compiled kernels are cached in
    memory and on disk (ATTNC_CACHE_DIR)."""
    kernel = _kernel.compile(spec, block, target, mcpu, backend, opt_level,
                             threads, halide_schedule)
    if "torch" in sys.modules:
        from . import _torch  # noqa: F401 - its operators, before any trace
    return kernel


# torch.compiler.is_compiling, once torch is imported (calls check it, and
# look it up only until then).
_is_compiling = None


def _compiling():
    global _is_compiling
    if _is_compiling is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        _is_compiling = torch.compiler.is_compiling
    return _is_compiling()


_native_bind = Kernel.bind


def _call(self, **arrays):
    """Runs the kernel on keyword arrays (docs/spec.md §6b). While torch.compile
    traces, and when autograd must see the call (grad mode on and a tensor
    that requires grad), it goes through the attnc::run torch operator:
    into the graph, or with a backward that says the kernel computes no
    gradient. Otherwise it calls the C++ half directly."""
    if _compiling():
        from ._torch import operator_call
        return operator_call(self, arrays)
    try:
        return _native_call(self, **arrays)
    except _NeedsAutograd:
        from ._torch import operator_call
        return operator_call(self, arrays)


def _bind(self, **params):
    _native_bind(self, **params)
    self._bound = self._bound | (params.keys() - {"cast"})
    return self


def _repr(self):
    """<attnc.Kernel d2l_mha(X: f32[2, 4, 100], valid_lens: i32[2];
    params W_q: f32[100, 100] (bound), ...) -> Y: f32[2, 4, 100]>"""
    def typed(name, dtype, shape):
        return f"{name}: {dtype}[{', '.join(str(x) for x in shape)}]"

    inputs, states, params, outputs = [], [], [], []
    for name, role, dtype, shape in self.signature:
        text = typed(name, dtype, shape)
        if role == "input":
            inputs.append(text)
        elif role == "output":
            outputs.append(text)
        elif role == "state":
            states.append(text)
        else:
            params.append(text + (" (bound)" if self.is_bound(name) else ""))
    arguments = ", ".join(inputs)
    if states:
        arguments += "; states " + ", ".join(states)
    if params:
        arguments += "; params " + ", ".join(params)
    return f"<attnc.Kernel {self.name}({arguments}) -> {', '.join(outputs)}>"


Kernel.__call__ = _call
Kernel.bind = _bind
Kernel.__repr__ = _repr
_bind.__doc__ = _native_bind.__doc__


def _kernel_op(kernel):
    from ._torch import torch_op
    return torch_op(kernel)


Kernel.op = property(_kernel_op, doc=(
    "the kernel as a torch operator (torch.library.custom_op, with a fake "
    "implementation for torch.compile and a backward that raises: kernels "
    "compute no gradients): takes its inputs and unbound params as "
    "tensors, in signature order"))


def __getattr__(name):
    # torch and matplotlib are imported only when their parts are used.
    if name == "from_torch":
        from ._from_torch import from_torch
        return from_torch
    if name == "DecoderBlock":
        from ._hf import DecoderBlock
        return DecoderBlock
    if name == "show_heatmaps":
        from ._heatmaps import show_heatmaps
        return show_heatmaps
    raise AttributeError(f"module 'attnc' has no attribute {name!r}")

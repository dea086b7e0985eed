"""PyTorch interop: kernels as torch operators, and from_torch's builders.

from_torch(module, example_inputs) (_from_torch.py) reads a module's
settings and weights, writes the .attn spec that computes the same thing
for the example inputs' shapes, compiles it, binds the weights and returns
a TorchBlock: a callable with the module's forward signature and result.
This module holds the pieces that write specs, the TorchBlock, and the
builders of every block below except the Hugging Face ones. Supported
(eval mode):

- D2L's MultiHeadAttention (bias or not), TransformerEncoderBlock,
  TransformerEncoder (its blocks as block calls), PositionalEncoding and
  DotProductAttention, recognized by their attributes (W_q, W_k, W_v, W_o,
  num_heads, attention; attention, addnorm1, ffn, addnorm2; embedding,
  pos_encoding, blks; P) or, for DotProductAttention, which has none, its
  class name, as the book defines them;
- torch.nn.MultiheadAttention and torch.nn.TransformerEncoderLayer
  (batch_first either way, norm_first either way, relu);
- Hugging Face transformers' GPT2Block, LlamaDecoderLayer and BertLayer,
  the first two also as decoding layers with a KV cache (_hf.py, which
  writes its specs with this module's pieces; this module imports neither
  _hf.py nor _from_torch.py: tests/python/test_import_cycles.py).

Anything else raises NotImplementedError or ValueError naming the module's
attribute that attnc cannot express. What a module holds is read (its
positional table, its scoring, its mask's kind); a class name alone never
decides, and every callable is compared with the module on the example
inputs before it is returned (_from_torch._check_against_module): a
look-alike whose forward computes something else is refused, not compiled
wrong.
"""

import functools
import inspect
import math
import itertools
from typing import List, Optional

import numpy as np
import torch
from torch import nn

# The package's compile and its kernels, from below the package's
# __init__ (which imports this module): _kernel.py.
from ._kernel import _kernels, _native_call
from ._kernel import compile as _compile

_op_counter = itertools.count()


# ---------------------------------------------------------------------------
# Kernels as torch operators.
# ---------------------------------------------------------------------------

def _no_gradient_message(kernel_name):
    return (f"attnc kernel '{kernel_name}' computes no gradients (attnc's "
            "kernels are inference-only), and backward() reached it: it "
            "was called in grad mode on a tensor that requires grad. Call "
            "it under torch.no_grad() or torch.inference_mode(), or "
            "detach its inputs, when no gradient should flow through it")


@torch.library.custom_op("attnc::no_gradient", mutates_args=(),
                         device_types="cpu")
def _no_gradient(grad: torch.Tensor, kernel: str,
                 shape: List[int]) -> torch.Tensor:
    """The gradient of a kernel's input: an error when it is computed, so
    that a backward through a kernel fails with a message rather than
    dropping the gradient (eager and in torch.compile's graphs)."""
    raise RuntimeError(_no_gradient_message(kernel))


@_no_gradient.register_fake
def _(grad, kernel, shape):
    return grad.new_empty(shape)


def _input_types(tensors):
    """(dtype, shape) of each tensor (None for None): what a backward needs
    of the inputs, without keeping them."""
    return [None if t is None else (t.dtype, list(t.shape)) for t in tensors]


def _input_gradients(kernel_name, grads, inputs):
    """What a kernel operator's backward returns for `inputs` (from
    _input_types): an attnc::no_gradient for each floating-point tensor (it
    raises when run), None for the rest."""
    seed = next(g for g in grads if g is not None)
    return [_no_gradient(seed, kernel_name, t[1])
            if t is not None and t[0].is_floating_point else None
            for t in inputs]


def _kernel_named(key):
    kernel = _kernels.get(key)
    if kernel is None:
        raise RuntimeError(f"attnc: kernel {key!r} no longer exists (a "
                           "compiled graph outlived the kernel it calls)")
    return kernel


@torch.library.custom_op(
    "attnc::run", mutates_args=(), device_types="cpu",
    schema="(str kernel, str[] names, Tensor[] arrays) -> Tensor[]")
def _run(kernel, names, arrays):
    """Runs the kernel whose key is `kernel` (attnc.compile gives each one)
    on `arrays`, the arguments `names` (the others: bound params). (A list
    of optional tensors would be simpler, but autograd loses track of the
    tensors of such a list.)"""
    k = _kernel_named(kernel)
    with torch.no_grad():  # autograd has seen the call; run it plainly
        result = _native_call(k, **dict(zip(names, arrays)))
    return list(result) if isinstance(result, tuple) else [result]


@_run.register_fake
def _(kernel, names, arrays):
    k = _kernel_named(kernel)
    device = arrays[0].device if arrays else None
    return [torch.empty(shape, dtype=_torch_dtype(dtype), device=device)
            for _, dtype, shape in k._outputs]


def _run_setup_context(ctx, inputs, output):
    kernel, _, arrays = inputs
    ctx.kernel = kernel
    ctx.inputs = _input_types(arrays)


def _run_backward(ctx, grads):
    name = ctx.kernel.rsplit("#", 1)[0]
    return None, None, _input_gradients(name, grads, ctx.inputs)


_run.register_autograd(_run_backward, setup_context=_run_setup_context)


def operator_call(kernel, arrays):
    """A keyword call of `kernel` through attnc::run: while torch.compile
    traces (the call goes into the graph) and when autograd must see it."""
    if "out" in arrays:
        raise ValueError(
            f"attnc kernel '{kernel.name}': out= is not supported with "
            "autograd or torch.compile (a tensor requires grad in grad "
            "mode, or the call is being compiled); drop out= or call it "
            "under torch.no_grad()")
    cast = arrays.get("cast", False)
    unknown = [n for n in arrays if n != "cast" and n not in kernel._arguments]
    if unknown:
        raise ValueError(
            f"kernel '{kernel.name}' has no argument named '{unknown[0]}'; "
            f"its arguments are {', '.join(kernel._arguments)}")

    def tensor(value, name):
        t = value if isinstance(value, torch.Tensor) else \
            torch.as_tensor(np.asarray(value))
        # A state is never cast: the kernel would update the copy.
        if cast and t.dtype == torch.float64 and name not in kernel._states:
            t = t.to(torch.float32)
        return t

    if kernel._states:
        return _call_with_states(kernel, arrays, tensor)
    names = [n for n in kernel._arguments if n in arrays]
    results = _run(kernel._key, names, [tensor(arrays[n], n) for n in names])
    return results[0] if len(results) == 1 else tuple(results)


def _call_with_states(kernel, arrays, tensor):
    """A keyword call of a kernel with states: through its own operator,
    whose schema says that it updates them in place (attnc::run's list of
    tensors cannot say which it mutates, so torch.compile could reorder or
    drop the update)."""
    op = getattr(kernel, "_op", None)
    name = kernel._key.rsplit("#", 1)[0]  # plain Python, unlike kernel.name
    if op is None and torch.compiler.is_compiling():
        raise ValueError(
            f"attnc kernel '{name}' updates its states "
            f"({', '.join(kernel._states)}) in place, which torch.compile "
            "must be told: make its operator outside torch.compile "
            "(kernel.op) before compiling a function that calls it")
    op = op or torch_op(kernel)
    names = kernel._op_names
    missing = [n for n in names if n not in arrays]
    if missing:
        raise ValueError(f"kernel '{name}' is missing argument "
                         f"'{missing[0]}'")
    extra = [n for n in arrays if n != "cast" and n not in names]
    if extra:
        raise ValueError(
            f"attnc kernel '{name}': '{extra[0]}' is a bound param; "
            "its operator takes the inputs, the states and the params not "
            "bound when it was made")
    tensors = [tensor(arrays[n], n) for n in names]
    for n, t in zip(names, tensors):
        if n in kernel._states:
            _check_state(name, n, kernel._state_types[n], t)
    return op(*tensors)


def _check_state(kernel_name, name, expected, t):
    """Refuses a state the kernel cannot update in place, as a plain call
    does: while torch.compile traces, the operator would otherwise run on
    a copy that the graph made to fit, and the update would be lost."""
    dtype, shape = expected
    if t.dtype != _torch_dtype(dtype) or tuple(t.shape) != shape or \
            t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError(
            f"attnc kernel '{kernel_name}': state '{name}' "
            f"({dtype}[{', '.join(map(str, shape))}]) must be a "
            "C-contiguous CPU array of its dtype, written in place; got "
            f"{t.dtype} {list(t.shape)} on {t.device.type}"
            f"{'' if t.is_contiguous() else ', strided'} (a state is never "
            "converted, cast=True or not)")


def torch_op(kernel):
    """The torch operator (torch.library.custom_op) of `kernel`: it takes the
    kernel's inputs and its params that are not bound, as tensors in
    signature order, and returns the outputs (a tuple when there are several).
    It has a fake implementation, so modules that call it work under
    torch.compile, and a backward that raises (kernels compute no
    gradients). One operator per Kernel object, made at the first use
    outside torch.compile; while torch.compile traces a kernel whose
    operator was never made, the same call goes into the graph through
    attnc::run."""
    op = getattr(kernel, "_op", None)
    if op is not None:
        return op
    if torch.compiler.is_compiling():
        return functools.partial(_traced_op_call, kernel)
    names = _op_arguments(kernel)
    outputs = kernel._outputs
    returns = "Tensor" if len(outputs) == 1 else \
        "(" + ", ".join("Tensor" for _ in outputs) + ")"
    # A state is updated in place: the schema's alias annotation (a!) says
    # so, and torch.compile keeps the update.
    states = [n for n in names if n in kernel._states]
    schema = "(" + ", ".join(
        f"Tensor(a{i}!) {n}" if n in states else f"Tensor {n}"
        for i, n in enumerate(names)) + ") -> " + returns
    qualname = f"attnc::{kernel.name}_{next(_op_counter)}"

    def impl(*tensors):
        with torch.no_grad():  # autograd has seen the call
            return _native_call(kernel, **dict(zip(names, tensors)))

    def fake(*tensors):
        device = tensors[0].device if tensors else None
        results = tuple(
            torch.empty(shape, dtype=_torch_dtype(dtype), device=device)
            for _, dtype, shape in outputs)
        return results[0] if len(results) == 1 else results

    def setup_context(ctx, inputs, output):
        ctx.inputs = _input_types(inputs)

    def backward(ctx, *grads):
        return tuple(_input_gradients(kernel.name, grads, ctx.inputs))

    op = torch.library.custom_op(qualname, impl, mutates_args=tuple(states),
                                 schema=schema, device_types="cpu")
    op.register_fake(fake)
    # torch registers no autograd formula for an operator that mutates
    # (states are not differentiated through anyway).
    if not states:
        op.register_autograd(backward, setup_context=setup_context)
    kernel._op = op
    kernel._op_names = tuple(names)  # plain Python, for traced calls
    return op


def _traced_op_call(kernel, *tensors):
    """`kernel.op(*tensors)` while torch.compile traces, for a kernel whose
    operator was never made: the same arguments, through attnc::run."""
    names = [n for n in kernel._arguments
             if n in kernel._inputs or n not in kernel._bound]
    if len(tensors) != len(names):
        raise TypeError(f"attnc kernel '{kernel.name}'.op takes {len(names)} "
                        f"tensors ({', '.join(names)}), got {len(tensors)}")
    return operator_call(kernel, dict(zip(names, tensors)))


def _op_arguments(kernel):
    """The names the kernel's torch operator takes, in order."""
    return [n for n in kernel._arguments
            if n in kernel._inputs or n in kernel._states
            or not kernel.is_bound(n)]


class _BoundKernel:
    """A kernel with its params bound, called with keyword tensors: while
    torch.compile traces, through its torch operator (which the compiler
    puts in the graph; Dynamo cannot trace into the extension), else
    directly (the operator's dispatch costs more than a small kernel)."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.names = _op_arguments(kernel)
        self.op = torch_op(kernel)

    def __call__(self, **args):
        if torch.compiler.is_compiling():
            return self.op(*(args[n] for n in self.names))
        return self.kernel(**args)


_TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16,
                 "f16": torch.float16, "i32": torch.int32}


def _torch_dtype(dtype):
    """The torch dtype of a signature's dtype name."""
    return _TORCH_DTYPES[dtype]


# ---------------------------------------------------------------------------
# Writing specs.
# ---------------------------------------------------------------------------

def _array(value, dtype="f32"):
    """A parameter's values (a tensor or an array) as a C-contiguous NumPy
    array of the spec's float type: float32, ml_dtypes.bfloat16 or float16
    (rounded to nearest even, as torch's .to rounds, when not already of
    that type)."""
    if isinstance(value, nn.parameter.UninitializedParameter):
        raise ValueError(
            "attnc.from_torch: a LazyLinear's weight is not initialized yet; "
            "call the module once on an example first")
    if dtype == "bf16":
        import ml_dtypes  # python/requirements.txt; only bf16 needs it
    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if dtype == "bf16":
            bits = tensor.to(torch.bfloat16).contiguous().view(torch.int16)
            return bits.numpy().view(ml_dtypes.bfloat16)
        value = tensor.to(torch.float16 if dtype == "f16" else torch.float32)
        value = value.numpy()
    numpy_dtype = {"f16": np.float16, "f32": np.float32}.get(dtype) or \
        ml_dtypes.bfloat16
    return np.ascontiguousarray(
        np.asarray(value, dtype=np.float32).astype(numpy_dtype)
        if np.asarray(value).dtype != numpy_dtype else value)


# The float type of the specs being written (from_torch, _from_torch.py,
# sets it from the module's parameters: a module.to(torch.bfloat16) gives
# bf16 specs).
_spec_dtype = "f32"


def _float_type_of(module, inputs):
    """The spec type of `module`: that of its floating parameters and
    buffers (else of its floating example inputs), bf16 or f16; f32 for
    float32 and float64 (computed in f32)."""
    tensors = [t for t in itertools.chain(module.parameters(),
                                          module.buffers())
               if t.is_floating_point()]
    if not tensors:
        tensors = [t for t in inputs
                   if isinstance(t, torch.Tensor) and t.is_floating_point()]
    dtypes = {t.dtype for t in tensors}
    if {torch.bfloat16, torch.float16} <= dtypes:
        raise ValueError(
            "attnc.from_torch: the module mixes bfloat16 and float16 tensors; "
            "convert it to one (module.to(torch.bfloat16))")
    if torch.bfloat16 in dtypes:
        return "bf16"
    if torch.float16 in dtypes:
        return "f16"
    return "f32"


def _type(shape, dtype="f32"):
    return f"{dtype}[{', '.join(str(int(s)) for s in shape)}]"


class _Spec:
    """One block's text, with its params' values."""

    def __init__(self, name):
        self.name = name
        self.dtype = _spec_dtype
        self.inputs = []
        self.params = {}
        self.param_lines = []
        self.lines = []
        self.outputs = []

    def input(self, name, shape, dtype=None):
        self.inputs.append(
            f"  input  {name}: {_type(shape, dtype or self.dtype)}")
        return name

    def state(self, name, shape, dtype=None):
        self.inputs.append(
            f"  state  {name}: {_type(shape, dtype or self.dtype)}")
        return name

    def param(self, name, value):
        value = _array(value, self.dtype)
        self.param_lines.append(
            f"  param  {name}: {_type(value.shape, self.dtype)}")
        self.params[name] = value
        return name

    def let(self, names, expr):
        self.lines.append(f"  {names} = {expr}")

    def text(self):
        body = self.inputs + self.param_lines + [""] + self.lines + \
            [f"  output {', '.join(self.outputs)}"]
        return f"block {self.name} {{\n" + "\n".join(body) + "\n}\n"


def _mha(spec, prefix, q, k, v, heads, w, b, lens, causal, weights):
    """Statements for multi-head attention of q, k, v (names) with weights
    w = (W_q, W_k, W_v, W_o) and biases b (4 values or Nones); returns the
    name of the result (and of the weights, `weights` true). `lens` names the
    lengths input: per batch entry without biases (the fused
    multihead_attention op), per batch entry and head with them (the
    primitives)."""
    wn = [spec.param(f"{prefix}W_{x}", t) for x, t in zip("qkvo", w)]
    out = f"{prefix}out"
    extra = (f", valid_lens={lens}" if lens else "") + \
        (", causal=true" if causal else "") + \
        (", return_weights=true" if weights else "")
    names = f"{out}, {prefix}weights" if weights else out
    if all(x is None for x in b):
        spec.let(names, f"multihead_attention({q}, {k}, {v}, heads={heads}, "
                 f"w_q={wn[0]}, w_k={wn[1]}, w_v={wn[2]}, w_o={wn[3]}{extra})")
        return out
    bn = [spec.param(f"{prefix}b_{x}", t if t is not None else
                     torch.zeros(w[i].shape[0]))
          for i, (x, t) in enumerate(zip("qkvo", b))]
    for x, src, wi, bi in zip("qkv", (q, k, v), wn, bn):
        spec.let(f"{prefix}{x}", f"linear({src}, {wi}, {bi})")
        spec.let(f"{prefix}{x}h", f"split_heads({prefix}{x}, heads={heads})")
    att = f"{prefix}heads_out"
    spec.let(f"{att}, {prefix}weights" if weights else att,
             f"attention({prefix}qh, {prefix}kh, {prefix}vh{extra})")
    spec.let(f"{prefix}merged", f"merge_heads({att}, heads={heads})")
    spec.let(out, f"linear({prefix}merged, {wn[3]}, {bn[3]})")
    return out


def _check_eval(module):
    for name, m in module.named_modules():
        if m.training:
            where = f"{type(module).__name__}" + (f".{name}" if name else "")
            raise ValueError(
                f"attnc.from_torch: {where} is in training mode "
                f"(.training is True; dropout would be random): call "
                f"module.eval() first")


def _lens_of(valid_lens, heads, per_head, keys):
    """valid_lens as the kernel takes them: int32, repeated per head (D2L's
    repeat_interleave) when the spec uses the primitives. D2L keeps key j
    where `j < valid_len` (sequence_mask compares an arange), so a float
    length keeps ceil(length) keys and NaN keeps none; lengths are clamped
    to [0, keys] first, which keeps the same keys and cannot wrap (a .to()
    of 2**32 + 1 gives 1)."""
    if valid_lens is None:
        return None
    lens = valid_lens.detach()
    if lens.dtype == torch.bool:
        lens = lens.to(torch.int32)
    if lens.is_floating_point():
        lens = torch.nan_to_num(torch.ceil(lens), nan=0.0)
    elif lens.is_complex():
        raise TypeError("attnc.from_torch: valid_lens must be integer or "
                        f"floating point, got {lens.dtype}")
    lens = lens.clamp(0, keys).to(torch.int32)
    if per_head:
        lens = torch.repeat_interleave(lens, repeats=heads, dim=0)
    return lens


def _lens_shape(valid_lens, heads, per_head):
    shape = list(valid_lens.shape)
    if per_head:
        shape[0] *= heads
    return shape


def _is_d2l_mha(m):
    return all(hasattr(m, a) for a in
               ("W_q", "W_k", "W_v", "W_o", "num_heads", "attention"))


def _is_d2l_encoder_block(m):
    return all(hasattr(m, a) for a in
               ("attention", "addnorm1", "ffn", "addnorm2")) and \
        _is_d2l_mha(m.attention)


# The arguments of from_torch's callables that carry the module's data (its
# float type); lengths and masks have types of their own.
_DATA_ARGUMENTS = frozenset(("queries", "keys", "values", "X", "query", "key",
                             "value", "src", "hidden_states"))


class TorchBlock:
    """What from_torch returns: call it like the module. `spec` is the
    generated .attn text, `kernel` the compiled Kernel (its params bound),
    `params` the weights as bound (NumPy arrays by spec name): copies of
    the module's, made when from_torch ran."""

    def __init__(self, spec, kernel, call):
        self.spec = spec.text()
        self.params = spec.params
        self.kernel = kernel.kernel
        self._call = call
        self._names = list(inspect.signature(call).parameters)[1:]
        self.attention_weights = None
        # A float64 module (module.double()): called with float64 tensors,
        # as the module is, and returning float64; the kernel computes in
        # f32 (its weights were rounded to f32 when bound).
        self.float64 = False
        # The dtype of the module's data (from_torch sets it).
        self.dtype = _torch_dtype(spec.dtype if isinstance(spec, _Spec)
                                  else spec.blocks[-1].dtype)

    def _check_dtypes(self, args, kwargs):
        """Refuses data of another float type than the module's: the
        kernel's own message would suggest cast=, which this callable does
        not take (a module refuses such tensors too)."""
        for name, value in itertools.chain(zip(self._names, args),
                                           kwargs.items()):
            if name in _DATA_ARGUMENTS and isinstance(value, torch.Tensor) \
                    and value.is_floating_point() and value.dtype != self.dtype:
                raise ValueError(
                    f"attnc.from_torch: {name} is {value.dtype}, but this "
                    f"callable computes in {self.dtype}, as the module does: "
                    f"pass {self.dtype} tensors ({name}.to({self.dtype}))")

    def __call__(self, *args, **kwargs):
        self._check_dtypes(args, kwargs)
        if not self.float64:
            return self._call(self, *args, **kwargs)
        # One tensor passed several times (self-attention) stays one.
        converted = {}

        def to_float32(value):
            if id(value) not in converted:
                converted[id(value)] = _to_float32(value)
            return converted[id(value)]

        args = [to_float32(a) for a in args]
        kwargs = {k: to_float32(v) for k, v in kwargs.items()}
        result = self._call(self, *args, **kwargs)
        if self.attention_weights is not None:
            self.attention_weights = _to_float64(self.attention_weights)
        if isinstance(result, tuple):
            return tuple(_to_float64(r) for r in result)
        return _to_float64(result)

    def __repr__(self):
        return (f"<attnc.TorchBlock {self.kernel.name}: {_COPIED_WEIGHTS}>")


# What a from_torch callable's repr says of its weights (issue 52: nothing
# said so, and edits to the module were silently not seen).
_COPIED_WEIGHTS = ("weights copied from the module when from_torch ran "
                   "(later changes to the module are not seen: call "
                   "attnc.from_torch again)")


def _to_float32(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float64:
        return value.to(torch.float32)
    return value


def _to_float64(value):
    if isinstance(value, torch.Tensor) and value.dtype == torch.float32:
        return value.to(torch.float64)
    return value


def _compile_spec(spec, compile_options):
    kernel = _compile(spec.text(), block=spec.name, **compile_options)
    kernel.bind(**spec.params)
    kernel.prepare()
    return _BoundKernel(kernel)


# ---------------------------------------------------------------------------
# D2L MultiHeadAttention and TransformerEncoderBlock.
# ---------------------------------------------------------------------------

def _d2l_weights(m):
    # The projections are compiled around scaled dot-product attention: a
    # MultiHeadAttention built on another scoring (D2L's AdditiveAttention)
    # has the same W_q ... W_o, and is refused here.
    if not _is_d2l_dot_product_attention(m.attention):
        raise NotImplementedError(
            f"attnc.from_torch: MultiHeadAttention.attention is "
            f"{type(m.attention).__name__}; attnc scores by scaled dot "
            "product only (D2L's DotProductAttention: softmax(q k^T / "
            "sqrt(d)), no parameters of its own)")
    w = [m.W_q.weight, m.W_k.weight, m.W_v.weight, m.W_o.weight]
    b = [m.W_q.bias, m.W_k.bias, m.W_v.bias, m.W_o.bias]
    return w, b


def _d2l_lens_input(spec, valid_lens, heads, per_head, B, Tq):
    if valid_lens is None:
        return None
    if valid_lens.dim() not in (1, 2) or valid_lens.shape[0] != B or \
            (valid_lens.dim() == 2 and valid_lens.shape[1] != Tq):
        raise ValueError(
            f"attnc.from_torch: valid_lens must be [{B}] or [{B}, {Tq}], got "
            f"{list(valid_lens.shape)}")
    return spec.input("valid_lens", _lens_shape(valid_lens, heads, per_head),
                      "i32")


def _example_shapes(**examples):
    """The shapes of the example tensors that are given, by name: what
    _check_shapes compares a call's tensors with."""
    return {n: t.shape for n, t in examples.items() if t is not None}


def _check_shapes(given, expected):
    """Refuses a tensor of another shape than its example's, naming the
    module's argument: the kernel's own message would name the kernel's
    input (X for self-attention's queries) and not say why shapes are
    fixed."""
    for name, tensor in given.items():
        if tensor is None or name not in expected:
            continue
        shape = list(getattr(tensor, "shape", ()))
        if shape != list(expected[name]):
            raise ValueError(
                f"attnc.from_torch: {name} has shape {shape}, but this "
                f"callable was compiled for {list(expected[name])}: attnc "
                "kernels have fixed shapes, those of from_torch's example "
                "inputs; call attnc.from_torch again with examples of the "
                "new shape")


def _check_lens_given(valid_lens, lens):
    """Refuses lengths given to a callable compiled without them (`lens` is
    None) or missing from one compiled with them."""
    if (valid_lens is None) == (lens is None):
        return
    if lens:
        raise ValueError(
            "attnc.from_torch: this callable was compiled with "
            "valid_lens (its example inputs had them), so every call "
            "passes them; got None. For calls without lengths, call "
            "attnc.from_torch with valid_lens=None in the examples")
    raise ValueError(
        "attnc.from_torch: this callable was compiled without "
        "valid_lens (its example inputs had None), so no call passes "
        "them. For calls with lengths, call attnc.from_torch with "
        "lengths of their shape in the examples")


def _call_d2l(block, kernel, args, valid_lens, lens, heads, per_head, keys,
              return_weights):
    """A D2L block's call: the lengths as its kernel takes them (`lens`
    names the input, or is None; `keys` is the number of keys), the weights
    kept as D2L keeps them."""
    _check_lens_given(valid_lens, lens)
    if lens:
        args["valid_lens"] = _lens_of(valid_lens, heads, per_head, keys)
    result = kernel(**args)
    if return_weights:
        result, block.attention_weights = result
    return result


def _from_d2l_mha(m, inputs, return_weights, options):
    if len(inputs) != 4:
        raise ValueError(
            "attnc.from_torch: a D2L MultiHeadAttention takes (queries, keys, "
            f"values, valid_lens) as example inputs, got {len(inputs)}")
    queries, keys, values, valid_lens = inputs
    heads = m.num_heads
    w, b = _d2l_weights(m)
    per_head = any(x is not None for x in b)
    spec = _Spec("d2l_mha")
    self_attention = queries is keys and keys is values
    if self_attention:
        q = k = v = spec.input("X", queries.shape)
    else:
        q = spec.input("queries", queries.shape)
        k = spec.input("keys", keys.shape)
        v = spec.input("values", values.shape)
    lens = _d2l_lens_input(spec, valid_lens, heads, per_head,
                           queries.shape[0], queries.shape[1])
    out = _mha(spec, "", q, k, v, heads, w, b, lens, False, return_weights)
    spec.outputs = [out] + (["weights"] if return_weights else [])
    kernel = _compile_spec(spec, options)

    shapes = _example_shapes(queries=queries, keys=keys, values=values,
                             valid_lens=valid_lens)

    def call(block, queries, keys, values, valid_lens):
        _check_shapes({"queries": queries, "keys": keys, "values": values,
                       "valid_lens": valid_lens}, shapes)
        args = {"X": queries} if self_attention else \
            {"queries": queries, "keys": keys, "values": values}
        if self_attention and not (queries is keys and keys is values):
            raise ValueError(
                "attnc.from_torch: compiled for self-attention (the example "
                "passed one tensor as queries, keys and values); pass one "
                "tensor three times")
        return _call_d2l(block, kernel, args, valid_lens, lens, heads,
                         per_head, keys.shape[1], return_weights)

    return TorchBlock(spec, kernel, call)


def _d2l_addnorm(spec, prefix, x, y, addnorm):
    ln = addnorm.ln
    g, bt = _layer_norm_params(spec, prefix, ln)
    out = f"{prefix}out"
    spec.let(out, f"add_norm({x}, {y}, {g}, {bt}, eps={ln.eps!r})")
    return out


def _layer_norm_params(spec, prefix, ln):
    if tuple(ln.normalized_shape) != (ln.normalized_shape[-1],):
        raise NotImplementedError(
            f"attnc.from_torch: LayerNorm over {tuple(ln.normalized_shape)} "
            "(attnc normalizes the last axis only: normalized_shape)")
    d = ln.normalized_shape[-1]
    gamma = ln.weight if ln.weight is not None else torch.ones(d)
    beta = getattr(ln, "bias", None)
    beta = beta if beta is not None else torch.zeros(d)
    return spec.param(f"{prefix}gamma", gamma), spec.param(f"{prefix}beta",
                                                           beta)


def _ffn(spec, prefix, x, dense1, dense2, activation="relu"):
    """The position-wise FFN: the fused `ffn` op for relu, linear ->
    gelu -> linear for "gelu" and "gelu_tanh" (torch's approximate='tanh')."""
    biases = [d.bias if d.bias is not None else torch.zeros(d.weight.shape[0])
              for d in (dense1, dense2)]
    w1 = spec.param(f"{prefix}w1", dense1.weight)
    b1 = spec.param(f"{prefix}b1", biases[0])
    w2 = spec.param(f"{prefix}w2", dense2.weight)
    b2 = spec.param(f"{prefix}b2", biases[1])
    out = f"{prefix}out"
    if activation == "relu":
        spec.let(out, f"ffn({x}, {w1}, {b1}, {w2}, {b2})")
        return out
    approximate = ", approximate=true" if activation == "gelu_tanh" else ""
    spec.let(f"{prefix}hidden", f"linear({x}, {w1}, {b1})")
    spec.let(f"{prefix}act", f"gelu({prefix}hidden{approximate})")
    spec.let(out, f"linear({prefix}act, {w2}, {b2})")
    return out


def _d2l_encoder_block_spec(m, name, X_shape, valid_lens, return_weights):
    """The spec of a D2L TransformerEncoderBlock for X of `X_shape`: its
    _Spec, whether lengths are repeated per head, and the lengths input."""
    if not isinstance(m.ffn.relu, nn.ReLU):
        raise NotImplementedError(
            "attnc.from_torch: ffn.relu is not nn.ReLU")
    heads = m.attention.num_heads
    w, b = _d2l_weights(m.attention)
    per_head = any(x is not None for x in b)
    spec = _Spec(name)
    x = spec.input("X", X_shape)
    lens = _d2l_lens_input(spec, valid_lens, heads, per_head, X_shape[0],
                           X_shape[1])
    a = _mha(spec, "attention_", x, x, x, heads, w, b, lens, False,
             return_weights)
    y = _d2l_addnorm(spec, "addnorm1_", x, a, m.addnorm1)
    f = _ffn(spec, "ffn_", y, m.ffn.dense1, m.ffn.dense2)
    z = _d2l_addnorm(spec, "addnorm2_", y, f, m.addnorm2)
    spec.outputs = [z] + (["attention_weights"] if return_weights else [])
    return spec, per_head, lens


def _from_d2l_encoder_block(m, inputs, return_weights, options):
    if len(inputs) != 2:
        raise ValueError(
            "attnc.from_torch: a D2L TransformerEncoderBlock takes (X, "
            f"valid_lens) as example inputs, got {len(inputs)}")
    X, valid_lens = inputs
    heads = m.attention.num_heads
    spec, per_head, lens = _d2l_encoder_block_spec(
        m, "d2l_encoder_block", X.shape, valid_lens, return_weights)
    kernel = _compile_spec(spec, options)

    shapes = _example_shapes(X=X, valid_lens=valid_lens)

    def call(block, X, valid_lens):
        _check_shapes({"X": X, "valid_lens": valid_lens}, shapes)
        return _call_d2l(block, kernel, {"X": X}, valid_lens, lens, heads,
                         per_head, X.shape[1], return_weights)

    return TorchBlock(spec, kernel, call)


class _SpecFile:
    """Several blocks in one file, the last the kernel (it calls the
    others); its params are the kernel's."""

    def __init__(self, blocks):
        self.blocks = blocks
        self.name = blocks[-1].name
        self.params = blocks[-1].params

    def text(self):
        return "\n".join(b.text() for b in self.blocks)


def _is_d2l_encoder(m):
    return all(hasattr(m, a) for a in
               ("embedding", "pos_encoding", "blks", "num_hiddens")) and \
        isinstance(m.embedding, nn.Embedding) and \
        _is_d2l_positional_encoding(m.pos_encoding) and len(m.blks) > 0 and \
        all(_is_d2l_encoder_block(b) for b in m.blks)


def _from_d2l_encoder(m, inputs, return_weights, options):
    """D2L's TransformerEncoder: embedding * sqrt(num_hiddens), positional
    encoding, then its blocks, as calls of one block (compiled once,
    whatever the number of blocks) with each block's weights."""
    if len(inputs) != 2:
        raise ValueError(
            "attnc.from_torch: a D2L TransformerEncoder takes (X, valid_lens) "
            f"as example inputs (X the token ids), got {len(inputs)}")
    tokens, valid_lens = inputs
    if tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(
            "attnc.from_torch: a D2L TransformerEncoder's X is token ids "
            f"[batch, steps], got {tokens.dtype} {list(tokens.shape)}")
    B, T = tokens.shape
    D = m.num_hiddens
    first = m.blks[0]
    heads = first.attention.num_heads
    callee, per_head, lens = _d2l_encoder_block_spec(
        first, "d2l_encoder_block", (B, T, D), valid_lens, return_weights)
    callee_params = list(callee.params)
    # Each block's spec, for its weights under the callee's param names.
    block_specs = [_d2l_encoder_block_spec(b, "d2l_encoder_block", (B, T, D),
                                           valid_lens, return_weights)
                   for b in m.blks]
    if any(per_block != per_head for _, per_block, _ in block_specs):
        raise NotImplementedError(
            "attnc.from_torch: the blocks of a TransformerEncoder differ in "
            "use_bias")
    caller = _Spec("d2l_encoder")
    x = caller.input("X", (B, T), "i32")
    lens_name = _d2l_lens_input(caller, valid_lens, heads, per_head, B, T)
    table = caller.param("embedding", m.embedding.weight)
    caller.let("embedded", f"scale(embedding({x}, {table}), "
               f"{float(math.sqrt(D))!r})")
    _positional_encoding(caller, "pos_encoding_", "embedded", "H0",
                         m.pos_encoding.P, T)
    weights = []
    for i, (block_spec, _, _) in enumerate(block_specs):
        keywords = []
        for name in callee_params:
            caller.param(f"blks_{i}_{name}", block_spec.params[name])
            keywords.append(f"{name}=blks_{i}_{name}")
        arguments = ", ".join(["H" + str(i)] +
                              ([lens_name] if lens_name else []) + keywords)
        results = f"H{i + 1}" + (f", A{i}" if return_weights else "")
        caller.let(results, f"d2l_encoder_block({arguments})")
        weights.append(f"A{i}")
    caller.outputs = [f"H{len(m.blks)}"] + (weights if return_weights else [])
    spec = _SpecFile([callee, caller])
    kernel = _compile_spec(spec, options)
    shapes = _example_shapes(X=tokens, valid_lens=valid_lens)

    def call(block, X, valid_lens):
        _check_shapes({"X": X, "valid_lens": valid_lens}, shapes)
        _check_lens_given(valid_lens, lens)
        # Token ids as they are: the kernel's reader refuses an id that does
        # not fit in i32 (a .to(int32) wrapped 2**32 + 3 to the id 3).
        args = {"X": X}
        if lens:
            args["valid_lens"] = _lens_of(valid_lens, heads, per_head, T)
        result = kernel(**args)
        if not return_weights:
            return result
        block.attention_weights = list(result[1:])
        return result[0]

    return TorchBlock(spec, kernel, call)


def _is_d2l_positional_encoding(m):
    return isinstance(getattr(m, "P", None), torch.Tensor) and \
        m.P.dim() == 3 and isinstance(getattr(m, "dropout", None), nn.Dropout)


def _sinusoidal_table(max_len, D):
    """D2L's PositionalEncoding table [1, max_len, D], computed as the book
    computes it (float32): what the positional_encoding op adds."""
    P = torch.zeros((1, max_len, D))
    X = torch.arange(max_len, dtype=torch.float32).reshape(-1, 1) / \
        torch.pow(10000, torch.arange(0, D, 2, dtype=torch.float32) / D)
    P[:, :, 0::2] = torch.sin(X)
    P[:, :, 1::2] = torch.cos(X)
    return P


def _is_sinusoidal(P):
    """Whether the table P is D2L's sinusoidal one (base 10000), to the
    rounding of its dtype; a learned table, or one of another base, is not."""
    if P.shape[0] != 1 or P.shape[2] % 2:
        return False
    formula = _sinusoidal_table(P.shape[1], P.shape[2]).to(P.dtype)
    # A sin or cos may differ by an ulp between CPUs; in bf16/f16 that can
    # round to the next value.
    tolerance = 1e-5 if P.dtype in (torch.float32, torch.float64) else \
        torch.finfo(P.dtype).eps
    return bool(((P.detach().cpu().float() - formula.float()).abs() <=
                 tolerance).all())


def _positional_encoding(spec, prefix, x, out, P, T):
    """`out = x + P[:, :T]` (D2L's PositionalEncoding with its table P): the
    positional_encoding op when P is the sinusoidal table the op computes,
    else the table's first T rows as a param. The module's table is read,
    whatever it holds (a learned one, another base)."""
    if T > P.shape[1]:
        raise ValueError(
            f"attnc.from_torch: {T} steps, but the PositionalEncoding's "
            f"table P has {P.shape[1]} rows (its max_len)")
    if _is_sinusoidal(P):
        spec.let(out, f"positional_encoding({x}, max_len={P.shape[1]})")
        return
    table = spec.param(f"{prefix}P", P[:, :T])
    spec.let(out, f"add({x}, {table})")


def _from_d2l_positional_encoding(m, inputs, options):
    if len(inputs) != 1:
        raise ValueError(
            "attnc.from_torch: a D2L PositionalEncoding takes (X,) as example "
            f"inputs, got {len(inputs)}")
    X, = inputs
    if X.dim() != 3 or X.shape[2] != m.P.shape[2]:
        raise ValueError(
            f"attnc.from_torch: PositionalEncoding of {m.P.shape[2]} hiddens "
            f"takes X [batch, steps, {m.P.shape[2]}], got {list(X.shape)}")
    spec = _Spec("d2l_positional_encoding")
    x = spec.input("X", X.shape)
    _positional_encoding(spec, "", x, "Y", m.P, X.shape[1])
    spec.outputs = ["Y"]
    kernel = _compile_spec(spec, options)
    shapes = {"X": X.shape}

    def call(block, X):
        _check_shapes({"X": X}, shapes)
        return kernel(X=X)

    return TorchBlock(spec, kernel, call)


def _is_d2l_dot_product_attention(m):
    return type(m).__name__ == "DotProductAttention" and \
        isinstance(getattr(m, "dropout", None), nn.Dropout) and \
        not any(True for _ in m.parameters())


def _from_d2l_dot_product_attention(m, inputs, return_weights, options):
    if len(inputs) not in (3, 4):
        raise ValueError(
            "attnc.from_torch: a D2L DotProductAttention takes (queries, keys, "
            f"values[, valid_lens]) as example inputs, got {len(inputs)}")
    queries, keys, values = inputs[:3]
    valid_lens = inputs[3] if len(inputs) == 4 else None
    spec = _Spec("d2l_dot_product_attention")
    q = spec.input("queries", queries.shape)
    k = spec.input("keys", keys.shape)
    v = spec.input("values", values.shape)
    lens = _d2l_lens_input(spec, valid_lens, 1, False, queries.shape[0],
                           queries.shape[1])
    masked = f", {lens}" if lens else ""
    if return_weights:
        # D2L keeps the weights: the op's parts, which give them.
        scale = 1.0 / math.sqrt(queries.shape[-1])
        spec.let("scores",
                 f"scale(matmul({q}, {k}, transpose_b=true), {scale!r})")
        spec.let("attention_weights", f"masked_softmax(scores{masked})"
                 if lens else "softmax(scores)")
        spec.let("Y", f"matmul(attention_weights, {v})")
        spec.outputs = ["Y", "attention_weights"]
    else:
        keyword = f", valid_lens={lens}" if lens else ""
        spec.let("Y", f"attention({q}, {k}, {v}{keyword})")
        spec.outputs = ["Y"]
    kernel = _compile_spec(spec, options)
    shapes = _example_shapes(queries=queries, keys=keys, values=values,
                             valid_lens=valid_lens)

    def call(block, queries, keys, values, valid_lens=None):
        _check_shapes({"queries": queries, "keys": keys, "values": values,
                       "valid_lens": valid_lens}, shapes)
        return _call_d2l(block, kernel, {"queries": queries, "keys": keys,
                                         "values": values},
                         valid_lens, lens, 1, False, keys.shape[1],
                         return_weights)

    return TorchBlock(spec, kernel, call)


# ---------------------------------------------------------------------------
# torch.nn.MultiheadAttention and torch.nn.TransformerEncoderLayer.
# ---------------------------------------------------------------------------

def _nn_mha_weights(m):
    for attr in ("bias_k", "bias_v"):
        if getattr(m, attr) is not None:
            raise NotImplementedError(
                f"attnc.from_torch: MultiheadAttention.{attr} is set "
                "(add_bias_kv=True)")
    if m.add_zero_attn:
        raise NotImplementedError(
            "attnc.from_torch: MultiheadAttention.add_zero_attn is True")
    E = m.embed_dim
    if m._qkv_same_embed_dim:
        wq, wk, wv = m.in_proj_weight.split(E)
    else:
        wq, wk, wv = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
    if m.in_proj_bias is not None:
        bq, bk, bv = m.in_proj_bias.split(E)
    else:
        bq = bk = bv = None
    return [wq, wk, wv, m.out_proj.weight], [bq, bk, bv, m.out_proj.bias]


def _padding_lens(mask, B, Tk, name):
    """The lengths a key padding mask ([B, Tk], True: padding) stands for;
    ValueError unless each row masks a suffix."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise NotImplementedError(
            f"attnc.from_torch: {name} of dtype {mask.dtype} (a bool mask "
            "is supported)")
    if tuple(mask.shape) != (B, Tk):
        raise ValueError(
            f"attnc.from_torch: {name} must be [{B}, {Tk}], got "
            f"{list(mask.shape)}")
    lens = (~mask).sum(dim=1)
    expected = torch.arange(Tk, device=mask.device)[None, :] >= lens[:, None]
    if not torch.equal(mask, expected):
        raise ValueError(
            f"attnc.from_torch: {name} must mask a suffix of each row "
            "(attnc masks keys by lengths, as D2L's valid_lens)")
    return lens


def _batch_major(x, batch_first):
    return x if batch_first else x.transpose(0, 1)


class _Variants:
    """Kernels of one module compiled on demand, by the call's settings, in
    the module's float type (from_torch's, kept for the calls after it)."""

    def __init__(self, make):
        self.make = make
        self.dtype = _spec_dtype
        self.kernels = {}

    def get(self, *key):
        if key not in self.kernels:
            global _spec_dtype
            previous, _spec_dtype = _spec_dtype, self.dtype
            try:
                with torch.no_grad():
                    self.kernels[key] = self.make(*key)
            finally:
                _spec_dtype = previous
        return self.kernels[key]


def _nn_mha_spec(m, q_shape, k_shape, v_shape, same, masked, causal,
                 weights):
    """The spec of nn.MultiheadAttention on batch-major shapes."""
    w, b = _nn_mha_weights(m)
    heads = m.num_heads
    per_head = any(x is not None for x in b)
    spec = _Spec("torch_mha")
    if same:
        q = k = v = spec.input("X", q_shape)
    else:
        q = spec.input("query", q_shape)
        k = spec.input("key", k_shape)
        v = spec.input("value", v_shape)
    lens = spec.input("lens", [q_shape[0] * (heads if per_head else 1)],
                      "i32") if masked else None
    out = _mha(spec, "", q, k, v, heads, w, b, lens, causal, weights)
    spec.outputs = [out] + (["weights"] if weights else [])
    return spec, per_head


def _from_nn_mha(m, inputs, return_weights, options):
    if not 3 <= len(inputs) <= 4:
        raise ValueError(
            "attnc.from_torch: nn.MultiheadAttention takes (query, key, "
            "value[, key_padding_mask]) as example inputs, got "
            f"{len(inputs)}")
    query, key, value = (_batch_major(t, m.batch_first) for t in inputs[:3])
    same = inputs[0] is inputs[1] and inputs[1] is inputs[2]
    heads = m.num_heads

    def make(masked, causal, weights):
        spec, per_head = _nn_mha_spec(m, query.shape, key.shape, value.shape,
                                      same, masked, causal, weights)
        return spec, per_head, _compile_spec(spec, options)

    variants = _Variants(make)
    spec, _, kernel = variants.get(len(inputs) == 4 and inputs[3] is not None,
                                   False, True)
    shapes = {"query": inputs[0].shape, "key": inputs[1].shape,
              "value": inputs[2].shape}

    def call(block, query, key, value, key_padding_mask=None,
             need_weights=True, attn_mask=None, average_attn_weights=True,
             is_causal=False):
        _check_shapes({"query": query, "key": key, "value": value}, shapes)
        if attn_mask is not None:
            raise NotImplementedError(
                "attnc.from_torch: attn_mask (attnc masks by key lengths: "
                "key_padding_mask, and causally: is_causal=True)")
        qkv_same = query is key and key is value
        if same and not qkv_same:
            raise ValueError(
                "attnc.from_torch: compiled for self-attention (one tensor "
                "as query, key and value)")
        q, k, v = (_batch_major(t, m.batch_first) for t in (query, key, value))
        B, Tk = k.shape[0], k.shape[1]
        lens = _padding_lens(key_padding_mask, B, Tk, "key_padding_mask")
        _, per_head, kernel = variants.get(lens is not None, bool(is_causal),
                                           bool(need_weights))
        args = {"X": q.contiguous()} if same else {
            "query": q.contiguous(), "key": k.contiguous(),
            "value": v.contiguous()}
        if lens is not None:
            args["lens"] = _lens_of(lens, heads, per_head, Tk)
        result = kernel(**args)
        out, attn = result if need_weights else (result, None)
        out = _batch_major(out, m.batch_first)
        if attn is not None:
            attn = attn.reshape(B, heads, attn.shape[1], attn.shape[2])
            if average_attn_weights:
                attn = attn.mean(dim=1)
        return out, attn

    return TorchBlock(spec, kernel, call)


def _activation(layer):
    """"relu", "gelu" or "gelu_tanh" for a TransformerEncoderLayer's
    activation; NotImplementedError for any other."""
    act = layer.activation
    if act is nn.functional.relu or isinstance(act, nn.ReLU):
        return "relu"
    if act is nn.functional.gelu:
        return "gelu"
    if isinstance(act, nn.GELU):
        return "gelu_tanh" if act.approximate == "tanh" else "gelu"
    raise NotImplementedError(
        f"attnc.from_torch: TransformerEncoderLayer.activation is "
        f"{getattr(act, '__name__', act)!r}; attnc expresses relu and gelu "
        "(nn.ReLU, nn.GELU, F.relu, F.gelu)")


def _encoder_layer_examples(m, inputs):
    """(src, src_key_padding_mask or None) of from_torch's example inputs
    for nn.TransformerEncoderLayer m: (src[, src_key_padding_mask]), or in
    forward's order (src, src_mask, src_key_padding_mask) with src_mask
    None. Anything else is refused, saying which order is taken."""
    src_shape = "[batch, seq, feature]" if m.self_attn.batch_first else \
        "[seq, batch, feature] (batch_first=False)"
    order = ("nn.TransformerEncoderLayer's example inputs are (src,) or "
             "(src, src_key_padding_mask), or forward's order (src, None, "
             f"src_key_padding_mask); src is {src_shape}, "
             "src_key_padding_mask bool [batch, seq] (True: a padding key)")
    if not 1 <= len(inputs) <= 3:
        raise ValueError(f"attnc.from_torch: {order}; got {len(inputs)} "
                         "example inputs")
    src = inputs[0]
    if not isinstance(src, torch.Tensor) or src.dim() != 3 or \
            not src.is_floating_point():
        raise ValueError(f"attnc.from_torch: {order}; the first is not a "
                         "3-D float tensor")
    if len(inputs) == 3 and inputs[1] is not None:
        raise NotImplementedError(
            f"attnc.from_torch: {order}. The second of three is forward's "
            "src_mask, which attnc does not take (it masks by key lengths: "
            "src_key_padding_mask, and causally: is_causal=True)")
    mask = inputs[-1] if len(inputs) > 1 else None
    if mask is None:
        return src, None
    B, T = (src.shape[0], src.shape[1]) if m.self_attn.batch_first else \
        (src.shape[1], src.shape[0])
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or \
            list(mask.shape) != [B, T]:
        what = f"{mask.dtype} {list(mask.shape)}" if \
            isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(
            f"attnc.from_torch: {order}. The mask given, {what}, is no "
            f"src_key_padding_mask for this src (bool [{B}, {T}]); "
            "forward's src_mask is not taken")
    return src, mask


def _from_nn_encoder_layer(m, inputs, return_weights, options):
    example, example_mask = _encoder_layer_examples(m, inputs)
    activation = _activation(m)
    sa = m.self_attn
    batch_first = sa.batch_first
    src = _batch_major(example, batch_first)
    heads = sa.num_heads
    w, b = _nn_mha_weights(sa)
    per_head = any(x is not None for x in b)

    def make(masked, causal):
        spec = _Spec("torch_encoder_layer")
        x = spec.input("X", src.shape)
        lens = spec.input("lens", [src.shape[0] * (heads if per_head else 1)],
                          "i32") if masked else None
        if m.norm_first:
            n1 = "norm1_out"
            g, bt = _layer_norm_params(spec, "norm1_", m.norm1)
            spec.let(n1, f"layer_norm({x}, {g}, {bt}, eps={m.norm1.eps!r})")
            a = _mha(spec, "self_attn_", n1, n1, n1, heads, w, b, lens,
                     causal, False)
            spec.let("residual1", f"add({x}, {a})")
            g, bt = _layer_norm_params(spec, "norm2_", m.norm2)
            spec.let("norm2_out",
                     f"layer_norm(residual1, {g}, {bt}, eps={m.norm2.eps!r})")
            f = _ffn(spec, "ffn_", "norm2_out", m.linear1, m.linear2,
                     activation)
            spec.let("Y", f"add(residual1, {f})")
        else:
            a = _mha(spec, "self_attn_", x, x, x, heads, w, b, lens, causal,
                     False)
            g, bt = _layer_norm_params(spec, "norm1_", m.norm1)
            spec.let("norm1_out",
                     f"add_norm({x}, {a}, {g}, {bt}, eps={m.norm1.eps!r})")
            f = _ffn(spec, "ffn_", "norm1_out", m.linear1, m.linear2,
                     activation)
            g, bt = _layer_norm_params(spec, "norm2_", m.norm2)
            spec.let("Y",
                     f"add_norm(norm1_out, {f}, {g}, {bt}, "
                     f"eps={m.norm2.eps!r})")
        spec.outputs = ["Y"]
        return spec, _compile_spec(spec, options)

    variants = _Variants(make)
    spec, kernel = variants.get(example_mask is not None, False)

    shapes = {"src": example.shape}

    def call(block, src, src_mask=None, src_key_padding_mask=None,
             is_causal=False):
        _check_shapes({"src": src}, shapes)
        if src_mask is not None:
            raise NotImplementedError(
                "attnc.from_torch: src_mask (attnc masks by key lengths: "
                "src_key_padding_mask, and causally: is_causal=True)")
        x = _batch_major(src, batch_first)
        lens = _padding_lens(src_key_padding_mask, x.shape[0], x.shape[1],
                             "src_key_padding_mask")
        _, kernel = variants.get(lens is not None, bool(is_causal))
        args = {"X": x.contiguous()}
        if lens is not None:
            args["lens"] = _lens_of(lens, heads, per_head, x.shape[1])
        return _batch_major(kernel(**args), batch_first)

    return TorchBlock(spec, kernel, call)


def _from_module(module, inputs, return_weights, options):
    """from_torch's block for `module`, or None for a module it does not
    know."""
    block = None
    with torch.no_grad():
        if isinstance(module, nn.TransformerEncoderLayer):
            block = _from_nn_encoder_layer(module, inputs, return_weights,
                                           options)
        elif isinstance(module, nn.MultiheadAttention):
            block = _from_nn_mha(module, inputs, return_weights, options)
        elif _is_d2l_encoder(module):
            block = _from_d2l_encoder(module, inputs, return_weights,
                                      options)
        elif _is_d2l_encoder_block(module):
            block = _from_d2l_encoder_block(module, inputs, return_weights,
                                            options)
        elif _is_d2l_positional_encoding(module):
            block = _from_d2l_positional_encoding(module, inputs, options)
        elif _is_d2l_dot_product_attention(module):
            block = _from_d2l_dot_product_attention(module, inputs,
                                                    return_weights, options)
        elif _is_d2l_mha(module):
            block = _from_d2l_mha(module, inputs, return_weights, options)
    return block


"""from_torch: a module (eval mode) as a callable that computes what it
computes, compiled for its example inputs' shapes.

It picks the builder that reads the module (_hf.py for Hugging Face
transformers blocks, _torch.py for D2L's blocks and torch.nn's), which
writes the .attn spec, compiles it and binds the weights; then it runs the
callable and the module on the example inputs and returns the callable only
if they agree (_check_against_module): a look-alike whose forward computes
something else is refused, not compiled wrong.

This module sits above both builders (_hf.py writes its specs with
_torch.py's pieces): the package's modules import one way only
(tests/python/test_import_cycles.py).
"""

import itertools
import math

import torch
from torch import nn

from . import _hf, _torch


def from_torch(module, example_inputs, return_weights=False,
               cache_length=None, **options):
    """Compiles `module` (eval mode) for the shapes of `example_inputs` (its
    forward's positional arguments) and returns a TorchBlock that computes
    what the module computes: before returning it, it runs both on the
    example inputs and raises ValueError if they differ beyond docs/spec.md
    §7's bar (_check_against_module). The weights are copied: later changes
    to the module are not seen. With return_weights=True, a D2L block's call
    also stores the attention weights ([B*heads, Tq, Tk], D2L's
    attention.attention_weights) in the TorchBlock's .attention_weights.
    With cache_length=L, a Hugging Face GPT2Block or LlamaDecoderLayer
    becomes a DecoderBlock: a layer of decoding with a KV cache of L rows,
    called as block(hidden_states, pos) (attnc/_hf.py).
    `options` go to attnc.compile (mcpu, opt_level, ...)."""
    if not isinstance(module, nn.Module):
        raise TypeError(
            f"attnc.from_torch: expected a torch.nn.Module, got "
            f"{type(module).__name__}")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    inputs = tuple(example_inputs)
    _torch._check_eval(module)
    block = None
    # The float type of the specs the builders write (_torch._Spec reads
    # it): the module's.
    _torch._spec_dtype = _torch._float_type_of(module, inputs)
    try:
        if _hf.is_hf_block(module):
            with torch.no_grad():
                block = _hf.from_hf(module, inputs, return_weights,
                                    cache_length, options)
        elif cache_length is not None:
            raise ValueError(
                f"attnc.from_torch: cache_length is for decoder blocks "
                f"(Hugging Face GPT2Block, LlamaDecoderLayer), not "
                f"{type(module).__name__}")
        else:
            block = _torch._from_module(module, inputs, return_weights,
                                        options)
    finally:
        _torch._spec_dtype = "f32"
    if block is None:
        raise NotImplementedError(
            f"attnc.from_torch: {type(module).__name__} is not a block "
            "attnc knows: D2L's DotProductAttention, MultiHeadAttention, "
            "PositionalEncoding, TransformerEncoderBlock or "
            "TransformerEncoder, nn.MultiheadAttention, "
            "nn.TransformerEncoderLayer, Hugging Face GPT2Block, "
            "LlamaDecoderLayer, BertLayer")
    if not isinstance(block, _hf.DecoderBlock) and \
            any(p.dtype == torch.float64 for p in module.parameters()):
        block.float64 = True
        block.dtype = torch.float64
    _check_against_module(module, inputs, block)
    return block


# The largest difference from_torch allows between a float32 (or float64)
# module and its callable on the example inputs, relative to the output's
# largest magnitude (at least 1): summation order only (the tests compare
# at 1e-5 to 1e-4); a misread module is off by far more.
_F32_TOLERANCE = 1e-4


class _TorchFastPathOff:
    """nn.MultiheadAttention and nn.TransformerEncoderLayer skip their own
    math in eval mode without grad (torch's fast path, which treats padded
    rows its own way): the reference runs the math attnc compiled."""

    def __enter__(self):
        self.enabled = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)

    def __exit__(self, *exc):
        torch.backends.mha.set_fastpath_enabled(self.enabled)


def _tensors(result):
    """A module's or callable's result as a list of tensors."""
    if isinstance(result, torch.Tensor):
        return [result]
    return [t for t in result if isinstance(t, torch.Tensor)]


def _largest_error(got, expected):
    """max |got - expected| as a float64, where `expected` is not NaN (a
    row nn.MultiheadAttention masks entirely is NaN there, uniform in
    attnc: docs/python.md); a NaN in `got` alone counts as infinite."""
    got, expected = got.double(), expected.double()
    keep = ~torch.isnan(expected)
    error = (got - expected)[keep].abs()
    return torch.nan_to_num(error, nan=math.inf).max().item() \
        if error.numel() else 0.0


def _check_against_module(module, inputs, block):
    """Runs the callable and the module on the example inputs and raises
    ValueError when they differ beyond docs/spec.md §7's bar: the float32
    tolerance above, or for bf16/f16 the low-precision bar (no more than
    PyTorch's own error in that dtype against the module in float64, or
    one unit in the last place at the output's largest magnitude).
    from_torch recognizes a module by what it holds; this catches what it
    does differently (its forward) before a wrong callable is returned."""
    forward = _hf.forward_of(module) if _hf.is_hf_block(module) else \
        _forward_of(module)
    dtype = block.dtype
    with torch.no_grad(), _TorchFastPathOff():
        got = _tensors(block._verification_call(inputs)
                       if isinstance(block, _hf.DecoderBlock)
                       else _block_call(module, block, inputs))
        try:
            own = _tensors(forward(module, inputs))
        except RuntimeError:
            # D2L's masked_softmax fills -1e6, which float16 cannot hold:
            # torch cannot run such a module in f16 (attnc masks in f32).
            if dtype != torch.float16:
                raise
            own = None
        if dtype in (torch.bfloat16, torch.float16):
            reference = _tensors(forward(_in_float64(module), tuple(
                t.double() if isinstance(t, torch.Tensor) and
                t.is_floating_point() else t for t in inputs)))
    block.attention_weights = None
    for i, g in enumerate(got):
        if dtype in (torch.bfloat16, torch.float16):
            expected = reference[i]
            mantissa = 7 if dtype == torch.bfloat16 else 10
            largest = expected.abs().nan_to_num(nan=0.0).max().item()
            ulp = 2.0 ** (math.floor(math.log2(largest)) - mantissa) \
                if 0 < largest < math.inf else 0.0
            bar = max(ulp, 0.0 if own is None else
                      _largest_error(own[i], expected))
            what = f"the {_type_name(dtype)} bar of docs/spec.md §7"
        else:
            expected = own[i]
            largest = expected.abs().nan_to_num(nan=0.0).max().item()
            bar = _F32_TOLERANCE * max(1.0, largest)
            what = "f32's, relative to the output's largest magnitude"
        error = _largest_error(g, expected)
        if not error <= bar:
            raise ValueError(
                f"attnc.from_torch: the compiled {type(module).__name__} "
                "does not compute what the module computes on the example "
                f"inputs: output {i} differs by up to {error:.3g} (at most "
                f"{bar:.3g} allowed: {what}). attnc read the module's "
                "attributes and weights as those of the block it names; "
                "its forward computes something else, which attnc cannot "
                "express. Nothing was returned")


def _in_float64(module):
    """`module` computing in float64, the module itself untouched: its
    float parameters and buffers swapped for float64 copies for each call
    (a deepcopy fails on what a D2L module keeps, its attention weights
    with their autograd graph)."""
    wide = {name: t.double() if t.is_floating_point() else t
            for name, t in itertools.chain(module.named_parameters(),
                                           module.named_buffers())}

    def forward(*args, **kwargs):
        return torch.func.functional_call(module, wide, args, kwargs)
    return forward


def _type_name(dtype):
    return {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]


def _forward_of(module):
    """How `module` runs on from_torch's example inputs: a function of the
    module as a callable (itself, or _in_float64 of it) and the inputs."""
    if isinstance(module, nn.TransformerEncoderLayer):
        def forward(run, inputs):
            src, mask = _torch._encoder_layer_examples(module, inputs)
            return run(src, src_key_padding_mask=mask)
        return forward
    return lambda run, inputs: run(*inputs)


def _block_call(module, block, inputs):
    """The callable on from_torch's example inputs, as the module runs."""
    if isinstance(module, nn.TransformerEncoderLayer):
        src, mask = _torch._encoder_layer_examples(module, inputs)
        return block(src, src_key_padding_mask=mask)
    return block(*inputs)

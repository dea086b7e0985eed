"""bf16 and f16 kernels from Python (docs/spec.md §6b, v3): torch
bfloat16/float16 tensors, NumPy float16 and ml_dtypes.bfloat16 arrays in,
the same kind and dtype out, without copies; f32 values rounded only with
cast=True; results the f32 kernel's, rounded once."""

import ml_dtypes
import numpy as np
import pytest
import torch

import attnc

SPEC = """
block lin {
  input X: TYPE[4, 8]
  param W: TYPE[16, 8]
  param b: TYPE[16]
  Y = linear(X, W, b)
  output Y
}
"""


def kernel(dtype):
    return attnc.compile(SPEC.replace("TYPE", dtype))


def inputs(torch_dtype):
    g = torch.Generator().manual_seed(0)
    return {name: torch.randn(*shape, generator=g).to(torch_dtype)
            for name, shape in (("X", (4, 8)), ("W", (16, 8)), ("b", (16,)))}


@pytest.mark.parametrize("dtype,torch_dtype", [("bf16", torch.bfloat16),
                                               ("f16", torch.float16)])
def test_torch_tensors_in_and_out(dtype, torch_dtype):
    k = kernel(dtype)
    args = inputs(torch_dtype)
    y = k(**args)
    assert isinstance(y, torch.Tensor) and y.dtype == torch_dtype
    # The f32 kernel on the same values, rounded once (torch's .to rounds to
    # nearest even, as attnc does).
    y32 = kernel("f32")(**{n: t.float() for n, t in args.items()})
    assert torch.equal(y, y32.to(torch_dtype))


def test_numpy_arrays_in_and_out():
    args = inputs(torch.float32)
    half = kernel("f16")(**{n: t.numpy().astype(np.float16)
                            for n, t in args.items()})
    assert isinstance(half, np.ndarray) and half.dtype == np.float16
    bf16 = kernel("bf16")(**{n: t.numpy().astype(ml_dtypes.bfloat16)
                             for n, t in args.items()})
    assert isinstance(bf16, np.ndarray) and bf16.dtype == ml_dtypes.bfloat16
    expected = kernel("bf16")(**{n: t.to(torch.bfloat16)
                                 for n, t in args.items()})
    assert np.array_equal(bf16.view(np.uint16),
                          expected.view(torch.uint16).numpy())


def test_outputs_are_written_in_place():
    k = kernel("bf16")
    args = {n: t.numpy().astype(ml_dtypes.bfloat16)
            for n, t in inputs(torch.float32).items()}
    out = np.zeros((4, 16), ml_dtypes.bfloat16)
    y = k(**args, out=out)
    assert y is out and np.any(out.view(np.uint16) != 0)
    t = torch.zeros(4, 16, dtype=torch.float16)
    k16 = kernel("f16")
    assert k16(**inputs(torch.float16), out=t) is t and t.abs().sum() > 0


def test_f32_values_are_rounded_only_when_asked():
    k = kernel("bf16")
    args = inputs(torch.float32)
    with pytest.raises(ValueError, match=r"expected bf16\[4, 8\], got "
                       r"float32\[4, 8\] \(pass cast=True to round float32 "
                       r"to bf16\)"):
        k(**args)
    rounded = k(**args, cast=True)
    assert torch.equal(rounded, k(**{n: t.to(torch.bfloat16)
                                     for n, t in args.items()}))


def test_signature_names_the_types():
    assert kernel("bf16").signature[0] == ("X", "input", "bf16", (4, 8))
    assert kernel("f16").signature[-1] == ("Y", "output", "f16", (4, 16))


def test_the_op_under_torch_compile_keeps_the_dtype():
    # The op's fake outputs (what torch.compile traces with) are bf16 too.
    k = kernel("bf16")
    args = inputs(torch.bfloat16)
    k.bind(W=args["W"], b=args["b"])
    op = k.op
    torch.library.opcheck(op, (args["X"],),
                          test_utils=("test_schema", "test_faketensor"))
    compiled = torch.compile(lambda x: op(x) * 2, fullgraph=True)
    with torch.no_grad():
        y = compiled(args["X"])
    assert y.dtype == torch.bfloat16
    assert torch.equal(y, k(X=args["X"]) * 2)

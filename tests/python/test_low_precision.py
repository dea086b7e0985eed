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


STATEFUL = """
block stateful {
  input X: TYPE[4, 8]
  state S: TYPE[4, 8]
  Y = add(X, S)
  output Y
}
"""


@pytest.mark.parametrize("dtype,torch_dtype", [("bf16", torch.bfloat16),
                                               ("f16", torch.float16)])
def test_strided_arrays_are_copied(dtype, torch_dtype):
    # Issue 52, item 13: a strided bf16/f16 tensor (or NumPy float16 array)
    # was refused ("expected bf16[4, 8], got bfloat16[4, 8]") though the
    # docs say strided inputs are copied, as f32 ones are.
    k = kernel(dtype)
    args = inputs(torch_dtype)
    expected = k(**args)
    strided = {"X": args["X"].t().contiguous().t(),       # column-major
               "W": torch.stack([args["W"]] * 2, dim=-1)[..., 0],  # a step
               "b": args["b"]}
    assert not strided["X"].is_contiguous()
    assert not strided["W"].is_contiguous()
    torch.testing.assert_close(k(**strided), expected, rtol=0, atol=0)
    k.bind(W=strided["W"], b=args["b"])  # bind copies params in, too
    torch.testing.assert_close(k(X=strided["X"]), expected, rtol=0, atol=0)
    if dtype == "f16":
        arrays = {n: np.asfortranarray(t.numpy()) for n, t in args.items()}
        np.testing.assert_array_equal(k(**arrays), expected.numpy())
    # A state is the caller's memory, updated in place: never copied.
    s = attnc.compile(STATEFUL.replace("TYPE", dtype))
    with pytest.raises(ValueError, match=r"state 'S' \(\w+\[4, 8\]\) must be "
                       "a C-contiguous CPU array of its dtype, written in "
                       "place"):
        s(X=args["X"], S=args["X"].t().contiguous().t())


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


# from_torch of a module in bf16/f16 (module.to(dtype)) compiles a spec in
# that type, and meets docs/spec.md §7's bar: its largest error against the
# same module in float64 (on the same rounded weights and inputs) is no
# larger than PyTorch's own in that dtype, or one unit in the last place at
# the output's largest magnitude.

def _d2l():
    import make_goldens
    return make_goldens


def _ulp_at(magnitude, torch_dtype):
    mantissa = 7 if torch_dtype == torch.bfloat16 else 10
    return 2.0 ** (np.floor(np.log2(magnitude)) - mantissa)


def _d2l_mha():
    m = _d2l().MultiHeadAttention(32, 4, 0.5).eval()
    x = torch.randn(3, 10, 32)
    lens = torch.tensor([0, 4, 10])  # a length-0 row: uniform, not NaN
    m(x, x, x, lens)  # materialize the lazy layers
    return m, (x, x, x, lens)


def _d2l_encoder_block():
    m = _d2l().TransformerEncoderBlock(32, 64, 4, 0.5).eval()
    x = torch.randn(2, 10, 32)
    lens = torch.tensor([3, 10])
    m(x, lens)
    return m, (x, lens)


def _nn_mha():
    m = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    x = torch.randn(2, 10, 32)
    return m, (x, x, x)


def _nn_encoder_layer():
    m = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64,
                                         dropout=0.0, batch_first=True).eval()
    return m, (torch.randn(2, 10, 32),)


def _first(output):
    return output[0] if isinstance(output, tuple) else output


@pytest.mark.parametrize("make", [_d2l_mha, _d2l_encoder_block, _nn_mha,
                                  _nn_encoder_layer],
                         ids=["d2l_mha", "d2l_encoder_block", "nn_mha",
                              "nn_encoder_layer"])
@pytest.mark.parametrize("torch_dtype", [torch.bfloat16, torch.float16],
                         ids=["bf16", "f16"])
def test_from_torch_of_a_low_precision_module(make, torch_dtype):
    torch.manual_seed(0)
    module, args = make()
    module.to(torch_dtype)
    low = tuple(a.to(torch_dtype) if a.is_floating_point() else a
                for a in args)
    block = attnc.from_torch(module, low)
    type_name = "bf16" if torch_dtype == torch.bfloat16 else "f16"
    assert f"{type_name}[" in block.spec and "f32[" not in block.spec
    with torch.no_grad():
        got = _first(block(*low))
        try:
            own = _first(module(*low))
        except RuntimeError as e:
            # D2L's masked_softmax fills -1e6, which float16 cannot hold:
            # PyTorch cannot run the module in f16 (attnc masks in f32).
            assert "Half without overflow" in str(e)
            own = None
        module.double()
        reference = _first(module(*(a.double() if a.is_floating_point()
                                     else a for a in low)))
    assert got.dtype == torch_dtype and got.shape == reference.shape
    error = (got.double() - reference).abs().max().item()
    torch_error = 0.0 if own is None else \
        (own.double() - reference).abs().max().item()
    bar = max(torch_error, _ulp_at(reference.abs().max().item(), torch_dtype))
    assert error <= bar, (error, torch_error, bar)


def test_from_torch_refuses_a_module_that_mixes_bf16_and_f16():
    m = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
    m.out_proj.to(torch.float16)
    m.in_proj_weight.data = m.in_proj_weight.data.to(torch.bfloat16)
    x = torch.randn(1, 3, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="mixes bfloat16 and float16"):
        attnc.from_torch(m, (x, x, x))

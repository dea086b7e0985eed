"""Kernels as torch operators: eager, opcheck, torch.compile."""

import os

import numpy as np
import torch

import attnc
from conftest import SAMPLES, random_params

MHA = os.path.join(SAMPLES, "d2l_mha.attn")


def bound_kernel(rng):
    k = attnc.compile(MHA)
    k.bind(**random_params(k, rng))
    return k


def test_op_equals_the_kernel(rng):
    k = bound_kernel(rng)
    op = k.op
    assert op is k.op
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    assert torch.equal(op(X, vl), k(X=X, valid_lens=vl))


def test_op_takes_unbound_params(rng):
    k = attnc.compile(MHA)
    params = random_params(k, rng)
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    tensors = [torch.from_numpy(params[n]) for n in ("W_q", "W_k", "W_v", "W_o")]
    assert torch.equal(k.op(X, vl, *tensors),
                       k(X=X, valid_lens=vl, **params))


def test_opcheck(rng):
    k = bound_kernel(rng)
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    torch.library.opcheck(k.op, (X, vl),
                          test_utils=("test_schema", "test_faketensor"))


def test_torch_compile_of_a_module_calling_the_op(rng):
    k = bound_kernel(rng)
    op = k.op

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(100, 100)

        def forward(self, x, valid_lens):
            return self.proj(op(x, valid_lens)).relu()

    block = Block().eval()
    compiled = torch.compile(block, fullgraph=True)
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    with torch.no_grad():
        np.testing.assert_allclose(compiled(X, vl).numpy(),
                                   block(X, vl).numpy(), atol=1e-5)


def test_torch_compile_of_a_module_calling_from_torch():
    # While torch.compile traces, from_torch's callable goes through the
    # kernel's operator, so the whole module is one graph.
    import make_goldens as d2l
    torch.manual_seed(0)
    mha = d2l.MultiHeadAttention(100, 5, 0.5).eval()
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2])
    attention = attnc.from_torch(mha, (X, X, X, vl))

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(100)

        def forward(self, x, valid_lens):
            return self.norm(x + attention(x, x, x, valid_lens))

    encoder = Encoder().eval()
    compiled = torch.compile(encoder, fullgraph=True)
    with torch.no_grad():
        expected = encoder.norm(X + mha(X, X, X, vl))
        np.testing.assert_allclose(compiled(X, vl).numpy(), expected.numpy(),
                                   atol=1e-5)

"""Kernels as torch operators: eager, opcheck, torch.compile."""

import os

import numpy as np
import pytest
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


# ---------------------------------------------------------------------------
# Kernels compute no gradients: a backward through one is an error that
# names it, never a gradient silently dropped (issue 32, item 1); and a
# module calls its kernels the way modules are written, compiled or not
# (item 2).
# ---------------------------------------------------------------------------

NO_GRADIENT = "attnc kernel 'd2l_mha' computes no gradients"


class CallsTheKernel(torch.nn.Module):
    """A projection (which trains) before an attnc block, called as
    self.k(...), self.k.op(...) or a from_torch callable."""

    def __init__(self, how, k=None, block=None):
        super().__init__()
        self.proj = torch.nn.Linear(100, 100)
        self.how, self.k, self.block = how, k, block

    def forward(self, x, valid_lens):
        h = self.proj(x)
        if self.how == "call":
            return self.k(X=h, valid_lens=valid_lens)
        if self.how == "op":
            return self.k.op(h, valid_lens)
        return self.block(h, h, h, valid_lens)


def make_module(how, rng):
    if how == "from_torch":
        import make_goldens as d2l
        torch.manual_seed(0)
        mha = d2l.MultiHeadAttention(100, 5, 0.5).eval()
        X = torch.randn(2, 4, 100)
        vl = torch.tensor([3, 2])
        return CallsTheKernel(how, block=attnc.from_torch(mha, (X, X, X, vl)))
    return CallsTheKernel(how, k=bound_kernel(rng))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("how", ["call", "op", "from_torch"])
def test_a_training_step_through_a_kernel_says_it_has_no_gradient(
        how, compiled, rng):
    module = make_module(how, rng)
    forward = torch.compile(module, fullgraph=True) if compiled else module
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    Y = forward(X, vl)
    # The output is part of the graph (before, k(...) returned a tensor
    # without grad: the projection silently got no gradient).
    assert Y.requires_grad
    loss = Y.square().mean()
    optimizer.zero_grad()
    with pytest.raises(RuntimeError, match=NO_GRADIENT if how != "from_torch"
                       else "attnc kernel 'd2l_mha' computes no gradients"):
        loss.backward()


@pytest.mark.parametrize("how", ["call", "op", "from_torch"])
def test_inference_in_grad_mode_still_runs(how, rng):
    # Grad mode and parameters that require grad are the default in a
    # module: a forward pass without backward gives the kernel's values.
    module = make_module(how, rng)
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    Y = module(X, vl)
    with torch.no_grad():
        expected = module(X, vl)
    assert not expected.requires_grad
    torch.testing.assert_close(Y.detach(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("how", ["call", "op", "from_torch"])
def test_modules_calling_self_k_compile_into_one_graph(how, rng):
    # self.k(...) and self.k.op(...) reached through the module, the op
    # never fetched outside (before: "call to a callable object with no
    # traceable __call__").
    module = make_module(how, rng).eval()
    compiled = torch.compile(module, fullgraph=True)
    X = torch.randn(2, 4, 100)
    vl = torch.tensor([3, 2], dtype=torch.int32)
    with torch.no_grad():
        torch.testing.assert_close(compiled(X, vl), module(X, vl),
                                   rtol=1e-5, atol=1e-5)


DECODE_STEP = """
block step {
  dim B = 2, T = 1, D = 8, L = 4
  input  X: f32[B, T, D]
  input  pos: i32[B]
  state  K: f32[B, L, D]
  state  V: f32[B, L, D]
  param  W: f32[D, D]
  Y = multihead_attention(X, X, X, heads=2, w_q=W, w_k=W, w_v=W, w_o=W,
                          cache_k=K, cache_v=V, cache_pos=pos)
  output Y
}
"""


def test_a_states_operator_declares_it_mutated(rng):
    # A state (a KV cache) is updated in place: the operator's schema says
    # so (Tensor(a!)), so torch.compile keeps the update; a keyword call goes
    # through that operator, never through attnc::run (whose list of
    # tensors cannot say what it mutates).
    k = attnc.compile(DECODE_STEP)
    W = torch.from_numpy(rng.standard_normal((8, 8)).astype(np.float32))
    k.bind(W=W)
    X = torch.from_numpy(rng.standard_normal((2, 1, 8)).astype(np.float32))
    pos = torch.tensor([0, 2], dtype=torch.int32)

    def caches():
        return torch.zeros((2, 4, 8)), torch.zeros((2, 4, 8))

    K, V = caches()
    expected = k(X=X, pos=pos, K=K, V=V)
    assert K[0, 0].abs().sum() > 0 and K[1, 2].abs().sum() > 0
    assert "Tensor(a2!) K, Tensor(a3!) V" in str(k.op._opoverload._schema)
    torch.library.opcheck(k.op, (X, pos, *caches()))

    def step(X, pos, K, V):
        return k(X=X, pos=pos, K=K, V=V) + 1

    K2, V2 = caches()
    y = torch.compile(step, fullgraph=True)(X, pos, K2, V2)
    torch.testing.assert_close(y, expected + 1, rtol=0, atol=0)
    assert torch.equal(K2, K) and torch.equal(V2, V)

    fresh = attnc.compile(DECODE_STEP)
    fresh.bind(W=W)
    with pytest.raises(Exception, match="updates its states \\(K, V\\) in "
                       "place, which torch.compile must be told: make its "
                       "operator outside torch.compile"):
        torch.compile(lambda *a: fresh(X=a[0], pos=a[1], K=a[2], V=a[3]),
                      fullgraph=True)(X, pos, *caches())


def test_a_state_that_cannot_be_updated_in_place_is_an_error_everywhere(rng):
    # Issue 52, item 9: with cast=True, a float64 state was cast to a
    # float32 copy under torch.compile (and in grad mode), the kernel
    # updated the copy and the caller's cache kept nothing, silently.
    k = attnc.compile(DECODE_STEP)
    k.bind(W=torch.from_numpy(rng.standard_normal((8, 8)).astype(np.float32)))
    k.op  # noqa: B018 - made outside torch.compile, as the docs say
    X = torch.from_numpy(rng.standard_normal((2, 1, 8)).astype(np.float32))
    pos = torch.tensor([0, 2], dtype=torch.int32)
    K, V = torch.zeros((2, 4, 8), dtype=torch.float64), \
        torch.zeros((2, 4, 8), dtype=torch.float64)
    message = (r"state 'K' \(f32\[2, 4, 8\]\) must be a C-contiguous CPU "
               "array of its dtype, written in place")

    def step(X, pos, K, V):
        return k(X=X, pos=pos, K=K, V=V, cast=True)

    with pytest.raises(ValueError, match=message):
        step(X, pos, K, V)
    with pytest.raises(ValueError, match=message):
        step(X.clone().requires_grad_(), pos, K, V)  # through the operator
    with pytest.raises(Exception, match=message):
        torch.compile(step, fullgraph=True)(X, pos, K, V)
    assert not K.any() and not V.any()

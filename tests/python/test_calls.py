"""Kernel calls: D2L's results, arrays in and out (views, copies, kinds),
several outputs, attention weights, errors, threads."""

import os
import threading

import numpy as np
import pytest
import torch

import attnc
import make_goldens as d2l
from conftest import SAMPLES, random_params

MHA = os.path.join(SAMPLES, "d2l_mha.attn")

# The book's MultiHeadAttention without positional encoding, with its
# attention weights as a second output.
MHA_WEIGHTS = """
block mha_weights {
  dim B = 2, Tq = 4, Tk = 6, D = 100
  input  Q: f32[B, Tq, D]
  input  KV: f32[B, Tk, D]
  input  valid_lens: i32[B]
  param  W_q: f32[D, D]
  param  W_k: f32[D, D]
  param  W_v: f32[D, D]
  param  W_o: f32[D, D]
  Y, A = multihead_attention(Q, KV, KV, heads=5, w_q=W_q, w_k=W_k, w_v=W_v,
                             w_o=W_o, valid_lens=valid_lens,
                             return_weights=true)
  output Y, A
}
"""


def d2l_mha(params, heads=5, D=100):
    m = d2l.MultiHeadAttention(D, heads, 0.5).eval()
    with torch.no_grad():
        for name in ("W_q", "W_k", "W_v", "W_o"):
            getattr(m, name).weight.copy_(torch.from_numpy(params[name]))
    return m


def d2l_mha_book(X, valid_lens, params):
    """The sample's block: D2L PositionalEncoding, then MultiHeadAttention."""
    pe = d2l.PositionalEncoding(100, 0.5).eval()
    m = d2l_mha(params)
    with torch.no_grad():
        P = pe(torch.from_numpy(X))
        return m(P, P, P, torch.from_numpy(valid_lens)).numpy()


@pytest.fixture
def mha(rng):
    k = attnc.compile(MHA)
    params = random_params(k, rng)
    k.bind(**params)
    return k, params


def test_matches_d2l(mha, rng):
    k, params = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    Y = k(X=X, valid_lens=vl)
    assert isinstance(Y, np.ndarray) and Y.dtype == np.float32
    assert Y.shape == (2, 4, 100)
    np.testing.assert_allclose(Y, d2l_mha_book(X, vl, params), atol=1e-5)


def test_params_passed_per_call(rng):
    k = attnc.compile(MHA)
    params = random_params(k, rng)
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    np.testing.assert_allclose(k(X=X, valid_lens=vl, **params),
                               d2l_mha_book(X, vl, params), atol=1e-5)
    with pytest.raises(ValueError, match="missing param 'W_q'"):
        k(X=X, valid_lens=vl)
    with pytest.raises(ValueError, match="not bound: 'W_q'"):
        k.prepare()
    assert not k.is_bound("W_q")
    assert k.bind(**params) is k
    assert k.is_bound("W_q")
    k.prepare()
    np.testing.assert_allclose(k(X=X, valid_lens=vl),
                               d2l_mha_book(X, vl, params), atol=1e-5)


def test_torch_in_torch_out(mha, rng):
    k, params = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    Y = k(X=torch.from_numpy(X), valid_lens=torch.tensor([3, 2]))
    assert isinstance(Y, torch.Tensor) and Y.dtype == torch.float32
    np.testing.assert_allclose(Y.numpy(), k(X=X, valid_lens=np.array([3, 2])),
                               atol=0)
    # A tensor that requires grad is read through .detach().
    Xg = torch.from_numpy(X).requires_grad_()
    assert torch.equal(k(X=Xg, valid_lens=torch.tensor([3, 2])), Y)


def test_views_are_not_copied(mha, rng):
    k, _ = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    plan = dict((n, (how, address)) for n, how, address in
                k.plan(X=X, valid_lens=vl))
    assert plan["X"] == ("view", X.ctypes.data)
    assert plan["valid_lens"] == ("view", vl.ctypes.data)
    Xt = torch.from_numpy(X)
    vt = torch.tensor([3, 2], dtype=torch.int32)
    plan = dict((n, (how, address)) for n, how, address in
                k.plan(X=Xt, valid_lens=vt))
    assert plan["X"] == ("view", Xt.data_ptr())
    assert plan["valid_lens"] == ("view", vt.data_ptr())


def test_conversions_are_copies(mha, rng):
    k, _ = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    expected = k(X=X, valid_lens=np.array([3, 2], np.int32))
    strided = np.ascontiguousarray(X.transpose(1, 0, 2)).transpose(1, 0, 2)
    fortran = np.asfortranarray(X)
    lens64 = np.array([3, 2], np.int64)
    for x, lens, cast in ((strided, lens64, False), (fortran, lens64, False),
                          (X.astype(np.float64), lens64, True),
                          (torch.from_numpy(X).transpose(0, 1).contiguous()
                           .transpose(0, 1), torch.tensor([3, 2]), False)):
        how = dict((n, h) for n, h, _ in
                   k.plan(X=x, valid_lens=lens, cast=cast))
        assert how == {"X": "copy", "valid_lens": "copy"}
        np.testing.assert_array_equal(
            np.asarray(k(X=x, valid_lens=lens, cast=cast)), expected)


def test_cast_takes_a_bool(mha, rng):
    # cast="no" used to raise RuntimeError('std::bad_cast') (issue 31).
    k, _ = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    for bad, name in (("no", "str"), (1, "int"), (None, "NoneType")):
        with pytest.raises(TypeError,
                           match=f"cast= takes True or False, got {name}"):
            k(X=X, valid_lens=vl, cast=bad)
    np.testing.assert_array_equal(k(X=X, valid_lens=vl, cast=False),
                                  k(X=X, valid_lens=vl))


def test_read_only_arrays_are_inputs_not_outputs(mha, rng):
    # A read-only array used to be refused as "expected a NumPy array ...
    # got ndarray" (issue 31); it is read in place, and out= refuses it.
    k, params = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    expected = k(X=X, valid_lens=vl)
    X.flags.writeable = False
    vl.flags.writeable = False
    plan = dict((n, (how, address)) for n, how, address in
                k.plan(X=X, valid_lens=vl))
    assert plan == {"X": ("view", X.ctypes.data),
                    "valid_lens": ("view", vl.ctypes.data)}
    np.testing.assert_array_equal(k(X=X, valid_lens=vl), expected)
    frozen = {n: w.copy() for n, w in params.items()}
    for w in frozen.values():
        w.flags.writeable = False
    np.testing.assert_array_equal(k(X=X, valid_lens=vl, **frozen), expected)
    Y = np.empty((2, 4, 100), np.float32)
    Y.flags.writeable = False
    with pytest.raises(ValueError,
                       match="out=: output 'Y' is a read-only array"):
        k(X=X, valid_lens=vl, out=Y)


def test_column_major_weight_is_read_right(rng):
    # A Fortran-order weight (ctypes would pass its memory as is) is
    # converted, not misread.
    k = attnc.compile(MHA)
    params = random_params(k, rng)
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    k.bind(**{n: np.asfortranarray(w) for n, w in params.items()})
    np.testing.assert_allclose(k(X=X, valid_lens=vl),
                               d2l_mha_book(X, vl, params), atol=1e-5)


def test_errors_name_the_argument(mha, rng):
    k, _ = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    cases = [
        (dict(X=X[:, :3], valid_lens=vl),
         r"input 'X': expected f32\[2, 4, 100\], got f32\[2, 3, 100\]"),
        (dict(X=X.astype(np.float64), valid_lens=vl),
         r"input 'X': expected f32\[2, 4, 100\], got float64\[2, 4, 100\] "
         r"\(pass cast=True"),
        (dict(X=X.astype(np.float16), valid_lens=vl), "got float16"),
        (dict(X=X, valid_lens=vl.astype(np.float32)),
         r"input 'valid_lens': expected i32\[2\], got float32"),
        (dict(X=X.tolist(), valid_lens=vl),
         "input 'X': expected a NumPy array or a torch tensor"),
        (dict(X=X, valid_lens=vl, Z=X), "has no argument named 'Z'"),
        (dict(X=X), r"missing input 'valid_lens' \(i32\[2\]\)"),
        (dict(X=X, valid_lens=vl, Y=X), "'Y' is an output"),
        (dict(X=X, valid_lens=np.array([3, 2**40])),
         r"input 'valid_lens': value 1099511627776 at \[1\] does not fit"),
        (dict(X=X, valid_lens=vl, W_q=np.zeros((100, 99), np.float32)),
         r"param 'W_q': expected f32\[100, 100\], got f32\[100, 99\]"),
    ]
    for arrays, message in cases:
        with pytest.raises(ValueError, match=message):
            k(**arrays)
    with pytest.raises(ValueError, match="'X' is an input, not a param"):
        k.bind(X=X)


def test_several_outputs_and_attention_weights(rng):
    k = attnc.compile(MHA_WEIGHTS)
    params = random_params(k, rng)
    k.bind(**params)
    Q = rng.standard_normal((2, 4, 100)).astype(np.float32)
    KV = rng.standard_normal((2, 6, 100)).astype(np.float32)
    vl = np.array([3, 0], np.int32)
    result = k(Q=Q, KV=KV, valid_lens=vl)
    assert isinstance(result, tuple) and len(result) == 2
    Y, A = result
    assert A.shape == (10, 4, 6)
    m = d2l_mha(params)
    with torch.no_grad():
        kv = torch.from_numpy(KV)
        expected = m(torch.from_numpy(Q), kv, kv, torch.from_numpy(vl))
    np.testing.assert_allclose(Y, expected.numpy(), atol=1e-5)
    np.testing.assert_allclose(A, m.attention.attention_weights.numpy(),
                               atol=1e-6)
    # valid_len 0: every head of batch entry 1 is uniform, not NaN.
    np.testing.assert_allclose(A[5:], np.full((5, 4, 6), 1 / 6), atol=1e-7)
    np.testing.assert_allclose(A[:5, :, 3:], 0, atol=1e-7)


def test_threads_share_one_kernel(mha, rng):
    k, _ = mha
    inputs = [rng.standard_normal((2, 4, 100)).astype(np.float32)
              for _ in range(8)]
    vl = np.array([4, 1], np.int32)
    expected = [k(X=x, valid_lens=vl) for x in inputs]
    failures = []

    def work(t):
        for i in range(50):
            j = (t + i) % len(inputs)
            if not np.array_equal(k(X=inputs[j], valid_lens=vl), expected[j]):
                failures.append((t, i))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


FFN = """
block wide_ffn {
  input  X: f32[64, 512]
  param  W1: f32[2048, 512]
  param  B1: f32[2048]
  param  W2: f32[512, 2048]
  param  B2: f32[512]
  Y = ffn(X, W1, B1, W2, B2)
  output Y
}
"""


def test_the_gil_is_released_while_a_kernel_runs(rng):
    # With a switch interval far longer than the test, the other thread runs
    # while this one is in Python only if this one releases the GIL: the
    # kernel call is the only place that does. The other thread sleeps after
    # each step (releasing the GIL), so this one gets it back at once. On a
    # loaded machine one call may end before the other thread is scheduled,
    # so the calls repeat until it has run or two seconds have passed.
    import sys
    import time
    k = attnc.compile(FFN)
    k.bind(**random_params(k, rng))
    X = rng.standard_normal((64, 512)).astype(np.float32)
    k(X=X)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1
            time.sleep(0.0005)

    interval = sys.getswitchinterval()
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        while count[0] == 0:
            time.sleep(0.001)
        sys.setswitchinterval(60.0)
        before = count[0]
        deadline = time.monotonic() + 2.0
        calls = 0
        while count[0] == before and time.monotonic() < deadline:
            k(X=X)
            calls += 1
        during = count[0] - before
    finally:
        sys.setswitchinterval(interval)
        stop.set()
        spinner.join()
    assert during > 0, f"no other thread ran during {calls} calls"


def test_out_writes_in_place(mha, rng):
    k, _ = mha
    X = rng.standard_normal((2, 4, 100)).astype(np.float32)
    vl = np.array([3, 2], np.int32)
    expected = k(X=X, valid_lens=vl)
    Y = np.full((2, 4, 100), np.nan, np.float32)
    assert k(X=X, valid_lens=vl, out=Y) is Y
    np.testing.assert_array_equal(Y, expected)
    Yt = torch.empty(2, 4, 100)
    assert k(X=torch.from_numpy(X), valid_lens=vl, out=(Yt,)) is Yt
    np.testing.assert_array_equal(Yt.numpy(), expected)
    with pytest.raises(ValueError, match="has 1 output"):
        k(X=X, valid_lens=vl, out=(Y, Y))
    with pytest.raises(ValueError, match=r"output 'Y' \(f32\[2, 4, 100\]\) "
                       "must be a C-contiguous CPU array"):
        k(X=X, valid_lens=vl, out=np.zeros((100, 4, 2), np.float32).T)
    with pytest.raises(ValueError, match=r"output 'Y': expected "
                       r"f32\[2, 4, 100\], got f32\[2, 4, 99\]"):
        k(X=X, valid_lens=vl, out=np.zeros((2, 4, 99), np.float32))


def test_out_for_several_outputs(rng):
    k = attnc.compile(MHA_WEIGHTS)
    k.bind(**random_params(k, rng))
    Q = rng.standard_normal((2, 4, 100)).astype(np.float32)
    KV = rng.standard_normal((2, 6, 100)).astype(np.float32)
    vl = np.array([3, 0], np.int32)
    Y, A = k(Q=Q, KV=KV, valid_lens=vl)
    out = (np.empty_like(Y), np.empty_like(A))
    result = k(Q=Q, KV=KV, valid_lens=vl, out=out)
    assert result[0] is out[0] and result[1] is out[1]
    np.testing.assert_array_equal(out[0], Y)
    np.testing.assert_array_equal(out[1], A)


STATEFUL = """
block stateful {
  input X: f32[2, 3]
  state S: f32[2, 3]
  Y = add(X, S)
  output Y
}
"""


def test_a_state_is_read_in_place_never_copied(rng):
    # docs/spec.md §6b v3: a state argument is the caller's own memory,
    # which the kernel updates in place: the exact dtype, shape and C
    # order, writable; anything else is a ValueError, never a silent copy.
    k = attnc.compile(STATEFUL)
    assert [(name, role) for name, role, *_ in k.signature] == \
        [("X", "input"), ("S", "state"), ("Y", "output")]
    X = rng.standard_normal((2, 3)).astype(np.float32)
    S = rng.standard_normal((2, 3)).astype(np.float32)
    plan = dict((n, (how, address)) for n, how, address in k.plan(X=X, S=S))
    assert plan["S"] == ("view", S.ctypes.data)
    np.testing.assert_array_equal(k(X=X, S=S), X + S)
    t = torch.from_numpy(S.copy())
    np.testing.assert_array_equal(np.asarray(k(X=X, S=t)), X + S)
    with pytest.raises(ValueError, match="state 'S' .* must be a C-contiguous "
                       "CPU array of its dtype, written in place"):
        k(X=X, S=S.astype(np.float64), cast=True)
    with pytest.raises(ValueError, match="state 'S' .* must be a C-contiguous"):
        k(X=X, S=np.asfortranarray(S))
    frozen = S.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError,
                       match="state 'S' is a read-only array; the kernel "
                             "writes it"):
        k(X=X, S=frozen)
    with pytest.raises(ValueError, match="expected f32\\[2, 3\\]"):
        k(X=X, S=np.zeros((3, 2), np.float32))

"""A random sweep of hostile arguments through Kernel.__call__, bind and
plan: NumPy arrays and torch tensors of every dtype, rank, stride, order,
view bit and device at hand, huge and broadcast shapes, read-only arrays,
aliasing out= arrays, wrong names, non-arrays, cast= values, with threads
rebinding and swapping storage in some runs.

    python fuzz_arguments.py [--runs N] [--seed S] [--threads]

A run passes when every call either raises one of the errors the module
documents (ValueError, TypeError, attnc.Error) or returns exactly what
NumPy computes from the same values; anything else (another exception, a
wrong value) is printed with the seed and run number, and the exit status
is 1. A crash is the process's death (the ctest smoke test and the runner
see its signal). docs/security.md says what is guaranteed; the figures of
long runs are in tests/README.md.
"""

import argparse
import sys
import warnings
import threading
import time

import numpy as np
import torch

import attnc

# relu of one input and a linear with bound params: an i32 argument, two
# outputs, a param to bind.
SPEC = """
block fz {
  input  X: f32[2, 4, 8]
  input  lens: i32[2]
  param  W: f32[8, 8]
  param  b: f32[8]
  Y = relu(X)
  Z = masked_softmax(linear(X, W, b), lens)
  output Y, Z
}
"""

DOCUMENTED = (ValueError, TypeError, attnc.Error)

NP_DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32,
             np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_,
             np.complex64]
TORCH_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
                torch.int8, torch.int16, torch.int32, torch.int64,
                torch.uint8, torch.bool, torch.complex64]


def shape_near(rng, shape):
    """`shape`, or a shape close to it, or a wild one."""
    choice = rng.integers(0, 10)
    if choice < 6:
        return list(shape)
    if choice == 6:
        return [int(rng.integers(0, 6)) for _ in range(rng.integers(0, 4))]
    if choice == 7:
        s = list(shape)
        s[rng.integers(0, len(s))] += int(rng.integers(-1, 2))
        return [max(x, 0) for x in s]
    if choice == 8:
        return list(shape) + [1]
    return list(reversed(shape))


def numpy_array(rng, shape):
    dtype = NP_DTYPES[rng.integers(0, len(NP_DTYPES))] \
        if rng.random() < 0.3 else (np.int32 if len(shape) == 1 else
                                    np.float32)
    values = rng.standard_normal([max(1, x) for x in shape]) * 4
    if rng.random() < 0.05:
        values.flat[0] = [np.nan, np.inf, -np.inf, 3e38, 2**40][
            rng.integers(0, 5)]
    a = values[tuple(slice(0, x) for x in shape)]
    with np.errstate(all="ignore"):
        a = a.astype(dtype)
    kind = rng.integers(0, 8)
    if kind == 1 and a.ndim:
        a = np.asfortranarray(a)
    elif kind == 2 and a.ndim:
        a = a[..., ::-1]
    elif kind == 3 and a.ndim:
        big = np.repeat(a, 2, axis=-1)
        a = big[..., ::2]
    elif kind == 4:
        a = a.copy()
        a.flags.writeable = False
    elif kind == 5 and a.ndim:
        a = np.broadcast_to(a[..., :1], a.shape)
    return a


def torch_tensor(rng, shape):
    dtype = TORCH_DTYPES[rng.integers(0, len(TORCH_DTYPES))] \
        if rng.random() < 0.3 else (torch.int32 if len(shape) == 1 else
                                    torch.float32)
    base = torch.from_numpy(
        rng.standard_normal([max(1, x) for x in shape]).astype(np.float32) * 4)
    t = base[tuple(slice(0, x) for x in shape)]
    t = t.to(dtype) if dtype != torch.complex64 else torch.complex(t, -t)
    kind = rng.integers(0, 12)
    if kind == 1 and t.is_floating_point():
        t = torch._neg_view(t)
    elif kind == 2 and t.is_complex():
        t = t.conj().imag
    elif kind == 3 and t.dim() >= 2:
        t = t.transpose(-1, -2)
    elif kind == 4 and t.dim():
        t = t[..., :1].expand(*t.shape)
    elif kind == 5:
        t = t.to("meta")
    elif kind == 6 and t.is_floating_point():
        t = t.detach().requires_grad_(True)
    elif kind == 7:
        t = torch.ones(1, dtype=t.dtype).expand(2**62, *([1] * max(0, t.dim()
                                                                 - 1)))
    elif kind == 8 and t.dim():
        t = t.flip(-1)
    elif kind == 9:
        t = torch.nn.Parameter(t.float(), requires_grad=False)
    return t


def clean(rng, shape):
    """An argument as the kernel wants it, NumPy or torch."""
    if len(shape) == 1 and shape[0] == 2:  # lens
        a = rng.integers(-2, 11, size=shape).astype(np.int32)
    else:
        a = (rng.standard_normal(shape) * 4).astype(np.float32)
    return a if rng.random() < 0.5 else torch.from_numpy(a)


def argument(rng, shape):
    if rng.random() < 0.7:
        return clean(rng, shape)
    r = rng.random()
    if r < 0.45:
        return numpy_array(rng, shape_near(rng, shape))
    if r < 0.9:
        return torch_tensor(rng, shape_near(rng, shape))
    return [None, 3, "X", [[1.0] * 8] * 4, object(), np.float32(1),
            memoryview(b"0123")][rng.integers(0, 7)]


def expected(X, lens, W, b):
    """What the kernel computes, in NumPy, from the values it was given."""
    def values(a, dtype):
        if isinstance(a, torch.Tensor):
            a = a.detach().resolve_neg().numpy()
        return np.asarray(a, dtype)
    X = values(X, np.float32)
    lens = values(lens, np.int64)
    Y = np.where(np.isnan(X), X, np.maximum(X, 0))
    scores = X.astype(np.float64) @ values(W, np.float64).T + values(b,
                                                                     np.float64)
    keep = np.arange(8)[None, None, :] < lens[:, None, None]
    scores = np.where(keep, scores, -1e6)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return Y, scores / scores.sum(axis=-1, keepdims=True)


def check_result(result, X, lens, W, b):
    Y, Z = result
    with np.errstate(all="ignore"):
        eY, eZ = expected(X, lens, W, b)
    Y = Y.detach().numpy() if isinstance(Y, torch.Tensor) else Y
    Z = Z.detach().numpy() if isinstance(Z, torch.Tensor) else Z
    if not np.array_equal(Y, eY, equal_nan=True):
        raise AssertionError(f"Y differs: {Y} vs {eY}")
    # Z in f32 overflows where NumPy's f64 does not: compared for moderate
    # values only.
    moderate = all(
        np.all(np.abs(np.asarray(
            a.detach().resolve_neg().numpy() if isinstance(a, torch.Tensor)
            else a, np.float64)) < 1e6) for a in (X, W, b))
    if moderate and not np.allclose(Z, eZ, atol=1e-5):
        raise AssertionError(f"Z differs by {np.abs(Z - eZ).max()}")


def one_run(k, rng):
    names = ["X", "lens", "W", "b"]
    shapes = {"X": (2, 4, 8), "lens": (2,), "W": (8, 8), "b": (8,)}
    action = rng.integers(0, 10)
    kwargs = {}
    for name in names:
        if rng.random() < 0.9:
            kwargs[name] = argument(rng, shapes[name])
    if rng.random() < 0.05:
        kwargs[["Y", "Q", "cast", "out"][rng.integers(0, 4)]] = argument(
            rng, (2, 4, 8))
    if rng.random() < 0.2:
        kwargs["cast"] = [True, False, "no", 1, None][rng.integers(0, 5)]
    if action == 0:
        params = {n: v for n, v in kwargs.items() if n in ("W", "b", "cast")}
        k.bind(**params)
        return
    if action == 1:
        k.plan(**kwargs)
        return
    if action <= 3:
        X = kwargs.get("X")
        kind = rng.integers(0, 4)
        if kind == 0 and isinstance(X, (np.ndarray, torch.Tensor)):
            out = (X, np.empty((2, 4, 8), np.float32))  # aliases X
        elif kind == 1:
            Y = np.empty((2, 4, 8), np.float32)
            out = (Y, Y)
        elif kind == 2:
            out = (torch.empty(2, 4, 8), torch.empty(2, 4, 8))
        else:
            out = argument(rng, (2, 4, 8))
        kwargs["out"] = out
    result = k(**kwargs)
    if "cast" in kwargs or "out" in kwargs or not all(
            n in kwargs for n in names):
        return  # converted, or computed with bound params
    check_result(result, kwargs["X"], kwargs["lens"], kwargs["W"],
                 kwargs["b"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", action="store_true",
                        help="also rebind params on another thread")
    args = parser.parse_args()
    # torch warns about what the sweep does on purpose (complex to real,
    # FakeTensor data pointers).
    warnings.simplefilter("ignore")
    k = attnc.compile(SPEC)
    rng = np.random.default_rng(args.seed)
    stop = threading.Event()
    if args.threads:
        def rebind():
            r = np.random.default_rng(args.seed + 1)
            while not stop.is_set():
                try:
                    k.bind(W=r.standard_normal((8, 8)).astype(np.float32),
                           b=r.standard_normal(8).astype(np.float32))
                except DOCUMENTED:
                    pass
        threading.Thread(target=rebind, daemon=True).start()
    findings = 0
    documented = 0
    start = time.monotonic()
    for run in range(args.runs):
        try:
            one_run(k, rng)
        except DOCUMENTED:
            documented += 1
        except AssertionError as e:
            if args.threads:  # params change under the check
                continue
            findings += 1
            print(f"seed {args.seed} run {run}: wrong result: {e}")
        except Exception as e:  # noqa: BLE001 - any other is a finding
            findings += 1
            print(f"seed {args.seed} run {run}: {type(e).__name__}: {e}")
    stop.set()
    elapsed = time.monotonic() - start
    print(f"{args.runs} runs ({documented} refused with a documented error), "
          f"{findings} findings, {elapsed:.1f} s, "
          f"{args.runs / elapsed:.0f} runs/s")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

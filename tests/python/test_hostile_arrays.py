"""Arrays that try to fool or crash a call: storage swapped by another
thread while the GIL is released, tensors without data, byte counts that
overflow, torch's view bits, out= arrays that alias, binds that race with
calls. Each one crashed the interpreter or gave a silently wrong answer
before (docs/security.md, "Python")."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch

import attnc

RELU = """
block relu4x8 {
  input  X: f32[4, 8]
  Y = relu(X)
  output Y
}
"""

TWO_OUTPUTS = """
block two {
  input  X: f32[4, 8]
  Y = relu(X)
  Z = gelu(X)
  output Y, Z
}
"""

# Y = X W^T + b: which (W, b) a call used shows in its result.
LINEAR = """
block lin {
  input  X: f32[16, 64]
  param  W: f32[64, 64]
  param  b: f32[64]
  Y = linear(X, W, b)
  output Y
}
"""


def run_python(script, env=None):
    """Runs `script` in a fresh interpreter; a crash is its exit status."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)],
                          capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.mark.parametrize("role", ["input", "out"])
def test_storage_replaced_during_a_call_is_not_freed(role):
    # Another thread swaps the tensor's storage (X.set_) while the kernel
    # reads or writes it with the GIL released. The call must hold the old
    # storage until it returns; before, the kernel touched freed memory.
    # set_ itself releases the GIL between swapping the storage and the
    # sizes, so the call may also read X torn (old shape, new pointer): it
    # must refuse that (ValueError in the thread), never follow the
    # pointer (under load that crashed in the copy path).
    # With malloc's mmap threshold fixed at 128 KiB, the 16 MiB tensors are
    # unmapped when freed, so a use after free faults (SIGSEGV) rather than
    # reading stale heap memory.
    victim = "X" if role == "input" else "Y"
    result = run_python(f"""
        import threading, torch, attnc
        k = attnc.compile('''
        block big {{
          input  X: f32[2048, 2048]
          Y = relu(X)
          output Y
        }}''')
        for _ in range(8):
            X = torch.randn(2048, 2048)
            Y = torch.empty(2048, 2048)
            started = threading.Event()
            def call():
                started.set()
                k(X=X, out=Y)
            t = threading.Thread(target=call)
            t.start()
            started.wait()
            {victim}.set_(torch.empty(0))
            t.join()
        print("ok")
        """, env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"})
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr


def test_tensors_without_data_are_refused():
    from torch._subclasses.fake_tensor import FakeTensorMode
    k = attnc.compile(RELU)
    with FakeTensorMode():
        fake = torch.ones(4, 8)
    with pytest.raises(ValueError, match="input 'X': the .*FakeTensor has no "
                       "data"):
        k(X=fake)
    with pytest.raises(ValueError, match="input 'X': the torch.Tensor has no "
                       "data"):
        k(X=torch.ones(4, 8, device="meta"))


def test_a_shape_whose_byte_count_overflows_is_refused_before_a_copy():
    k = attnc.compile(RELU)
    with pytest.raises(ValueError, match=r"input 'X': expected f32\[4, 8\], "
                       r"got f32\[4611686018427387904, 1\]"):
        k(X=torch.ones(1).expand(2**62, 1))
    with pytest.raises(ValueError, match=r"expected f32\[4, 8\], got "
                       r"float64\[4611686018427387904, 1\]"):
        k(X=torch.ones(1, dtype=torch.float64).expand(2**62, 1), cast=True)


def test_negative_views_are_read_as_their_values(rng):
    k = attnc.compile(RELU)
    X = torch.from_numpy(rng.standard_normal((4, 8)).astype(np.float32))
    neg = torch._neg_view(X)
    assert neg.is_neg()
    torch.testing.assert_close(k(X=neg), torch.relu(-X), rtol=0, atol=0)
    Z = torch.complex(X, X.flip(0))
    imag = Z.conj().imag  # a negative view of Z's imaginary part
    assert imag.is_neg()
    torch.testing.assert_close(k(X=imag), torch.relu(-X.flip(0)), rtol=0,
                               atol=0)
    with pytest.raises(ValueError, match="must be a C-contiguous CPU array"):
        k(X=X, out=torch._neg_view(torch.empty(4, 8)))

    lin = attnc.compile(LINEAR)
    W = torch.from_numpy(rng.standard_normal((64, 64)).astype(np.float32))
    b = torch.from_numpy(rng.standard_normal(64).astype(np.float32))
    X = torch.from_numpy(rng.standard_normal((16, 64)).astype(np.float32))
    lin.bind(W=torch._neg_view(W), b=b)
    torch.testing.assert_close(lin(X=X), X @ -W.T + b, rtol=1e-5, atol=1e-5)


def test_out_may_not_alias_an_input_or_another_output(rng):
    k = attnc.compile(RELU)
    X = rng.standard_normal((4, 8)).astype(np.float32)
    with pytest.raises(ValueError, match="output 'Y' overlaps input 'X'"):
        k(X=X, out=X)
    big = np.zeros((8, 8), np.float32)
    with pytest.raises(ValueError, match="output 'Y' overlaps input 'X'"):
        k(X=big[:4], out=big[3:7])  # one row shared
    k(X=big[:4], out=big[4:])  # adjacent, apart

    two = attnc.compile(TWO_OUTPUTS)
    Y = np.empty((4, 8), np.float32)
    with pytest.raises(ValueError, match="output 'Y' overlaps output 'Z'"):
        two(X=X, out=(Y, Y))
    Yt = torch.empty(4, 8)
    with pytest.raises(ValueError, match="output 'Y' overlaps output 'Z'"):
        two(X=X, out=(Yt, Yt.view(4, 8)))


def test_bind_is_atomic_for_calls_on_other_threads(rng):
    # Two consistent sets (W1, b1) and (W2, b2); a fourth thread rebinds
    # one set or the other while three threads call. Every result must come
    # from one set; before, a call could see W from one bind and b from the
    # other.
    k = attnc.compile(LINEAR)
    X = np.eye(16, 64, dtype=np.float32)
    sets = [(np.eye(64, dtype=np.float32), np.zeros(64, np.float32)),
            (2 * np.eye(64, dtype=np.float32), np.ones(64, np.float32))]
    expected = [X @ W.T + b for W, b in sets]
    k.bind(W=sets[0][0], b=sets[0][1])
    stop = threading.Event()
    mixed = []
    calls = [0]

    def caller():
        while not stop.is_set():
            Y = k(X=X)
            calls[0] += 1
            if not any(np.array_equal(Y, e) for e in expected):
                mixed.append(Y)

    threads = [threading.Thread(target=caller) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(3000):
        W, b = sets[i % 2]
        k.bind(W=W, b=b)
    stop.set()
    for t in threads:
        t.join()
    assert calls[0] > 0
    assert not mixed, f"{len(mixed)} of {calls[0]} calls mixed two binds"


def test_a_failed_bind_binds_nothing(rng):
    k = attnc.compile(LINEAR)
    W = np.ones((64, 64), np.float32)
    with pytest.raises(ValueError, match=r"param 'b': expected f32\[64\]"):
        k.bind(W=W, b=np.zeros(63, np.float32))
    assert not k.is_bound("W")


def test_a_daemon_thread_inside_a_call_at_exit_does_not_abort():
    # The interpreter exits while daemon threads are inside calls (the GIL
    # released). A thread whose call then ends must not take the GIL back:
    # CPython ends it with pthread_exit, whose unwinding through the
    # module's C++ aborted the process ("FATAL: exception not rethrown"),
    # every time here.
    script = """
        import threading, time, numpy as np, attnc
        k = attnc.compile('''
        block big {
          input  X: f32[2048, 2048]
          Y = relu(X)
          output Y
        }''')
        X = np.ones((2048, 2048), np.float32)
        def loop():
            while True:
                k(X=X)
        for _ in range(2):
            threading.Thread(target=loop, daemon=True).start()
        time.sleep(0.2)
        """
    for _ in range(3):
        result = run_python(script)
        assert result.returncode == 0, result.stderr

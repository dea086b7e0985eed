"""attnc.compile: paths and texts, blocks, options, and their errors."""

import math
import os
import pathlib

import numpy as np
import pytest

import attnc
from conftest import SAMPLES

MHA = os.path.join(SAMPLES, "d2l_mha.attn")

TWO_BLOCKS = """
block first {
  input X: f32[2, 3]
  Y = relu(X)
  output Y
}
block second {
  input X: f32[4]
  Y = scale(X, 2.0)
  output Y
}
"""


def test_compile_path_str_and_pathlike():
    for spec in (MHA, pathlib.Path(MHA)):
        k = attnc.compile(spec)
        assert k.name == "d2l_mha"
        assert k.dims == {"B": 2, "T": 4, "D": 100}


HAND_WRITTEN_IR = os.path.join(os.path.dirname(__file__), "..", "lit",
                               "attnc", "Inputs", "hand-written.mlir")


def test_compile_attn_ir_file(tmp_path):
    # A .mlir path is attn IR: hand-written, or --emit=attn's output.
    k = attnc.compile(HAND_WRITTEN_IR)
    assert k.name == "gelu_plus"
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    b = np.ones((2, 3), np.float32)
    y = k(X=x, B=b)
    ref = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) + b
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @k(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                   "  return %x : tensor<2xf32>\n}\n")
    with pytest.raises(attnc.Error, match=r"bad.mlir:1:\d+.*attn.name"):
        attnc.compile(bad)


def test_signature():
    k = attnc.compile(MHA)
    assert k.signature == [
        ("X", "input", "f32", (2, 4, 100)),
        ("valid_lens", "input", "i32", (2,)),
        ("W_q", "param", "f32", (100, 100)),
        ("W_k", "param", "f32", (100, 100)),
        ("W_v", "param", "f32", (100, 100)),
        ("W_o", "param", "f32", (100, 100)),
        ("Y", "output", "f32", (2, 4, 100)),
    ]


def test_compile_text_and_block():
    assert attnc.compile(TWO_BLOCKS, block="second").name == "second"
    assert attnc.compile(TWO_BLOCKS, "first").signature[0] == (
        "X", "input", "f32", (2, 3))


def test_several_blocks_need_a_name():
    with pytest.raises(attnc.Error, match="first.*second|block"):
        attnc.compile(TWO_BLOCKS)


def test_unknown_block():
    with pytest.raises(attnc.Error, match="third"):
        attnc.compile(TWO_BLOCKS, block="third")


def test_spec_error_has_a_location():
    bad = "block b {\n  input X: f32[2]\n  Y = nosuchop(X)\n  output Y\n}\n"
    with pytest.raises(attnc.Error, match=r"<string>:3:\d+.*nosuchop"):
        attnc.compile(bad)


def test_error_is_a_runtime_error():
    assert issubclass(attnc.Error, RuntimeError)


def test_missing_file():
    with pytest.raises(FileNotFoundError, match="no_such.attn"):
        attnc.compile("no_such.attn")


def test_bad_options():
    with pytest.raises(ValueError, match="unknown target 'tpu'"):
        attnc.compile(MHA, target="tpu")
    with pytest.raises(ValueError, match="opt_level"):
        attnc.compile(MHA, opt_level=7)
    with pytest.raises(ValueError, match="opt_level"):
        attnc.compile(MHA, opt_level="2")
    with pytest.raises(ValueError, match="backend 'tvm'"):
        attnc.compile(MHA, backend="tvm")
    with pytest.raises(ValueError, match="halide_schedule needs"):
        attnc.compile(MHA, halide_schedule="Li2018")
    with pytest.raises(ValueError, match="threads"):
        attnc.compile(MHA, threads=0)
    with pytest.raises(TypeError, match="spec must be"):
        attnc.compile(42)
    with pytest.raises(attnc.Error, match="nosuchcpu"):
        attnc.compile(MHA, mcpu="nosuchcpu")


def test_opt_levels_and_threads():
    for level in range(4):
        assert attnc.compile(MHA, opt_level=level).name == "d2l_mha"
    attnc.compile(MHA, threads=2)
    assert attnc.get_num_threads() == 2
    attnc.set_num_threads(1)
    assert attnc.get_num_threads() == 1


def test_memory_cache():
    attnc.compile(MHA)
    before = attnc.cache_statistics()["memory_hits"]
    attnc.compile(MHA)
    assert attnc.cache_statistics()["memory_hits"] == before + 1
    attnc.clear_memory_cache()
    assert "attnc" in attnc.compiler_version()


def test_version_is_the_projects():
    import importlib.metadata
    assert attnc.__version__ == importlib.metadata.version("attnc")
    assert attnc.compiler_version().startswith(f"attnc {attnc.__version__} ")


@pytest.mark.skipif("halide" not in attnc.BACKENDS,
                    reason="attnc was built without Halide")
def test_halide_backend_matches_mlir():
    rng = np.random.default_rng(0)
    mlir = attnc.compile(MHA)
    args = {}
    for name, role, dtype, shape in mlir.signature:
        if role == "output":
            continue
        args[name] = (rng.integers(0, 5, shape, dtype=np.int32)
                      if dtype == "i32" else
                      rng.uniform(-1, 1, shape).astype(np.float32))
    expected = mlir(**args)
    for schedule in ("attnc", "Li2018"):
        halide = attnc.compile(MHA, backend="halide", halide_schedule=schedule)
        assert halide.signature == mlir.signature
        np.testing.assert_allclose(halide(**args), expected, atol=1e-4,
                                   rtol=1e-4)


@pytest.mark.skipif("halide" not in attnc.BACKENDS,
                    reason="attnc was built without Halide")
def test_halide_backend_errors():
    with pytest.raises(ValueError, match="unknown --halide-schedule 'Adams'"):
        attnc.compile(MHA, backend="halide", halide_schedule="Adams")
    with pytest.raises(ValueError, match="CPU kernels"):
        attnc.compile(MHA, backend="halide", target="nvptx")


def cgroup_cpu_limit():
    """The CPUs cgroup quotas give this process, rounded up, or None: v2's
    cpu.max from its cgroup up to the root, else v1's cfs quota."""
    import math
    try:
        with open("/proc/self/cgroup") as f:
            v2 = [line.strip()[3:] for line in f if line.startswith("0::")]
    except OSError:
        v2 = []
    path, limits, read = "/sys/fs/cgroup" + (v2[0] if v2 else ""), [], False
    while True:
        try:
            with open(os.path.join(path, "cpu.max")) as f:
                quota, period = f.read().split()
            read = True
            if quota != "max":
                limits.append(math.ceil(int(quota) / int(period)))
        except (OSError, ValueError):
            pass
        if not v2 or path.rstrip("/") == "/sys/fs/cgroup":
            break
        path = os.path.dirname(path.rstrip("/"))
    if read:
        return min(limits) if limits else None
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") as f:
            quota = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us") as f:
            period = int(f.read())
    except (OSError, ValueError):
        return None
    return math.ceil(quota / period) if quota > 0 and period > 0 else None


def test_the_thread_default_is_the_cpus_the_process_may_use():
    # One default everywhere (the runtime's pool, attnc run, Python): the
    # CPUs the process may use, a cgroup quota included; before, Python
    # and the C++ runtime used 1 thread while `attnc run` used every core.
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "ATTNC_NUM_THREADS"}
    script = ("import os, attnc; {}print(attnc.get_num_threads(), "
              "len(os.sched_getaffinity(0)))")
    out = subprocess.run([sys.executable, "-c", script.format("")], env=env,
                         capture_output=True, text=True, check=True).stdout
    threads, cpus = map(int, out.split())
    assert threads == min(cpus, cgroup_cpu_limit() or cpus)
    one_cpu = "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}); "
    out = subprocess.run([sys.executable, "-c", script.format(one_cpu)],
                         env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["1", "1"]
    env["ATTNC_NUM_THREADS"] = "3"
    out = subprocess.run([sys.executable, "-c", script.format("")], env=env,
                         capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == "3"


def test_a_kernel_says_what_it_is():
    # It was <attnc._attnc.Kernel object at 0x...>.
    k = attnc.compile("""
block lin {
  input  X: f32[2, 3]
  param  W: f32[4, 3]
  param  b: f32[4]
  Y = linear(X, W, b)
  output Y
}""")
    k.bind(W=np.zeros((4, 3), np.float32))
    assert repr(k) == ("<attnc.Kernel lin(X: f32[2, 3]; params W: f32[4, 3] "
                       "(bound), b: f32[4]) -> Y: f32[2, 4]>")

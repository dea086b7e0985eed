"""show_heatmaps, python -m attnc heatmaps and the figures sample: the
PNGs decode, have the requested size and are not blank; bad arrays and
arguments get one line saying what is wrong, never a traceback."""

import io
import os
import re
import subprocess
import sys

import matplotlib
import matplotlib.image
import numpy as np
import pytest
import torch

import attnc
from conftest import SAMPLES


def check_png(path, width, height):
    image = matplotlib.image.imread(path)
    assert image.shape[:2] == (height, width)
    rgb = image[..., :3]
    # Not blank: more than a handful of colours, and some dark pixels.
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 16
    assert rgb.min() < 0.5


def test_show_heatmaps_grid():
    A = torch.rand(2, 3, 4, 6)
    fig = attnc.show_heatmaps(A, xlabel="Keys", ylabel="Queries",
                              titles=["a", "b", "c"], figsize=(6, 3))
    axes = fig.axes
    assert len(axes) == 2 * 3 + 1  # six heatmaps and the colour bar
    assert [ax.get_title() for ax in axes[:3]] == ["a", "b", "c"]
    assert axes[3].get_xlabel() == "Keys" and axes[0].get_xlabel() == ""
    assert axes[0].get_ylabel() == "Queries" and axes[1].get_ylabel() == ""
    np.testing.assert_array_equal(axes[4].images[0].get_array(), A[1, 1])
    assert tuple(fig.get_size_inches()) == (6, 3)


def test_labels_stay_inside_the_figure():
    # A saved figure kept "Queries" half outside its left edge.
    fig = attnc.show_heatmaps(torch.rand(1, 1, 4, 6), xlabel="Keys",
                              ylabel="Queries")
    fig.canvas.draw()
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    width, height = fig.get_size_inches()
    assert box.x0 >= 0 and box.y0 >= 0
    assert box.x1 <= width and box.y1 <= height


def test_the_cli_sizes_the_figure_to_the_grid(tmp_path):
    # D2L's [10, 4, 6] weights: ten maps in a row (2.5 x 2.5 inches made
    # them unreadable).
    np.save(tmp_path / "A.npy", np.random.default_rng(0).random((10, 4, 6)))
    out = tmp_path / "a.png"
    result = run_cli("heatmaps", str(tmp_path / "A.npy"), "-o", str(out),
                     "--dpi", "50")
    assert result.returncode == 0, result.stderr
    from attnc._heatmaps import grid_figsize
    width, height = grid_figsize(1, 10)
    assert width >= 10 * 1.5
    check_png(out, int(width * 50), int(height * 50))


def test_show_heatmaps_rank():
    with pytest.raises(ValueError, match="rank 2, 3 or 4"):
        attnc.show_heatmaps(np.zeros(5), "x", "y")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "attnc", *args],
                          capture_output=True, text=True, timeout=60)


def test_cli_writes_the_png(tmp_path):
    weights = np.random.default_rng(0).random((10, 4, 6)).astype(np.float32)
    np.save(tmp_path / "A.npy", weights)
    out = tmp_path / "a.png"
    result = run_cli("heatmaps", str(tmp_path / "A.npy"), "-o", str(out),
                     "--rows", "2", "--figsize", "7", "3.5", "--dpi", "80",
                     "--titles", "1", "2", "3", "4", "5")
    assert result.returncode == 0, result.stderr
    check_png(out, 7 * 80, int(3.5 * 80))


def test_cli_errors(tmp_path):
    result = run_cli("heatmaps", str(tmp_path / "missing.npy"), "-o",
                     str(tmp_path / "a.png"))
    assert result.returncode != 0
    assert "cannot read" in result.stderr and "missing.npy" in result.stderr
    np.save(tmp_path / "A.npy", np.zeros((5, 4, 6), np.float32))
    result = run_cli("heatmaps", str(tmp_path / "A.npy"), "-o",
                     str(tmp_path / "a.png"), "--rows", "2")
    assert result.returncode != 0
    assert "5 matrices do not split into 2 rows" in result.stderr
    result = run_cli("heatmaps", str(tmp_path / "A.npy"))
    assert result.returncode != 0 and "-o" in result.stderr


# What a .npy file can hold that is no picture (issue 31): each gets one line
# on stderr and exit status 1, as the CLI's other errors, not a traceback.
BAD_ARRAYS = {
    "complex": (np.ones((3, 4), np.complex64), "dtype complex64"),
    "string": (np.array([["a", "b"], ["c", "d"]]), "dtype <U1"),
    "datetime": (np.zeros((3, 4), "datetime64[s]"), "dtype datetime64[s]"),
    "structured": (np.zeros((3, 4), [("a", "f4"), ("b", "f4")]),
                   "real numbers"),
    "object": (np.array([[1, None], [2, 3]], object), "Object arrays"),
    "1-D": (np.zeros(5), "rank 2, 3 or 4"),
    "scalar": (np.float32(1), "rank 2, 3 or 4"),
    "empty 2-D": (np.zeros((0, 4)), "shape [0, 4] has a dimension of 0"),
    "empty 3-D": (np.zeros((2, 0, 4)), "shape [2, 0, 4] has a dimension"),
    "empty 4-D": (np.zeros((0, 2, 3, 4)), "shape [0, 2, 3, 4] has a dim"),
    # 40000 subplots took minutes; refused before anything is drawn.
    "too many": (np.zeros((200, 200, 2, 2), np.float32),
                 "40000 maps (200 x 200) are too many for one figure: at "
                 "most 100"),
}


def check_cli_error(result, message):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("attnc heatmaps: ")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("name", BAD_ARRAYS)
def test_cli_bad_array(tmp_path, name):
    array, message = BAD_ARRAYS[name]
    np.save(tmp_path / "A.npy", array, allow_pickle=True)
    check_cli_error(run_cli("heatmaps", str(tmp_path / "A.npy"), "-o",
                            str(tmp_path / "a.png")), message)
    assert not (tmp_path / "a.png").exists()


@pytest.mark.parametrize("content, message", [
    (b"attention weights\n", "not a .npy file"),
    (b"", "not a .npy file"),
    (b"PK\x03\x04", "a .npz archive, not a .npy file"),
    (b"\x93NUMPY\x01\x00", "cannot read"),  # cut after the magic
])
def test_cli_not_npy(tmp_path, content, message):
    (tmp_path / "A.npy").write_bytes(content)
    check_cli_error(run_cli("heatmaps", str(tmp_path / "A.npy"), "-o",
                            str(tmp_path / "a.png")), message)


@pytest.mark.parametrize("args, message", [
    (["--cmap", "Redz"], "unknown cmap 'Redz' (did you mean 'Reds'"),
    (["--figsize", "0", "0"], "--figsize 0 0: width and height must be "
     "positive finite inches"),
    (["--figsize", "-1", "2"], "--figsize -1 2: width and height must be"),
    (["--figsize", "nan", "2"], "--figsize nan 2: width and height must be"),
    (["--figsize", "2", "inf"], "--figsize 2 inf: width and height must be"),
    (["--figsize", "0.001", "2"], "is a 0 x 200 pixel image: each side must "
     "be 1 to 65536 pixels"),
    (["--dpi", "0"], "--dpi 0: must be at least 1"),
    (["--figsize", "700", "2", "--dpi", "100"], "is a 70000 x 200 pixel"),
    (["--rows", "0"], "--rows 0: must be at least 1"),
    (["--rows", "-2"], "--rows -2: must be at least 1"),
    (["--rows", "2"], "rows=2 for one matrix"),
    (["-o", "a.xyz"], "cannot write a.xyz: unknown format 'xyz' (png, "),
])
def test_cli_bad_arguments(tmp_path, args, message):
    np.save(tmp_path / "A.npy", np.random.default_rng(0).random((3, 4)))
    if "-o" not in args:
        args = args + ["-o", str(tmp_path / "a.png")]
    check_cli_error(run_cli("heatmaps", str(tmp_path / "A.npy"), *args),
                    message)


def test_cli_nan_and_inf(tmp_path):
    # Drawn: NaN as a blank cell, +-inf at the ends of the colour scale (a
    # matrix all NaN: test_show_heatmaps_accepts).
    weights = np.random.default_rng(0).random((2, 3, 4))
    weights[0, 0, 0] = np.nan
    weights[0, 1, 1] = np.inf
    weights[1, 2, 3] = -np.inf
    weights[1, 0] = np.nan
    np.save(tmp_path / "A.npy", weights)
    result = run_cli("heatmaps", str(tmp_path / "A.npy"), "-o",
                     str(tmp_path / "a.png"), "--figsize", "5", "2.5")
    assert result.returncode == 0, result.stderr
    check_png(tmp_path / "a.png", 500, 250)


@pytest.mark.parametrize("matrices, kwargs, error, message", [
    (np.ones((3, 4), np.complex128), {}, TypeError, "dtype complex128"),
    (np.array([["a", "b"]]), {}, TypeError, "real numbers"),
    (np.array([[1.0, None]], object), {}, TypeError, "dtype object"),
    (torch.ones(2, 2, dtype=torch.complex64), {}, TypeError, "complex64"),
    ([[1, 2], [3]], {}, ValueError, "not an array"),
    (np.zeros((0, 4)), {}, ValueError, "has a dimension of 0"),
    (np.zeros((11, 10, 2, 2)), {}, ValueError, "110 maps (11 x 10) are too "
     "many for one figure: at most 100"),
    (np.zeros((1, 3, 2, 2)), {"titles": ["a"]}, ValueError,
     "1 titles for 3 columns"),
    (np.zeros((2, 2)), {"figsize": (0, 0)}, ValueError, "figsize must be"),
    (np.zeros((2, 2)), {"figsize": (np.nan, 1)}, ValueError, "figsize"),
    (np.zeros((2, 2)), {"figsize": "ab"}, ValueError, "figsize must be"),
    (np.zeros((2, 2)), {"cmap": "nope"}, ValueError, "unknown cmap 'nope'"),
])
def test_show_heatmaps_errors(matrices, kwargs, error, message):
    # Said by show_heatmaps, not by matplotlib from deep inside imshow.
    with pytest.raises(error,
                       match=r"^show_heatmaps: .*" + re.escape(message)):
        attnc.show_heatmaps(matrices, "x", "y", **kwargs)


def test_show_heatmaps_accepts():
    # What drew before still draws: a Colormap object, a figsize with a
    # unit, bool and NaN matrices; and bfloat16 (NumPy has none), as float32.
    fig = attnc.show_heatmaps(np.eye(3, dtype=bool), "x", "y",
                              cmap=matplotlib.colormaps["viridis"],
                              figsize=(5, 5, "cm"))
    assert fig.get_size_inches()[0] == pytest.approx(5 / 2.54)
    fig = attnc.show_heatmaps(np.full((2, 2), np.nan), "x", "y")
    fig.savefig(io.BytesIO(), format="png")
    A = torch.rand(2, 3, dtype=torch.bfloat16)
    fig = attnc.show_heatmaps(A, "x", "y")
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(),
                                  A.float().numpy())


def test_figures_sample(tmp_path):
    script = os.path.join(SAMPLES, "python", "d2l_figures.py")
    result = subprocess.run([sys.executable, script, "--output-dir",
                             str(tmp_path), "--dpi", "100"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    check_png(tmp_path / "pe_columns.png", 600, 250)
    check_png(tmp_path / "pe_heatmap.png", 350, 400)
    check_png(tmp_path / "mha_weights.png", 700, 350)


def test_bf16_weights_are_drawn(tmp_path):
    # Issue 52, item 12: ml_dtypes' bfloat16, and the '|V2' array np.load
    # gives for a saved one (attnc run writes bf16 outputs so), were refused
    # ("cannot draw matrices of dtype bfloat16").
    import ml_dtypes
    A = np.random.default_rng(0).random((2, 4, 6)).astype(ml_dtypes.bfloat16)
    fig = attnc.show_heatmaps(A, xlabel="Keys", ylabel="Queries")
    np.testing.assert_array_equal(fig.axes[1].images[0].get_array(),
                                  A[1].astype(np.float32))
    np.save(tmp_path / "A.npy", A)
    assert np.load(tmp_path / "A.npy").dtype.str == "|V2"
    out = tmp_path / "a.png"
    result = run_cli("heatmaps", str(tmp_path / "A.npy"), "-o", str(out),
                     "--dpi", "50")
    assert result.returncode == 0, result.stderr
    from attnc._heatmaps import grid_figsize
    width, height = grid_figsize(1, 2)
    check_png(out, int(width * 50), int(height * 50))

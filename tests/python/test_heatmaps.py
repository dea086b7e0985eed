"""show_heatmaps, python -m attnc heatmaps and the figures sample: the
PNGs decode, have the requested size and are not blank."""

import os
import subprocess
import sys

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


def test_show_heatmaps_rank():
    with pytest.raises(ValueError, match="rank 2, 3 or 4"):
        attnc.show_heatmaps(np.zeros(5), "x", "y")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "attnc", *args],
                          capture_output=True, text=True)


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


def test_figures_sample(tmp_path):
    script = os.path.join(SAMPLES, "python", "d2l_figures.py")
    result = subprocess.run([sys.executable, script, "--output-dir",
                             str(tmp_path), "--dpi", "100"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    check_png(tmp_path / "pe_columns.png", 600, 250)
    check_png(tmp_path / "pe_heatmap.png", 350, 400)
    check_png(tmp_path / "mha_weights.png", 700, 350)

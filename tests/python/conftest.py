"""Shared by the pytest suite of the Python module (run by ctest after the
module is installed into the venv: tests/python/CMakeLists.txt)."""

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLES = os.path.join(ROOT, "samples")

# The D2L code the goldens are made with (written from the book).
sys.path.insert(0, os.path.join(ROOT, "tests", "data"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def random_params(kernel, rng, scale=0.1):
    return {name: (rng.standard_normal(shape) * scale).astype(np.float32)
            for name, role, _, shape in kernel.signature if role == "param"}

#!/usr/bin/python3
"""Writes the tiny .npy fixtures of the Npy reader tests (tests/unit/Runtime).

Run with a Python that has NumPy (Debian: /usr/bin/python3):
    /usr/bin/python3 tests/data/npy/make_fixtures.py
Deterministic: rerunning it rewrites the same bytes.
"""
import os

import numpy as np
from numpy.lib import format as npformat

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, arr, version=None):
    with open(os.path.join(HERE, name), "wb") as f:
        npformat.write_array(f, arr, version=version, allow_pickle=False)


def main():
    f32 = np.array([[0.5, -1.25, 3.0], [1e-8, -0.0, 65504.0]], dtype="<f4")
    save("f32_2x3.npy", f32)
    save("i32_vec.npy", np.array([3, -2, 2147483647, -2147483648], "<i4"))
    save("i64_vec.npy", np.array([3, 2, 0, 1], dtype="<i8"))
    save("i64_big.npy", np.array([1, 2, 2**31, 4], dtype="<i8"))
    save("f32_scalar.npy", np.array(2.5, dtype="<f4"))
    save("f32_empty.npy", np.zeros((0, 3), dtype="<f4"))
    save("f32_rank4.npy", np.arange(2 * 1 * 3 * 2, dtype="<f4").reshape(2, 1, 3, 2))
    save("v2_f32.npy", f32, version=(2, 0))
    save("v3_i32.npy", np.array([[1, 2], [3, 4]], dtype="<i4"), version=(3, 0))
    save("fortran_f32.npy", np.asfortranarray(f32))
    save("big_endian_f32.npy", f32.astype(">f4"))
    save("f8.npy", f32.astype("<f8"))
    save("bool.npy", np.array([True, False]))
    save("unicode.npy", np.array(["abc", "de"], dtype="<U3"))
    with open(os.path.join(HERE, "f32_2x3.npy"), "rb") as f:
        good = f.read()
    with open(os.path.join(HERE, "truncated_f32.npy"), "wb") as f:
        f.write(good[:-5])


if __name__ == "__main__":
    main()

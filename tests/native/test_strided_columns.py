"""The stride-2 columns loop (native/strided_columns.py) against the op table's im2col, over geometries
hypothesis draws: kernels, row strides, padding wider than a window, dilation, bands of output rows,
several images' columns side by side; and its masked loads never reading past the input."""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scriptc.native import im2col, strided_columns
from scriptc.native.geometry import conv_geometry
from scriptc.native.loops import loop_function
from scriptc.native.pointers import data_pointer
from scriptc.ops import linalg

from .guard import flush_against_a_guard_page


def _columns(x: np.ndarray, kernel: tuple, geometry, band: tuple, images: int) -> np.ndarray:
    """The loop's columns of x's one image (C, H, W) for the output rows `band`, in rows as wide as
    `images` images' side by side (the first image's part returned)."""
    sh, sw, ph, pw, dh, dw, oh, ow = geometry
    c, h, w = x.shape
    width = (band[1] - band[0]) * ow
    columns = np.full((c * kernel[0] * kernel[1], width * images), np.nan, x.dtype)
    words = im2col.conv2d_meta(h, w, *kernel, oh, ow, sh, sw, dh, dw, ph, pw, band, width * images)
    loop = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
        loop_function("strided_columns", x.dtype.name))
    ptrs = (ctypes.c_void_p * 2)(data_pointer(x), data_pointer(columns))
    loop(0, c, ptrs, (ctypes.c_int64 * len(words))(*words))
    assert np.isnan(columns[:, width:]).all()  # (the other images' places untouched)
    return columns[:, :width]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(0, 3), st.integers(0, 3),
       st.integers(1, 2), st.integers(1, 2), st.integers(1, 12), st.sampled_from([np.float32, np.float64]),
       st.integers(1, 3), st.data())
def test_the_columns_are_im2col_s(kh, kw, sh, ph, pw, dh, dw, height, dtype, images, data):
    """Every geometry the loop takes (stride 2 across, rows of half a vector of outputs to three
    vectors), its input rows as long as the outputs need or one longer."""
    lanes = 64 // np.dtype(dtype).itemsize
    ow = data.draw(st.integers(lanes // 2, 3 * lanes + 1))
    width = 2 * (ow - 1) + dw * (kw - 1) + 1 - 2 * pw + data.draw(st.integers(0, 1))
    assume(width >= 1 and height + 2 * ph >= dh * (kh - 1) + 1)
    x = np.random.default_rng(width * height).standard_normal((3, height, width)).astype(dtype)
    w = np.zeros((1, 3, kh, kw), dtype)
    geometry = conv_geometry((1, *x.shape), w.shape, [sh, 2], [ph, pw], [dh, dw], 1)
    oh = geometry[-2]
    assert geometry[-1] == ow and strided_columns.takes(np.dtype(dtype).name, 2, ow)
    first = data.draw(st.integers(0, oh - 1))
    band = (first, data.draw(st.integers(first + 1, oh)))
    expected = linalg._im2col(np, x[None], w, *geometry, 1)[0, 0][:, band[0] * ow:band[1] * ow]
    np.testing.assert_array_equal(_columns(x, (kh, kw), geometry, band, images), expected)


def test_it_takes_stride_2_rows_of_half_a_vector_or_more():
    assert strided_columns.takes("float32", 2, 8) and strided_columns.takes("float32", 2, 33)
    assert not strided_columns.takes("float32", 2, 4) and not strided_columns.takes("float32", 2, 7)
    assert not strided_columns.takes("float32", 1, 8) and not strided_columns.takes("float32", 3, 8)
    assert strided_columns.takes("float64", 2, 4) and not strided_columns.takes("float64", 2, 3)


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_it_reads_nothing_past_the_input(dtype):
    """Windows ending on the image's last column or one past it, the last row the input's last bytes."""
    rng = np.random.default_rng(1)
    checked = 0
    for width in range(15, 70):
        for kw, pw in ((1, 0), (3, 1), (4, 1), (2, 0)):
            values = rng.standard_normal((2, 3, width)).astype(dtype)
            x, unprotect = flush_against_a_guard_page(values)
            try:
                w = np.zeros((1, 2, 3, kw), dtype)
                geometry = conv_geometry((1, *x.shape), w.shape, [1, 2], [1, pw], [1, 1], 1)
                if geometry is None or not strided_columns.takes(np.dtype(dtype).name, 2, geometry[-1]):
                    continue
                expected = linalg._im2col(np, values[None], w, *geometry, 1)[0, 0]
                np.testing.assert_array_equal(_columns(x, (3, kw), geometry, (0, geometry[-2]), 1), expected)
                checked += 1
            finally:
                del x
                unprotect()
    assert checked >= 8


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", [2, 3, 4, 5])
def test_adjacent_taps_in_pairs_match_im2col(dtype, kw):
    """Taps read in pairs from one load (dilation 1 across), an odd kernel width's last alone; rows of
    half a vector of outputs, of a whole one (one tap a load) and longer than a vector, in a band."""
    lanes = 64 // np.dtype(dtype).itemsize
    rng = np.random.default_rng(kw)
    for ow in (lanes // 2, lanes, lanes + 1, 2 * lanes + 1):
        x = rng.standard_normal((2, 7, 2 * ow + kw - 3)).astype(dtype)
        w = np.zeros((1, 2, 3, kw), dtype)
        geometry = conv_geometry((1, *x.shape), w.shape, [2, 2], [1, 1], [1, 1], 1)
        assert geometry[-1] == ow
        expected = linalg._im2col(np, x[None], w, *geometry, 1)[0, 0]
        band = (1, geometry[-2])
        np.testing.assert_array_equal(_columns(x, (3, kw), geometry, band, 2),
                                      expected[:, band[0] * ow:band[1] * ow])

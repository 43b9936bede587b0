"""The compiled pooling (native/pool.py) and depthwise convolution (native/depthwise.py,
native/blocked_depthwise.py) loops against the op table's kernels, over geometries hypothesis draws:
strides, padding, dilation, ceil_mode, NaNs."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scriptc import ops
from scriptc.codegen.llvm.driver import KERNEL_TYPE
from scriptc.native import blocked_depthwise, blocked_pool
from scriptc.native.geometry import conv_geometry, pool_geometry
from scriptc.native.heads import epilogue, native_depthwise
from scriptc.native.loops import loop_function
from scriptc.native.pointers import data_pointer
from scriptc.native.opaque import native_kernel

geometry = st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3),
                     st.integers(0, 2), st.integers(0, 2), st.integers(1, 2), st.integers(1, 2), st.booleans())


def _args(kh, kw, sh, sw, ph, pw, dh, dw):
    return [kh, kw], [sh, sw], [min(ph, kh // 2), min(pw, kw // 2)], [dh, dw]


@settings(max_examples=60, deadline=None)
@given(geometry, st.sampled_from([np.float32, np.float64]), st.booleans(), st.integers(0, 2 ** 31 - 1),
       st.sampled_from([(9, 8), (4, 35)]))
def test_pooling_matches_the_op_table(shape, dtype, nan, seed, image):
    """Short rows and strided ones (a vector of outputs at a time, gathered) and long rows at stride 1
    (output by output)."""
    kh, kw, sh, sw, ph, pw, dh, dw, ceil_mode = shape
    kernel_size, stride, padding, dilation = _args(kh, kw, sh, sw, ph, pw, dh, dw)
    x = np.random.default_rng(seed).standard_normal((2, 3, *image)).astype(dtype)
    if nan:
        x[1, 2, 3, 3] = np.nan
    op = ops.OPS["max_pool2d"]
    try:
        expected = op.kernel(np, x, kernel_size, stride, padding, dilation, ceil_mode)[0]
    except (RuntimeError, ValueError) as exc:  # the same error, with the same words
        with pytest.raises(type(exc), match=str(exc)[:30].replace("(", r"\(").replace(")", r"\)")):
            native_kernel(op)(np, x, kernel_size, stride, padding, dilation, ceil_mode)
        return
    np.testing.assert_array_equal(native_kernel(op)(np, x, kernel_size, stride, padding, dilation, ceil_mode)[0],
                                  expected)
    average = ops.OPS["avg_pool2d"]
    for include_pad, divisor in ((True, None), (False, None), (True, 5)):
        args = (kernel_size, stride, padding, ceil_mode, include_pad, divisor)
        np.testing.assert_allclose(native_kernel(average)(np, x, *args), average.kernel(np, x, *args),
                                   rtol=1e-5, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(geometry, st.sampled_from([np.float32, np.float64]), st.booleans(), st.booleans(), st.integers(0, 2 ** 31 - 1),
       st.sampled_from([(9, 10), (4, 37), (2, 3)]))
def test_depthwise_convolution_matches_the_op_table(shape, dtype, bias, floor, seed, image):
    """Rows of a few outputs and strided ones (a vector of the plane's outputs at a time, gathered)
    and long rows at stride 1 (a row at a time)."""
    kh, kw, sh, sw, ph, pw, dh, dw, _ = shape
    rng = np.random.default_rng(seed)
    if (image[0] + 2 * ph - dh * (kh - 1) < 1) or (image[1] + 2 * pw - dw * (kw - 1) < 1):
        image = (9, 10)  # (the window does not fit)
    x = rng.standard_normal((2, 5, *image)).astype(dtype)
    x[0, 1, image[0] // 2, image[1] // 2] = np.nan
    w = rng.standard_normal((5, 1, kh, kw)).astype(dtype)
    b = rng.standard_normal(5).astype(dtype) if bias else None
    stride, padding, dilation = [sh, sw], [ph, pw], [dh, dw]
    expected = ops.OPS["conv2d"].kernel(np, x, w, b, stride, padding, dilation, 5)
    if floor:
        expected = np.maximum(expected, 0.0)
    got = native_depthwise(np, x, w, b, stride, padding, dilation, 5, 0.0 if floor else None)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_depthwise_refuses_what_it_does_not_run():
    x, w = np.ones((1, 4, 5, 5), np.float32), np.ones((4, 1, 3, 3), np.float32)
    assert native_depthwise(np, x, w, None, 1, 0, 1, 2) is None  # not depthwise
    assert native_depthwise(np, x.astype(np.int64), w.astype(np.int64), None, 1, 0, 1, 4) is None
    assert native_depthwise(np, x[0], w, None, 1, 0, 1, 4) is None  # unbatched: the op table's


def test_a_window_of_many_taps_over_a_small_output_matches_the_op_table():
    """A global pool (one output a plane, 81 taps) goes output by output, not a lane at a time."""
    x = np.random.default_rng(4).standard_normal((2, 3, 9, 9)).astype(np.float32)
    average, largest = ops.OPS["avg_pool2d"], ops.OPS["max_pool2d"]
    args = ([9, 9], [9, 9], [0, 0], False, True, None)
    np.testing.assert_allclose(native_kernel(average)(np, x, *args), average.kernel(np, x, *args), rtol=1e-5)
    np.testing.assert_array_equal(native_kernel(largest)(np, x, [9, 9], [1, 1], [0, 0], [1, 1], False)[0],
                                  largest.kernel(np, x, [9, 9], [1, 1], [0, 0], [1, 1], False)[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image, kernel, stride, padding, dilation", [
    ((13, 12), 3, 1, 1, 1),   # a plane keeping its size: vectors across rows, masked loads
    ((6, 7), (3, 5), 1, (1, 2), 1),
    ((11, 41), 3, 2, 1, 1),   # long rows at stride 2: a vector of a row at a time (two loads, the even lanes)
    ((7, 37), (2, 3), (1, 2), 0, (1, 2)),
    ((9, 40), 3, 1, 0, 2),    # long rows at stride 1, no padding
    ((5, 9), 3, 3, 1, 1),     # stride 3: gathered
])
def test_each_way_through_a_plane_matches_the_op_table(dtype, image, kernel, stride, padding, dilation):
    """Depthwise convolution and both poolings on planes each way of windows.Gathered takes, a
    non-contiguous input (made contiguous by the caller, as the op table's kernel reads it) and a NaN."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 6, image[1], image[0])).astype(dtype).transpose(0, 1, 3, 2)
    x[1, 4, image[0] // 2, 1] = np.nan
    pair = (lambda v: [v, v] if isinstance(v, int) else list(v))
    k, s, p, d = pair(kernel), pair(stride), pair(padding), pair(dilation)
    w = rng.standard_normal((6, 1, *k)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    expected = np.maximum(ops.OPS["conv2d"].kernel(np, x, w, b, s, p, d, 6), 0.0)
    got = native_depthwise(np, np.ascontiguousarray(x), w, b, s, p, d, 6, 0.0)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
    largest, average = ops.OPS["max_pool2d"], ops.OPS["avg_pool2d"]
    if min(p[0], p[1]) * 2 <= min(k) and d == [1, 1]:
        np.testing.assert_array_equal(native_kernel(largest)(np, x, k, s, p, d, False)[0],
                                      largest.kernel(np, x, k, s, p, d, False)[0])
        args = (k, s, p, False, False, None)
        np.testing.assert_allclose(native_kernel(average)(np, x, *args), average.kernel(np, x, *args), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image, kernel, stride, padding, ceil_mode", [
    ((31, 31), 3, 2, 0, True),    # SqueezeNet's first pool: the last window hangs past the image
    ((12, 40), 3, 2, 1, False),   # padding: the first output row's window starts above the image
    ((9, 45), 2, 1, 0, False),    # rows a vector and a part long, a window row shared at stride 1
    ((10, 60), (3, 2), (2, 1), 0, True),
    ((1, 600), 3, 2, 1, False),   # one output row, one window row inside: each vector's own taps
])
def test_max_pools_whose_windows_share_a_row_match_the_op_table(dtype, image, kernel, stride, padding, ceil_mode):
    """Max pools of windows one row taller than their stride, over rows of a vector or more and planes
    too large for blocked_pool.py (windows.py rows(): each window row's taps combined once and taken
    again by the next output row), with NaNs on a shared row and on one that is not."""
    assert not blocked_pool.takes(pool_geometry((2, 5, *image), kernel, stride, padding, 1, ceil_mode))
    x = np.random.default_rng(11).standard_normal((2, 5, *image)).astype(dtype)
    x[0, 1, image[0] // 2, 7] = x[1, 3, image[0] - 1, 20] = np.nan
    pair = (lambda v: [v, v] if isinstance(v, int) else list(v))
    args = (pair(kernel), pair(stride), pair(padding), [1, 1], ceil_mode)
    largest = ops.OPS["max_pool2d"]
    np.testing.assert_array_equal(native_kernel(largest)(np, x, *args)[0], largest.kernel(np, x, *args)[0])


@settings(max_examples=40, deadline=None)
@given(geometry, st.sampled_from([np.float32, np.float64]), st.integers(0, 2), st.integers(1, 40),
       st.integers(1, 3), st.integers(0, 2 ** 31 - 1), st.sampled_from([(1, 1), (2, 2), (4, 4), (5, 3), (9, 10)]))
def test_blocked_depthwise_matches_the_op_table(shape, dtype, mode, channels, batch, seed, image):
    """The loop by blocks of channels (blocked_depthwise.py) on any geometry it fits, whatever
    takes() picks: channel counts past and short of a block, every epilogue (none, a floor, a floor
    and a ceiling), NaN."""
    kh, kw, sh, sw, ph, pw, dh, dw, _ = shape
    if (image[0] + 2 * ph - dh * (kh - 1) < 1) or (image[1] + 2 * pw - dw * (kw - 1) < 1):
        image = (9, 10)  # (the window does not fit)
    rng = np.random.default_rng(seed)
    x = (3 * rng.standard_normal((batch, channels, *image))).astype(dtype)
    x[0, channels // 2, image[0] // 2, image[1] // 2] = np.nan
    w = rng.standard_normal((channels, 1, kh, kw)).astype(dtype)
    b = rng.standard_normal(channels).astype(dtype)
    geometry = conv_geometry(x.shape, w.shape, [sh, sw], [ph, pw], [dh, dw], channels)
    oh, ow = geometry[-2:]
    expected = ops.OPS["conv2d"].kernel(np, x, w, b, [sh, sw], [ph, pw], [dh, dw], channels)
    floor, ceiling = (None, None) if mode == 0 else (-0.5, None) if mode == 1 else (-0.5, 1.5)
    if floor is not None:
        expected = np.maximum(expected, floor)
    if ceiling is not None:
        expected = np.minimum(expected, ceiling)
    out = np.full((batch, channels, oh, ow), 7.0, dtype)
    taps, bias = blocked_depthwise.packed(w, b)
    bounds, words = epilogue(floor, ceiling, np.dtype(dtype))
    assert words == mode
    ptrs = (ctypes.c_void_p * 5)(*(data_pointer(a) for a in (x, taps, bias, out, bounds)))
    meta = (ctypes.c_int64 * 14)(channels, *image, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode)
    loop = KERNEL_TYPE(loop_function("blocked_depthwise", np.dtype(dtype).name))
    loop(0, batch * -(-channels // blocked_depthwise.lanes(np.dtype(dtype).name)), ptrs, meta)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("image, padding, ceil_mode", [((15, 15), 0, True), ((7, 7), 0, True), ((9, 9), 1, False),
                                                       ((8, 10), 0, True)])
@pytest.mark.parametrize("values", ["normal", "nan", "signed zeros"])
def test_blocked_max_pool_is_bit_identical_to_torch(dtype, image, padding, ceil_mode, values):
    """blocked_pool.py's blocks without a NaN take each maximum by one compare, blocks with one keep it
    the way torch does; planes whose windows reach no padding read the input with no border: each
    bit as torch's max_pool2d gives it, the first NaN of a window and the first of equal signed zeros."""
    torch = pytest.importorskip("torch")
    args = ([3, 3], [2, 2], [padding, padding], [1, 1], ceil_mode)
    assert blocked_pool.takes(pool_geometry((2, 40, *image), *args))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 40, *image)).astype(dtype)
    if values == "nan":  # (one block of channels with NaNs, the others without)
        x[1, 17, 2, 3] = np.nan
        x[1, 20, image[0] - 1, image[1] - 1] = -np.nan
    elif values == "signed zeros":
        x = np.where(rng.random(x.shape) < 0.5, -0.0, 0.0).astype(dtype)
    got = native_kernel(ops.OPS["max_pool2d"])(np, x, *args)[0]
    expected = torch.nn.functional.max_pool2d(torch.from_numpy(x), *args).numpy()
    assert got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()

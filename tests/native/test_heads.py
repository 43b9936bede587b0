"""The compiled pieces of the executor's library-backed heads equal the op table's numpy ones."""

from __future__ import annotations

import itertools
import sys
import threading

import numpy as np
import pytest

import scriptc as torch
from scriptc.native import gemm, heads
from scriptc.native.blas import single_threaded
from scriptc.codegen.llvm.driver import has_wide_vectors
from scriptc.native.heads import (GEMM_MIN_ROWS, MATVEC_ROWS, head_kernel, native_conv_products, native_gemm,
                                       native_im2col, native_matmul)
from scriptc.ops import OPS
from scriptc.ops import linalg
from scriptc.runtime.executor import Executor
from scriptc.runtime.pool import ThreadPool

from .guard import flush_against_a_guard_page

GEOMETRIES = [((n, c, h, w), (o, kh, kw), stride, padding, dilation, groups)
              for (n, c, h, w), (o, kh, kw), stride, padding, dilation, groups in itertools.product(
                  [(1, 1, 1, 1), (2, 3, 7, 5), (2, 4, 8, 9)], [(4, 3, 3), (2, 1, 1), (4, 2, 3)], [1, 2, 3],
                  [0, 1, 2], [1, 2], [1, 2]) if c % groups == 0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_im2col_equals_the_op_tables_for_every_geometry(dtype):
    """Strides 1, 2 (the vectorized copies) and 3, padding wider than a window, dilation, groups,
    single pixels; split across threads or not."""
    rng = np.random.default_rng(0)
    checked = 0
    for (shape, (o, kh, kw), stride, padding, dilation, groups) in GEOMETRIES:
        x = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal((o, shape[1] // groups, kh, kw)).astype(dtype)
        try:
            geometry = linalg._conv_params(x, w, stride, padding, dilation, groups)
        except Exception:  # the window does not fit: conv2d raises before any im2col
            continue
        expected = linalg._im2col(np, x, w, *geometry, groups)
        for split in (None, ThreadPool(2).split):
            got = native_im2col(np, x, w, *geometry, groups, split=split)
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_array_equal(got, expected)
        checked += 1
    assert checked > 100


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_band_of_output_rows_gets_its_part_of_the_columns(dtype):
    """Bands of one and two rows, and one past the padding, are the whole image's columns of those rows
    (a segment program's convolution of a large image makes them a band at a time)."""
    rng = np.random.default_rng(2)
    checked = 0
    for (shape, (o, kh, kw), stride, padding, dilation, groups) in GEOMETRIES[::3]:
        x = rng.standard_normal(shape).astype(dtype)
        w = rng.standard_normal((o, shape[1] // groups, kh, kw)).astype(dtype)
        try:
            geometry = linalg._conv_params(x, w, stride, padding, dilation, groups)
        except Exception:  # the window does not fit
            continue
        expected = linalg._im2col(np, x, w, *geometry, groups)
        oh, ow = geometry[-2:]
        for size in (1, 2, oh):
            for first in range(0, oh, size):
                end = min(oh, first + size)
                got = native_im2col(np, x, w, *geometry, groups, band=(first, end))
                np.testing.assert_array_equal(got, expected[..., first * ow:end * ow])
        checked += 1
    assert checked > 30


def _im2col_of_an_input_before_a_guard_page(values, kernel, stride, padding):
    """native_im2col of `values` placed so that its last byte is the last before a page that faults
    when read, against the op table's."""
    x, unprotect = flush_against_a_guard_page(values)
    try:
        w = np.ones((1, values.shape[1], *kernel), values.dtype)
        geometry = linalg._conv_params(x, w, stride, padding, 1, 1)
        got = native_im2col(np, x, w, *geometry, 1)
        np.testing.assert_array_equal(got, linalg._im2col(np, values, w, *geometry, 1))
    finally:
        del x
        unprotect()


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_padded_copy_reads_nothing_past_the_input(dtype):
    """A window of one at stride 1 (a stride-1 convolution's padded phase): rows shorter and longer
    than a vector, padded or not, the image's last row the input's last bytes."""
    rng = np.random.default_rng(3)
    for width, padding in itertools.product([1, 7, 15, 16, 17, 33, 64], [0, 1, 2]):
        _im2col_of_an_input_before_a_guard_page(rng.standard_normal((2, 3, 4, width)).astype(dtype), (1, 1), 1,
                                                padding)


@pytest.mark.skipif(sys.platform != "linux", reason="mprotect through ctypes")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_stride_2_copy_reads_nothing_past_the_input(dtype):
    """Rows wide enough for the deinterleaving steps, each width's windows ending on the image's
    last column or one before it, the image's last row the input's last bytes."""
    rng = np.random.default_rng(1)
    for width, kernel, padding in itertools.product(range(16, 42), [(1, 1), (3, 3), (2, 3)], [0, 1]):
        _im2col_of_an_input_before_a_guard_page(rng.standard_normal((1, 2, 3, width)).astype(dtype), kernel, 2,
                                                padding)


def test_native_im2col_leaves_other_dtypes_and_strided_inputs_right():
    x = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6)
    w = np.ones((4, 3, 3, 3), np.float32)
    geometry = linalg._conv_params(x, w, 1, 1, 1, 1)
    assert native_im2col(np, x.astype(np.int64), w.astype(np.int64), *geometry, 1) is None
    strided = np.asfortranarray(x)
    np.testing.assert_array_equal(native_im2col(np, strided, w, *geometry, 1),
                                  linalg._im2col(np, strided, w, *geometry, 1))


def test_conv2d_head_kernel_matches_the_op_table_and_keeps_its_errors():
    conv = OPS["conv2d"]
    kernel = head_kernel(conv, ThreadPool(2).split)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 4, 9, 9)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    np.testing.assert_allclose(kernel(np, x, w, b, [2, 2], [1, 1], [1, 1], 2),
                               conv.kernel(np, x, w, b, [2, 2], [1, 1], [1, 1], 2), rtol=1e-6)
    np.testing.assert_allclose(kernel(np, x[0], w, b, [1, 1], "same", [1, 1], 2),
                               conv.kernel(np, x[0], w, b, [1, 1], "same", [1, 1], 2), rtol=1e-6)  # unbatched
    with pytest.raises(Exception, match="channels"):
        kernel(np, x, rng.standard_normal((6, 3, 3, 3)).astype(np.float32), None, [1, 1], [0, 0], [1, 1], 1)
    assert head_kernel(OPS["matmul"]) is OPS["matmul"].kernel


def test_a_conv2d_head_kernel_with_a_slope_is_the_leaky_relu_of_the_conv():
    """The steps' head with a LeakyReLU's slope (the segment programs' products apply it as they
    store), NaN kept; a slope with a floor, or on an op that takes none, refused."""
    conv = OPS["conv2d"]
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 4, 7, 7)).astype(np.float32)
    x[0, 0, 3, 3] = np.nan
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    expected = conv.kernel(np, x, w, None, [1, 1], [1, 1], [1, 1], 1)
    got = head_kernel(conv, ThreadPool(2).split, "float32", slope=0.2)(np, x, w, None, [1, 1], [1, 1], [1, 1], 1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.where(expected > 0, expected, expected * 0.2), rtol=1e-5, atol=1e-5,
                               equal_nan=True)
    with pytest.raises(ValueError, match="slope"):
        head_kernel(conv, floor=0.0, slope=0.2)
    with pytest.raises(ValueError, match="floor"):
        head_kernel(OPS["add"], slope=0.2)


@pytest.mark.skipif(single_threaded() is None, reason="numpy's BLAS is not a known OpenBLAS")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_head_runs_a_batch_image_by_image_with_single_threaded_blas(dtype, monkeypatch):
    """A batch big enough goes image by image across the pool's threads when that is the mode, BLAS
    single-threaded while it does and its thread count put back after (an error included); results
    equal the op table's."""
    conv, pool, blas = OPS["conv2d"], ThreadPool(2), single_threaded()
    mode = heads.ConvMode()
    mode.by_image, mode.SETTLE_S = True, float("inf")  # image by image throughout
    monkeypatch.setattr(heads, "CONV_MODE", mode)
    seen = []  # (BLAS's thread count, the thread) at each image's columns
    real = heads.native_im2col
    monkeypatch.setattr(heads, "native_im2col", lambda *args, **kwargs: seen.append(
        (blas._get(), threading.current_thread().name)) or real(*args, **kwargs))
    kernel = head_kernel(conv, pool.split, None, 2, pool.run_slices)
    relu = head_kernel(conv, pool.split, None, 2, pool.run_slices, floor=0.0)
    before = blas._get()
    rng = np.random.default_rng(2)
    for n, c, o, stride, groups in ((5, 8, 16, 2, 1), (4, 16, 32, 1, 2), (6, 16, 32, 3, 4)):
        x = rng.standard_normal((n, c, 40, 40)).astype(dtype)
        w = rng.standard_normal((o, c // groups, 3, 3)).astype(dtype)
        b = rng.standard_normal(o).astype(dtype)
        seen.clear()
        got = kernel(np, x, w, b, [stride, stride], [1, 1], [1, 1], groups)
        expected = conv.kernel(np, x, w, b, [stride, stride], [1, 1], [1, 1], groups)
        np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
        assert {count for count, _ in seen} == {1} and len({name for _, name in seen}) == 2
        np.testing.assert_allclose(relu(np, x, w, b, [stride, stride], [1, 1], [1, 1], groups), np.maximum(expected, 0),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
        assert blas._get() == before
    with pytest.raises(Exception, match="channels"):
        kernel(np, x, rng.standard_normal((64, 5, 3, 3)).astype(dtype), None, [1, 1], [0, 0], [1, 1], 1)
    assert blas._get() == before
    seen.clear()
    small = rng.standard_normal((2, 2, 6, 6)).astype(dtype)  # too little work to hand to another thread
    kernel(np, small, rng.standard_normal((2, 2, 3, 3)).astype(dtype), None, [1, 1], [1, 1], [1, 1], 1)
    assert [count for count, _ in seen] == [before]


def test_conv_mode_times_both_ways_then_keeps_the_faster_and_probes_the_other():
    now = [0.0]
    mode = heads.ConvMode(clock=lambda: now[0])
    speed = {False: 2.0, True: 1.0}  # seconds per unit of work: image by image is twice as fast
    ways = []

    def run_for(seconds):
        end = now[0] + seconds
        while now[0] < end:
            way = mode.by_image
            ways.append(way)
            now[0] += 0.01
            mode.record(way, 0.01 * speed[way], 1)
    phase = mode.SETTLE_S + mode.MEASURE_S
    assert mode.by_image
    run_for(phase + 0.05)
    assert mode.cost[True] == pytest.approx(0.01) and not mode.by_image  # measured; now the other way
    run_for(phase + 0.05)
    assert mode.cost[False] == pytest.approx(0.02) and mode.by_image  # the faster one again
    ways.clear()
    run_for(phase * (mode.PROBE_AFTER + 2))
    assert ways.count(False) and ways.count(False) < ways.count(True) / 10  # probed, briefly
    speed[True] = 4.0  # conditions change: the image-by-image way is the slow one now
    run_for(phase * 3)
    assert not mode.by_image
    mode.record(True, 100.0, 1)  # a call that began in the other way counts for nothing
    assert mode.cost[True] != 100.0


def test_the_blas_section_restores_the_count_when_threads_overlap():
    blas = single_threaded()
    if blas is None:
        pytest.skip("numpy's BLAS is not a known OpenBLAS")
    before = blas._get()
    inside, release = threading.Barrier(3), threading.Event()

    def hold():
        with blas.section():
            inside.wait(10)
            release.wait(10)

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait(10)
    assert blas._get() == 1
    release.set()
    for t in threads:
        t.join(10)
    assert blas._get() == before


def test_a_compiled_cnn_uses_the_native_im2col_and_equals_the_interpreter():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 4, 3, stride=2, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(2, 3, 10, 10)
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, x))
    heads._native_loop.cache_clear()
    executor = Executor(fast.graph)
    convs = [s for s in executor.group_steps if s.head is not None and s.head.name == "conv2d"]
    assert convs and all(s.variants[0].head_kernel is not s.head.kernel for s in convs)
    # float32's im2col and both depthwise loops (and its GEMM, where it runs), loaded with the plan
    assert heads._native_loop.cache_info().currsize == 3 + has_wide_vectors()
    # each conv2d + ReLU group is its head alone, the ReLU applied by the products
    assert [s.variants[0].head_is_result for s in convs] == [True, True]
    x[1, 0, 3, 3] = float("nan")
    got = executor([x.numpy()])[0]
    with torch.no_grad():
        expected = model(x).numpy()
    assert np.isnan(got).any()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


class _ConvThen(torch.nn.Module):
    def __init__(self, then):
        super().__init__()
        self.conv, self.then = torch.nn.Conv2d(3, 8, 3, padding=1), then

    def forward(self, x):
        return self.then(self.conv(x))


@pytest.mark.parametrize("then, fused", [
    (lambda y: torch.clamp(y, min=0.5), True),
    (lambda y: torch.clamp(y, min=0.0, max=6.0), True),
    (torch.nn.functional.relu6, True),
    (lambda y: torch.nn.functional.hardtanh(y, -0.25, 0.5), True),
    (lambda y: torch.clamp(y, max=0.5), False),
    (lambda y: torch.clamp(y, min=0.0, max=float("nan")), False),
    (lambda y: torch.relu(y) * 2, False),
    (lambda y: torch.relu(y).mean(dim=(2, 3)), False),
    (lambda y: torch.maximum(y, y * 0.5), False),
    (lambda y: torch.nn.functional.leaky_relu(y, 0.2), True),
    (lambda y: torch.nn.functional.leaky_relu(y * 2, 0.2), False),
    (lambda y: torch.nn.functional.leaky_relu(y, 0.2) + 1, False),
])
def test_only_a_floor_a_clamp_or_a_leaky_relu_after_a_conv_head_is_left_to_the_head(then, fused):
    torch.manual_seed(1)
    model = _ConvThen(then).eval()
    x = torch.randn(2, 3, 10, 10)
    executor = Executor(torch.jit.optimize_for_inference(torch.jit.trace(model, x)).graph)
    [conv] = [s for s in executor.group_steps if s.head is not None]
    assert conv.variants[0].head_is_result == fused
    with torch.no_grad():
        np.testing.assert_allclose(executor([x.numpy()])[0], model(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gemm_loop_equals_numpy_for_every_tail(dtype, monkeypatch):
    """Rows past the last whole tile, panels narrower than a panel, columns that fill no vector;
    inputs and output flush against unreadable pages; split across threads or not. (The loop is
    checked on any CPU: only where it runs by default depends on 512-bit vectors.)"""
    monkeypatch.setattr(heads, "gemm_runs", lambda: True)
    rng = np.random.default_rng(7)
    lanes = gemm.vector_columns(np.dtype(dtype).name)
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    pool = ThreadPool(2)
    panel = lanes * gemm.VECTORS
    widths = sorted({1, lanes - 1, lanes, lanes + 3, panel, panel + 1, panel + lanes - 1, panel + lanes,
                     2 * panel + lanes + 3, 100})
    for rows, depth, width in itertools.product([GEMM_MIN_ROWS, gemm.ROWS, gemm.ROWS + 1, 2 * gemm.ROWS + 7, 64],
                                                [0, 1, 7, 64, 2 * gemm.DEPTH_BLOCK + 3], widths):
        a_values = rng.standard_normal((rows, depth)).astype(dtype)
        b_values = rng.standard_normal((depth, width)).astype(dtype)
        expected = a_values.astype(np.float64) @ b_values.astype(np.float64)
        a, a_done = flush_against_a_guard_page(a_values)
        b, b_done = flush_against_a_guard_page(b_values)
        out, out_done = flush_against_a_guard_page(np.zeros((rows, width), dtype))
        try:
            for split in (None, pool.split):
                out[...] = np.nan
                assert native_gemm(a, b, out=out, split=split) is out
                np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)
            got = native_gemm(a, b)
            assert got.dtype == dtype and got.shape == (rows, width)
            np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
            bias = rng.standard_normal(rows).astype(dtype)  # a convolution's, one per row
            heads._run_gemm(a, b, out, pool.split, bias)
            np.testing.assert_allclose(out, expected + bias[:, None], rtol=tolerance, atol=tolerance)
            heads._run_gemm(a, b, out, pool.split, bias, 0.0)  # a fused ReLU
            np.testing.assert_allclose(out, np.maximum(expected + bias[:, None], 0), rtol=tolerance, atol=tolerance)
        finally:
            del a, b, out
            a_done(), b_done(), out_done()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gemm_reads_and_writes_rows_apart(dtype):
    """A band of a convolution's output: b's rows and out's rows LDB and LDC elements apart; the
    columns between them are neither read into the product nor written."""
    import ctypes

    from scriptc.native.pointers import data_pointer

    rng = np.random.default_rng(9)
    loop = heads._native_loop("gemm", np.dtype(dtype).name)
    for rows, depth, width in [(3, 5, 20), (17, gemm.DEPTH_BLOCK + 9, 50), (64, 40, 16)]:
        a = rng.standard_normal((rows, depth)).astype(dtype)
        wide_b = rng.standard_normal((depth, width + 13)).astype(dtype)
        out = np.full((rows, width + 7), 5.0, dtype)
        bias = rng.standard_normal(rows).astype(dtype)
        floor = np.zeros(1, dtype)
        ptrs = (ctypes.c_void_p * 5)(*(data_pointer(v) for v in (a, wide_b, out, bias, floor)))
        meta = (ctypes.c_int64 * 7)(rows, depth, width, 1, 1, width + 13, width + 7)
        loop.function(0, -(-width // gemm.vector_columns(np.dtype(dtype).name)), ptrs, meta)
        expected = np.maximum(a.astype(np.float64) @ wide_b[:, :width] + bias[:, None], 0)
        np.testing.assert_allclose(out[:, :width], expected, rtol=1e-4, atol=1e-4)
        assert (out[:, width:] == 5.0).all()


def test_native_gemm_leaves_what_it_has_no_loop_for_to_blas(monkeypatch):
    monkeypatch.setattr(heads, "gemm_runs", lambda: True)
    rng = np.random.default_rng(8)
    a = rng.standard_normal((16, 20)).astype(np.float32)
    b = rng.standard_normal((20, 64)).astype(np.float32)
    assert native_gemm(a, b) is not None
    for left, right in ((a[:GEMM_MIN_ROWS - 1], b), (a.T.copy().T, b),
                        (a, b[:, ::2]), (a.astype(np.int64), b.astype(np.int64)), (a, b.astype(np.float64)),
                        (a[:, :19], b), (a[None], b)):
        assert native_gemm(left, right) is None
    assert native_gemm(a, b, out=np.empty((16, 64), np.float64)) is None
    assert native_gemm(a, b, out=np.empty((64, 16), np.float32).T) is None
    monkeypatch.setattr(heads, "gemm_runs", lambda: False)
    assert native_gemm(a, b) is None


@pytest.mark.parametrize("groups", [1, 2])
def test_a_convolutions_products_through_the_gemm_equal_the_op_tables(groups, monkeypatch):
    monkeypatch.setattr(heads, "gemm_runs", lambda: True)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 4, 12, 12)).astype(np.float32)
    w = rng.standard_normal((16, 4 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    conv = OPS["conv2d"]
    called = []
    monkeypatch.setattr(heads, "_run_gemm", lambda *args, real=heads._run_gemm: called.append(1) or real(*args))
    kernel = head_kernel(conv, ThreadPool(2).split, "float32")
    np.testing.assert_allclose(kernel(np, x, w, b, [1, 1], [1, 1], [1, 1], groups),
                               conv.kernel(np, x, w, b, [1, 1], [1, 1], [1, 1], groups), rtol=1e-5, atol=1e-5)
    assert len(called) == 3 * groups  # one product per image and group
    wmat = w.reshape(groups, 16 // groups, -1)
    cols = np.ones((3, groups, wmat.shape[-1], 144), np.float32)
    assert native_conv_products(wmat, cols[:, :, :, ::2], np.empty((3, groups, 16 // groups, 72), np.float32)) is None
    out = np.empty((3, groups, 16 // groups, 144), np.float32)
    for bias in (b.astype(np.float64), b[:8], b.reshape(2, 8)):  # another dtype, or not one per channel
        assert native_conv_products(wmat, cols, out, bias) is None
    assert native_conv_products(wmat, cols, out, b[::-1].copy()) is out
    np.testing.assert_allclose(out, np.matmul(wmat, cols) + b[::-1].reshape(1, groups, -1, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gemm_runs", [True, False])
def test_a_conv_head_with_a_floor_is_numpys_maximum_of_the_conv(gemm_runs, monkeypatch):
    """A fused ReLU (floor 0) or clamp(min=...) through the compiled products, or through BLAS and
    the op table's own pass where the GEMM does not run; NaNs stay NaN, as numpy's maximum keeps them."""
    monkeypatch.setattr(heads, "gemm_runs", lambda: gemm_runs)
    conv = OPS["conv2d"]
    rng = np.random.default_rng(10)
    for dtype, floor in ((np.float32, 0.0), (np.float64, 0.0), (np.float32, 0.25)):
        x = rng.standard_normal((3, 4, 12, 12)).astype(dtype)
        x[1, 2, 5, 5] = np.nan
        w = rng.standard_normal((16, 4, 3, 3)).astype(dtype)
        b = rng.standard_normal(16).astype(dtype)
        kernel = head_kernel(conv, ThreadPool(2).split, np.dtype(dtype).name, floor=floor)
        got = kernel(np, x, w, b, [1, 1], [1, 1], [1, 1], 1)
        expected = np.maximum(conv.kernel(np, x, w, b, [1, 1], [1, 1], [1, 1], 1), floor)
        assert np.isnan(got).sum() == np.isnan(expected).sum() > 0
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="no floor"):
        head_kernel(OPS["matmul"], floor=0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_matmul_equals_numpy_for_few_rows(dtype):
    rng = np.random.default_rng(2)
    pool = ThreadPool(2)
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    for rows, depth, width in itertools.product(MATVEC_ROWS, [0, 1, 3, 4, 7, 33, 784], [64, 65, 512]):
        a = rng.standard_normal((rows, depth)).astype(dtype)
        b = rng.standard_normal((depth, width)).astype(dtype)
        expected = a.astype(np.float64) @ b.astype(np.float64)
        for split, parts in ((None, 1), (pool.split, 2), (pool.split, 3)):
            got = native_matmul(np, a, b, fallback=None, split=split, parts=parts)
            assert got.dtype == dtype and got.shape == (rows, width)
            np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_native_matmul_leaves_everything_else_to_the_op_table():
    matmul = OPS["matmul"]
    kernel = head_kernel(matmul, ThreadPool(2).split, "float32", 2)
    assert kernel is not matmul.kernel
    rng = np.random.default_rng(3)
    b = rng.standard_normal((5, 64)).astype(np.float32)
    cases = [(rng.standard_normal((1, 5)), b), (rng.standard_normal((MATVEC_ROWS.stop, 5)), b),
             (rng.standard_normal((5, 2)).T, b), (rng.standard_normal((0, 5)), b), (rng.standard_normal((3, 2, 5)), b),
             (rng.standard_normal(5), b), (rng.standard_normal((2, 5)), np.ascontiguousarray(b[:, :10])),
             (rng.standard_normal((2, 5)), b[:, ::2])]
    for a, other in cases:
        a = a.astype(np.float32)
        np.testing.assert_allclose(kernel(np, a, other), matmul.kernel(np, a, other), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="same dtype"):
        kernel(np, np.ones((2, 5), np.float64), b)
    with pytest.raises(ValueError):
        kernel(np, np.ones((2, 4), np.float32), b)
    assert head_kernel(matmul, None, "int64") is matmul.kernel


def test_a_compiled_mlp_uses_the_native_matmul_for_small_batches_and_equals_the_interpreter():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(300, 128), torch.nn.ReLU(), torch.nn.Linear(128, 5)).eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.randn(2, 300)))
    executor = Executor(fast.graph, threads=2)
    heads_ = [s for s in executor.group_steps if s.head is not None]
    assert heads_ and all(s.head.name == "matmul" and s.variants[0].head_kernel is not s.head.kernel for s in heads_)
    for batch in (1, 2, 3, 6, 8):
        x = torch.randn(batch, 300)
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(executor([x.numpy()])[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tail", ["softmax", "log_softmax", "layer_norm", "sum"])
def test_a_bias_epilogue_ending_in_a_reduction_runs_compiled(tail):
    torch.manual_seed(4)
    layer = torch.nn.Linear(12, 9)
    norm = torch.nn.LayerNorm(9)

    def fn(x):
        y = layer(x)
        return {"softmax": lambda: torch.softmax(y, dim=-1), "log_softmax": lambda: torch.log_softmax(y, dim=-1),
                "layer_norm": lambda: norm(y), "sum": lambda: y.sum(-1)}[tail]()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(fn, torch.randn(2, 12)), jit=False)
    executor = Executor(fast.graph, threads=2)
    [step] = [s for s in executor.group_steps if s.head is not None]
    rng = np.random.default_rng(5)
    for batch in (1, 4, 33):
        x = rng.standard_normal((batch, 12)).astype(np.float32)
        with torch.no_grad():
            expected = fn(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(executor([x])[0], expected, rtol=1e-5, atol=1e-5)
    assert all(launch is not None for launch in step._launches.values())  # none fell back to the subgraph


def test_a_conv_epilogue_ending_in_a_global_average_pool_runs_compiled():
    """conv2d (its bias is the head's, which the kernel never reads) + ReLU + AdaptiveAvgPool2d(1):
    one group that reduces each image's channels over the merged spatial dims."""
    torch.manual_seed(6)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 5, 3, stride=2, padding=1), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()).eval()
    fast = torch.jit.optimize_for_inference(torch.jit.trace(model, torch.randn(2, 3, 9, 9)), jit=False)
    executor = Executor(fast.graph, threads=2)
    [step] = [s for s in executor.group_steps if s.head is not None]
    assert step.kernel is not None, step.reason
    assert [n.op for n in step.node.blocks[0].nodes if n.op != "prim::Constant"] == ["conv2d", "relu", "mean"]
    rng = np.random.default_rng(7)
    for batch in (1, 4):
        x = rng.standard_normal((batch, 3, 9, 9)).astype(np.float32)
        with torch.no_grad():
            expected = model(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(executor([x])[0], expected, rtol=1e-5, atol=1e-6)
    assert all(launch is not None for launch in step._launches.values())

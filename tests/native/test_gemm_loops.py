"""The GEMM (native/gemm.py) against numpy: a few blocks of rows under a large b, the row-table loop (a convolution's taps, each
row of b anywhere) and the narrow product (b of a few columns, a packed by vectors of rows), over odd sizes,
split ranges, bias or none, floored or not."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc.native import gemm
from scriptc.native.heads import gemm_runs
from scriptc.native.loops import loop_function
from scriptc.runtime.tap_products import kept_columns

from .kernel_calls import run_in_parts as _call

pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the compiled GEMM is written for 512-bit vectors")


def _expected(a, b, bias, floored):
    out = a @ b + (0 if bias is None else bias[:, None])
    return np.maximum(out, 0) if floored else out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, depth, out_rows, wq, ow", [(64, 288, 24, 26, 24), (70, 230, 9, 33, 32), (5, 7, 3, 11, 11),
                                                          (17, 130, 7, 9, 7), (9, 1, 2, 8, 5)])
def test_the_row_table_loop_reads_rows_of_b_where_the_table_says_and_keeps_the_lanes_asked(dtype, rows, depth,
                                                                                           out_rows, wq, ow):
    """Each row of b anywhere (a convolution's taps), and of each row of WQ outputs the first OW kept,
    stored one after another (tap_products.kept_columns); split across ranges of columns, the
    products in slices of k where they are deep (the partial sums read back the kept lanes)."""
    width = out_rows * wq
    rng = np.random.default_rng(rows + depth)
    source = rng.standard_normal(4 * depth + width + 64).astype(dtype)
    offsets = rng.integers(0, 4 * depth + 64, depth).astype(np.int64)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    bias = rng.standard_normal(rows).astype(dtype)
    name = np.dtype(dtype).name
    kept_lanes, kept_at = kept_columns(width, wq, ow, gemm.vector_columns(name))
    for floored, parts in ((True, 1), (False, 3)):
        out = np.full((rows, out_rows * ow + 3), np.nan, dtype)  # rows of out 3 more apart than they hold
        _call(gemm.rows_function(name), -(-width // gemm.vector_columns(name)),
              [a, source, out, bias, np.zeros(1, dtype), offsets, kept_lanes, kept_at],
              [rows, depth, width, floored, 1, 1000, out_rows * ow + 3, 0], parts)
        b = np.stack([source[o:o + width] for o in offsets])
        expected = _expected(a, b, bias, floored).reshape(rows, out_rows, wq)[:, :, :ow].reshape(rows, -1)
        np.testing.assert_allclose(out[:, :-3], expected, rtol=1e-5, atol=1e-4)
        assert np.isnan(out[:, -3:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, depth, out_rows, wq, ow", [(64, 288, 24, 26, 24), (70, 230, 9, 33, 32), (5, 7, 3, 11, 10),
                                                          (17, 130, 7, 9, 8)])
def test_the_row_table_loop_stores_whole_rows_with_the_lanes_not_kept_zeroed(dtype, rows, depth, out_rows, wq, ow):
    """meta[7] set: each vector of columns stored whole where the table says (rows of WQ, as the next
    convolution's padded planes hold them), the columns past OW zeros, nothing past the last column; the
    products of two slices of k under many rows packed (gemm.TAPS_PACKED_DEPTHS), their partial sums
    read back whole."""
    width = out_rows * wq
    rng = np.random.default_rng(rows * wq)
    source = rng.standard_normal(4 * depth + width + 64).astype(dtype)
    offsets = rng.integers(0, 4 * depth + 64, depth).astype(np.int64)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    bias = rng.standard_normal(rows).astype(dtype)
    name = np.dtype(dtype).name
    lanes = gemm.vector_columns(name)
    kept_lanes, _ = kept_columns(width, wq, ow, lanes)
    for floored, parts in ((True, 1), (False, 3)):
        out = np.full((rows, width + 40), np.nan, dtype)  # (rows of out 40 more apart than the products)
        _call(gemm.rows_function(name), -(-width // lanes),
              [a, source, out, bias, np.zeros(1, dtype), offsets, kept_lanes, np.arange(0, width, lanes)],
              [rows, depth, width, floored, 1, 1000, width + 40, 1], parts)
        b = np.stack([source[o:o + width] for o in offsets])
        expected = _expected(a, b, bias, floored).reshape(rows, out_rows, wq)
        expected[:, :, ow:] = 0
        np.testing.assert_allclose(out[:, :width], expected.reshape(rows, -1), rtol=1e-5, atol=1e-4)
        assert np.isnan(out[:, width:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, depth, width", [(960, 160, 4), (37, 5, 11), (20, 3, 1), (1, 9, 8), (33, 64, 17),
                                                 (45, 40, gemm.NARROW_MAX_COLUMNS),
                                                 (29, 21, 2 * gemm.NARROW_MAX_COLUMNS + 1)])
def test_the_narrow_product_equals_numpy(dtype, rows, depth, width):
    rng = np.random.default_rng(rows * width)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    b = rng.standard_normal((depth, width + 3)).astype(dtype)  # rows of b 3 more apart than it is wide
    name = np.dtype(dtype).name
    for bias, floored, parts in ((rng.standard_normal(rows).astype(dtype), True, 1), (None, False, 2)):
        out = np.full((rows, width + 2), np.nan, dtype)  # rows of out 2 more apart
        _call(gemm.narrow_function(name), -(-rows // gemm.vector_columns(name)),
              [gemm.narrow_packed(a), b, out, np.zeros(rows, dtype) if bias is None else bias, np.zeros(1, dtype)],
              [rows, depth, width, floored, 0 if bias is None else 1, width + 3, width + 2], parts)
        np.testing.assert_allclose(out[:, :width], _expected(a, b[:, :width], bias, floored), rtol=1e-5, atol=1e-4)
        assert np.isnan(out[:, width:]).all()  # nothing written past each row's width


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, depth, width", [(16, 5000, 77), (9, 300, 50), (24, 700, 64), (41, 1700, 259)])
def test_a_few_blocks_of_rows_under_a_large_b_equal_numpy(dtype, rows, depth, width):
    """Products of a batch through a layer: up to two blocks of rows, b's slices packed (or, for three
    blocks, read in place; for more under a too large to pack by its size, packed as b's rows are
    gemm.FAR_ROW_BYTES apart), split across ranges of columns."""
    rng = np.random.default_rng(depth)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    b = rng.standard_normal((depth, width)).astype(dtype)
    out = np.full((rows, width), np.nan, dtype)
    name = np.dtype(dtype).name
    zero = np.zeros(1, dtype)
    _call(loop_function("gemm", name), -(-width // gemm.vector_columns(name)), [a, b, out, zero, zero],
          [rows, depth, width, 0, 0, width, width], 2)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-3 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("depth, width", [(37, 29), (300, 53)])
def test_every_row_count_equals_numpy(dtype, depth, width):
    """1 to 17 rows: blocks of gemm.ROWS, then the rows left in the least tail tile that holds them
    (gemm.TAIL_HEIGHTS); b read in place (29 columns: its rows within a panel) or packed in slices of
    k (53 columns, deeper than a slice), a bias per row, floored or not, split across ranges of columns."""
    rng = np.random.default_rng(depth + width)
    name = np.dtype(dtype).name
    b = rng.standard_normal((depth, width)).astype(dtype)
    for rows in range(1, 18):
        a = rng.standard_normal((rows, depth)).astype(dtype)
        bias = rng.standard_normal(rows).astype(dtype)
        floored = rows % 2
        out = np.full((rows, width + 1), np.nan, dtype)  # rows of out 1 more apart than b's
        _call(loop_function("gemm", name), -(-width // gemm.vector_columns(name)),
              [a, b, out, bias, np.zeros(1, dtype)], [rows, depth, width, floored, 1, width, width + 1], 2)
        np.testing.assert_allclose(out[:, :width], _expected(a, b, bias, floored), rtol=1e-4,
                                   atol=1e-3 if dtype == np.float32 else 1e-9)
        assert np.isnan(out[:, width:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_floor_keeps_a_nan_as_numpys_maximum_does(dtype):
    """A fused ReLU's floor on a product with NaN in it: NaN where numpy's maximum gives NaN, the floor
    where the product is below it, across blocks of rows, the tail tile and a masked last vector."""
    rng = np.random.default_rng(7)
    rows, depth, width = 11, 40, 37
    a = rng.standard_normal((rows, depth)).astype(dtype)
    a[3, 5] = np.nan
    b = rng.standard_normal((depth, width)).astype(dtype)
    b[7, 30] = np.nan
    bias = rng.standard_normal(rows).astype(dtype)
    name = np.dtype(dtype).name
    out = np.full((rows, width), -1.0, dtype)
    _call(loop_function("gemm", name), -(-width // gemm.vector_columns(name)),
          [a, b, out, bias, np.zeros(1, dtype)], [rows, depth, width, 1, 1, width, width])
    expected = _expected(a, b, bias, True)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    assert np.isnan(out).sum() == width + rows - 1
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows, depth, width, step", [(300, 256, 85, 90), (9, 200, 85, 85), (21, 1, 101, 101),
                                                      (300, 257, 85, 90), (13, 0, 40, 40)])
def test_shallow_products_read_in_place_block_of_rows_by_block_of_rows(dtype, rows, depth, width, step):
    """Products of depth up to gemm.SHALLOW_DEPTH that read b in place go block of rows by block of rows
    across every panel (one deeper goes panel by panel): whole panels, a narrower one, a masked last
    vector, the tail tile, rows of b and of out wider than the product, depth 0 (the bias alone), split
    across ranges of columns."""
    rng = np.random.default_rng(rows + depth)
    name = np.dtype(dtype).name
    a = rng.standard_normal((rows, depth)).astype(dtype)
    b = rng.standard_normal((depth, step)).astype(dtype)
    bias = rng.standard_normal(rows).astype(dtype)
    out = np.full((rows, width + 2), np.nan, dtype)
    _call(loop_function("gemm", name), -(-width // gemm.vector_columns(name)), [a, b, out, bias, np.zeros(1, dtype)],
          [rows, depth, width, 1, 1, step, width + 2], 3)
    np.testing.assert_allclose(out[:, :width], _expected(a, b[:, :width], bias, True), rtol=1e-4,
                               atol=1e-3 if dtype == np.float32 else 1e-9)
    assert np.isnan(out[:, width:]).all()


def test_the_row_table_loop_packs_taps_except_on_the_cpus_that_read_them_faster_in_place():
    """gemm.packs_taps: Zen 5 reads two slices of taps in place, every other CPU packs them; the choice
    goes by LLVM's name for the host CPU, which the compiled loops' cache key holds too."""
    assert not gemm.packs_taps("znver5")
    assert gemm.packs_taps("sapphirerapids")
    assert gemm.packs_taps("skylake-avx512")

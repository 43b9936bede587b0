"""The GEMMs of a Winograd transform's positions as one kernel (native/positions.py): any split of its
(position, vector) range gives the bits of the GEMM loop run position by position, whole."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc.native import gemm, positions
from scriptc.native.heads import gemm_runs
from scriptc.native.loops import loop_function

from .kernel_calls import run_ranges as _run

pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the GEMM loop is written for 512-bit vectors")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count, rows, depth, columns", [(9, 24, 40, 70), (16, 8, 16, 16), (1, 5, 3, 1)])
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_any_split_gives_the_bits_of_each_gemm_run_whole(count, rows, depth, columns, parts, dtype):
    rng = np.random.default_rng(count * rows + parts)
    name = np.dtype(dtype).name
    a = rng.standard_normal((count, rows, depth)).astype(dtype)
    b = rng.standard_normal((count, depth, columns)).astype(dtype)
    bias, bounds = np.zeros(1, dtype), np.zeros(3, dtype)
    words = [rows, depth, columns, 0, 0, columns, columns]
    vectors = -(-columns // gemm.vector_columns(name))
    expected = np.full((count, rows, columns), np.nan, dtype)
    for p in range(count):
        _run(loop_function("gemm", name), [(0, vectors)], [a[p], b[p], expected[p], bias, bounds], words)
    out = np.full((count, rows, columns), np.nan, dtype)
    total = count * vectors
    cuts = [total * k // parts for k in range(parts + 1)]
    itemsize = a.itemsize
    _run(positions.function(), list(zip(cuts, cuts[1:])), [a, b, out, bias, bounds],
         [loop_function("gemm", name), count, vectors, rows * depth * itemsize, depth * columns * itemsize,
          rows * columns * itemsize, *words])
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)

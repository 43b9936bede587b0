"""native/opaque.py's kernels against the op table's: the dynamically quantized linear's integer product
through the packed loop gives the op kernel's result exactly."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc import ops
from scriptc.native.heads import gemm_runs
from scriptc.native.opaque import native_kernel


@pytest.mark.skipif(not gemm_runs(), reason="the packed product is compiled for 512-bit vectors")
@pytest.mark.parametrize("rows, depth, columns, per_channel", [(1, 16, 10, False), (7, 64, 50, True),
                                                                (40, 300, 130, False), (0, 8, 4, False)])
def test_quantized_linear_dynamic_matches_the_op_kernel(rows, depth, columns, per_channel):
    op = ops.OPS["quantized_linear_dynamic"]
    rng = np.random.default_rng(rows + depth)
    x = rng.standard_normal((rows, depth)).astype(np.float32)
    weight = rng.integers(-128, 128, (columns, depth)).astype(np.int8)
    count = columns if per_channel else 1
    scales = rng.uniform(0.001, 0.02, count).astype(np.float32)
    zero_points = np.zeros(count, np.int64)
    bias = rng.standard_normal(columns).astype(np.float32)
    expected = op.kernel(np, x, weight, scales, zero_points, bias, True)
    np.testing.assert_array_equal(native_kernel(op)(np, x, weight, scales, zero_points, bias, True), expected)

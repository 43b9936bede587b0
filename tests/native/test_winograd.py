"""Winograd's F(2x2, 3x3) transforms (native/winograd.py) against torch's conv2d: the weights'
transform, the input transform over a padded image, the 16 GEMMs and the output transform with each
epilogue, bias or none, split ranges, outputs into rows and planes further apart than they hold."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc.native import gemm, winograd
from scriptc.native.heads import epilogue, gemm_runs
from scriptc.native.loops import loop_function

from .kernel_calls import run_in_parts as _call

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the transforms are written for 512-bit vectors")


def _winograd(x, weight, bias, bounds, parts, row_gap, zero_after):
    """conv2d(x, weight, bias, padding=1) of one image (C, H, W) by the three steps, output rows
    `row_gap` elements further apart than W (NaN between them but where zero_after zeroes one)."""
    dtype, name = x.dtype, x.dtype.name
    (c, h, w), o = x.shape, weight.shape[0]
    wq, plane = w + 1, (h + 2) * (w + 1)
    phase = np.full(c * plane + 1, np.nan, dtype)
    planes = phase[:-1].reshape(c, h + 2, wq)
    planes[...] = 0
    planes[:, 1:-1, 1:] = x
    phase[-1] = 0
    rows, columns = h // 2, w // 2
    tiles = rows * columns
    inputs, products = np.full((16, c, tiles), np.nan, dtype), np.full((16, o, tiles), np.nan, dtype)
    transform_in, transform_out = winograd.functions(name)
    _call(transform_in, c * rows, [phase, inputs], [c, plane, wq, columns, rows, tiles], parts)
    transformed = winograd.weights(weight)
    for position in range(16):
        _call(loop_function("gemm", name), -(-tiles // gemm.vector_columns(name)),
              [transformed[position], inputs[position], products[position], np.zeros(o, dtype), np.zeros(3, dtype)],
              [o, c, tiles, 0, 0, tiles, tiles], 1)
    floor, ceiling, slope = bounds
    bounds_array, mode = epilogue(floor, ceiling, x.dtype, slope)
    row = w + row_gap
    out = np.full((o, h, row), np.nan, dtype)
    _call(transform_out, o * rows, [products, out, np.zeros(o, dtype) if bias is None else bias, bounds_array],
          [o, tiles, columns, rows, h * row, row, mode, 0 if bias is None else 1, int(zero_after)], parts)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bounds, with_bias, parts", [((None, None, None), True, 1), ((0.0, None, None), False, 3),
                                                      ((0.0, 6.0, None), True, 2), ((None, None, 0.1), True, 5)])
def test_the_three_steps_equal_torch(dtype, bounds, with_bias, parts):
    """Output rows 3 further apart than W hold its values then, where asked, one zero (the next
    row's left padding in padded planes), the rest untouched."""
    rng = np.random.default_rng(len(str(bounds)) + parts)
    lanes = gemm.vector_columns(np.dtype(dtype).name)
    c, o, h, w = 17, 19, 6, 4 * lanes
    x = (3 * rng.standard_normal((c, h, w))).astype(dtype)
    weight = rng.standard_normal((o, c, 3, 3)).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype) if with_bias else None
    zero_after = parts % 2 == 1
    got = _winograd(x, weight, bias, bounds, parts, 3, zero_after)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x)[None].double(), torch.from_numpy(weight).double(),
                                          None if bias is None else torch.from_numpy(bias).double(), padding=1)[0]
    floor, ceiling, slope = bounds
    if slope is not None:
        expected = torch.nn.functional.leaky_relu(expected, slope)
    elif floor is not None:
        expected = expected.clamp(floor, ceiling)
    np.testing.assert_allclose(got[:, :, :w], expected.numpy(), rtol=1e-4, atol=1e-4)
    assert (got[:, :, w] == 0).all() if zero_after else np.isnan(got[:, :, w]).all()
    assert np.isnan(got[:, :, w + 1:]).all()


def test_a_nan_reaches_the_outputs_whose_window_holds_it():
    """The transforms' sums leave out the rows and columns a tile's output does not read: a NaN
    spreads as the direct sums spread it, to its 3x3 neighbours only."""
    c, o, h, w = 16, 16, 8, 32
    x = np.random.default_rng(1).standard_normal((c, h, w)).astype(np.float32)
    x[3, 3, 3] = np.nan
    got = _winograd(x, np.ones((o, c, 3, 3), np.float32), None, (None, None, None), 1, 0, False)
    expected = np.zeros((h, w), bool)
    expected[2:5, 2:5] = True
    np.testing.assert_array_equal(np.isnan(got), np.broadcast_to(expected, got.shape))


def test_the_weights_transform_is_g_g_gt():
    weight = np.random.default_rng(2).standard_normal((3, 2, 3, 3))
    g = winograd.WEIGHT_TRANSFORM
    transformed = winograd.weights(weight)
    assert transformed.shape == (16, 3, 2) and transformed.dtype == weight.dtype
    np.testing.assert_allclose(transformed.reshape(4, 4, 3, 2)[:, :, 1, 0], g @ weight[1, 0] @ g.T)


@pytest.mark.parametrize("kernel, geometry, output, channels, taken", [
    ((3, 3), (1, 1, 1, 1, 1, 1), (64, 64), (64, 64), True),
    ((3, 3), (1, 1, 1, 1, 1, 1), (6, 32), (16, 32), True),
    ((3, 3), (1, 1, 1, 1, 1, 1), (7, 32), (16, 32), False),   # an odd height
    ((3, 3), (1, 1, 1, 1, 1, 1), (8, 48), (16, 32), False),   # rows not of whole vectors of tiles
    ((3, 3), (1, 1, 1, 1, 1, 1), (8, 32), (15, 64), False),   # few input channels
    ((3, 3), (1, 1, 1, 1, 1, 1), (8, 32), (64, 31), False),   # few output channels
    ((3, 3), (2, 2, 1, 1, 1, 1), (8, 32), (16, 32), False),   # strided
    ((3, 3), (1, 1, 0, 0, 1, 1), (8, 32), (16, 32), False),   # no padding
    ((3, 3), (1, 1, 2, 2, 2, 2), (8, 32), (16, 32), False),   # dilated
    ((5, 5), (1, 1, 1, 1, 1, 1), (8, 32), (16, 32), False),
])
def test_which_convolutions_multiply_so(kernel, geometry, output, channels, taken):
    assert winograd.takes(kernel, (*geometry, *output), output, channels, "float32") == taken

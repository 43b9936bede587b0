"""Winograd's F(2x2, 2x2) over a 4x4 stride-2 convolution's phases (native/winograd_phases.py) against
torch's conv2d: the weights' transform, the input transform of several images' phases through the
tile table, the 9 GEMMs and the output transform with each epilogue, bias or none, split ranges,
tiles that leave the last vector part empty, output planes further apart than they hold."""

from __future__ import annotations

import numpy as np
import pytest

from scriptc.native import gemm, winograd_phases
from scriptc.native.heads import epilogue, gemm_runs
from scriptc.native.loops import loop_function

from .kernel_calls import run_in_parts as _call

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not gemm_runs(), reason="the transforms are written for 512-bit vectors")


def _phase_winograd(x, weight, bias, bounds, parts, plane_gap):
    """conv2d(x, weight, bias, stride=2, padding=1) of images (N, C, H, W) by the three steps, each
    output plane `plane_gap` elements further from the next than it holds (NaN between them)."""
    dtype, name = x.dtype, x.dtype.name
    (n, c, h, w), o = x.shape, weight.shape[0]
    oh, ow = h // 2, w // 2
    hq, wq, channels = oh + 1, ow + 1, 4 * c
    padded = np.zeros((n, c, h + 2, w + 2), dtype)
    padded[:, :, 1:-1, 1:-1] = x
    phases = np.ascontiguousarray(np.stack([padded[:, :, a::2, b::2] for a in range(2) for b in range(2)], 2))
    lanes = winograd_phases.vector_tiles(name)
    tiles = n * (oh // 2) * (ow // 2)
    row = -(-tiles // lanes) * lanes
    ty, tx = np.meshgrid(np.arange(oh // 2), np.arange(ow // 2), indexing="ij")
    image = np.arange(n)[:, None]
    out_plane = oh * ow + plane_gap
    in_table, out_table = np.zeros(row, np.int64), np.zeros(row, np.int64)
    in_table[:tiles] = (image * channels * hq * wq + (2 * ty * wq + 2 * tx).ravel()).ravel()
    out_table[:tiles] = (image * o * out_plane + (2 * ty * ow + 2 * tx).ravel()).ravel()
    inputs, products = np.full((9, channels, row), np.nan, dtype), np.full((9, o, row), np.nan, dtype)
    transform_in, transform_out = winograd_phases.functions(name)
    _call(transform_in, channels, [phases, inputs, in_table], [channels, hq * wq, wq, row], parts)
    transformed = winograd_phases.weights(weight)
    for position in range(9):
        _call(loop_function("gemm", name), -(-tiles // gemm.vector_columns(name)),
              [transformed[position], inputs[position], products[position], np.zeros(1, dtype), np.zeros(3, dtype)],
              [o, channels, tiles, 0, 0, row, row], 1)
    floor, ceiling, slope = bounds
    bounds_array, mode = epilogue(floor, ceiling, x.dtype, slope)
    out = np.full((n, o, out_plane), np.nan, dtype)
    _call(transform_out, o, [products, out, np.zeros(o, dtype) if bias is None else bias, bounds_array, out_table],
          [o, row, tiles, out_plane, ow, 1, mode], parts)
    assert np.isnan(out[:, :, oh * ow:]).all()  # (nothing written between the planes)
    return out[:, :, :oh * ow].reshape(n, o, oh, ow)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bounds, with_bias, parts", [((None, None, None), True, 1), ((0.0, None, None), False, 3),
                                                      ((0.0, 6.0, None), True, 2), ((None, None, 0.2), False, 1)])
@pytest.mark.parametrize("images, c, o, size", [(3, 16, 32, 32), (5, 8, 40, 8), (2, 64, 32, 4), (1, 4, 8, 12)])
def test_the_three_steps_equal_conv2d(images, c, o, size, bounds, with_bias, parts, dtype):
    rng = np.random.default_rng(images * 100 + c)
    x = rng.standard_normal((images, c, size, size)).astype(dtype)
    weight = (rng.standard_normal((o, c, 4, 4)) / (4 * np.sqrt(c))).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype) if with_bias else None
    got = _phase_winograd(x, weight, bias, bounds, parts, plane_gap=3)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(weight),
                                      None if bias is None else torch.from_numpy(bias), stride=2, padding=1)
    floor, ceiling, slope = bounds
    if slope is not None:
        want = torch.nn.functional.leaky_relu(want, slope)
    elif floor is not None:
        want = torch.clamp(want, floor, ceiling)
    tolerance = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, want.numpy(), rtol=tolerance, atol=tolerance)


def test_the_weights_transform_is_g_g_gt_of_each_phase():
    weight = np.random.default_rng(1).standard_normal((3, 2, 4, 4))
    transformed = winograd_phases.weights(weight)
    g = weight[2, 1, 1::2, 0::2]  # output 2, input channel 1, phase (1, 0): taps (2 qy + 1, 2 qx)
    expected = winograd_phases.WEIGHT_TRANSFORM @ g @ winograd_phases.WEIGHT_TRANSFORM.T
    np.testing.assert_allclose(transformed[:, 2, 4 * 1 + 2 * 1 + 0], expected.ravel())


@pytest.mark.parametrize("kernel, geometry, image, channels, taken", [
    ((4, 4), (2, 2, 1, 1, 1, 1, 16, 16), (32, 32), (64, 128), True),
    ((4, 4), (2, 2, 1, 1, 1, 1, 16, 16), (32, 32), (3, 64), False),     # 12 phase channels
    ((4, 4), (2, 2, 1, 1, 1, 1, 16, 16), (32, 32), (32, 64), False),    # 128
    ((4, 4), (2, 2, 1, 1, 1, 1, 16, 16), (32, 32), (64, 16), False),    # few output channels
    ((4, 4), (2, 2, 1, 1, 1, 1, 8, 8), (17, 17), (64, 128), False),     # an odd image
    ((4, 4), (2, 2, 1, 1, 1, 1, 3, 3), (6, 6), (64, 128), False),       # an odd output
    ((4, 4), (2, 2, 0, 0, 1, 1, 15, 15), (32, 32), (64, 128), False),   # no padding
    ((3, 3), (2, 2, 1, 1, 1, 1, 16, 16), (32, 32), (64, 128), False),
    ((4, 4), (1, 1, 1, 1, 1, 1, 31, 31), (32, 32), (64, 128), False),
])
def test_takes_4x4_stride_2_convolutions_of_even_images_and_enough_channels(kernel, geometry, image, channels,
                                                                           taken):
    assert winograd_phases.takes(kernel, geometry, image, channels, "float32") == taken


def test_the_transposed_weights_transform_is_g_g_gt_of_each_output_phases_taps():
    weight = np.random.default_rng(2).standard_normal((2, 3, 4, 4))  # (C, O, 4, 4)
    transformed = winograd_phases.transposed_weights(weight)
    a, b = 1, 0
    g = np.array([[weight[1, 2, 3 - a - 2 * qy, 3 - b - 2 * qx] for qx in range(2)] for qy in range(2)])
    expected = winograd_phases.WEIGHT_TRANSFORM @ g @ winograd_phases.WEIGHT_TRANSFORM.T
    np.testing.assert_allclose(transformed[2 * a + b, :, 2, 1], expected.ravel())

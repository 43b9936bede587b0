"""Op-table cases for quantized tensors and dynamic quantization (scriptc/ops/quantized.py): quantized
results are compared by the values they stand for, after checking their dtype; the references are
float64 numpy."""

from __future__ import annotations

import numpy as np

from .cases import Case, Int, Quantized, rand

_RANGES = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-2 ** 31, 2 ** 31 - 1)}


def _quantize(x, scale, zero_point, dtype):
    low, high = _RANGES[dtype]
    values = np.asarray(x, np.float32) * np.float32(1 / np.float32(scale))
    return (np.clip(np.rint(values) + zero_point, low, high) - zero_point) * scale


def _per_channel(x, scales, zero_points, axis, dtype):
    along = [1] * x.ndim
    along[axis] = -1
    low, high = _RANGES[dtype]
    s, z = np.reshape(scales, along).astype(np.float32), np.reshape(zero_points, along)
    return (np.clip(np.rint(x.astype(np.float32) * (1 / s)) + z, low, high) - z) * s


def _linear_dynamic(x, integers, scales, zero_points, bias=None, reduce_range=True):
    """The activation range widened to 0, over 0..127 (reduce_range) or 0..255, times the integer weight."""
    x = np.asarray(x, np.float32)
    qmax = 127 if reduce_range else 255
    low, high = min(x.min(), 0.0), max(x.max(), 0.0)
    scale = np.float32((float(high) - float(low)) / qmax)
    zero_point = int(np.clip(np.rint(-low / scale), 0, qmax))
    activations = np.clip(np.rint(x * (np.float32(1) / scale)) + zero_point, 0, qmax) - zero_point
    weight = integers.astype(np.float64) - np.reshape(zero_points, (-1, 1))
    out = (activations @ weight.T) * (float(scale) * np.asarray(scales, np.float32).astype(np.float64))
    return out if bias is None else out + bias


def _torch_linear_dynamic(torch, x, integers, scales, zero_points, bias=None):
    """torch's spelling: the weight rebuilt as a quantized tensor, packed, then linear_dynamic."""
    if scales.numel() == 1:
        weight = torch._make_per_tensor_quantized_tensor(integers, float(scales), int(zero_points))
    else:
        weight = torch._make_per_channel_quantized_tensor(integers, scales.double(), zero_points, 0)
    return torch.ops.quantized.linear_dynamic(x, torch.ops.quantized.linear_prepack(weight, bias), True)


_INTEGERS = Int(np.random.default_rng(5).integers(-128, 128, (4, 6)).astype(np.int8))


CASES: dict[str, list[Case]] = {
    "quantize_per_tensor": [
        Case((rand(3, 4), 0.05, 3, "quint8"), _quantize, grad=False),
        Case((rand(2, 5, lo=-20, hi=20), 0.1, 0, "qint8"), _quantize, grad=False, label="saturating"),
        Case((rand(4), 0.001, -7, "qint32"), _quantize, grad=False, label="qint32")],
    "quantize_per_channel": [
        Case((rand(2, 3), np.array([0.1, 0.02]), Int(np.array([0, 3])), 0, "qint8"), _per_channel, grad=False),
        Case((rand(2, 3, 2), np.array([0.1, 0.05, 0.2]), Int(np.array([10, 0, 200])), 1, "quint8"), _per_channel,
             grad=False, label="axis 1")],
    "dequantize": [
        Case((Quantized(rand(3, 4), 0.05, 3, "quint8"),), lambda q: q.values(), grad=False),
        Case((rand(3),), lambda x: x, grad=False, label="not quantized")],
    "int_repr": [
        Case((Quantized(rand(2, 3), 0.02, -4, "qint8"),), lambda q: q.integers(), grad=False,
             torch=lambda torch, q: q.int_repr())],
    "quantized_linear_dynamic": [
        Case((rand(5, 6), _INTEGERS, np.array([0.015]), Int(np.array([0])), rand(4)), _linear_dynamic, grad=False,
             torch=_torch_linear_dynamic),
        Case((rand(2, 3, 6, lo=0.5, hi=3), _INTEGERS, np.array([0.015, 0.01, 0.02, 0.005]), Int(np.zeros(4, np.int64))),
             _linear_dynamic, grad=False, torch=_torch_linear_dynamic, label="3-D, positive, per channel, no bias")],
}

"""Quantized tensors and dynamic quantization, as ops: quantize (per tensor, per channel), dequantize,
int_repr, and the dynamically quantized linear product that `torch.ao.quantization.quantize_dynamic`
models run (an int8 GEMM with int32 accumulation, as torch's fbgemm/x86 engine computes it).

A quantized tensor's array is a QuantizedArray: its integers in the dtype's one-field structured numpy
dtype (so numpy arithmetic refuses it, as torch's CPU kernels refuse a QuantizedCPU tensor) carrying the
quantization parameters; views and copies of it keep them.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from scriptc.types import (
    QUANTIZED,
    TensorType,
    float32,
    int8,
    int32,
    per_channel_affine,
    per_tensor_affine,
    qint8,
    qint32,
    quint8,
    uint8,
)

from . import OPS, register
from .schema import OPAQUE

# The integer dtype and range of each quantized dtype.
_INTEGERS = {qint8: (np.int8, -128, 127), quint8: (np.uint8, 0, 255), qint32: (np.int32, -2 ** 31, 2 ** 31 - 1)}
_BY_NUMPY = {d.np: d for d in _INTEGERS}
_INTEGER_DTYPES = {qint8: int8, quint8: uint8, qint32: int32}
# fbgemm's smallest activation scale (QuantUtils.h SMALL_SCALE_THRESHOLD).
_SMALL_SCALE = np.float32(6.1e-5)
# float32 sums of integer products are exact below 2**24: the GEMM runs in float32 when it stays below.
_FLOAT32_EXACT = 2 ** 24
_TORCH_NAMES = {np.dtype(np.float64): "Double", np.dtype(np.float16): "Half", np.dtype(np.int64): "Long",
                np.dtype(np.int32): "Int", np.dtype(np.int16): "Short", np.dtype(np.int8): "Char",
                np.dtype(np.uint8): "Byte", np.dtype(np.bool_): "Bool"}


class QuantizedArray(np.ndarray):
    """A quantized tensor's integers with its qscheme and parameters: `scale`/`zero_point` per tensor,
    `scales`/`zero_points` (float64/int64 arrays) along `axis` per channel."""

    qscheme = per_tensor_affine
    scale = 1.0
    zero_point = 0
    scales = zero_points = None
    axis = 0

    def __array_finalize__(self, obj) -> None:
        if isinstance(obj, QuantizedArray):
            self.qscheme, self.scale, self.zero_point = obj.qscheme, obj.scale, obj.zero_point
            self.scales, self.zero_points, self.axis = obj.scales, obj.zero_points, obj.axis

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise not_on_backend(ufunc.__name__, "QuantizedCPU")

    def __reduce__(self):
        # numpy's own reduce would drop the quantization parameters
        return with_quantization, (self.view(np.ndarray).copy(), self.scale, self.zero_point, self.scales,
                                   self.zero_points, self.axis)

    @property
    def qdtype(self):
        return _BY_NUMPY[self.dtype]

    def integers(self):
        """The stored integers as a plain integer array (a view)."""
        return self.view(np.ndarray).view(_INTEGERS[self.qdtype][0])


def not_on_backend(op_name: str, backend: str) -> NotImplementedError:
    """torch's error for an op with no kernel for the backend ('CPU', 'QuantizedCPU') of its tensors."""
    return NotImplementedError(f"Could not run 'aten::{op_name}' with arguments from the '{backend}' backend. This "
                               "could be because the operator doesn't exist for this backend.")


def not_for_quantized(op) -> NotImplementedError:
    """torch's error for an op that has no kernel for quantized tensors."""
    return not_on_backend(op.name, "QuantizedCPU")


def quantized_array(xp, integers, qdtype, scale: float = 1.0, zero_point: int = 0,
                    scales=None, zero_points=None, axis: int = 0) -> QuantizedArray:
    """A QuantizedArray over `integers` (cast to qdtype's range): per channel when `scales` (float64) and
    `zero_points` (int64) are given."""
    stored = xp.ascontiguousarray(integers, dtype=_INTEGERS[qdtype][0]).view(qdtype.np)
    return with_quantization(stored, scale, zero_point, scales, zero_points, axis)


def with_quantization(stored, scale: float = 1.0, zero_point: int = 0, scales=None, zero_points=None,
                      axis: int = 0) -> QuantizedArray:
    """`stored` (an array of a quantized dtype's structured numpy dtype) as a QuantizedArray with these
    parameters, sharing its memory: per channel when `scales` (float64) and `zero_points` (int64) are given."""
    array = stored.view(QuantizedArray)
    if scales is None:
        array.scale, array.zero_point = float(scale), int(zero_point)
    else:
        array.qscheme, array.axis = per_channel_affine, int(axis)
        array.scales, array.zero_points = scales, zero_points
    return array


def is_quantized(array) -> bool:
    return isinstance(array, QuantizedArray)


def _check_float_input(x) -> None:
    if x.dtype != np.float32:
        name = _TORCH_NAMES.get(x.dtype, str(x.dtype))
        raise RuntimeError(f"Quantize only works on Float Tensor, got {name}")


def _check_qdtype(dtype) -> None:
    if dtype.category != QUANTIZED:
        name = dtype.name.capitalize() if dtype.name != "float32" else "Float"
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.")


def _check_zero_point(function: str, zero_point: int, dtype) -> None:
    _, low, high = _INTEGERS[dtype]
    if zero_point > high:
        raise RuntimeError(f"{function} zero_point {zero_point} is above upper bound.")
    if zero_point < low:
        raise RuntimeError(f"{function} zero_point {zero_point} is below lower bound.")


def _round_to_integers(xp, scaled, zero_point, dtype):
    """round-half-even(scaled) + zero_point, clamped to dtype's range (torch's quantize_val)."""
    _, low, high = _INTEGERS[dtype]
    if high > _FLOAT32_EXACT:  # (qint32: float32 holds no bound of its range: 2**31 - 1 rounds up, and wraps)
        scaled = scaled.astype(np.float64)
    return xp.clip(xp.rint(scaled) + zero_point, low, high)


def _quantize_per_tensor_kernel(xp, x, scale, zero_point, dtype):
    _check_float_input(x)
    _check_qdtype(dtype)
    _check_zero_point("quantize_tensor_per_tensor_affine", zero_point, dtype)
    inverse = np.float32(1.0) / np.float32(scale)
    return quantized_array(xp, _round_to_integers(xp, x * inverse, zero_point, dtype), dtype, scale, zero_point)


register("quantize_per_tensor(self: Tensor, scale: float, zero_point: int, dtype: ScalarType) -> Tensor", OPAQUE,
         _quantize_per_tensor_kernel, shape=lambda x, scale, zero_point, dtype: TensorType(dtype, x.shape, x.device),
         method=False,
         doc="A quantized tensor: round(self / scale) + zero_point in dtype's range (qint8, quint8, qint32).")


def _channel_shape(ndim: int, axis: int) -> tuple:
    return tuple(-1 if d == axis else 1 for d in range(ndim))


def _quantize_per_channel_kernel(xp, x, scales, zero_points, axis, dtype):
    _check_float_input(x)
    _check_qdtype(dtype)
    if not 0 <= axis < x.ndim:
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}"
                           f"Expected: [0, {x.ndim})")
    channels = x.shape[axis]
    for name, values in (("scales", scales), ("zero_points", zero_points)):
        if values.size != channels:
            raise RuntimeError(f"length of {name} must equal to channel, expected {channels} got, {values.size}")
    for zero_point in zero_points.reshape(-1).tolist():
        _check_zero_point("quantize_tensor_per_channel_affine", int(zero_point), dtype)
    along = _channel_shape(x.ndim, axis)
    inverse = (np.float32(1.0) / scales.astype(np.float32)).reshape(along)
    integers = _round_to_integers(xp, x * inverse, zero_points.astype(np.int64).reshape(along), dtype)
    return quantized_array(xp, integers, dtype, scales=scales.reshape(-1).astype(np.float64),
                           zero_points=zero_points.reshape(-1).astype(np.int64), axis=axis)


register("quantize_per_channel(self: Tensor, scales: Tensor, zero_points: Tensor, axis: int, dtype: ScalarType) "
         "-> Tensor", OPAQUE, _quantize_per_channel_kernel,
         shape=lambda x, scales, zero_points, axis, dtype: TensorType(dtype, x.shape, x.device), method=False,
         doc="A quantized tensor with one scale and zero point per index of dimension `axis`.")


def dequantized(array: QuantizedArray):
    """The real values a QuantizedArray stands for, as float32: (integer - zero_point) * scale."""
    integers = array.integers()
    if array.scales is None:
        return ((integers.astype(np.float32) - np.float32(array.zero_point)) * np.float32(array.scale))
    along = _channel_shape(integers.ndim, array.axis)
    # torch multiplies by the per-channel scales in double, then rounds
    return ((integers - array.zero_points.reshape(along)) * array.scales.reshape(along)).astype(np.float32)


def _dequantize_kernel(xp, x):
    return dequantized(x) if is_quantized(x) else x


register("dequantize(self: Tensor) -> Tensor", OPAQUE, _dequantize_kernel, accepts_quantized=True,
         shape=lambda x: TensorType(float32 if x.dtype is not None and x.dtype.category == QUANTIZED else x.dtype,
                                    x.shape, x.device),
         doc="The float32 values a quantized tensor stands for; a tensor that is not quantized is returned as is.")


def _int_repr_kernel(xp, x):
    if not is_quantized(x):
        raise not_on_backend("int_repr", "CPU")
    return x.integers().copy()


def _int_repr_rule(x):
    return TensorType(_INTEGER_DTYPES.get(x.dtype), x.shape, x.device)


register("int_repr(self: Tensor) -> Tensor", OPAQUE, _int_repr_kernel, shape=_int_repr_rule, function=False,
         accepts_quantized=True,
         doc="The integers a quantized tensor stores (int8 for qint8, uint8 for quint8, int32 for qint32).")


def choose_activation_qparams(x, reduce_range: bool) -> tuple[np.float32, int]:
    """The uint8 scale and zero point fbgemm picks for a dynamically quantized activation: its range
    widened to hold 0, over [0, 255] ([0, 127] with reduce_range), the zero point nudged to an integer
    (QuantUtils.h ChooseQuantizationParams without preserve_sparsity)."""
    qmin, qmax = 0, 127 if reduce_range else 255
    low = min(float(x.min()), 0.0) if x.size else 0.0
    high = max(float(x.max()), 0.0) if x.size else 0.0
    low, high = float(np.float32(low)), float(np.float32(high))
    scale = (high - low) / (qmax - qmin)
    if np.float32(scale) == 0 or math.isinf(np.float32(1.0) / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        amplifier = float(_SMALL_SCALE) / scale
        scale = float(_SMALL_SCALE)
        if low == 0.0:
            high = scale * (qmax - qmin)
        elif high == 0.0:
            low = -scale * (qmax - qmin)
        else:
            low, high = float(np.float32(low * amplifier)), float(np.float32(high * amplifier))
    from_min, from_max = qmin - low / scale, qmax - high / scale
    from_min_error, from_max_error = abs(qmin) - abs(low / scale), abs(qmax) - abs(high / scale)
    initial = from_min if from_min_error < from_max_error else from_max
    zero_point = qmin if initial < qmin else qmax if initial > qmax else round(initial)  # half to even
    return np.float32(scale), zero_point


def _gemm_operand(xp, integers, zero_points):
    """The weight's (integer - zero_point) transposed, for the activation's integers to multiply: packed
    once per weight array (fbgemm's prepack; modules replace their weight arrays, never write them), in
    float32 when every sum of products stays exact there."""
    entry = _PACKED.get(id(integers))
    if entry is not None and entry[0]() is integers:
        return entry[1]
    centered = integers.astype(np.int64) - zero_points.reshape(-1, 1).astype(np.int64)
    bound = int(xp.abs(centered).max(initial=0)) * 255 * centered.shape[1]
    packed = xp.ascontiguousarray(centered.T, dtype=np.float32 if bound < _FLOAT32_EXACT else np.float64)
    key = id(integers)
    _PACKED[key] = (weakref.ref(integers, lambda _: _PACKED.pop(key, None)), packed)
    return packed


# id(weight integers) -> (weak reference to them, their packed operand)
_PACKED: dict = {}


def forget_packed(integers) -> None:
    """Drop the packed operand made from `integers`, written in place since (a loaded module's
    load_state_dict copies into its buffers): the next product packs them again."""
    _PACKED.pop(id(integers), None)


def _quantized_activations(xp, rows, scale, zero_point: int, reduce_range: bool):
    """The activation rows quantized as fbgemm's PackAWithQuantRowOffset rounds them: in each row the
    values its 8-wide AVX2 loop takes as round(fma(x, 1 / scale, zero_point)) (one rounding: the
    product is exact in float64), the rest (K % 8 of them) by its scalar loop, round(zero_point +
    x / scale), all half to even, clamped to 0..127 (reduce_range) or 0..255."""
    vector_end = rows.shape[1] - rows.shape[1] % 8
    inverse = np.float64(np.float32(1.0) / scale)
    transformed = (rows.astype(np.float64) * inverse + zero_point).astype(np.float32)
    if vector_end < rows.shape[1]:
        transformed[:, vector_end:] = np.float32(zero_point) + rows[:, vector_end:] / scale
    return xp.clip(xp.rint(transformed), 0, 127 if reduce_range else 255)


def _matmul(activations, operand):
    return activations @ operand


def linear_dynamic(xp, x, weight, weight_scales, weight_zero_points, bias=None, reduce_range=True,
                   product=_matmul):
    """quantized_linear_dynamic's computation with `product(centered activations, packed weight)` giving
    their exact integer sums (a backend passes a faster product of the same values)."""
    if weight.dtype != np.int8 or weight.ndim != 2 or weight_scales.size not in (1, weight.shape[0]) \
            or weight_zero_points.size != weight_scales.size:
        raise RuntimeError("quantized_linear_dynamic expects a 2-D int8 weight with one scale and zero point per "
                           "tensor or per output channel (a quantized.dynamic module's)")
    if x.dtype != np.float32:
        raise RuntimeError(f"expected scalar type Float but found {_TORCH_NAMES.get(x.dtype, x.dtype)}")
    in_features = weight.shape[1]
    if x.ndim < 2:  # (torch's dynamic linear refuses a 1-D input where nn.Linear takes it)
        raise RuntimeError("The dimension of input tensor should be larger than or equal to 2")
    if x.shape[-1] != in_features:
        raise RuntimeError(f"The number of rows in the packB should be equal to K: {x.shape[-1]}")
    scale, zero_point = choose_activation_qparams(x, reduce_range)
    packed = _gemm_operand(xp, weight, weight_zero_points)
    activations = _quantized_activations(xp, x.reshape(-1, in_features), scale, zero_point, reduce_range)
    accumulated = product(xp.ascontiguousarray(activations - zero_point, dtype=packed.dtype), packed)
    out = accumulated.astype(np.float32) * (scale * weight_scales.reshape(-1).astype(np.float32))
    if bias is not None:
        out += bias.astype(np.float32)
    return out.reshape(x.shape[:-1] + (weight.shape[0],))


def _linear_dynamic_kernel(xp, x, weight, weight_scales, weight_zero_points, bias=None, reduce_range=True):
    return linear_dynamic(xp, x, weight, weight_scales, weight_zero_points, bias, reduce_range)


def _linear_dynamic_rule(x, weight, weight_scales, weight_zero_points, bias=None, reduce_range=True):
    if x.shape is None or weight.shape is None:
        return TensorType(float32, None, x.device)
    return TensorType(float32, tuple(x.shape[:-1]) + tuple(weight.shape[:1]), x.device)


register("quantized_linear_dynamic(input: Tensor, weight: Tensor, weight_scales: Tensor, weight_zero_points: Tensor, "
         "bias: Tensor? = None, reduce_range: bool = True) -> Tensor", OPAQUE, _linear_dynamic_kernel,
         shape=_linear_dynamic_rule, method=False, function=False,
         doc="torch.ops.quantized.linear_dynamic over a qint8 weight given as its int8 integers, scales and zero "
             "points (one, or one per output channel): input quantized to quint8 per call (range from its min and "
             "max, 0..127 with reduce_range), int32 accumulation, rescaled to float32, plus bias.")


def keep_quantization(out, arrays: list):
    """`out` of an op that accepts quantized tensors, given back the quantization of its first quantized
    input when it holds that input's dtype (numpy copies, concatenations and reshapes drop it)."""
    if type(out) is not np.ndarray or out.dtype.kind != "V":
        return out
    inputs = [a for arg in arrays for a in (arg if isinstance(arg, (list, tuple)) else (arg,))]
    source = next((a for a in inputs if isinstance(a, QuantizedArray)), None)
    if source is None or out.dtype != source.dtype:
        return out
    result = out.view(QuantizedArray)
    result.__array_finalize__(source)
    return result


def _joining(kernel):
    """cat's or stack's kernel, also joining quantized tensors as torch does: the result has the first
    one's scale and zero point, each other one quantized again to them."""
    def join(xp, tensors, dim=0):
        if QuantizedArray not in map(type, tensors):
            return kernel(xp, tensors, dim)
        first = tensors[0]
        if not all(isinstance(t, QuantizedArray) for t in tensors):
            raise not_on_backend("qscheme", "CPU")  # (torch's error for a float tensor among quantized ones)
        if any(t.dtype != first.dtype for t in tensors):
            raise RuntimeError("All dtypes must be the same.")
        if any(t.scales is not None for t in tensors):
            raise RuntimeError("Only per-tensor quantization is supported in quantized cat.")
        inverse = np.float32(1.0) / np.float32(first.scale)
        integers = [t.integers() if (t.scale, t.zero_point) == (first.scale, first.zero_point) else
                    _round_to_integers(xp, dequantized(t) * inverse, first.zero_point, first.qdtype)
                    .astype(_INTEGERS[first.qdtype][0]) for t in tensors]
        return quantized_array(xp, kernel(xp, integers, dim), first.qdtype, first.scale, first.zero_point)
    return join


for _name in ("cat", "stack"):
    OPS[_name].kernel = _joining(OPS[_name].kernel)
# The ops on whole tensors torch runs on quantized ones too (views take them everywhere).
for _name in ("clone", "contiguous", "cat", "stack", "detach"):
    OPS[_name].accepts_quantized = True

"""A quantized tensor's questions about its quantization (q_scale, q_per_channel_scales, qscheme ...), as
torch's Tensor methods answer them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scriptc.ops.quantized import QuantizedArray, not_on_backend
from scriptc.types import qscheme

if TYPE_CHECKING:
    from scriptc.tensors.core import Tensor


def _quantized(t, method: str) -> QuantizedArray:
    if not isinstance(t._data, QuantizedArray):
        raise not_on_backend(method, "CPU")
    return t._data


def _per_tensor(t, method: str) -> QuantizedArray:
    array = _quantized(t, method)
    if array.scales is not None:
        raise RuntimeError("Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false.")
    return array


def _per_channel(t, method: str) -> QuantizedArray:
    array = _quantized(t, method)
    if array.scales is None:
        raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                           "kPerChannelAffineFloatQParams to be true, but got false.")
    return array


class QuantizedMethods:
    """These methods of scriptc.Tensor (a mixin: Tensor is the only class built on it)."""

    __slots__ = ()

    @property
    def is_quantized(self) -> bool:
        """Whether this is a quantized tensor (dtype qint8, quint8 or qint32)."""
        return isinstance(self._data, QuantizedArray)

    def qscheme(self) -> qscheme:
        """How the integers map to reals: torch.per_tensor_affine or torch.per_channel_affine."""
        return _quantized(self, "qscheme").qscheme

    def q_scale(self) -> float:
        """A per-tensor quantized tensor's scale."""
        return _per_tensor(self, "q_scale").scale

    def q_zero_point(self) -> int:
        """A per-tensor quantized tensor's zero point."""
        return _per_tensor(self, "q_zero_point").zero_point

    def q_per_channel_scales(self) -> Tensor:
        """A per-channel quantized tensor's scales (float64), one per index of its axis."""
        from scriptc.tensors.core import wrap
        return wrap(np.array(_per_channel(self, "q_per_channel_scales").scales))

    def q_per_channel_zero_points(self) -> Tensor:
        """A per-channel quantized tensor's zero points (int64), one per index of its axis."""
        from scriptc.tensors.core import wrap
        return wrap(np.array(_per_channel(self, "q_per_channel_zero_points").zero_points))

    def q_per_channel_axis(self) -> int:
        """The dimension a per-channel quantized tensor's scales run along."""
        return _per_channel(self, "q_per_channel_axis").axis

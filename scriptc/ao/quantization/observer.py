"""Observers: what quantize_dynamic uses to pick a weight's scale and zero point (torch.ao.quantization.observer).

Only the weight observers dynamic quantization needs compute anything: MinMaxObserver and
PerChannelMinMaxObserver over the symmetric and affine qschemes; PlaceholderObserver records the dtype
of an activation quantized per call.
"""

from __future__ import annotations

import functools

import numpy as np

import scriptc
from scriptc.nn.module import Module
from scriptc.tensors import Tensor, wrap
from scriptc.types import (
    float16,
    float32,
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    quint8,
)

__all__ = ["ObserverBase", "MinMaxObserver", "PerChannelMinMaxObserver", "PlaceholderObserver",
           "default_weight_observer", "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer"]

_RANGES = {qint8: (-128, 127), quint8: (0, 255), qint32: (-2 ** 31, 2 ** 31 - 1)}
_EPS = np.float32(np.finfo(np.float32).eps)


class _PartialWrapper:
    """An observer class with arguments bound (`MinMaxObserver.with_args(dtype=torch.qint8)`): calling it
    makes an observer."""

    def __init__(self, factory):
        self.factory = factory

    def __call__(self, *args, **kwargs):
        return self.factory(*args, **kwargs)

    def __repr__(self) -> str:
        return f"functools.partial({self.factory.func.__name__}, " + \
            ", ".join(f"{k}={v!r}" for k, v in self.factory.keywords.items()) + "){}"

    def with_args(self, **kwargs) -> "_PartialWrapper":
        return _PartialWrapper(functools.partial(self.factory, **kwargs))


class ObserverBase(Module):
    """An observer: called on a tensor it records what it needs and returns the tensor unchanged."""

    def __init__(self, dtype=quint8, is_dynamic: bool = False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    @classmethod
    def with_args(cls, **kwargs) -> _PartialWrapper:
        """This observer class with keyword arguments bound, as a qconfig holds it."""
        return _PartialWrapper(functools.partial(cls, **kwargs))


class PlaceholderObserver(ObserverBase):
    """Records no statistics: stands for an activation quantized per call (or a float16 weight)."""

    def __init__(self, dtype=float32, custom_op_name: str = "", compute_dtype=None, quant_min=None,
                 quant_max=None, qscheme=None, eps=None, is_dynamic: bool = False):
        super().__init__(dtype, is_dynamic)
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.quant_min, self.quant_max = quant_min, quant_max

    def forward(self, x: Tensor) -> Tensor:
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002 (torch's)


class _MinMaxBase(ObserverBase):
    def __init__(self, dtype, qscheme, reduce_range: bool, quant_min, quant_max, eps, is_dynamic: bool, symmetric,
                 affine):
        super().__init__(dtype, is_dynamic)
        if qscheme not in (symmetric, affine):
            raise NotImplementedError(f"Unsupported qscheme {qscheme} for {type(self).__name__}")
        if dtype not in _RANGES:
            raise AssertionError(f"Default Observer only works for qint8, quint8 and quint4x2 data type, got {dtype}")
        self.qscheme, self.reduce_range = qscheme, reduce_range
        low, high = _RANGES[dtype]
        if quant_min is None:
            quant_min, quant_max = (low // 2, high // 2) if reduce_range else (low, high)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.eps = np.float32(eps)
        self.symmetric = qscheme is symmetric
        self.min_val = self.max_val = None

    def _qparams(self, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """torch's _calculate_qparams: float32 scales and int64 zero points for the observed ranges."""
        low, high = np.minimum(low, 0).astype(np.float32), np.maximum(high, 0).astype(np.float32)
        quant_min, quant_max = self.quant_min, self.quant_max
        if self.symmetric:
            bound = np.maximum(-low, high)
            scale = np.maximum(bound / np.float32((quant_max - quant_min) / 2), self.eps)
            zero_point = np.full(scale.shape, 128 if self.dtype is quint8 else 0, np.int64)
        else:
            scale = np.maximum((high - low) / np.float32(quant_max - quant_min), self.eps)
            zero_point = np.clip(quant_min - np.rint(low / scale).astype(np.int64), quant_min, quant_max)
        return scale.astype(np.float32), zero_point.astype(np.int64)


class MinMaxObserver(_MinMaxBase):
    """Records a tensor's minimum and maximum; calculate_qparams gives one scale and zero point."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range: bool = False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=float(_EPS), is_dynamic: bool = False, **kwargs):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic, per_tensor_symmetric,
                         per_tensor_affine)

    def forward(self, x: Tensor) -> Tensor:
        values = x.detach()._data
        if values.size:
            low, high = np.float32(values.min()), np.float32(values.max())
            self.min_val = low if self.min_val is None else min(self.min_val, low)
            self.max_val = high if self.max_val is None else max(self.max_val, high)
        return x

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        if self.min_val is None:
            return scriptc.tensor([1.0]), scriptc.tensor([0])
        scale, zero_point = self._qparams(np.array(self.min_val), np.array(self.max_val))
        return wrap(scale), wrap(zero_point)


class PerChannelMinMaxObserver(_MinMaxBase):
    """Records each channel's (index of ch_axis) minimum and maximum; calculate_qparams gives a scale and zero
    point per channel."""

    def __init__(self, ch_axis: int = 0, dtype=quint8, qscheme=per_channel_affine, reduce_range: bool = False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=float(_EPS), is_dynamic: bool = False,
                 **kwargs):
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic, per_channel_symmetric,
                         per_channel_affine)
        self.ch_axis = ch_axis

    def forward(self, x: Tensor) -> Tensor:
        values = np.moveaxis(x.detach()._data, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        low, high = values.min(axis=1).astype(np.float32), values.max(axis=1).astype(np.float32)
        self.min_val = low if self.min_val is None else np.minimum(self.min_val, low)
        self.max_val = high if self.max_val is None else np.maximum(self.max_val, high)
        return x

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        scale, zero_point = self._qparams(self.min_val, self.max_val)
        return wrap(scale), wrap(zero_point)


def quantize_weight(weight: Tensor, observer: ObserverBase) -> Tensor:
    """The float weight quantized with the scale and zero point the observer (already run on it) picked."""
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (per_tensor_symmetric, per_tensor_affine):
        return scriptc.quantize_per_tensor(weight.float(), float(scale.reshape(-1)[0]),
                                           int(zero_point.reshape(-1)[0]), observer.dtype)
    return scriptc.quantize_per_channel(weight.float(), scale.double(), zero_point.long(), observer.ch_axis,
                                        observer.dtype)


default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=qint8, qscheme=per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(dtype=quint8, quant_min=0, quant_max=255,
                                                               is_dynamic=True)
default_placeholder_observer = PlaceholderObserver
float16_observer = PlaceholderObserver.with_args(dtype=float16)

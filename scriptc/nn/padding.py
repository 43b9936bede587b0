"""Padding layers (Reflection/Replication/Zero/Constant/CircularPad1d/2d/3d), each an F.pad call."""

from __future__ import annotations

from scriptc.tensors import Tensor

from . import functional as F
from .common import _ntuple
from .module import Module

__all__ = ["ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    """Pads the last `dims` dims with F.pad's `mode`; padding is an int or 2 * dims ints, last dim first."""

    mode = "constant"
    dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(2 * self.dims)(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, list(self.padding), self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    __constants__ = ["padding"]
    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, list(self.padding), "circular")


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, list(self.padding), "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Mirrors the input at its edges (edges not repeated), over the last 1 dim."""

    mode, dims = "reflect", 1


class ReflectionPad2d(_PadNd):
    """Mirrors the input at its edges (edges not repeated), over the last 2 dims."""

    mode, dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    """Mirrors the input at its edges (edges not repeated), over the last 3 dims."""

    mode, dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    """Repeats the edge values, over the last 1 dim."""

    mode, dims = "replicate", 1


class ReplicationPad2d(_PadNd):
    """Repeats the edge values, over the last 2 dims."""

    mode, dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    """Repeats the edge values, over the last 3 dims."""

    mode, dims = "replicate", 3


class ZeroPad1d(_ZeroPadNd):
    """Pads with zeros (negative padding crops), over the last 1 dim."""

    dims = 1


class ZeroPad2d(_ZeroPadNd):
    """Pads with zeros (negative padding crops), over the last 2 dims."""

    dims = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads with zeros (negative padding crops), over the last 3 dims."""

    dims = 3


class ConstantPad1d(_ConstantPadNd):
    """Pads with `value` (negative padding crops), over the last 1 dim."""

    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads with `value` (negative padding crops), over the last 2 dims."""
    __constants__ = ["padding", "value"]

    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads with `value` (negative padding crops), over the last 3 dims."""

    dims = 3


class CircularPad1d(_CircularPadNd):
    """Wraps the input around (negative padding crops), over the last 1 dim."""

    dims = 1


class CircularPad2d(_CircularPadNd):
    """Wraps the input around (negative padding crops), over the last 2 dims."""

    dims = 2


class CircularPad3d(_CircularPadNd):
    """Wraps the input around (negative padding crops), over the last 3 dims."""

    dims = 3

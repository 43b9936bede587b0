"""F.pad."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["pad"]


def pad(input: Tensor, pad: list[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pads the last len(pad) // 2 dims, last dim first: (left, right, top, bottom, front, back).

    mode: 'constant' (negative pads crop), 'reflect', 'replicate' or 'circular'.
    """
    return _op("pad", input, list(pad), mode, value)

"""F.pad."""

from __future__ import annotations

from scriptc.tensors import Tensor
from scriptc.tensors.core import _tracer

from ._calls import _op

__all__ = ["pad"]


def pad(input: Tensor, pad: list[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pads the last len(pad) // 2 dims, last dim first: (left, right, top, bottom, front, back).

    mode: 'constant' (negative pads crop), 'reflect', 'replicate' or 'circular'.
    """
    return _op("pad", input, _pad_ints(pad), mode, value)


def _pad_ints(pad) -> list[int]:
    """The pads as ints: a one-element integer tensor counts as its int (U-Net's
    `torch.tensor([x2.size(2) - x1.size(2)])` pads), as torch's int-list arguments take it."""
    ints = []
    for i, p in enumerate(pad):
        if isinstance(p, Tensor) and p.numel() == 1 and p._data.dtype.kind in "iub":
            if p._data.dtype.kind == "b":
                raise RuntimeError("Expected scalar.isIntegral( false) to be true, but got false.  (Could this error "
                                   "message be improved?  If so, please report an enhancement request to PyTorch.)")
            if _tracer[0] is None:  # (jit.trace reads it in the graph)
                p = p.__index__()
        elif not isinstance(p, int) or isinstance(p, bool):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
        ints.append(p)
    return ints

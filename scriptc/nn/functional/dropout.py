"""Dropout functions of torch.nn.functional."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["dropout"]


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _op("dropout", input, p, training)
    return input.copy_(out) if inplace else out

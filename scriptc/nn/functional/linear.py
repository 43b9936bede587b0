"""F.linear."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["linear"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    return _op("linear", input, weight, bias)

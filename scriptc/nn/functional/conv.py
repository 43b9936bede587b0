"""Convolution functions of torch.nn.functional."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["conv2d"]


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    return _op("conv2d", input, weight, bias, stride, padding, dilation, groups)

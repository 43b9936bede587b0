"""Pooling functions of torch.nn.functional."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"]


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False) -> Tensor:
    if return_indices:
        raise NotImplementedError("max_pool2d(return_indices=True) is not supported by scriptc")
    return _op("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:
    return _op("avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    return _op("adaptive_avg_pool2d", input, output_size)

"""Normalization functions of torch.nn.functional."""

from __future__ import annotations

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["batch_norm", "layer_norm"]


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return _op("batch_norm", input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _op("layer_norm", input, shape, weight, bias, eps)

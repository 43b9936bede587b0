"""Normalization functions of torch.nn.functional."""

from __future__ import annotations

from typing import Optional

from scriptc.tensors import Tensor

from ._calls import _op

__all__ = ["batch_norm", "layer_norm", "normalize"]


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    return _op("batch_norm", input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _op("layer_norm", input, shape, weight, bias, eps)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Optional[Tensor] = None) -> Tensor:
    """input divided by its p-norm over dim, the norm held at least eps (written in the script subset)."""
    result = input / input.norm(p, dim, keepdim=True).clamp(min=eps)
    if out is not None:
        return out.copy_(result)
    return result

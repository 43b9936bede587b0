"""Normalization functions of torch.nn.functional: each the call of its op, with torch's checks."""

from __future__ import annotations

import math
from typing import Optional

from scriptc.tensors import Size, Tensor

from ._calls import _op
from .padding import pad
from .pooling import avg_pool2d, avg_pool3d

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm", "normalize"]


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalizes each channel (dim 1) by the batch's statistics in training (updating the running ones in
    place), by the running ones otherwise."""
    return _op("batch_norm", input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Normalizes over the last len(normalized_shape) dims, then scales and shifts elementwise."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _op("layer_norm", input, shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               eps: float = 1e-5) -> Tensor:
    """Normalizes each of num_groups groups of channels of each sample, then scales and shifts per channel."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    size = [input.size(0) * input.size(1) // num_groups, num_groups] + list(input.shape[2:])
    if size[0] * math.prod(size[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    return _op("group_norm", input, num_groups, weight, bias, eps)


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None, running_var: Optional[Tensor] = None,
                  weight: Optional[Tensor] = None, bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalizes each channel of each sample over its spatial dims (by the running statistics when
    use_input_stats is False)."""
    if use_input_stats and math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {Size(input.shape)}")
    return _op("instance_norm", input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps)


def rms_norm(input: Tensor, normalized_shape, weight: Optional[Tensor] = None, eps: Optional[float] = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _op("rms_norm", input, shape, weight, eps)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta, as torch composes it."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), [0, 0, size // 2, (size - 1) // 2])
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, [0, 0, 0, 0, size // 2, (size - 1) // 2])
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).view(sizes)
    return input / div.mul(alpha).add(k).pow(beta)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Optional[Tensor] = None) -> Tensor:
    """input divided by its p-norm over dim, the norm held at least eps (written in the script subset)."""
    result = input / input.norm(p, dim, keepdim=True).clamp(min=eps)
    if out is not None:
        return out.copy_(result)
    return result

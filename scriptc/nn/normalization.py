"""Normalization layers without batch statistics: LayerNorm, GroupNorm, RMSNorm, LocalResponseNorm."""

from __future__ import annotations

from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .common import _empty
from .module import Module, Parameter

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


def _shape_tuple(normalized_shape) -> tuple:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalizes over the trailing `normalized_shape` dims, then scales and shifts elementwise."""
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = _shape_tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(*self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_empty(*self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalizes each of num_groups groups of channels of each sample, then scales and shifts per channel."""
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(_empty(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_empty(num_channels, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing `normalized_shape` dims, times weight."""
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.normalized_shape, self.eps = _shape_tuple(normalized_shape), eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, list(self.normalized_shape), self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta."""
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"

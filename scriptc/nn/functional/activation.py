"""Activation functions of torch.nn.functional."""

from __future__ import annotations

import warnings

from scriptc.tensors import Tensor

from ._calls import _activation, _op

__all__ = ["relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "softmax", "log_softmax"]



def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation("relu", input, inplace)


def relu_(input: Tensor) -> Tensor:
    return _activation("relu", input, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    return _op("gelu", input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation("silu", input, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return _op("sigmoid", input)


def tanh(input: Tensor) -> Tensor:
    return _op("tanh", input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _activation("leaky_relu", input, inplace, negative_slope)


def _softmax_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return _op("softmax", input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return _op("log_softmax", input, _softmax_dim(input.dim()) if dim is None else dim, dtype)

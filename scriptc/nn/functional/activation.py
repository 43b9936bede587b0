"""Activation functions of torch.nn.functional."""

from __future__ import annotations

import warnings
from typing import Optional

import scriptc
from scriptc.tensors import Tensor

from ._calls import _activation, _op

__all__ = ["relu", "relu_", "gelu", "silu", "sigmoid", "tanh", "leaky_relu", "leaky_relu_", "softmax", "log_softmax",
           "elu", "elu_", "selu", "selu_", "celu", "celu_", "hardtanh", "hardtanh_", "relu6", "hardsigmoid",
           "hardswish", "mish", "softplus", "softsign", "softshrink", "hardshrink", "tanhshrink", "logsigmoid",
           "threshold", "threshold_", "prelu", "rrelu", "rrelu_", "glu", "softmin", "gumbel_softmax"]


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


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return _activation("leaky_relu", input, True, negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1)."""
    return _activation("elu", input, inplace, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _activation("elu", input, True, alpha)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """1.0507 * elu(x, 1.6733): the self-normalizing ELU."""
    return _activation("selu", input, inplace)


def selu_(input: Tensor) -> Tensor:
    return _activation("selu", input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return _activation("celu", input, inplace, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _activation("celu", input, True, alpha)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """x clamped to [min_val, max_val]."""
    return _activation("hardtanh", input, inplace, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return _activation("hardtanh", input, True, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(0, x), 6)."""
    return _activation("relu6", input, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """relu6(x + 3) / 6."""
    return _activation("hardsigmoid", input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    return _activation("hardswish", input, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _activation("mish", input, inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    return _op("softplus", input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return _op("softsign", input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    return _op("softshrink", input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return _op("hardshrink", input, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return _op("tanhshrink", input)


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably."""
    return _op("logsigmoid", input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value."""
    return _activation("threshold", input, inplace, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _activation("threshold", input, True, threshold, value)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x; weight has one slope per channel (dim 1) or one for all."""
    return _op("prelu", input, weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with slopes drawn from U(lower, upper) per element in training, (lower + upper) / 2 in eval."""
    return _activation("rrelu", input, inplace, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return _activation("rrelu", input, True, lower, upper, training)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the halves of `dim`."""
    return _op("glu", input, dim)


def _softmax_dim(name: str, input: Tensor, dim: Optional[int]) -> int:
    """dim, or when it is None torch's implicit dim for softmax-like functions (deprecated, hence the
    warning); scripted code calls it too (SCRIPTED_DEFAULTS)."""
    if dim is not None:
        return dim
    warnings.warn("Implicit dimension choice for " + name + " has been deprecated. Change the call to include "
                  "dim=X as an argument.", stacklevel=3)
    ndim = input.dim()
    return 0 if ndim == 0 or ndim == 1 or ndim == 3 else 1


# F argument -> the function that gives its value in scripted code when the call may leave it None
SCRIPTED_DEFAULTS = {name: ("dim", _softmax_dim) for name in ("softmax", "log_softmax", "softmin")}


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return _op("softmax", input, _softmax_dim("softmax", input, dim), dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    return _op("log_softmax", input, _softmax_dim("log_softmax", input, dim), dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """softmax(-x) along dim."""
    return _op("softmin", input, _softmax_dim("softmin", input, dim), dtype)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """softmax((logits + Gumbel noise) / tau) along dim; with hard, the one-hot of its argmax in the forward pass
    and the soft sample's gradient in the backward (the straight-through estimator), as torch."""
    gumbels = -scriptc.empty_like(logits).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    return scriptc.zeros_like(logits).scatter_(dim, index, 1.0) - soft.detach() + soft

"""Activation layers, each a call of its nn.functional function, with torch's arguments and repr."""

from __future__ import annotations

import warnings

from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .common import _empty
from .module import Module, Parameter

__all__ = ["ReLU", "LeakyReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax", "LogSoftmax", "ELU", "SELU", "CELU",
           "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish", "Mish", "PReLU", "RReLU", "Softplus", "Softsign",
           "Softshrink", "Hardshrink", "Tanhshrink", "LogSigmoid", "Softmin", "Softmax2d", "GLU", "Threshold"]


def _inplace_repr(inplace: bool) -> str:
    return "inplace=True" if inplace else ""


class _InplaceOnly(Module):
    """A layer whose only argument is `inplace` (its repr shows it; Hardsigmoid's and Hardswish's do not)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class _AlongDim(Module):
    """A layer that normalizes along `dim` (Softmax and its relatives)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class ReLU(_InplaceOnly):
    __constants__ = ["inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)


class LeakyReLU(Module):
    __constants__ = ["inplace", "negative_slope"]
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    __constants__ = ["approximate"]
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class SiLU(_InplaceOnly):
    __constants__ = ["inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)


class Softmax(_AlongDim):
    __constants__ = ["dim"]
    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class LogSoftmax(_AlongDim):
    __constants__ = ["dim"]
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Softmin(_AlongDim):
    __constants__ = ["dim"]
    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of a (C, H, W) or (N, C, H, W) input."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class _WithAlpha(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class ELU(_WithAlpha):
    __constants__ = ["alpha", "inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)


class CELU(_WithAlpha):
    __constants__ = ["alpha", "inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class SELU(_InplaceOnly):
    __constants__ = ["inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)


class Mish(_InplaceOnly):
    __constants__ = ["inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, self.inplace)


class Hardsigmoid(_InplaceOnly):
    __constants__ = ["inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_InplaceOnly):
    __constants__ = ["inplace"]
    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)

    def extra_repr(self) -> str:
        return ""


class Hardtanh(Module):
    __constants__ = ["min_val", "max_val", "inplace"]
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", stacklevel=2)
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_repr(self.inplace)


class Threshold(Module):
    __constants__ = ["threshold", "value", "inplace"]
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class PReLU(Module):
    """x where x >= 0, else a * x, with `num_parameters` learnt slopes (1, or one per channel)."""
    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(_empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    __constants__ = ["lower", "upper", "inplace"]
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    __constants__ = ["beta", "threshold"]
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _WithLambd(Module):
    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)


class Softshrink(_WithLambd):
    __constants__ = ["lambd"]
    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Hardshrink(_WithLambd):
    __constants__ = ["lambd"]
    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Softsign(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class GLU(Module):
    __constants__ = ["dim"]
    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"

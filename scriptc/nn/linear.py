"""Identity, Linear and Bilinear, with PyTorch's constructor arguments, parameter names and initialisation."""

from __future__ import annotations

import math

from scriptc.tensors import Tensor

from . import functional as F
from . import init
from .common import _empty
from .module import Module, Parameter

__all__ = ["Identity", "Linear", "NonDynamicallyQuantizableLinear", "Bilinear"]


class Identity(Module):
    """Returns its input; accepts (and ignores) any constructor arguments, as torch's does."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x @ weight.T + bias; weight is (out_features, in_features)."""
    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear of MultiheadAttention's out_proj (torch names it so that quantization leaves it alone)."""


class Bilinear(Module):
    """y = x1^T A x2 + b; weight A is (out_features, in1_features, in2_features)."""
    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(_empty(out_features, in1_features, in2_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(_empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")

"""Normalization layers over feature dims (LayerNorm and the others without batch statistics)."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import Tensor, wrap
from scriptc.types import float32

from . import functional as F
from .module import Module, Parameter

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """Normalizes over the trailing `normalized_shape` dims, then scales and shifts."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        np_dtype = (dtype or float32).np
        if elementwise_affine:
            self.weight = Parameter(wrap(np.ones(shape, dtype=np_dtype)))
            if bias:
                self.bias = Parameter(wrap(np.zeros(shape, dtype=np_dtype)))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, list(self.normalized_shape), self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"

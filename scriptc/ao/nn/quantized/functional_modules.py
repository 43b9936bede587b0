"""torch.ao.nn.quantized.FloatFunctional: the adds, multiplies and concatenations a quantizable model
calls through a module (so that quantization can observe them); in a float model each is the op itself."""

from __future__ import annotations

from typing import List

import scriptc
from scriptc import nn
from scriptc.nn import functional as F
from scriptc.tensors import Tensor

__all__ = ["FloatFunctional"]


class FloatFunctional(nn.Module):
    """The float ops a quantizable model routes through a module (torchvision's quantizable ResNet adds its
    skip connection with `self.skip_add.add(out, identity)`): each method computes the op, its result
    passed through `activation_post_process` (an Identity until quantization puts an observer there)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = nn.Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying "
                           "operation")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(scriptc.add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        # (not observed, as torch's: the quantized op needs no observation)
        return scriptc.add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(scriptc.mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return scriptc.mul(x, y)

    def cat(self, x: List[Tensor], dim: int = 0) -> Tensor:
        return self.activation_post_process(scriptc.cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(F.relu(scriptc.add(x, y)))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(scriptc.matmul(x, y))

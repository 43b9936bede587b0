"""Batch normalization layers: running statistics as buffers, PyTorch's momentum rules."""

from __future__ import annotations

import numpy as np

from scriptc.tensors import Tensor, wrap
from scriptc.types import float32, int64

from . import functional as F
from .module import Module, Parameter

__all__ = ["BatchNorm2d"]


class BatchNorm2d(Module):
    """Batch normalization over (N, C, H, W); tracks running_mean/var with `momentum` in training."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats, self.use_bias = affine, track_running_stats, bias
        if affine:
            self.weight = Parameter(wrap(np.ones(num_features, dtype=(dtype or float32).np)))
            if bias:
                self.bias = Parameter(wrap(np.zeros(num_features, dtype=(dtype or float32).np)))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", wrap(np.zeros(num_features, dtype=(dtype or float32).np)))
            self.register_buffer("running_var", wrap(np.ones(num_features, dtype=(dtype or float32).np)))
            self.register_buffer("num_batches_tracked", wrap(np.zeros((), dtype=int64.np)))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if self.momentum is None:
            exponential_average_factor = 0.0
        else:
            exponential_average_factor = self.momentum
        if self.training and self.track_running_stats:
            if self.num_batches_tracked is not None:
                self.num_batches_tracked.add_(1)
                if self.momentum is None:
                    exponential_average_factor = 1.0 / float(self.num_batches_tracked)
                else:
                    exponential_average_factor = self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        return F.batch_norm(input, self.running_mean if not self.training or self.track_running_stats else None,
                            self.running_var if not self.training or self.track_running_stats else None,
                            self.weight, self.bias, bn_training, exponential_average_factor, self.eps)

    def extra_repr(self) -> str:
        bias = f", bias={self.use_bias}" if self.affine else ""
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}{bias}, "
                f"track_running_stats={self.track_running_stats}")

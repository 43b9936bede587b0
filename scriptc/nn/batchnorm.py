"""Batch normalization layers (BatchNorm1d/2d/3d) and the base they share with instance norm: affine
parameters, running statistics as buffers, torch's momentum rules (momentum=None: cumulative average)."""

from __future__ import annotations

import numpy as np

from scriptc import autograd
from scriptc.tensors import Tensor, wrap
from scriptc.types import int64

from . import functional as F
from . import init
from .common import _empty, _filled
from .module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _NormBase(Module):
    """num_features channels: weight and bias when affine, running_mean/var and num_batches_tracked
    buffers when track_running_stats."""
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    _version = 2  # version 2 added num_batches_tracked

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(_empty(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_empty(num_features, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _filled(0, num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", _filled(1, num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", _filled(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            with autograd.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # a checkpoint of a version-1 module (or a state_dict without its metadata) has no
        # num_batches_tracked: keep this module's, as torch does, instead of reporting it missing
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None else \
                wrap(np.zeros((), dtype=int64.np))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

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


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W)."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics would be reduced across a process group; scriptc runs in one
    process (torch.distributed is not available), so it normalizes over this process's batch, as torch
    does when no process group is initialized."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """module with every BatchNorm*D replaced by a SyncBatchNorm holding the same parameters and buffers."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group)
            if module.affine:
                with autograd.no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


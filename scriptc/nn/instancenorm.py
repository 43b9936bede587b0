"""Instance normalization layers (InstanceNorm1d/2d/3d): each channel of each sample normalized over
its spatial dims; running statistics only with track_running_stats."""

from __future__ import annotations

import warnings

from scriptc.tensors import Tensor

from . import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    dims = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        unbatched_rank = self.dims + 1
        if input.dim() not in (unbatched_rank, unbatched_rank + 1):
            raise ValueError(f"expected {unbatched_rank}D or {unbatched_rank + 1}D input (got {input.dim()}D input)")
        feature_dim = input.dim() - unbatched_rank
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == unbatched_rank:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or (C, L)."""

    dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or (C, H, W)."""

    dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or (C, D, H, W)."""

    dims = 3

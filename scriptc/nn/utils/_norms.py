"""The norm weight normalization divides by: over every dim but one (torch.norm_except_dim)."""

from __future__ import annotations

from scriptc import linalg
from scriptc.tensors import Tensor


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of v over every dim but `dim`, kept as size-1 dims (over everything when dim is -1)."""
    if dim == -1:
        return linalg.vector_norm(v)
    dim = dim % v.dim()
    return linalg.vector_norm(v, 2.0, [d for d in range(v.dim()) if d != dim], keepdim=True)

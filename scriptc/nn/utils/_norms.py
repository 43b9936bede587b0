"""Vector norms built from table ops, for gradient clipping and weight and spectral normalization."""

from __future__ import annotations

import math

from scriptc.tensors import Tensor


def vector_norm(x: Tensor, ord: float = 2.0, dim=None, keepdim: bool = False) -> Tensor:
    """The `ord`-norm of x over `dim` (all dims when None), as torch.linalg.vector_norm: inf is the
    largest |x|, -inf the smallest, 0 the count of non-zeros; differentiable through the ops it uses."""
    dims = tuple(range(x.dim())) if dim is None else dim
    if ord == math.inf:
        return x.abs().amax(dims, keepdim)
    if ord == -math.inf:
        return x.abs().amin(dims, keepdim)
    if ord == 0:
        return (x != 0).to(x.dtype).sum(dims, keepdim)
    if ord == 2:
        return (x * x).sum(dims, keepdim).sqrt()
    if ord == 1:
        return x.abs().sum(dims, keepdim)
    return (x.abs() ** ord).sum(dims, keepdim) ** (1.0 / ord)


def normalize(x: Tensor, dim: int = 0, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_2, eps) along `dim` (F.normalize's default)."""
    return x / vector_norm(x, 2.0, (dim,), keepdim=True).clamp(min=eps)


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of v over every dim but `dim`, kept as size-1 dims (over everything when dim is -1)."""
    if dim == -1:
        return vector_norm(v)
    dim = dim % v.dim()
    return vector_norm(v, 2.0, tuple(d for d in range(v.dim()) if d != dim), keepdim=True)

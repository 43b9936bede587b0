"""Distances between vectors: pairwise_distance, cosine_similarity and pdist, composed from ops."""

from __future__ import annotations

import scriptc
from scriptc.tensors import Tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def _p_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The p-norm along dim: (sum |x|^p)^(1/p); max |x| for p = inf, the count of non-zeros for p = 0."""
    if p == 2.0:
        return (x * x).sum(dim, keepdim).sqrt()
    if p == 1.0:
        return x.abs().sum(dim, keepdim)
    if p == float("inf"):
        return x.abs().amax(dim, keepdim)
    if p == 0.0:
        return (x != 0).to(x.dtype).sum(dim, keepdim)
    return (x.abs() ** p).sum(dim, keepdim) ** (1.0 / p)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm distance between rows: ||x1 - x2 + eps||_p along the last dimension."""
    dim = max(x1.dim(), x2.dim()) - 1
    if dim < 0:
        return _p_norm((x1 - x2 + eps).reshape(1), p, 0, keepdim)
    return _p_norm(x1 - x2 + eps, p, dim, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along dim; each vector is divided by its norm first,
    and the clamp does not change the gradient, as in torch."""
    n1 = (x1 * x1).sum(dim, True).sqrt()
    n2 = (x2 * x2).sum(dim, True).sqrt()
    n1 = n1 + (n1.clamp(min=eps) - n1).detach()
    n2 = n2 + (n2.clamp(min=eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between every pair of rows i < j of an (N, M) input, in row-major order."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    pairs = scriptc.triu_indices(input.size(0), input.size(0), 1)
    return _p_norm(input.index_select(0, pairs[0]) - input.index_select(0, pairs[1]), p, 1)

"""torch's numeric composites built from table ops (so autograd, tracing and scripting see through them):
cov, corrcoef, trapezoid, cumulative_trapezoid, vander, combinations."""

from __future__ import annotations

import itertools

from scriptc.tensors import Tensor

__all__ = ["cov", "corrcoef", "trapezoid", "cumulative_trapezoid", "vander", "combinations"]


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None):
    """The covariance matrix of the variables in input's rows (observations in columns; a 1-D input is one
    variable), weighted by integer frequency and real observation weights, with `correction` degrees of freedom
    (1: Bessel's), clamped at zero."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if not x.is_floating_point() and not x.is_complex():
        x = x.float()
    weights = None
    for w in (fweights, aweights):
        if w is not None:
            weights = w if weights is None else weights * w
    if weights is None:
        total = x.new_tensor(float(x.shape[1]))
        mean = x.mean(1, keepdim=True)
        dof = total - correction
    else:
        weights = weights.to(x.dtype)
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        dof = total - (correction * (weights * aweights).sum() / total if aweights is not None else correction)
    centered = x - mean
    scaled = centered * weights if weights is not None else centered
    out = (scaled @ centered.mT.conj()) / dof.clamp(min=0)
    return out.squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in input's rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev[:, None] / stddev[None, :]
    return c.clamp(-1, 1) if not c.is_complex() else c


def _spacing(y: Tensor, x, dx, dim: int):
    """The widths between neighbours along dim: diff(x), or dx (1 when neither is given)."""
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx; only one of them may be given")
    if x is None:
        return 1.0 if dx is None else dx
    if not isinstance(x, Tensor):
        raise TypeError("trapezoid: x must be a Tensor")
    return x.diff(dim=dim if x.dim() == y.dim() else -1)


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The trapezoid-rule integral of y along dim, at sample points x (or spacing dx)."""
    n = y.size(dim)
    if n == 0:
        return y.sum(dim)
    pairs = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2
    return (_spacing(y, x, dx, dim) * pairs).sum(dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The running trapezoid-rule integral of y along dim (one element shorter than y there)."""
    n = y.size(dim)
    pairs = (y.narrow(dim, 1, max(n - 1, 0)) + y.narrow(dim, 0, max(n - 1, 0))) / 2
    return (_spacing(y, x, dx, dim) * pairs).cumsum(dim)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of 1-D x: columns x**(N-1), ..., x**0 (or ascending powers when increasing)."""
    import scriptc

    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    columns = x.size(0) if N is None else N
    if columns < 0:
        raise RuntimeError("N must be non-negative.")
    base = x if x.is_floating_point() or x.is_complex() else x.long()
    powers = scriptc.arange(columns, dtype=scriptc.int64)
    if not increasing:
        powers = powers.flip(0)
    return base.unsqueeze(1) ** powers


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-r combinations of 1-D input's elements (with repeats when with_replacement), one per row."""
    import scriptc

    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.size(0)), r))
    index = scriptc.tensor(rows, dtype=scriptc.int64).reshape(len(rows), r)
    return input[index]

"""torch's numeric composites built from table ops (so autograd, tracing and scripting see through them):
cov, corrcoef, trapezoid (trapz), cumulative_trapezoid, gradient, vander, combinations, renorm,
cholesky_solve, cholesky_inverse."""

from __future__ import annotations

import itertools

from scriptc.amp.policy import float32_under_autocast
from scriptc.ops.rules import normalize_dim
from scriptc.tensors import Tensor

__all__ = ["cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "gradient", "vander", "combinations",
           "renorm", "cholesky_solve", "cholesky_inverse"]


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


trapz = trapezoid


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


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """The derivative of input estimated along each dim by central differences (one-sided at the edges,
    of first or second order), with a uniform spacing per dim or the dim's sample coordinates."""
    dims = list(range(input.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(spacings) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacings)} and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if any(input.size(d) < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    values = input if input.is_floating_point() or input.is_complex() else input.float()
    return tuple(_derivative(values, d % input.dim(), h, edge_order) for d, h in zip(dims, spacings))


def _derivative(f: Tensor, dim: int, h, edge_order: int) -> Tensor:
    n = f.size(dim)
    if isinstance(h, Tensor):
        widths = h.diff().reshape([-1 if d == dim else 1 for d in range(f.dim())]).to(f.dtype)
        return _uneven_derivative(f, dim, widths, edge_order)
    if n < 2:
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    inner = (f.narrow(dim, 2, n - 2) - f.narrow(dim, 0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (f.narrow(dim, 1, 1) - f.narrow(dim, 0, 1)) / h
        last = (f.narrow(dim, n - 1, 1) - f.narrow(dim, n - 2, 1)) / h
    else:
        first = (-1.5 * f.narrow(dim, 0, 1) + 2 * f.narrow(dim, 1, 1) - 0.5 * f.narrow(dim, 2, 1)) / h
        last = (0.5 * f.narrow(dim, n - 3, 1) - 2 * f.narrow(dim, n - 2, 1) + 1.5 * f.narrow(dim, n - 1, 1)) / h
    return _join(first, inner, last, dim)


def _uneven_derivative(f: Tensor, dim: int, widths: Tensor, edge_order: int) -> Tensor:
    """Second-order differences at sample points `widths` apart (numpy.gradient's formulas)."""
    n = f.size(dim)
    before, after = widths.narrow(dim, 0, n - 2), widths.narrow(dim, 1, n - 2)
    inner = (-after / (before * (before + after)) * f.narrow(dim, 0, n - 2)
             + (after - before) / (before * after) * f.narrow(dim, 1, n - 2)
             + before / (after * (before + after)) * f.narrow(dim, 2, n - 2))
    if edge_order == 1:
        first = (f.narrow(dim, 1, 1) - f.narrow(dim, 0, 1)) / widths.narrow(dim, 0, 1)
        last = (f.narrow(dim, n - 1, 1) - f.narrow(dim, n - 2, 1)) / widths.narrow(dim, n - 2, 1)
        return _join(first, inner, last, dim)
    a, b = widths.narrow(dim, 0, 1), widths.narrow(dim, 1, 1)
    first = (-(2 * a + b) / (a * (a + b)) * f.narrow(dim, 0, 1) + (a + b) / (a * b) * f.narrow(dim, 1, 1)
             - a / (b * (a + b)) * f.narrow(dim, 2, 1))
    a, b = widths.narrow(dim, n - 3, 1), widths.narrow(dim, n - 2, 1)
    last = (b / (a * (a + b)) * f.narrow(dim, n - 3, 1) - (a + b) / (a * b) * f.narrow(dim, n - 2, 1)
            + (2 * b + a) / (b * (a + b)) * f.narrow(dim, n - 1, 1))
    return _join(first, inner, last, dim)


def _join(first: Tensor, inner: Tensor, last: Tensor, dim: int) -> Tensor:
    import scriptc

    return scriptc.cat([first, inner, last], dim)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """input with each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm."""
    import scriptc

    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    d = normalize_dim(dim, input.dim())
    others = [i for i in range(input.dim()) if i != d]
    norms = scriptc.linalg.vector_norm(input, p, dim=others, keepdim=True)
    factor = scriptc.where(norms > maxnorm, maxnorm / (norms + 1e-7), scriptc.ones_like(norms))
    return input * factor


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with A X = B, for A = L L^H given its Cholesky factor L (or A = U^H U when upper)."""
    import scriptc

    B, L = float32_under_autocast(B, L)  # torch's CPU autocast solves in float32
    triangular = scriptc.linalg.solve_triangular
    if upper:
        return triangular(L, triangular(L.transpose(-2, -1).conj(), B, upper=False), upper=True)
    return triangular(L.transpose(-2, -1).conj(), triangular(L, B, upper=False), upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of A = L L^H (or U^H U when upper) from its Cholesky factor."""
    import scriptc

    eye = scriptc.eye(L.size(-1), dtype=L.dtype).expand(L.shape)
    return cholesky_solve(eye, L, upper)

"""Diagonals: diagonal (a writeable view), diag, diag_embed, diagflat and trace."""

from __future__ import annotations

import math

from scriptc.types import int64

from . import register
from .matrix import shape_rule
from .rules import normalize_dim
from .schema import OPAQUE, SHAPE


def _diagonal_axes(rank, dim1, dim2):
    d1, d2 = normalize_dim(dim1, rank, "diagonal"), normalize_dim(dim2, rank, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diagonal_shape(shape, offset, d1, d2):
    n1, n2 = shape[d1], shape[d2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    return tuple(s for i, s in enumerate(shape) if i not in (d1, d2)) + (length,)


def diagonal_view(xp, x, offset=0, dim1=0, dim2=1):
    """The offset diagonal of dims (dim1, dim2), moved to the last dim, as a view of x."""
    d1, d2 = _diagonal_axes(x.ndim, dim1, dim2)
    shape = _diagonal_shape(x.shape, offset, d1, d2)
    strides = tuple(s for i, s in enumerate(x.strides) if i not in (d1, d2)) + (x.strides[d1] + x.strides[d2],)
    if shape[-1]:
        # Start at the diagonal's first element: drop `offset` columns (or -offset rows).
        shift = [slice(None)] * x.ndim
        shift[d2 if offset >= 0 else d1] = slice(abs(offset), None)
        x = x[tuple(shift)]
    # A view of x's memory (eager dispatch finds x's storage through the view's base chain).
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _diagonal_grad(ctx, g):
    xp, x = ctx.xp, ctx.args[0]
    full = xp.zeros(x.shape, dtype=g.dtype)
    diagonal_view(xp, full, ctx.offset, ctx.dim1, ctx.dim2)[...] = g
    return (full,) + (None,) * (len(ctx.args) - 1)


def _diagonal_rule(x, offset=0, dim1=0, dim2=1):
    return shape_rule(lambda s, o, a, b: _diagonal_shape(s, o, *_diagonal_axes(len(s), a, b)))(x, offset, dim1, dim2)


register("diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor", SHAPE, diagonal_view,
         shape=_diagonal_rule, grad=_diagonal_grad, view=True,
         doc="The offset diagonal of dims (dim1, dim2) as the last dim of a view.")
register("linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor", SHAPE,
         diagonal_view, shape=_diagonal_rule, grad=_diagonal_grad, view=True, method=False, function=False,
         doc="The offset diagonal of the last two dims (by default) as a view.")


def _embed(xp, x, offset, dim1, dim2):
    """diag_embed: x's last dim on the offset diagonal of new dims (dim1, dim2)."""
    rank = x.ndim + 1
    d1, d2 = normalize_dim(dim1, rank, "diag_embed"), normalize_dim(dim2, rank, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(offset)
    batch = list(x.shape[:-1])
    shape = []
    for i in range(rank):
        shape.append(n if i in (d1, d2) else batch.pop(0))
    out = xp.zeros(shape, dtype=x.dtype)
    diagonal_view(xp, out, offset, d1, d2)[...] = x
    return out


def _diag_embed_shape(shape, offset=0, dim1=-2, dim2=-1):
    rank = len(shape) + 1
    d1, d2 = normalize_dim(dim1, rank, "diag_embed"), normalize_dim(dim2, rank, "diag_embed")
    batch = list(shape[:-1])
    n = shape[-1] + abs(offset)
    return tuple(n if i in (d1, d2) else batch.pop(0) for i in range(rank))


register("diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor", OPAQUE, _embed,
         shape=shape_rule(_diag_embed_shape),
         grad=lambda ctx, g: (diagonal_view(ctx.xp, g, ctx.offset, ctx.dim1, ctx.dim2), None, None, None),
         doc="A tensor whose (dim1, dim2) planes hold the last dim of self on their offset diagonal.")


def _diag_kernel(xp, x, diagonal=0):
    if x.ndim == 1:
        return _embed(xp, x, diagonal, 0, 1)
    if x.ndim == 2:
        return diagonal_view(xp, x, diagonal, 0, 1).copy()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")


def _diag_grad(ctx, g):
    xp, x, k = ctx.xp, ctx.self, ctx.diagonal
    if x.ndim == 1:
        return diagonal_view(xp, g, k, 0, 1), None
    full = xp.zeros(x.shape, dtype=g.dtype)
    diagonal_view(xp, full, k, 0, 1)[...] = g
    return full, None


def _diag_shape(shape, diagonal=0):
    if len(shape) == 1:
        return (shape[0] + abs(diagonal),) * 2
    if len(shape) == 2:
        return _diagonal_shape(shape, diagonal, 0, 1)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {len(shape)}D")


register("diag(self: Tensor, diagonal: int = 0) -> Tensor", OPAQUE, _diag_kernel, shape=shape_rule(_diag_shape),
         grad=_diag_grad, save=("self",),
         doc="A 1-D tensor as the diagonal of a square matrix, or a matrix's diagonal as a 1-D tensor.")
register("diagflat(self: Tensor, offset: int = 0) -> Tensor", OPAQUE,
         lambda xp, x, offset=0: _embed(xp, x.reshape(-1), offset, 0, 1),
         shape=shape_rule(lambda s, offset=0: (math.prod(s) + abs(offset),) * 2),
         grad=lambda ctx, g: (diagonal_view(ctx.xp, g, ctx.offset, 0, 1).reshape(ctx.self.shape), None),
         save=("self",), doc="The flattened input on the offset diagonal of a square matrix.")


def _trace_kernel(xp, x):
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    if x.dtype == bool:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    out_dtype = x.dtype if x.dtype.kind in "fc" else xp.int64
    return xp.asarray(diagonal_view(xp, x, 0, 0, 1).sum(dtype=out_dtype))


def _trace_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    return (xp.eye(x.shape[0], x.shape[1], dtype=g.dtype) * g,)


register("trace(self: Tensor) -> Tensor", OPAQUE, _trace_kernel,
         shape=shape_rule(lambda s: (), dtype_of=lambda x: x.dtype if x.dtype is None or x.dtype.category >= 2
                          else int64),
         grad=_trace_grad, save=("self",), doc="The sum of a matrix's main diagonal.")


# --- fill_diagonal_ ----------------------------------------------------------------------------------------------

def _diagonal_positions(xp, x, wrap):
    """Flat positions of x's main diagonal (all dims equal beyond 2-D; in 2-D, with wrap, the diagonal of a tall
    matrix restarts every columns + 1 rows), as numpy.fill_diagonal walks it."""
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if x.ndim == 2:
        step = x.shape[1] + 1
        end = x.size if wrap else min(x.size, x.shape[1] * x.shape[1])
    else:
        step = sum(math.prod(x.shape[d + 1:]) for d in range(x.ndim))
        end = x.size
    return xp.arange(0, end, step)


def _fill_diagonal_kernel(xp, x, fill_value, wrap=False):
    out = x.copy()
    out.reshape(-1)[_diagonal_positions(xp, x, wrap)] = fill_value
    return out


def _fill_diagonal_grad(ctx, g):
    d_self = g.copy()
    d_self.reshape(-1)[_diagonal_positions(ctx.xp, ctx.self, ctx.wrap)] = 0
    return (d_self, None, None)


register("fill_diagonal(self: Tensor, fill_value: Scalar, wrap: bool = False) -> Tensor", OPAQUE,
         _fill_diagonal_kernel, shape=lambda x, *rest: x, grad=_fill_diagonal_grad, save=("self",), inplace=True,
         method=False, function=False,
         doc="x.fill_diagonal_(value, wrap=False): the main diagonal set to value (wrapping down a tall matrix).")

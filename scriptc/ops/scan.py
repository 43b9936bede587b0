"""Scans along one dim (cumprod, cummax, cummin, logcumsumexp) and differences (diff); cumsum is in reduction.py."""

from __future__ import annotations

from scriptc.types import TensorType, int64

from . import register
from .rules import normalize_dim, scalar_type_name
from .schema import OPAQUE
from .special import quiet_float_errors


def _axis(x, dim, name):
    return normalize_dim(dim, x.ndim, name) if x.ndim else None


def _scan_rule(name, integer_to=None):
    def rule(x, dim, dtype=None):
        normalize_dim(dim, x.rank, name)
        d = dtype or (integer_to if integer_to is not None and x.dtype is not None
                      and not x.dtype.is_floating_point else x.dtype)
        return TensorType(d, x.shape, x.device)
    return rule


def _cumprod_kernel(xp, x, dim, dtype=None):
    out_dtype = dtype.np if dtype is not None else (x.dtype if x.dtype.kind == "f" else xp.int64)
    axis = _axis(x, dim, "cumprod")
    if axis is None:
        return x.astype(out_dtype)
    return xp.cumprod(x, axis=axis, dtype=out_dtype)


def _cumprod_grad(ctx, g):
    # d out_j / d x_k = prod_{i<=j, i!=k} x_i: with the product before k (exclusive scan) and
    # S_k = g_k + x_{k+1} S_{k+1} (a reverse scan), the gradient is exact where some x are 0.
    xp, x = ctx.xp, ctx.self
    axis = _axis(x, ctx.dim, "cumprod")
    if axis is None or x.shape[axis] == 0:
        return (g, None)
    work, grad = xp.moveaxis(x, axis, 0), xp.moveaxis(g, axis, 0)
    before = xp.concatenate([xp.ones_like(work[:1]), xp.cumprod(work[:-1], axis=0)])
    carried = xp.zeros_like(grad)
    carried[-1] = grad[-1]
    for k in range(work.shape[0] - 2, -1, -1):
        carried[k] = grad[k] + work[k + 1] * carried[k + 1]
    return (xp.moveaxis(before * carried, 0, axis), None)


register("cumprod(self: Tensor, dim: int, *, dtype: ScalarType? = None) -> Tensor", OPAQUE, _cumprod_kernel,
         shape=_scan_rule("cumprod", int64), grad=_cumprod_grad, save=("self",), inplace=True,
         doc="Running products along dim (integers and bools give int64).")


def _running_extreme(name, accumulate):
    def kernel(xp, x, dim):
        axis = _axis(x, dim, name)
        if axis is None:
            return x.copy(), xp.zeros((), dtype=xp.int64)
        if x.shape[axis] == 0:
            return x.copy(), xp.zeros(x.shape, dtype=xp.int64)
        values = getattr(xp, accumulate).accumulate(x, axis=axis)
        # The latest position holding the running extreme; a NaN holds it from where it appears.
        holds = x == values
        if x.dtype.kind == "f":
            holds = holds | xp.isnan(x)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        positions = xp.where(holds, xp.arange(x.shape[axis]).reshape(shape), 0)
        return values, xp.maximum.accumulate(positions, axis=axis)

    def grad(ctx, g):
        xp, x = ctx.xp, ctx.self
        axis = _axis(x, ctx.dim, name)
        if axis is None:
            return (g[0], None)
        out = xp.zeros(x.shape, dtype=g[0].dtype)
        xp.add.at(out, _along(xp, ctx.out[1], axis), g[0])
        return (out, None)

    register(f"{name}(self: Tensor, dim: int) -> (Tensor, Tensor)", OPAQUE, kernel,
             shape=lambda x, dim: (_scan_rule(name)(x, dim), TensorType(int64, x.shape, x.device)), grad=grad,
             result_names=("values", "indices"), nondifferentiable_outputs=(1,),
             doc=f"(values, indices) of the running {'maximum' if accumulate == 'maximum' else 'minimum'} along dim.")


def _along(xp, index, axis):
    """An advanced-indexing key that reads `index` along `axis` and every other dim in place."""
    grid = list(xp.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


_running_extreme("cummax", "maximum")
_running_extreme("cummin", "minimum")


def _logcumsumexp_kernel(xp, x, dim):
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{scalar_type_name(_dtype(x))}'")
    axis = _axis(x, dim, "logcumsumexp")
    if axis is None:
        return x.copy()
    with quiet_float_errors(xp):
        return xp.logaddexp.accumulate(x, axis=axis)


def _dtype(x):
    from scriptc.types import from_numpy_dtype
    return from_numpy_dtype(x.dtype)


def _logcumsumexp_grad(ctx, g):
    # d out_j / d x_k = exp(x_k - out_j) for k <= j. The sum over j >= k of g_j exp(-out_j) is taken
    # as reverse logcumsumexps of the positive and negative parts of g, so nothing overflows.
    xp, x, out = ctx.xp, ctx.self, ctx.out
    axis = _axis(x, ctx.dim, "logcumsumexp")
    if axis is None:
        return (g, None)
    with quiet_float_errors(xp):
        total = 0
        for part in (g, -g):
            logs = xp.where(part > 0, xp.log(xp.where(part > 0, part, 1)), -xp.inf) - out
            suffix = xp.flip(xp.logaddexp.accumulate(xp.flip(logs, axis), axis=axis), axis)
            total = total + (1 if part is g else -1) * xp.exp(x + suffix)
        return (total, None)


register("logcumsumexp(self: Tensor, dim: int) -> Tensor", OPAQUE, _logcumsumexp_kernel,
         shape=_scan_rule("logcumsumexp"), grad=_logcumsumexp_grad, save=("self", "out"),
         doc="log(cumsum(exp(self))) along dim, computed stably.")


def _diff_kernel(xp, x, n=1, dim=-1, prepend=None, append=None):
    if x.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    axis = normalize_dim(dim, x.ndim, "diff")
    parts = [p for p in (prepend, x, append) if p is not None]
    if any(p.ndim != x.ndim for p in parts):
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    joined = xp.concatenate(parts, axis=axis) if len(parts) > 1 else x
    for _ in range(n):
        if joined.dtype == bool:
            joined = xp.not_equal(xp.take(joined, range(1, joined.shape[axis]), axis=axis),
                                  xp.take(joined, range(joined.shape[axis] - 1), axis=axis))
        else:
            joined = xp.diff(joined, axis=axis)
    return joined


def _diff_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axis = normalize_dim(ctx.dim, x.ndim)
    for _ in range(ctx.n):
        pad = [(0, 0)] * g.ndim
        pad[axis] = (1, 1)
        g = -xp.diff(xp.pad(g, pad), axis=axis)
    before = ctx.prepend.shape[axis] if ctx.prepend is not None else 0
    after = ctx.append.shape[axis] if ctx.append is not None else 0
    total = g.shape[axis]
    d_x = xp.take(g, range(before, total - after), axis=axis)
    d_prepend = xp.take(g, range(before), axis=axis) if ctx.prepend is not None else None
    d_append = xp.take(g, range(total - after, total), axis=axis) if ctx.append is not None else None
    return (d_x, None, None, d_prepend, d_append)


def _diff_rule(x, n=1, dim=-1, prepend=None, append=None):
    if x.shape is None:
        return x
    axis = normalize_dim(dim, len(x.shape), "diff")
    size = x.shape[axis]
    for extra in (prepend, append):
        if isinstance(extra, TensorType):
            size = size + extra.shape[axis] if isinstance(size, int) and extra.shape and isinstance(
                extra.shape[axis], int) else None
    shape = list(x.shape)
    shape[axis] = max(size - n, 0) if isinstance(size, int) and isinstance(n, int) else None
    return TensorType(x.dtype, tuple(shape), x.device)


register("diff(self: Tensor, n: int = 1, dim: int = -1, prepend: Tensor? = None, append: Tensor? = None) -> Tensor",
         OPAQUE, _diff_kernel, shape=_diff_rule, grad=_diff_grad, save=("self", "prepend", "append"),
         doc="The n-th forward difference along dim (prepend/append joined first); on bools, !=.")

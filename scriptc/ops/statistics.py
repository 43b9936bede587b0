"""Order statistics and counting reductions: median, mode, quantile, nan-aware means and sums, aminmax,
var_mean/std_mean, count_nonzero, bincount, histc."""

from __future__ import annotations

import math

from scriptc.types import TensorType, float32, float64, from_numpy_dtype, int64

from . import register
from .reduction import _mean_rule, _require_float, _std_grad, _var_grad, _var_kernel, axes_of, restore_dims
from .matrix import torch_name
from .rules import is_known, normalize_dim, reduced_shape, scalar_type_name
from .schema import OPAQUE, REDUCTION
from .sorting import _axis, _scatter_back
from .special import quiet_float_errors


def _name(x) -> str:
    return scalar_type_name(from_numpy_dtype(x.dtype))


def _last(xp, x, axis):
    """x with `axis` moved last (the whole tensor flattened when axis is None)."""
    return x.reshape(-1) if axis is None else xp.moveaxis(x, axis, -1)


def _back(xp, values, axis, keepdim, ndim):
    """A result computed over the last axis of _last(x) as the reduction's shape."""
    if axis is None:
        return values.reshape((1,) * ndim if keepdim else ())
    return xp.expand_dims(values, axis) if keepdim else values


def _values_indices(name):
    def rule(x, dim=-1, keepdim=False):
        shape = reduced_shape(x.shape, dim, bool(keepdim), name)
        return TensorType(x.dtype, shape, x.device), TensorType(int64, shape, x.device)
    return rule


# --- median ------------------------------------------------------------------------------------------------

def _median_along(xp, x, axis, ignore_nan: bool):
    """(values, indices) of the lower median along `axis` (x with at least one dim)."""
    work = xp.moveaxis(x, axis, -1)
    order = xp.argsort(work, axis=-1, kind="stable")  # NaNs sort last
    ordered = xp.take_along_axis(work, order, axis=-1)
    nan = xp.isnan(work) if work.dtype.kind == "f" else xp.zeros(work.shape, dtype=bool)
    count = work.shape[-1] - nan.sum(axis=-1) if ignore_nan else xp.full(work.shape[:-1], work.shape[-1])
    position = xp.maximum((count - 1) // 2, 0)[..., None]
    values = xp.take_along_axis(ordered, position, axis=-1)[..., 0]
    indices = xp.take_along_axis(order, position, axis=-1)[..., 0]
    if not ignore_nan and work.dtype.kind == "f":
        has_nan = nan.any(axis=-1)
        values = xp.where(has_nan, xp.asarray(math.nan, dtype=work.dtype), values)
        indices = xp.where(has_nan, xp.argmax(nan, axis=-1), indices)
    return values, indices.astype(xp.int64)


def _median_all(name, ignore_nan):
    def kernel(xp, x):
        if x.size == 0:
            return xp.asarray(math.nan, dtype=x.dtype if x.dtype.kind == "f" else xp.float32)
        values, _ = _median_along(xp, x.reshape(-1), 0, ignore_nan)
        return xp.asarray(values)

    def grad(ctx, g):
        # Shared evenly by the elements equal to the median, as torch does for median() without dim.
        xp, x, out = ctx.xp, ctx.self, ctx.out
        hit = (x == out) | (xp.isnan(x) & xp.isnan(out)) if x.dtype.kind == "f" else x == out
        return (g * hit / max(int(hit.sum()), 1),)

    register(f"{name}(self: Tensor) -> Tensor", REDUCTION, kernel, shape=lambda x: TensorType(x.dtype, (), x.device),
             grad=grad, save=("self", "out"),
             doc=f"The lower median of all elements{' ignoring NaNs' if ignore_nan else ' (NaN if any is NaN)'}.")


def _median_dim(name, ignore_nan):
    def kernel(xp, x, dim, keepdim=False):
        if x.ndim == 0:
            return x.copy(), xp.zeros((), dtype=xp.int64)
        axis = normalize_dim(dim, x.ndim, name)
        if x.shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
        values, indices = _median_along(xp, x, axis, ignore_nan)
        return _back(xp, values, axis, keepdim, x.ndim), _back(xp, indices, axis, keepdim, x.ndim)

    def grad(ctx, g):
        return (_scatter_back(ctx, g[0], ctx.out[1], _axis(ctx.self, ctx.dim, name), ctx.keepdim), None, None)

    register(f"{name}.dim(self: Tensor, dim: int, keepdim: bool = False) -> (Tensor, Tensor)", REDUCTION, kernel,
             shape=_values_indices(name), grad=grad, result_names=("values", "indices"),
             nondifferentiable_outputs=(1,), doc="(values, indices) of the lower median along dim.")


for _name_, _ignore in (("median", False), ("nanmedian", True)):
    _median_all(_name_, _ignore)
    _median_dim(_name_, _ignore)


# --- mode ------------------------------------------------------------------------------------------------------

def _mode_kernel(xp, x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    axis = normalize_dim(dim, x.ndim, "mode")
    n = x.shape[axis]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    work = xp.moveaxis(x, axis, -1)
    ordered = xp.sort(work, axis=-1)
    positions = xp.arange(n)
    starts = xp.concatenate([xp.ones(work.shape[:-1] + (1,), dtype=bool), ordered[..., 1:] != ordered[..., :-1]],
                            axis=-1)
    run_start = xp.maximum.accumulate(xp.where(starts, positions, 0), axis=-1)
    run_length = positions - run_start + 1
    # The first run to reach the longest length: the most frequent value, the smallest on ties.
    best = xp.argmax(run_length == run_length.max(axis=-1, keepdims=True), axis=-1)
    values = xp.take_along_axis(ordered, best[..., None], axis=-1)
    indices = xp.where(work == values, positions, -1).max(axis=-1)  # its last occurrence
    return _back(xp, values[..., 0], axis, keepdim, x.ndim), _back(xp, indices.astype(xp.int64), axis, keepdim,
                                                                    x.ndim)


def _mode_grad(ctx, g):
    return (_scatter_back(ctx, g[0], ctx.out[1], _axis(ctx.self, ctx.dim, "mode"), ctx.keepdim), None, None)


register("mode(self: Tensor, dim: int = -1, keepdim: bool = False) -> (Tensor, Tensor)", REDUCTION, _mode_kernel,
         shape=_values_indices("mode"), grad=_mode_grad, result_names=("values", "indices"),
         nondifferentiable_outputs=(1,),
         doc="(values, indices): the most frequent value along dim (the smallest on ties) and its last position.")


# --- quantile --------------------------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_positions(xp, x, q, dim, keepdim, interpolation, ignore_nan, name):
    """(sorted-order indices, lower and upper positions, weight of the upper, output shape transform)."""
    if x.dtype.kind != "f":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    scalar_q = isinstance(q, float) or q.ndim == 0
    if not isinstance(q, float):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    qs = xp.asarray(q, dtype=xp.float64).reshape(-1)
    if qs.size and ((qs < 0) | (qs > 1)).any():
        bad = float(qs[(qs < 0) | (qs > 1)][0])
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {bad:g}" if scalar_q else
                           f"{name}() q values must be in the range [0, 1]")
    axis = None if dim is None else normalize_dim(dim, x.ndim, name) if x.ndim else None
    work = _last(xp, x, axis)
    order = xp.argsort(work, axis=-1, kind="stable")
    ordered = xp.take_along_axis(work, order, axis=-1)
    nan = xp.isnan(ordered)
    count = work.shape[-1] - nan.sum(axis=-1) if ignore_nan else xp.full(work.shape[:-1], work.shape[-1])
    rank = qs.reshape((-1,) + (1,) * (work.ndim - 1)) * (count - 1)  # (q, batch...)
    if interpolation == "lower":
        rank = xp.floor(rank)
    elif interpolation == "higher":
        rank = xp.ceil(rank)
    elif interpolation == "nearest":
        rank = xp.rint(rank)
    below = xp.clip(xp.floor(rank), 0, max(work.shape[-1] - 1, 0)).astype(xp.int64)
    above = xp.clip(xp.ceil(rank), 0, max(work.shape[-1] - 1, 0)).astype(xp.int64)
    weight = xp.where(interpolation == "midpoint", 0.5, rank - xp.floor(rank))
    invalid = nan.any(axis=-1) if not ignore_nan else count == 0
    return work, order, ordered, below, above, weight, invalid, axis, scalar_q


def _move_q_first(xp, out, axis, keepdim, ndim, scalar_q):
    """(q, batch...) results in torch's layout: q first (dropped for a scalar q), then the reduced shape."""
    if axis is None:
        out = out.reshape(out.shape[:1] + ((1,) * ndim if keepdim else ()))
    elif keepdim:
        out = xp.expand_dims(out, axis + 1)
    return out[0] if scalar_q else out


def _quantile(name, ignore_nan):
    def kernel(xp, x, q, dim=None, keepdim=False, interpolation="linear"):
        work, order, ordered, below, above, weight, invalid, axis, scalar_q = _quantile_positions(
            xp, x, q, dim, keepdim, interpolation, ignore_nan, name)
        lo = xp.take_along_axis(xp.broadcast_to(ordered, below.shape[:1] + ordered.shape), below[..., None], -1)[..., 0]
        hi = xp.take_along_axis(xp.broadcast_to(ordered, above.shape[:1] + ordered.shape), above[..., None], -1)[..., 0]
        weight = weight.astype(x.dtype)
        with quiet_float_errors(xp):
            out = xp.where(weight < 0.5, lo + weight * (hi - lo), hi - (hi - lo) * (1 - weight))
        out = xp.where(invalid, xp.asarray(math.nan, dtype=x.dtype), out).astype(x.dtype)
        return _move_q_first(xp, out, axis, keepdim, x.ndim, scalar_q)

    def grad(ctx, g):
        xp, x = ctx.xp, ctx.self
        work, order, ordered, below, above, weight, invalid, axis, scalar_q = _quantile_positions(
            xp, x, ctx.q, ctx.dim, ctx.keepdim, ctx.interpolation, ignore_nan, name)
        g = xp.asarray(g)
        if scalar_q:
            g = g[None]
        if axis is None:
            g = g.reshape(g.shape[:1])
        elif ctx.keepdim:
            g = xp.squeeze(g, axis + 1)
        g = xp.where(invalid, 0, g)
        d_work = xp.zeros((g.shape[0],) + work.shape, dtype=g.dtype)
        full_order = xp.broadcast_to(order, d_work.shape)
        for position, share in ((below, 1 - weight), (above, weight)):
            source = xp.take_along_axis(full_order, position[..., None], -1)
            xp.put_along_axis(d_work, source, xp.take_along_axis(d_work, source, -1) + (g * share)[..., None], -1)
        d_work = d_work.sum(axis=0)
        d_x = d_work.reshape(x.shape) if axis is None else xp.moveaxis(d_work, -1, axis)
        return (d_x, None, None, None, None)

    def rule(x, q, dim=None, keepdim=False, interpolation="linear"):
        shape = reduced_shape(x.shape, dim, bool(keepdim), name)
        if isinstance(q, TensorType) and q.shape is not None and len(q.shape) == 1 and shape is not None:
            shape = (q.shape[0],) + tuple(shape)
        return TensorType(x.dtype, shape, x.device)

    register(f"{name}(self: Tensor, q: Tensor|float, dim: int? = None, keepdim: bool = False, *, "
             "interpolation: str = 'linear') -> Tensor", OPAQUE, kernel, shape=rule, grad=grad, save=("self",),
             doc="The q-th quantiles along dim (all elements when None); q a float or a 1-d tensor, which "
                 "becomes the first dim. interpolation: linear, lower, higher, midpoint or nearest" +
                 (", ignoring NaNs." if ignore_nan else "; NaN where a NaN is present."))


_quantile("quantile", ignore_nan=False)
_quantile("nanquantile", ignore_nan=True)


# --- nan-aware sums and means ------------------------------------------------------------------------------------

def _nansum_kernel(xp, x, dim=None, keepdim=False, dtype=None):
    out_dtype = dtype.np if dtype is not None else (x.dtype if x.dtype.kind == "f" else xp.int64)
    axes = axes_of(x, dim, "nansum")
    clean = xp.where(xp.isnan(x), 0, x) if x.dtype.kind == "f" else x
    return xp.asarray(xp.sum(clean, axis=axes, keepdims=keepdim, dtype=out_dtype))


def _nansum_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axes = axes_of(x, ctx.dim, "nansum")
    return (restore_dims(xp, g, x.shape, axes, ctx.keepdim) * ~xp.isnan(x), None, None, None)


def _typed_rule(integer_to):
    def rule(x, dim=None, keepdim=False, dtype=None):
        d = dtype or (x.dtype if x.dtype is None or x.dtype.is_floating_point else integer_to)
        return TensorType(d, reduced_shape(x.shape, dim, bool(keepdim), ""), x.device)
    return rule


register("nansum(self: Tensor, dim: int[]? = None, keepdim: bool = False, *, dtype: ScalarType? = None) -> Tensor",
         REDUCTION, _nansum_kernel, shape=_typed_rule(int64), grad=_nansum_grad, save=("self",),
         doc="sum with NaNs counted as zero.")


def _nanmean_kernel(xp, x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = x.astype(dtype.np)
    if x.dtype.kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got {_name(x)}")
    axes = axes_of(x, dim, "nanmean")
    valid = ~xp.isnan(x)
    with quiet_float_errors(xp):
        total = xp.sum(xp.where(valid, x, 0), axis=axes, keepdims=keepdim)
        return xp.asarray(total / xp.sum(valid, axis=axes, keepdims=keepdim)).astype(x.dtype)


def _nanmean_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axes = axes_of(x, ctx.dim, "nanmean")
    valid = ~xp.isnan(x)
    count = xp.sum(valid, axis=axes, keepdims=True)
    spread = restore_dims(xp, g, x.shape, axes, ctx.keepdim)
    return (spread * valid / xp.maximum(count, 1), None, None, None)


register("nanmean(self: Tensor, dim: int[]? = None, keepdim: bool = False, *, dtype: ScalarType? = None) -> Tensor",
         REDUCTION, _nanmean_kernel, shape=_typed_rule(float32), grad=_nanmean_grad, save=("self",),
         doc="mean of the elements that are not NaN.")


# --- aminmax, var_mean, std_mean, count_nonzero --------------------------------------------------------------------

def _aminmax_kernel(xp, x, dim=None, keepdim=False):
    axes = axes_of(x, dim, "aminmax") if dim is not None else None
    if x.size == 0 and (axes is None or x.shape[axes[0]] == 0):
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        raise IndexError(f"aminmax: Expected reduction dim {dim} to have non-zero size.")
    return (xp.asarray(xp.amin(x, axis=axes, keepdims=keepdim)), xp.asarray(xp.amax(x, axis=axes, keepdims=keepdim)))


def _aminmax_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axes = axes_of(x, ctx.dim, "aminmax") if ctx.dim is not None else None
    total = 0
    for out, grad in zip(ctx.out, g):
        # Ties share the gradient evenly, as amin/amax.
        hit = x == restore_dims(xp, out, x.shape, axes, ctx.keepdim)
        spread = restore_dims(xp, grad, x.shape, axes, ctx.keepdim)
        total = total + spread * hit / xp.sum(hit, axis=axes, keepdims=True)
    return (total, None, None)


def _aminmax_rule(x, dim=None, keepdim=False):
    shape = reduced_shape(x.shape, dim, bool(keepdim), "aminmax")
    return TensorType(x.dtype, shape, x.device), TensorType(x.dtype, shape, x.device)


register("aminmax(self: Tensor, *, dim: int? = None, keepdim: bool = False) -> (Tensor, Tensor)", REDUCTION,
         _aminmax_kernel, shape=_aminmax_rule, grad=_aminmax_grad, save=("self", "out"), result_names=("min", "max"),
         doc="(min, max) over dim (all elements when None).")

_STAT = "(self: Tensor, dim: int[]? = None, unbiased: bool = True, keepdim: bool = False, *, " \
        "correction: Scalar? = None) -> (Tensor, Tensor)"


def _stat_mean(name, take_sqrt):
    def kernel(xp, x, dim=None, unbiased=True, keepdim=False, correction=None):
        _require_float(x, name)
        variance = _var_kernel(xp, x, dim, unbiased, keepdim, correction)
        mean = xp.asarray(xp.mean(x, axis=axes_of(x, dim, name), keepdims=keepdim))
        return (xp.sqrt(variance) if take_sqrt else variance), mean.astype(x.dtype)

    def grad(ctx, g):
        xp, x = ctx.xp, ctx.self
        axes = axes_of(x, ctx.dim, name)
        count = x.size if axes is None else int(math.prod(x.shape[a] for a in axes))
        d_mean = restore_dims(xp, g[1], x.shape, axes, ctx.keepdim) / max(count, 1)
        spread_ctx = _Spread(ctx, ctx.out[0])
        d_spread = (_std_grad if take_sqrt else _var_grad)(spread_ctx, g[0])[0]
        return (d_spread + d_mean, None, None, None, None)

    register(name + _STAT, REDUCTION, kernel, shape=lambda x, dim=None, *rest: (
        _mean_rule(x, dim, rest[1] if len(rest) > 1 else False),) * 2, grad=grad, save=("self", "out"),
        doc=f"({'std' if take_sqrt else 'var'}, mean) over dim in one call (correction= as var).")


class _Spread:
    """What var's and std's gradients read, for one output of var_mean/std_mean."""

    def __init__(self, ctx, out):
        self.xp, self.self, self.out = ctx.xp, ctx.self, out
        self.dim, self.unbiased, self.keepdim, self.correction = ctx.dim, ctx.unbiased, ctx.keepdim, ctx.correction


_stat_mean("var_mean", take_sqrt=False)
_stat_mean("std_mean", take_sqrt=True)


register("count_nonzero(self: Tensor, dim: int[]? = None) -> Tensor", REDUCTION,
         lambda xp, x, dim=None: xp.asarray(xp.count_nonzero(x, axis=axes_of(x, dim, "count_nonzero"))).astype(
             xp.int64),
         shape=lambda x, dim=None: TensorType(int64, reduced_shape(x.shape, dim, False, "count_nonzero"), x.device),
         doc="The number of nonzero elements over dim (all when None).")


# --- histograms ---------------------------------------------------------------------------------------------------

def _bincount_kernel(xp, x, weights=None, minlength=0):
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for \'{torch_name(x.dtype)}\'')
    if x.ndim != 1 or x.dtype.kind not in "iu" or (x.size and x.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and weights.shape != x.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = max(int(x.max()) + 1 if x.size else 0, minlength)
    if weights is None:
        return xp.bincount(x, minlength=length).astype(xp.int64)
    out_dtype = weights.dtype if weights.dtype.kind == "f" else xp.float64
    return xp.bincount(x, weights=weights.astype(xp.float64), minlength=length).astype(out_dtype)


def _bincount_rule(x, weights=None, minlength=0):
    if weights is None:
        dtype = int64
    else:
        dtype = weights.dtype if weights.dtype is not None and weights.dtype.is_floating_point else float64
    return TensorType(dtype, (None,), x.device)


register("bincount(self: Tensor, weights: Tensor? = None, minlength: int = 0) -> Tensor", OPAQUE, _bincount_kernel,
         shape=_bincount_rule, doc="How often each value 0..max occurs (summing weights when given).")


def _histc_kernel(xp, x, bins=100, min=0, max=0):
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_name(x)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    finite = x[xp.isfinite(x)]
    if low == high and finite.size:
        low, high = float(finite.min()), float(finite.max())
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    counts, _ = xp.histogram(finite, bins=bins, range=(low, high))
    return counts.astype(x.dtype)


register("histc(self: Tensor, bins: int = 100, min: Scalar = 0, max: Scalar = 0) -> Tensor", OPAQUE, _histc_kernel,
         shape=lambda x, bins=100, *rest: TensorType(x.dtype, (bins if is_known(bins) else None,), x.device),
         doc="A histogram of `bins` equal bins over [min, max] (the data's range when min == max).")

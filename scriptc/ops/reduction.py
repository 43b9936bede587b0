"""Reductions over dims (sum, mean, max, var, ...) and the normalizations built on them (softmax)."""

from __future__ import annotations

import math

from scriptc.types import FLOAT, TensorType, bool_, from_numpy_dtype, int64

from . import register
from .bfloat16 import as_default_float, default_float_compute
from .bfloat16 import holds as _bfloat16_holds
from .rules import normalize_dim, reduced_shape, reduction, scalar_type_name
from .schema import NORMALIZE, OPAQUE, PROMOTE_FLOAT, REDUCE, REDUCTION, FusionTail


def axes_of(x, dim, op_name: str) -> tuple[int, ...] | None:
    """Validated numpy axes for `dim` (None, an int or a list), PyTorch's errors otherwise."""
    if dim is None:
        return None
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return None
    axes = tuple(normalize_dim(d, x.ndim, op_name) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{op_name}(): dim {dims} appears multiple times in the list of dims")
    return axes if x.ndim else None


def restore_dims(xp, g, in_shape, axes, keepdim):
    """Broadcast a reduction's gradient back to the input's shape."""
    if axes is None:
        axes = tuple(range(len(in_shape)))
    if not keepdim and len(in_shape):
        g = xp.expand_dims(g, axes)
    return xp.broadcast_to(g, in_shape)


def _require_float(x, op_name):
    """torch's error for an op that takes only floating point or complex input, in its wording per op."""
    if x.dtype.kind in "fc" or _bfloat16_holds(x):
        return
    name = scalar_type_name(from_numpy_dtype(x.dtype))
    if op_name in ("std", "var"):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if op_name in ("std_mean", "var_mean"):
        raise RuntimeError(f"{op_name} only support floating point and complex dtypes")
    if op_name in ("softmax", "log_softmax"):
        raise NotImplementedError(f"\"{op_name}_lastdim_kernel_impl\" not implemented for '{name}'")
    raise RuntimeError(f"{op_name}(): could not infer output dtype. Input dtype must be either "
                       f"a floating point or complex dtype. Got: {name}")


def _sum_kernel(xp, x, dim=None, keepdim=False, dtype=None):
    axes = axes_of(x, dim, "sum")
    out_dtype = dtype.np if dtype is not None else (x.dtype if x.dtype.kind in "fc" else xp.int64)
    return xp.asarray(xp.add.reduce(x, axis=axes, keepdims=keepdim, dtype=out_dtype))


def _mean_kernel(xp, x, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        x = x.astype(dtype.np)
    _require_float(x, "mean")
    axes = axes_of(x, dim, "mean")
    count = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    total = xp.add.reduce(x, axis=axes, keepdims=keepdim, dtype=x.dtype)
    return xp.asarray(xp.true_divide(total, count if count else xp.nan), dtype=x.dtype)


def _sum_grad(ctx, g):
    axes = axes_of(ctx.self, ctx.dim, "sum")
    return (restore_dims(ctx.xp, g, ctx.self.shape, axes, ctx.keepdim),)


def _mean_grad(ctx, g):
    x = ctx.self
    axes = axes_of(x, ctx.dim, "mean")
    count = x.size if axes is None else int(math.prod(x.shape[a] for a in axes))
    return (restore_dims(ctx.xp, g, x.shape, axes, ctx.keepdim) / max(count, 1),)


def _typed_reduction(x, dim=None, keepdim=False, dtype=None):
    base = reduction()(x, dim, keepdim)
    return TensorType(dtype, base.shape, x.device) if dtype is not None else base


def _mean_rule(x, dim=None, keepdim=False, dtype=None):
    d = dtype or x.dtype
    return TensorType(d, reduced_shape(x.shape, dim, bool(keepdim), "mean"), x.device)


def _over_dims(name: str):
    """torch's Node name for a reduction: <name>Backward0 over everything, <name>Backward1 over dims."""
    return lambda ctx: f"{name}Backward{0 if ctx.dim is None else 1}"


register("sum(self: Tensor, dim: int[]? = None, keepdim: bool = False, *, dtype: ScalarType? = None) -> Tensor",
         REDUCTION, _sum_kernel, shape=_typed_reduction, grad=_sum_grad, fusion_tail=FusionTail(REDUCE, "add"),
         grad_fn_name=_over_dims("Sum"),
         doc="Sum over dim (all dims when None); bools and ints sum to int64.")
register("mean(self: Tensor, dim: int[]? = None, keepdim: bool = False, *, dtype: ScalarType? = None) -> Tensor",
         REDUCTION, _mean_kernel, shape=_mean_rule, grad=_mean_grad, fusion_tail=FusionTail(REDUCE, "add", mean=True),
         grad_fn_name=_over_dims("Mean"),
         doc="Mean over dim (all when None).")


def _prod_kernel(xp, x, dim=None, keepdim=False, dtype=None):
    out_dtype = dtype.np if dtype is not None else (x.dtype if x.dtype.kind in "fc" else xp.int64)
    return xp.asarray(xp.prod(x, axis=axes_of(x, dim, "prod"), keepdims=keepdim, dtype=out_dtype))


def _prod_grad(ctx, g):
    # The product of all other elements, without dividing (correct when some are zero).
    xp, x = ctx.xp, ctx.self
    axis = axes_of(x, ctx.dim, "prod")
    flat = axis is None
    work = x.reshape(-1) if flat else xp.moveaxis(x, axis[0], -1)
    ones = xp.ones(work.shape[:-1] + (1,), dtype=x.dtype)
    left = xp.concatenate([ones, xp.cumprod(work, axis=-1)[..., :-1]], axis=-1)
    right = xp.flip(xp.concatenate([ones, xp.cumprod(xp.flip(work, -1), axis=-1)[..., :-1]], axis=-1), -1)
    others = left * right
    others = others.reshape(x.shape) if flat else xp.moveaxis(others, -1, axis[0])
    return (restore_dims(xp, g, x.shape, axis, ctx.keepdim) * others,)


register("prod(self: Tensor, dim: int? = None, keepdim: bool = False, *, dtype: ScalarType? = None) -> Tensor",
         REDUCTION, _prod_kernel, shape=_typed_reduction, grad=_prod_grad, fusion_tail=FusionTail(REDUCE, "mul"),
         grad_fn_name=_over_dims("Prod"))


def _extreme(name, np_fn):
    def kernel(xp, x, dim=(), keepdim=False):
        axes = axes_of(x, dim, name)
        if x.size == 0 and (axes is None or any(x.shape[a] == 0 for a in axes)):
            if axes is None or dim is None or (isinstance(dim, (list, tuple)) and not dim):
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                                   "Specify the reduction dim with the 'dim' argument.")
            # (torch names the dim as it was given)
            empty = next(d for d in ([dim] if isinstance(dim, int) else dim) if x.shape[d % x.ndim] == 0)
            raise IndexError(f"{name}(): Expected reduction dim {empty} to have non-zero size.")
        return xp.asarray(getattr(xp, np_fn)(x, axis=axes, keepdims=keepdim))

    def grad(ctx, g):
        # Ties share the gradient evenly, as PyTorch's amax/amin do.
        xp, x = ctx.xp, ctx.self
        axes = axes_of(x, ctx.dim, name)
        out = restore_dims(xp, ctx.out, x.shape, axes, ctx.keepdim)
        mask = (x == out)
        count = xp.sum(mask, axis=axes, keepdims=True)
        return (restore_dims(xp, g, x.shape, axes, ctx.keepdim) * mask / count,)

    return kernel, grad


_amax_kernel, _amax_grad = _extreme("amax", "amax")
_amin_kernel, _amin_grad = _extreme("amin", "amin")
_keep = reduction(integer_to=None)
register("amax(self: Tensor, dim: int[] = [], keepdim: bool = False) -> Tensor", REDUCTION, _amax_kernel,
         shape=_keep, grad=_amax_grad, save=("self", "out"), fusion_tail=FusionTail(REDUCE, "max"))
register("amin(self: Tensor, dim: int[] = [], keepdim: bool = False) -> Tensor", REDUCTION, _amin_kernel,
         shape=_keep, grad=_amin_grad, save=("self", "out"), fusion_tail=FusionTail(REDUCE, "min"))
register("max(self: Tensor) -> Tensor", REDUCTION, lambda xp, x: _amax_kernel(xp, x),
         shape=lambda x: TensorType(x.dtype, (), x.device),
         grad=lambda ctx, g: _amax_grad(_Full(ctx), g), save=("self", "out"), grad_fn_name="MaxBackward1",
         doc="The largest element.")
register("min(self: Tensor) -> Tensor", REDUCTION, lambda xp, x: _amin_kernel(xp, x),
         shape=lambda x: TensorType(x.dtype, (), x.device),
         grad=lambda ctx, g: _amin_grad(_Full(ctx), g), save=("self", "out"), grad_fn_name="MinBackward1",
         doc="The smallest element.")


class _Full:
    """A ctx view that reads as a reduction over all dims (for max()/min() without dim)."""

    def __init__(self, ctx):
        self.xp, self.self, self.out, self.dim, self.keepdim = ctx.xp, ctx.self, ctx.out, None, False


def _arg_extreme(np_fn, name):
    def kernel(xp, x, dim=None, keepdim=False):
        if dim is None:
            if x.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
            out = getattr(xp, np_fn)(x.reshape(-1))
            return xp.asarray(out, dtype=xp.int64).reshape((1,) * x.ndim if keepdim else ())
        axis = normalize_dim(dim, x.ndim, name) if x.ndim else None
        if axis is None:
            return xp.asarray(0, dtype=xp.int64)
        if x.shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
        return xp.asarray(getattr(xp, np_fn)(x, axis=axis, keepdims=keepdim), dtype=xp.int64)
    return kernel


def _index_rule(x, dim=None, keepdim=False):
    return TensorType(int64, reduced_shape(x.shape, dim, bool(keepdim), ""), x.device)


register("argmax(self: Tensor, dim: int? = None, keepdim: bool = False) -> Tensor", REDUCTION,
         _arg_extreme("argmax", "argmax"), shape=_index_rule)
register("argmin(self: Tensor, dim: int? = None, keepdim: bool = False) -> Tensor", REDUCTION,
         _arg_extreme("argmin", "argmin"), shape=_index_rule)


def _extreme_dim(np_arg, name):
    arg_kernel = _arg_extreme(np_arg, name)

    def kernel(xp, x, dim, keepdim=False):
        if x.ndim and x.shape[normalize_dim(dim, x.ndim, name)] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
        idx = arg_kernel(xp, x, dim, True)
        values = xp.take_along_axis(x, idx, axis=normalize_dim(dim, x.ndim, name)) if x.ndim else x
        if not keepdim and x.ndim:
            axis = normalize_dim(dim, x.ndim, name)
            values, idx = xp.squeeze(values, axis), xp.squeeze(idx, axis)
        return values, idx

    def grad(ctx, g):
        xp, x = ctx.xp, ctx.self
        g_values = g[0]
        if x.ndim == 0:
            return (g_values,)
        axis = normalize_dim(ctx.dim, x.ndim, name)
        idx = ctx.out[1]
        if not ctx.keepdim:
            g_values, idx = xp.expand_dims(g_values, axis), xp.expand_dims(idx, axis)
        out = xp.zeros(x.shape, dtype=g_values.dtype)
        xp.put_along_axis(out, idx, g_values, axis=axis)
        return (out,)

    return kernel, grad


def _values_indices_rule(x, dim, keepdim=False):
    shape = reduced_shape(x.shape, dim, bool(keepdim), "")
    return (TensorType(x.dtype, shape, x.device), TensorType(int64, shape, x.device))


_max_dim_kernel, _max_dim_grad = _extreme_dim("argmax", "max")
_min_dim_kernel, _min_dim_grad = _extreme_dim("argmin", "min")
register("max.dim(self: Tensor, dim: int, keepdim: bool = False) -> (Tensor, Tensor)", REDUCTION,
         _max_dim_kernel, shape=_values_indices_rule, grad=_max_dim_grad, result_names=("values", "indices"),
         grad_fn_name="MaxBackward0",
         doc="(values, indices) of the largest elements along dim.")
register("min.dim(self: Tensor, dim: int, keepdim: bool = False) -> (Tensor, Tensor)", REDUCTION,
         _min_dim_kernel, shape=_values_indices_rule, grad=_min_dim_grad, result_names=("values", "indices"),
         grad_fn_name="MinBackward0",
         doc="(values, indices) of the smallest elements along dim.")


def _correction(unbiased, correction):
    return (1 if unbiased else 0) if correction is None else correction


def _var_kernel(xp, x, dim=None, unbiased=True, keepdim=False, correction=None):
    _require_float(x, "var")
    axes = axes_of(x, dim, "var")
    return xp.asarray(xp.var(x, axis=axes, ddof=_correction(unbiased, correction), keepdims=keepdim))


def _var_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axes = axes_of(x, ctx.dim, "var")
    n = x.size if axes is None else int(math.prod(x.shape[a] for a in axes))
    centered = x - xp.mean(x, axis=axes, keepdims=True)
    denom = max(n - _correction(ctx.unbiased, ctx.correction), 0)
    return (restore_dims(xp, g, x.shape, axes, ctx.keepdim) * 2 * centered / denom,)


def _std_kernel(xp, x, dim=None, unbiased=True, keepdim=False, correction=None):
    _require_float(x, "std")
    return xp.sqrt(_var_kernel(xp, x, dim, unbiased, keepdim, correction))


def _std_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axes = axes_of(x, ctx.dim, "std")
    std = restore_dims(xp, ctx.out, x.shape, axes, ctx.keepdim)
    (var_grad,) = _var_grad(ctx, g)
    return (var_grad / (2 * std),)


_VAR = "(self: Tensor, dim: int[]? = None, unbiased: bool = True, keepdim: bool = False, *, correction: Scalar? = None) -> Tensor"
register("var" + _VAR, REDUCTION, _var_kernel, grad=_var_grad, save=("self",),
         shape=lambda x, dim=None, unbiased=True, keepdim=False, correction=None: _mean_rule(x, dim, keepdim))
register("std" + _VAR, REDUCTION, _std_kernel, grad=_std_grad, save=("self", "out"),
         shape=lambda x, dim=None, unbiased=True, keepdim=False, correction=None: _mean_rule(x, dim, keepdim))


def _softmax_kernel(xp, x, dim, dtype=None):
    if dtype is not None:
        x = x.astype(dtype.np)
    _require_float(x, "softmax")
    axis = normalize_dim(dim, x.ndim, "softmax") if x.ndim else None
    shifted = x - xp.max(x, axis=axis, keepdims=True) if x.size else x
    e = xp.exp(shifted)
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax_kernel(xp, x, dim, dtype=None):
    if dtype is not None:
        x = x.astype(dtype.np)
    _require_float(x, "log_softmax")
    axis = normalize_dim(dim, x.ndim, "log_softmax") if x.ndim else None
    shifted = x - xp.max(x, axis=axis, keepdims=True) if x.size else x
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True))


def _softmax_grad(ctx, g):
    y, axis = ctx.out, normalize_dim(ctx.dim, ctx.out.ndim) if ctx.out.ndim else None
    return (y * (g - ctx.xp.sum(g * y, axis=axis, keepdims=True)),)


def _log_softmax_grad(ctx, g):
    y, axis = ctx.out, normalize_dim(ctx.dim, ctx.out.ndim) if ctx.out.ndim else None
    return (g - ctx.xp.exp(y) * ctx.xp.sum(g, axis=axis, keepdims=True),)


def _normalization_rule(x, dim, dtype=None):
    return TensorType(dtype or x.dtype, x.shape, x.device)


register("softmax(self: Tensor, dim: int, dtype: ScalarType? = None) -> Tensor", REDUCTION, _softmax_kernel,
         shape=_normalization_rule, grad=_softmax_grad, save=("out",), functional=True,
         fusion_tail=FusionTail(NORMALIZE),
         doc="exp(x) / sum(exp(x)) along dim, computed stably.")
register("log_softmax(self: Tensor, dim: int, dtype: ScalarType? = None) -> Tensor", REDUCTION,
         _log_softmax_kernel, shape=_normalization_rule, grad=_log_softmax_grad, save=("out",),
         functional=True, fusion_tail=FusionTail(NORMALIZE, log=True), doc="log(softmax(x)) along dim, computed stably.")


def _logsumexp_kernel(xp, x, dim, keepdim=False):
    if x.dtype.kind != "f":  # integers give the default float dtype
        return as_default_float(xp, _logsumexp_kernel(xp, x.astype(default_float_compute(xp)), dim, keepdim))
    axes = axes_of(x, dim, "logsumexp")
    if x.size == 0:
        return xp.asarray(xp.log(xp.sum(xp.exp(x), axis=axes, keepdims=keepdim)))
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    out = xp.log(xp.sum(xp.exp(x - m), axis=axes, keepdims=True)) + m
    return xp.asarray(out if keepdim else xp.squeeze(out, axis=axes))


def _logsumexp_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axes = axes_of(x, ctx.dim, "logsumexp")
    out = restore_dims(xp, ctx.out, x.shape, axes, ctx.keepdim)
    return (restore_dims(xp, g, x.shape, axes, ctx.keepdim) * xp.exp(x - out),)


register("logsumexp(self: Tensor, dim: int[], keepdim: bool = False) -> Tensor", REDUCTION, _logsumexp_kernel,
         shape=reduction(PROMOTE_FLOAT, integer_to=None), grad=_logsumexp_grad, save=("self", "out"))


def _cumsum_kernel(xp, x, dim, dtype=None):
    out_dtype = dtype.np if dtype is not None else (x.dtype if x.dtype.kind in "fc" else xp.int64)
    if x.ndim == 0:
        return x.astype(out_dtype)
    return xp.cumsum(x, axis=normalize_dim(dim, x.ndim, "cumsum"), dtype=out_dtype)


def _cumsum_grad(ctx, g):
    if g.ndim == 0:
        return (g,)
    axis = normalize_dim(ctx.dim, g.ndim)
    return (ctx.xp.flip(ctx.xp.cumsum(ctx.xp.flip(g, axis), axis=axis), axis),)


def _cumsum_rule(x, dim, dtype=None):
    d = dtype or (x.dtype if x.dtype is None or x.dtype.category >= FLOAT else int64)
    normalize_dim(dim, x.rank, "cumsum")
    return TensorType(d, x.shape, x.device)


register("cumsum(self: Tensor, dim: int, *, dtype: ScalarType? = None) -> Tensor", OPAQUE, _cumsum_kernel,
         shape=_cumsum_rule, grad=_cumsum_grad)
register("all(self: Tensor, dim: int[]? = None, keepdim: bool = False) -> Tensor", REDUCTION,
         lambda xp, x, dim=None, keepdim=False: xp.asarray(xp.all(x, axis=axes_of(x, dim, "all"), keepdims=keepdim)),
         shape=lambda x, dim=None, keepdim=False: TensorType(bool_, reduced_shape(x.shape, dim, keepdim), x.device))
register("any(self: Tensor, dim: int[]? = None, keepdim: bool = False) -> Tensor", REDUCTION,
         lambda xp, x, dim=None, keepdim=False: xp.asarray(xp.any(x, axis=axes_of(x, dim, "any"), keepdims=keepdim)),
         shape=lambda x, dim=None, keepdim=False: TensorType(bool_, reduced_shape(x.shape, dim, keepdim), x.device))

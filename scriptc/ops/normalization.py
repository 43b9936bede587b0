"""Normalizations beyond batch_norm and layer_norm (linalg.py): group_norm, instance_norm (group norm
with one group per channel, plus running statistics) and rms_norm, each with its gradient."""

from __future__ import annotations

from . import register
from .rules import check_per_channel
from .schema import OPAQUE


def _per_channel(t, ndim):
    """A (C,) tensor shaped to broadcast over (N, C, *spatial)."""
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def _group_stats(xp, x, groups, eps):
    """(x normalized over each group of each sample, as (N, G, M); the groups' rstd, (N, G, 1))."""
    rows = x.reshape(x.shape[0], groups, -1)
    mean = rows.mean(axis=2, keepdims=True)
    centered = rows - mean
    rstd = 1 / xp.sqrt((centered * centered).mean(axis=2, keepdims=True) + eps)
    return centered * rstd, rstd


def _affine(xp, normalized, x, weight, bias):
    out = normalized.reshape(x.shape)
    if weight is not None:
        out = out * _per_channel(weight, x.ndim)
    if bias is not None:
        out = out + _per_channel(bias, x.ndim)
    return out.astype(x.dtype, copy=False)


def _group_grads(xp, x, g, groups, weight, bias, eps):
    """(d input, d weight, d bias) of normalizing each group, then the per-channel affine."""
    xhat, rstd = _group_stats(xp, x, groups, eps)
    spatial_axes = (0,) + tuple(range(2, x.ndim))
    gw = (g * xhat.reshape(x.shape)).sum(axis=spatial_axes) if weight is not None else None
    gb = g.sum(axis=spatial_axes) if bias is not None else None
    g_hat = (g * _per_channel(weight, x.ndim) if weight is not None else g).reshape(xhat.shape)
    gx = rstd * (g_hat - g_hat.mean(axis=2, keepdims=True) - xhat * (g_hat * xhat).mean(axis=2, keepdims=True))
    return gx.reshape(x.shape).astype(g.dtype, copy=False), gw, gb


def _group_norm_kernel(xp, x, num_groups, weight=None, bias=None, eps=1e-5):
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    channels = x.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(x.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(x.shape)}")
    xhat, _ = _group_stats(xp, x, num_groups, eps)
    return _affine(xp, xhat, x, weight, bias)


def _group_norm_grad(ctx, g):
    gx, gw, gb = _group_grads(ctx.xp, ctx.input, g, ctx.num_groups, ctx.weight, ctx.bias, ctx.eps)
    return gx, None, gw, gb, None


def _group_norm_rule(x, num_groups, weight=None, bias=None, *rest):
    check_per_channel(x, "Expected {name} to be a vector of size equal to the number of channels in input, but got "
                      "{name} of shape {shape} and input of shape {input}", weight=weight, bias=bias)
    return x


register("group_norm(input: Tensor, num_groups: int, weight: Tensor? = None, bias: Tensor? = None, "
         "eps: float = 1e-05) -> Tensor", OPAQUE, _group_norm_kernel, shape=_group_norm_rule, grad=_group_norm_grad,
         save=("input", "weight"), method=False, functional=True, keeps_layout=True,
         doc="Normalizes each group of channels of each sample, then scales and shifts per channel.")


def _instance_norm_kernel(xp, x, weight=None, bias=None, running_mean=None, running_var=None,
                          use_input_stats=True, momentum=0.1, eps=1e-5):
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x.shape[:2]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.shape != (c,):
            raise RuntimeError(f"{name} should contain {c} elements not {t.size}")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        scale = 1 / xp.sqrt(running_var + eps)
        xhat = (x - _per_channel(running_mean, x.ndim)) * _per_channel(scale, x.ndim)
        return _affine(xp, xhat, x, weight, bias)
    rows = x.reshape(n, c, -1)
    if running_mean is not None:
        count = rows.shape[2]
        running_mean *= 1 - momentum
        running_mean += momentum * rows.mean(axis=2).mean(axis=0)
        if running_var is not None:
            running_var *= 1 - momentum
            running_var += momentum * (rows.var(axis=2) * count / max(count - 1, 1)).mean(axis=0)
    xhat, _ = _group_stats(xp, x.reshape(1, n * c, -1), n * c, eps)
    return _affine(xp, xhat, x, weight, bias)


def _instance_norm_grad(ctx, g):
    xp, x = ctx.xp, ctx.input
    n, c = x.shape[:2]
    if not ctx.use_input_stats:
        scale = 1 / xp.sqrt(ctx.running_var + ctx.eps)
        xhat = (x - _per_channel(ctx.running_mean, x.ndim)) * _per_channel(scale, x.ndim)
        axes = (0,) + tuple(range(2, x.ndim))
        weight = ctx.weight
        gx = g * _per_channel(scale if weight is None else scale * weight, x.ndim)
        gw = (g * xhat).sum(axis=axes) if weight is not None else None
        gb = g.sum(axis=axes) if ctx.bias is not None else None
        return gx, gw, gb, None, None, None, None, None
    # instance norm is group norm of a single sample whose n * c channels are the instances
    stacked = x.reshape((1, n * c) + x.shape[2:])
    tile = (lambda t: None if t is None else xp.tile(t, n))
    gx, gw, gb = _group_grads(xp, stacked, g.reshape(stacked.shape), n * c, tile(ctx.weight), tile(ctx.bias),
                              ctx.eps)
    gw = None if gw is None else gw.reshape(n, c).sum(axis=0)
    gb = None if gb is None else gb.reshape(n, c).sum(axis=0)
    return gx.reshape(x.shape), gw, gb, None, None, None, None, None


register("instance_norm(input: Tensor, weight: Tensor?, bias: Tensor?, running_mean: Tensor?, running_var: Tensor?, "
         "use_input_stats: bool, momentum: float, eps: float) -> Tensor", OPAQUE, _instance_norm_kernel,
         shape=lambda x, *rest: x, grad=_instance_norm_grad, save=("input", "weight"),
         mutates=("running_mean", "running_var"), mutates_when="use_input_stats", method=False, functional=True,
         doc="Normalizes each channel of each sample over its spatial dims; with use_input_stats updates the running "
             "statistics in place.")


def _rms_axes(x, normalized_shape):
    k = len(normalized_shape)
    if k > x.ndim or tuple(x.shape[x.ndim - k:]) != tuple(normalized_shape):
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*{', '.join(map(str, normalized_shape))}], but got input of size{list(x.shape)}")
    return tuple(range(x.ndim - k, x.ndim))


def _rms_norm_kernel(xp, x, normalized_shape, weight=None, eps=None):
    axes = _rms_axes(x, normalized_shape)
    rstd = 1 / xp.sqrt((x * x).mean(axis=axes, keepdims=True) + (xp.finfo(x.dtype).eps if eps is None else eps))
    out = x * rstd
    if weight is not None:
        out = out * weight
    return out.astype(x.dtype, copy=False)


def _rms_norm_grad(ctx, g):
    xp, x, w = ctx.xp, ctx.input, ctx.weight
    axes = _rms_axes(x, ctx.normalized_shape)
    eps = xp.finfo(x.dtype).eps if ctx.eps is None else ctx.eps
    rstd = 1 / xp.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    y = x * rstd
    lead = tuple(range(x.ndim - len(axes)))
    gw = (g * y).sum(axis=lead) if w is not None else None
    gy = g * w if w is not None else g
    gx = rstd * (gy - y * (gy * y).mean(axis=axes, keepdims=True))
    return gx, None, gw, None


register("rms_norm(input: Tensor, normalized_shape: int[], weight: Tensor? = None, eps: float? = None) -> Tensor",
         OPAQUE, _rms_norm_kernel, shape=lambda x, *rest: x, grad=_rms_norm_grad, save=("input", "weight"),
         method=False, functional=True,
         doc="x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims, times weight; eps defaults to the "
             "dtype's machine epsilon.")

"""Norms and distances: linalg.vector_norm, linalg.matrix_norm, linalg.norm, Tensor.norm, dist, cdist."""

from __future__ import annotations

import math

from scriptc.errors import ShapeError
from scriptc.types import TensorType, promote_pair

from . import register
from .matrix import mH, mT, out_type, real_dtype, require_floating, same_dtype, torch_name
from .rules import broadcast_shapes, normalize_dim, reduced_shape
from .schema import OPAQUE, PROMOTE
from .special import quiet_float_errors

INF = math.inf


def _sgn(xp, x):
    """x / |x| (0 at 0): sign for real tensors, the unit phase for complex ones."""
    if x.dtype.kind != "c":
        return xp.sign(x)
    a = xp.abs(x)
    return xp.where(a == 0, 0, x / xp.where(a == 0, 1, a))


def _dims(x, dim, name):
    """numpy axes for `dim` (None = every dim), PyTorch's error for a repeated one."""
    if dim is None:
        return tuple(range(x.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return tuple(range(x.ndim))
    axes = tuple(normalize_dim(d, x.ndim, name) for d in dims) if x.ndim else ()
    for a in axes:
        if axes.count(a) > 1:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    return axes


def _cast_for(x, dtype, name):
    if dtype is None:
        return x
    if promote_pair(_scriptc_dtype(x.dtype), dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({torch_name(x.dtype)}) should be convertible without "
                           f"narrowing to the specified dtype ({torch_name(dtype)})")
    return x.astype(dtype.np)


def _scriptc_dtype(np_dtype):
    from scriptc.types import from_numpy_dtype
    return from_numpy_dtype(np_dtype)


def _ord_text(ord) -> str:
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord)) if math.isfinite(ord) else ("inf" if ord > 0 else "-inf")
    return str(ord)


def vector_norm(xp, x, ord=2, dim=None, keepdim=False, dtype=None, name="linalg.vector_norm"):
    """The ord-norm of x over dim (every dim when None), in x's real dtype."""
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str")
    require_floating(x, name)
    x = _cast_for(x, dtype, name)
    axes = _dims(x, dim, name)
    if ord < 0 or ord == INF:
        if x.size == 0 and dim is None:
            raise RuntimeError(f"{name} cannot compute the {_ord_text(ord)} norm on an empty tensor because the "
                               "operation does not have an identity")
        for a in axes:
            if x.shape[a] == 0:
                raise RuntimeError(f"{name} cannot compute the {_ord_text(ord)} norm on the dimension {a}because "
                                   "this dimension is empty and the operation does not have an identity")
    a = xp.abs(x)
    if ord == INF:
        out = a.max(axis=axes, keepdims=keepdim)
    elif ord == -INF:
        out = a.min(axis=axes, keepdims=keepdim)
    elif ord == 0:
        out = (a != 0).sum(axis=axes, keepdims=keepdim).astype(a.dtype)
    elif ord == 1:
        out = a.sum(axis=axes, keepdims=keepdim)
    elif ord == 2:
        out = xp.sqrt((a * a).sum(axis=axes, keepdims=keepdim))
    else:
        out = ((a ** ord).sum(axis=axes, keepdims=keepdim)) ** (1.0 / ord)
    return xp.asarray(out, dtype=a.dtype)


def vector_norm_grad(xp, x, norm, g, ord, dim, keepdim, dtype=None):
    """d norm / d x times g, PyTorch's formula for each ord (ties of inf-norms share the gradient)."""
    if dtype is not None:
        x = x.astype(dtype.np)
    axes = _dims(x, dim, "linalg.vector_norm")
    if not keepdim:
        g, norm = xp.expand_dims(g, axes), xp.expand_dims(norm, axes)
    if ord == 0:
        return xp.zeros(x.shape, dtype=x.dtype)
    if ord == 1:
        return _sgn(xp, x) * g
    safe = xp.where(norm == 0, 1, norm)
    if ord == 2:
        return x * xp.where(norm == 0, 0, g / safe)
    a = xp.abs(x)
    if ord in (INF, -INF):
        mask = a == norm
        return _sgn(xp, x) * mask * (g / mask.sum(axis=axes, keepdims=True))
    with quiet_float_errors(xp):
        scale = xp.where(norm == 0, 0, g / safe ** (ord - 1))
        return _sgn(xp, x) * a ** (ord - 1) * scale


def _vector_norm_rule(x, ord=2, dim=None, keepdim=False, dtype=None):
    result = dtype if dtype is not None else (x.dtype.to_real() if x.dtype is not None else None)
    dims = dim if dim is None or not isinstance(dim, int) else [dim]
    return TensorType(result, reduced_shape(x.shape, dims, bool(keepdim), "linalg.vector_norm"), x.device)


register("linalg_vector_norm(self: Tensor, ord: Scalar = 2, dim: int[]? = None, keepdim: bool = False, *, "
         "dtype: ScalarType? = None) -> Tensor", OPAQUE, vector_norm, shape=_vector_norm_rule,
         grad=lambda ctx, g: (vector_norm_grad(ctx.xp, ctx.self, ctx.out, g, ctx.ord, ctx.dim, ctx.keepdim,
                                               ctx.dtype),) + (None,) * 4,
         save=("self", "out"), complex_aware=True, method=False, function=False,
         doc="The vector ord-norm over dim (all dims when None).")


# --- matrix norms -----------------------------------------------------------------------

_MATRIX_ORDS = ("fro", "nuc", 2, -2, 1, -1, INF, -INF)


def _matrix_dims(x, ord, dim, name="linalg.matrix_norm"):
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    if x.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    d1, d2 = (normalize_dim(d, x.ndim, name) for d in dims)
    if d1 == d2:
        raise RuntimeError(f"{name}: dims must be different. Got ({dims[0]}, {dims[1]})")
    if not any(ord == o and type(ord) is type(o) or (not isinstance(ord, str) and not isinstance(o, str) and
                                                      ord == o) for o in _MATRIX_ORDS):
        raise RuntimeError(f"{name}: Order {_ord_text(ord)} not supported.")
    return d1, d2


def _to_end(xp, x, d1, d2):
    return xp.moveaxis(x, (d1, d2), (-2, -1))


def _from_end(xp, x, d1, d2):
    return xp.moveaxis(x, (-2, -1), (d1, d2))


def _keep(xp, out, d1, d2, keepdim):
    return xp.expand_dims(out, tuple(sorted((d1, d2)))) if keepdim else out


def matrix_norm(xp, x, ord="fro", dim=(-2, -1), keepdim=False, dtype=None, name="linalg.matrix_norm"):
    """The ord matrix norm of the (dim[0], dim[1]) planes of x."""
    require_floating(x, name)
    d1, d2 = _matrix_dims(x, ord, dim, name)
    x = _cast_for(x, dtype, name)
    if ord == "fro":
        return vector_norm(xp, x, 2, [d1, d2], keepdim, None, name)
    m = _to_end(xp, x, d1, d2)
    if ord in ("nuc", 2, -2):
        s = xp.linalg.svd(m, compute_uv=False)
        out = s.sum(axis=-1) if ord == "nuc" else (s.max(axis=-1) if ord == 2 else s.min(axis=-1))
    else:
        sums = xp.abs(m).sum(axis=-2 if abs(ord) == 1 else -1)
        out = sums.max(axis=-1) if ord > 0 else sums.min(axis=-1)
    return xp.asarray(_keep(xp, out, d1, d2, keepdim), dtype=real_dtype(x.dtype))


def matrix_norm_grad(xp, x, g, ord, dim, keepdim, dtype=None):
    if dtype is not None:
        x = x.astype(dtype.np)
    d1, d2 = _matrix_dims(x, ord, dim)
    if ord == "fro":
        norm = vector_norm(xp, x, 2, [d1, d2], keepdim)
        return vector_norm_grad(xp, x, norm, g, 2, [d1, d2], keepdim)
    if keepdim:
        g = xp.squeeze(g, axis=tuple(sorted((d1, d2))))
    m = _to_end(xp, x, d1, d2)
    g = g[..., None, None]
    if ord in ("nuc", 2, -2):
        u, s, vh = xp.linalg.svd(m, full_matrices=False)
        if ord == "nuc":
            grad = g * (u @ vh)
        else:
            k = (s.argmax(axis=-1) if ord == 2 else s.argmin(axis=-1))[..., None, None]
            uk = xp.take_along_axis(u, k, axis=-1)
            vk = xp.take_along_axis(mH(vh), k, axis=-1)
            grad = g * (uk @ mH(vk))
    else:
        axis = -2 if abs(ord) == 1 else -1
        sums = xp.abs(m).sum(axis=axis, keepdims=True)
        best = sums.max(axis=-1 if axis == -2 else -2, keepdims=True) if ord > 0 else \
            sums.min(axis=-1 if axis == -2 else -2, keepdims=True)
        mask = sums == best
        grad = g * _sgn(xp, m) * mask / mask.sum(axis=(-1, -2), keepdims=True)
    return _from_end(xp, grad, d1, d2)


def _matrix_norm_rule(x, ord="fro", dim=(-2, -1), keepdim=False, dtype=None):
    result = dtype if dtype is not None else (x.dtype.to_real() if x.dtype is not None else None)
    return TensorType(result, reduced_shape(x.shape, list(dim), bool(keepdim), "linalg.matrix_norm"), x.device)


register("linalg_matrix_norm(self: Tensor, ord: Scalar|str = 'fro', dim: int[] = [-2, -1], keepdim: bool = False, "
         "*, dtype: ScalarType? = None) -> Tensor", OPAQUE, matrix_norm, shape=_matrix_norm_rule,
         grad=lambda ctx, g: (matrix_norm_grad(ctx.xp, ctx.self, g, ctx.ord, ctx.dim, ctx.keepdim, ctx.dtype),)
         + (None,) * 4, save=("self",), complex_aware=True, method=False, function=False,
         doc="A matrix norm ('fro', 'nuc', 2, -2, 1, -1, inf, -inf) of the planes of dims dim.")


def _linalg_norm_choice(ndim, ord, dim):
    """('vector' | 'matrix', ord, dim) for linalg.norm's arguments."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + str(dims[0]))
            return "vector", 2 if ord is None else ord, dims
        if len(dims) == 2:
            return "matrix", "fro" if ord is None else ord, dims
        if ord is None:
            return "vector", 2, dims
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {dims}")
    if ord is None:
        return "vector", 2, None
    if ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {ndim}D.")
    return ("vector", ord, None) if ndim == 1 else ("matrix", ord, [0, 1])


def _torch_norm_choice(ndim, p, dim):
    """torch.norm's (and Tensor.norm's) dispatch, as torch/functional.py does it."""
    dims = None if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if isinstance(p, str):
        if p == "fro" and (dims is None or len(dims) <= 2):
            return "vector", 2, dims
        return "matrix", p, list(range(ndim)) if dims is None else dims
    return "vector", 2 if p is None else p, dims


def _dispatching(choose):
    def kernel(xp, x, ord=None, dim=None, keepdim=False, dtype=None):
        kind, order, dims = choose(x.ndim, ord, dim)
        if kind == "vector":
            return vector_norm(xp, x, order, dims, keepdim, dtype)
        return matrix_norm(xp, x, order, dims, keepdim, dtype)

    def grad(ctx, g):
        x = ctx.args[0]
        kind, order, dims = choose(x.ndim, ctx.args[1], ctx.dim)
        if kind == "vector":
            gx = vector_norm_grad(ctx.xp, x, ctx.out, g, order, dims, ctx.keepdim, ctx.dtype)
        else:
            gx = matrix_norm_grad(ctx.xp, x, g, order, dims, ctx.keepdim, ctx.dtype)
        return (gx,) + (None,) * 4

    def rule(x, ord=None, dim=None, keepdim=False, dtype=None):
        if x.shape is None:
            return out_type(x, None, dtype or (x.dtype.to_real() if x.dtype is not None else None))
        kind, order, dims = choose(len(x.shape), ord, dim)
        if kind == "vector":
            return _vector_norm_rule(x, order, dims, keepdim, dtype)
        return _matrix_norm_rule(x, order, dims, keepdim, dtype)
    return kernel, grad, rule


_kernel, _grad, _rule = _dispatching(_linalg_norm_choice)
register("linalg_norm(self: Tensor, ord: Scalar|str? = None, dim: int[]? = None, keepdim: bool = False, *, "
         "dtype: ScalarType? = None) -> Tensor", OPAQUE, _kernel, shape=_rule, grad=_grad, save=("self", "out"),
         complex_aware=True, method=False, function=False,
         doc="A vector norm (dim of one dim, or no ord) or a matrix norm (dim of two dims, or a 2-D input).")
_kernel, _grad, _rule = _dispatching(_torch_norm_choice)
register("norm(self: Tensor, p: Scalar|str? = 'fro', dim: int[]? = None, keepdim: bool = False, "
         "dtype: ScalarType? = None) -> Tensor", OPAQUE, _kernel, shape=_rule, grad=_grad, save=("self", "out"),
         complex_aware=True, grad_fn_name=lambda ctx: None if ctx.p == "nuc" else "LinalgVectorNormBackward0",
         doc="The p-norm over dim ('fro' = 2 over all dims; 'nuc' = the nuclear norm).")


# --- distances -------------------------------------------------------------------------

def _dist_kernel(xp, a, b, p=2):
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        bad = a if a.dtype.kind not in "fc" else b
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{torch_name(bad.dtype)} instead.")
    return vector_norm(xp, xp.subtract(a, b), p)


def _dist_grad(ctx, g):
    xp = ctx.xp
    diff = xp.subtract(ctx.self, ctx.other)
    gd = vector_norm_grad(xp, diff, ctx.out, g, ctx.p, None, False)
    return gd, -gd, None


register("dist(self: Tensor, other: Tensor, p: Scalar = 2) -> Tensor", OPAQUE, _dist_kernel, dtype_rule=PROMOTE,
         shape=lambda a, b, p=2: TensorType(a.dtype.to_real() if a.dtype is not None and b.dtype is not None and
                                            a.dtype is b.dtype else None, (), a.device),
         grad=_dist_grad, save=("self", "other", "out"), complex_aware=True,
         doc="The p-norm of self - other (broadcasting).")


def _cdist_check(x1, x2, p):
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {torch_name(x.dtype)}")
    same_dtype("expected scalar type {} but found {}", x1, x2)
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return broadcast_shapes(x1.shape[:-2], x2.shape[:-2])


def _pairwise(xp, x1, x2, batch):
    a = xp.broadcast_to(x1, tuple(batch) + x1.shape[-2:])
    b = xp.broadcast_to(x2, tuple(batch) + x2.shape[-2:])
    return a, b


def _cdist_kernel(xp, x1, x2, p=2.0, compute_mode=None):
    batch = _cdist_check(x1, x2, p)
    a, b = _pairwise(xp, x1, x2, batch)
    if p == 2:
        # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b: products instead of an (P, R, M) difference tensor.
        squared = (a * a).sum(-1)[..., :, None] + (b * b).sum(-1)[..., None, :] - 2 * (a @ mT(b))
        return xp.sqrt(xp.maximum(squared, 0)).astype(x1.dtype, copy=False)
    diff = xp.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (diff != 0).sum(-1).astype(x1.dtype)
    if p == INF:
        return diff.max(axis=-1) if diff.shape[-1] else xp.zeros(diff.shape[:-1], x1.dtype)
    if p == 1:
        return diff.sum(-1)
    return (diff ** p).sum(-1) ** (1.0 / p)


def _cdist_grad(ctx, g):
    xp, x1, x2, p, d = ctx.xp, ctx.x1, ctx.x2, ctx.p, ctx.out
    a, b = _pairwise(xp, x1, x2, _cdist_check(x1, x2, p))
    if p == 0:
        return xp.zeros(x1.shape, x1.dtype), xp.zeros(x2.shape, x2.dtype), None, None
    if p == 2:
        w = xp.where(d == 0, 0, g / xp.where(d == 0, 1, d))
        ga = a * w.sum(-1)[..., None] - w @ b
        gb = b * w.sum(-2)[..., None] - mT(w) @ a
        return ga, gb, None, None
    diff = a[..., :, None, :] - b[..., None, :, :]
    if p == 1:
        scaled = xp.sign(diff)
    elif p == INF:
        scaled = xp.sign(diff) * (xp.abs(diff) == d[..., None])
    else:
        with quiet_float_errors(xp):
            scaled = xp.where(d[..., None] == 0, 0, xp.sign(diff) * (xp.abs(diff) / d[..., None]) ** (p - 1))
    weighted = scaled * g[..., None]
    return weighted.sum(-2), -weighted.sum(-3), None, None


def _cdist_rule(x1, x2, p=2.0, compute_mode=None):
    if x1.shape is None or x2.shape is None:
        return out_type(x1, None)
    return out_type(x1, tuple(broadcast_shapes(x1.shape[:-2], x2.shape[:-2])) + (x1.shape[-2], x2.shape[-2]))


register("cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str? = None) -> Tensor", OPAQUE, _cdist_kernel,
         shape=_cdist_rule, grad=_cdist_grad, save=("x1", "x2", "out"), method=False,
         doc="The p-norm distance between each pair of rows of x1 and x2 (batched).")

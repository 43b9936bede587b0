"""Indexing ops: index_select, gather, nonzero, argwhere, masked_select/masked_scatter, the scatter family,
index_add/copy/fill, take and take_along_dim (index and index_put, behind tensor[...], are in shape.py)."""

from __future__ import annotations

from scriptc.types import TensorType, int64

from . import register
from .rules import broadcast_shapes, normalize_dim, numel
from .schema import OPAQUE, SHAPE


def _check_index_dtype(index, name):
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")


def _check_bounds(index, size, dim, error=IndexError, negative=False, prefix=""):
    """torch's error for an index outside [0, size) (or [-size, size) where `negative` indices count back)."""
    low = -size if negative else 0
    if index.size and (index.max() >= size or index.min() < low):
        bad = int(index.max()) if index.max() >= size else int(index.min())
        raise error(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {size}")


# --- index_select, gather ----------------------------------------------------------------------------------------

def _index_select_kernel(xp, x, dim, index):
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype.kind not in "iu":
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    axis = normalize_dim(dim, x.ndim, "index_select") if x.ndim else 0
    size = x.shape[axis] if x.ndim else 1
    if index.size and (index.max() >= size or index.min() < 0):
        raise IndexError("index out of range in self")
    return xp.take(x, index.reshape(-1), axis=axis) if x.ndim else x.reshape(()).copy()


def _index_select_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axis = normalize_dim(ctx.dim, x.ndim) if x.ndim else 0
    out = xp.zeros(x.shape, dtype=g.dtype)
    key = [slice(None)] * x.ndim
    key[axis] = ctx.index.reshape(-1)
    xp.add.at(out, tuple(key), g)
    return (out, None, None)


def _index_select_rule(x, dim, index):
    if not x.shape:
        return x
    shape = list(x.shape)
    shape[normalize_dim(dim, len(shape), "index_select")] = index.shape[0] if index.shape else 1
    return TensorType(x.dtype, tuple(shape), x.device)


register("index_select(self: Tensor, dim: int, index: Tensor) -> Tensor", SHAPE, _index_select_kernel,
         shape=_index_select_rule,
         grad=_index_select_grad, save=("self",), doc="The slices of self at index along dim.")


def _gather_key(xp, x, dim, index):
    axis = normalize_dim(dim, x.ndim, "gather")
    if index.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    if index.dtype.kind not in "iu":
        raise RuntimeError("gather(): Expected dtype int64 for index")
    for d in range(x.ndim):
        if d != axis and index.shape[d] > x.shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                               f"smaller than self {list(x.shape)} apart from dimension {axis}")
    if index.size and (index.max() >= x.shape[axis] or index.min() < 0):
        bad = int(index.max()) if index.max() >= x.shape[axis] else int(index.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {axis} with size {x.shape[axis]}")
    grid = list(xp.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid)


def _gather_grad(ctx, g):
    xp = ctx.xp
    out = xp.zeros(ctx.self.shape, dtype=g.dtype)
    xp.add.at(out, _gather_key(xp, ctx.self, ctx.dim, ctx.index), g)
    return (out, None, None)


register("gather(self: Tensor, dim: int, index: Tensor) -> Tensor", SHAPE,
         lambda xp, x, dim, index: x[_gather_key(xp, x, dim, index)],
         shape=lambda x, dim, index: TensorType(x.dtype, index.shape, x.device), grad=_gather_grad, save=("self",),
         doc="self's values at index along dim, every other dim in place (shaped as index).")


# --- nonzero, argwhere, one-argument where --------------------------------------------------------------------

def _nonzero_kernel(xp, x, as_tuple=False):
    return xp.argwhere(x).astype(xp.int64)


def _split_columns(x, positions):
    """nonzero(as_tuple=True): one index tensor per dim (a 0-d input counts as one dim)."""
    if x.dim() == 0:
        return (positions.reshape(-1),)
    return tuple(positions.unbind(1))


def _positions_rule(x, *rest):
    return TensorType(int64, (None, len(x.shape) if x.shape is not None else None), x.device)


register("nonzero(self: Tensor, *, as_tuple: bool = False) -> Tensor", OPAQUE, _nonzero_kernel, shape=_positions_rule,
         python_result=lambda args, outs: _split_columns(args[0], outs[0]) if args[1] else outs[0],
         doc="The indices of the nonzero elements, one row each; with as_tuple one index tensor per dim.")
register("argwhere(self: Tensor) -> Tensor", OPAQUE, lambda xp, x: _nonzero_kernel(xp, x), shape=_positions_rule,
         doc="The indices of the nonzero elements, one row each.")
def _positions_per_dim_kernel(xp, condition):
    """One int64 index tensor per dim of the nonzero elements (a 0-d condition counts as one dim)."""
    return [p.astype(xp.int64) for p in xp.nonzero(condition.reshape(condition.shape or (1,)))]


def _positions_per_dim_rule(condition):
    if condition.shape is None:
        return TensorType(int64, None, condition.device)
    return tuple(TensorType(int64, (None,), condition.device) for _ in range(max(len(condition.shape), 1)))


register("where.cond(condition: Tensor) -> Tensor[]", OPAQUE, _positions_per_dim_kernel, shape=_positions_per_dim_rule,
         python_result=lambda args, outs: tuple(outs), method=False,
         doc="where(condition): nonzero(condition, as_tuple=True); a List[Tensor] in scripted code, as TorchScript's.")


# --- masks -------------------------------------------------------------------------------------------------------

def _check_mask(mask, name):
    if mask.dtype != bool:
        raise RuntimeError(f"{name}: expected BoolTensor for mask")


def _masked_select_kernel(xp, x, mask):
    _check_mask(mask, "masked_select")
    shape = xp.broadcast_shapes(x.shape, mask.shape)
    return xp.broadcast_to(x, shape)[xp.broadcast_to(mask, shape)]


def _masked_select_grad(ctx, g):
    xp, x, mask = ctx.xp, ctx.self, ctx.mask
    shape = xp.broadcast_shapes(x.shape, mask.shape)
    out = xp.zeros(shape, dtype=g.dtype)
    out[xp.broadcast_to(mask, shape)] = g
    return (out, None)


register("masked_select(self: Tensor, mask: Tensor) -> Tensor", OPAQUE, _masked_select_kernel,
         shape=lambda x, mask: TensorType(x.dtype, (None,), x.device), grad=_masked_select_grad, save=("self", "mask"),
         doc="The elements of self (broadcast with mask) where mask is True, as a 1-d tensor.")


def _masked_scatter_kernel(xp, x, mask, source):
    _check_mask(mask, "masked_scatter_")
    full = xp.broadcast_to(mask, x.shape)
    count = int(full.sum())
    if source.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = x.copy()
    out[full] = source.reshape(-1)[:count]
    return out


def _masked_scatter_grad(ctx, g):
    xp = ctx.xp
    full = xp.broadcast_to(ctx.mask, g.shape)
    taken = g[full]
    d_source = xp.zeros(ctx.source.size, dtype=g.dtype)
    d_source[:taken.size] = taken
    return (xp.where(full, 0, g), None, d_source.reshape(ctx.source.shape))


register("masked_scatter(self: Tensor, mask: Tensor, source: Tensor) -> Tensor", OPAQUE, _masked_scatter_kernel,
         shape=lambda x, mask, source: x, grad=_masked_scatter_grad, save=("mask", "source"), inplace=True,
         doc="self with the positions where mask is True filled, in order, from source's elements.")


# --- scatter family ---------------------------------------------------------------------------------------------

def _scatter_key(xp, x, dim, index, src=None, name="scatter"):
    """The advanced-indexing key writing `index`'s positions along dim (other dims in place), with torch's checks."""
    _check_index_dtype(index, name)
    axis = normalize_dim(dim, x.ndim, name) if x.ndim else 0
    if index.ndim != max(x.ndim, 1) and index.size:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    for d in range(index.ndim):
        too_big = (d != axis and index.shape[d] > x.shape[d]) or (
            src is not None and hasattr(src, "shape") and src.ndim and index.shape[d] > src.shape[d])
        if too_big:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(x.shape)} apart "
                               f"from dimension {axis}" + (f" and to be no larger size than src {list(src.shape)}"
                                                           if hasattr(src, "shape") else ""))
    _check_bounds(index, x.shape[axis] if x.ndim else 1, axis, RuntimeError)
    grid = list(xp.indices(index.shape, sparse=True))
    grid[axis] = index
    return tuple(grid), axis


def _values(xp, src, index, dtype):
    """The part of src the index covers (src may be larger), or a scalar broadcast to the index's shape."""
    if hasattr(src, "shape") and src.ndim:
        return src[tuple(slice(0, n) for n in index.shape)].astype(dtype, copy=False)
    return xp.broadcast_to(xp.asarray(src, dtype=dtype), index.shape)


def _scatter_kernel(xp, x, dim, index, src, reduce=None):
    key, _ = _scatter_key(xp, x, dim, index, src)
    values = _values(xp, src, index, x.dtype)
    out = x.copy()
    if reduce is None:
        out[key] = values
    elif reduce == "add":
        xp.add.at(out, key, values)
    elif reduce == "multiply":
        xp.multiply.at(out, key, values)
    else:
        raise RuntimeError("reduce argument must be either add or multiply.")
    return out


def _scatter_grad(ctx, g):
    xp = ctx.xp
    key, _ = _scatter_key(xp, ctx.self, ctx.dim, ctx.index)
    d_self = g.copy()
    d_self[key] = 0
    d_src = None
    if hasattr(ctx.src, "shape"):
        d_src = xp.zeros(ctx.src.shape, dtype=g.dtype)
        d_src[tuple(slice(0, n) for n in ctx.index.shape)] = g[key]
    return (d_self, None, None, d_src, None)


register("scatter(self: Tensor, dim: int, index: Tensor, src: Tensor|Scalar, *, reduce: str? = None) -> Tensor",
         OPAQUE, _scatter_kernel, shape=lambda x, *rest: x, grad=_scatter_grad, save=("self", "index", "src"),
         inplace=True, doc="self with src's values (or a scalar) written at index along dim; reduce='add' or "
                           "'multiply' combines them with what is there.")


def _scatter_add_kernel(xp, x, dim, index, src):
    key, _ = _scatter_key(xp, x, dim, index, src, "scatter_add")
    out = x.copy()
    xp.add.at(out, key, _values(xp, src, index, x.dtype))
    return out


def _gathered_src(ctx, g, key):
    xp = ctx.xp
    d_src = xp.zeros(ctx.src.shape, dtype=g.dtype)
    d_src[tuple(slice(0, n) for n in ctx.index.shape)] = g[key]
    return d_src


register("scatter_add(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor", OPAQUE, _scatter_add_kernel,
         shape=lambda x, *rest: x, save=("self", "index", "src"), inplace=True,
         grad=lambda ctx, g: (g, None, None, _gathered_src(ctx, g, _scatter_key(ctx.xp, ctx.self, ctx.dim, ctx.index)[0])),
         doc="self with src's values added at index along dim (repeated indices add up).")

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_parts(xp, x, dim, index, src, reduce, include_self):
    """(out, key, values, counts): the reduced result and what its gradient needs."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    key, _ = _scatter_key(xp, x, dim, index, src, "scatter_reduce")
    values = _values(xp, src, index, x.dtype)
    touched = xp.zeros(x.shape, dtype=bool)
    touched[key] = True
    out = x.copy()
    if not include_self:
        identity = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if identity is None:
            info = xp.finfo(x.dtype) if x.dtype.kind == "f" else xp.iinfo(x.dtype)
            identity = info.min if reduce == "amax" else info.max
        out[touched] = identity
    ufunc = {"sum": xp.add, "mean": xp.add, "prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
    ufunc.at(out, key, values)
    counts = xp.zeros(x.shape, dtype=xp.int64) + (1 if include_self else 0)
    xp.add.at(counts, key, 1)
    if reduce == "mean":
        safe = xp.maximum(counts, 1)
        out = out // safe if x.dtype.kind in "iub" else out / safe
    return out.astype(x.dtype, copy=False), key, values, counts, touched


def _scatter_reduce_kernel(xp, x, dim, index, src, reduce, include_self=True):
    return _scatter_reduce_parts(xp, x, dim, index, src, reduce, include_self)[0]


def _scatter_reduce_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    out, key, values, counts, touched = _scatter_reduce_parts(xp, x, ctx.dim, ctx.index, ctx.src, ctx.reduce,
                                                              ctx.include_self)
    keep_self = 1 if ctx.include_self else ~touched
    if ctx.reduce == "sum":
        d_self, d_src = g * keep_self, g[key]
    elif ctx.reduce == "mean":
        share = g / xp.maximum(counts, 1)
        d_self, d_src = share * keep_self, share[key]
    elif ctx.reduce == "prod":
        # The product of the others: out / value where the value is nonzero.
        with_others = xp.where(x == 0, 0, g * out / xp.where(x == 0, 1, x))
        d_self = with_others * keep_self
        d_src = xp.where(values == 0, 0, (g * out)[key] / xp.where(values == 0, 1, values))
    else:
        # amax/amin: shared evenly by every element equal to the result.
        self_hits = (x == out) & (True if ctx.include_self else ~touched)
        hits = self_hits.astype(xp.int64)
        xp.add.at(hits, key, (values == out[key]).astype(xp.int64))
        share = g / xp.maximum(hits, 1)
        d_self = share * self_hits
        d_src = share[key] * (values == out[key])
    full_src = xp.zeros(ctx.src.shape, dtype=g.dtype)
    full_src[tuple(slice(0, n) for n in ctx.index.shape)] = d_src
    return (d_self, None, None, full_src, None, None)


register("scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True) "
         "-> Tensor", OPAQUE, _scatter_reduce_kernel, shape=lambda x, *rest: x, grad=_scatter_reduce_grad,
         save=("self", "index", "src"), inplace=True,
         doc="src's values reduced into self at index along dim: sum, prod, mean, amax or amin (with self's own "
             "value unless include_self=False).")


# --- index_add, index_copy, index_fill --------------------------------------------------------------------------

def _index_key(xp, x, dim, index, name, source=None):
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    _check_index_dtype(index, name)
    axis = normalize_dim(dim, x.ndim, name) if x.ndim else 0
    size = x.shape[axis] if x.ndim else 1
    _check_bounds(index.reshape(-1), size, axis, IndexError if name != "index_add" else RuntimeError,
                  negative=name == "index_fill", prefix="index_copy_(): " if name == "index_copy_" else "")
    if source is not None and x.ndim:
        expected = x.shape[:axis] + (index.size,) + x.shape[axis + 1:]
        if source.shape != expected and source.size:
            raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(x.shape)} source.shape = {list(source.shape)}")
    key = [slice(None)] * x.ndim
    if x.ndim:
        key[axis] = index.reshape(-1)
    return tuple(key)


def _index_add_kernel(xp, x, dim, index, source, alpha=1):
    key = _index_key(xp, x, dim, index, "index_add", source)
    out = x.copy()
    xp.add.at(out, key, (source * alpha if alpha != 1 else source).astype(x.dtype, copy=False))
    return out


register("index_add(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Scalar = 1) -> Tensor", OPAQUE,
         _index_add_kernel, shape=lambda x, *rest: x, save=("self", "index"), inplace=True,
         grad=lambda ctx, g: (g, None, None, g[_index_key(ctx.xp, ctx.self, ctx.dim, ctx.index, "index_add")] *
                              ctx.alpha, None),
         doc="self with alpha * source added to the slices at index along dim.")


def _index_copy_kernel(xp, x, dim, index, source):
    key = _index_key(xp, x, dim, index, "index_copy_", source)
    out = x.copy()
    out[key] = source
    return out


def _index_copy_grad(ctx, g):
    key = _index_key(ctx.xp, ctx.self, ctx.dim, ctx.index, "index_copy_")
    d_self = g.copy()
    d_self[key] = 0
    return (d_self, None, None, g[key])


register("index_copy(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor", OPAQUE, _index_copy_kernel,
         shape=lambda x, *rest: x, grad=_index_copy_grad, save=("self", "index"), inplace=True,
         doc="self with the slices at index along dim replaced by source's.")


def _index_fill_kernel(xp, x, dim, index, value):
    if hasattr(value, "ndim") and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    key = _index_key(xp, x, dim, index, "index_fill")
    out = x.copy()
    out[key] = value
    return out


def _index_fill_grad(ctx, g):
    key = _index_key(ctx.xp, ctx.self, ctx.dim, ctx.index, "index_fill")
    d_self = g.copy()
    d_self[key] = 0
    d_value = g[key].sum() if hasattr(ctx.value, "shape") else None
    return (d_self, None, None, d_value)


register("index_fill(self: Tensor, dim: int, index: Tensor, value: Tensor|Scalar) -> Tensor", OPAQUE,
         _index_fill_kernel, shape=lambda x, *rest: x, grad=_index_fill_grad, save=("self", "index", "value"),
         inplace=True, doc="self with the slices at index along dim set to value.")


# --- take, take_along_dim -----------------------------------------------------------------------------------------

def _take_kernel(xp, x, index):
    _check_index_dtype(index, "take")
    if index.size and (index.max() >= x.size or index.min() < -x.size):
        bad = int(index.max()) if index.max() >= x.size else int(index.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {x.size} elements.")
    return x.reshape(-1)[index]


def _take_grad(ctx, g):
    xp = ctx.xp
    out = xp.zeros(ctx.self.size, dtype=g.dtype)
    xp.add.at(out, ctx.index, g)
    return (out.reshape(ctx.self.shape), None)


register("take(self: Tensor, index: Tensor) -> Tensor", OPAQUE, _take_kernel,
         shape=lambda x, index: TensorType(x.dtype, index.shape, x.device), grad=_take_grad, save=("self", "index"),
         doc="self's elements at the flat indices, shaped as index.")


def _along_dim(xp, x, indices, dim):
    """(x, indices) broadcast for take_along_axis (flattened when dim is None) and the axis."""
    _check_index_dtype(indices, "take_along_dim")
    if dim is None:
        return x.reshape(-1), indices.reshape(-1), 0
    axis = normalize_dim(dim, x.ndim, "take_along_dim")
    if indices.ndim != x.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {x.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    shape = list(broadcast_shapes(*(tuple(1 if i == axis else n for i, n in enumerate(t.shape)) for t in (x, indices))))
    x_shape, index_shape = list(shape), list(shape)
    x_shape[axis], index_shape[axis] = x.shape[axis], indices.shape[axis]
    _check_bounds(indices, x.shape[axis], axis, RuntimeError, negative=True)
    return xp.broadcast_to(x, x_shape), xp.broadcast_to(indices, index_shape), axis


def _take_along_dim_kernel(xp, x, indices, dim=None):
    values, index, axis = _along_dim(xp, x, indices, dim)
    if dim is None:
        _check_bounds(index, values.size, 0, RuntimeError, negative=True)
    return xp.take_along_axis(values, index, axis=axis)


def _take_along_dim_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    values, index, axis = _along_dim(xp, x, ctx.indices, ctx.dim)
    out = xp.zeros(values.shape, dtype=g.dtype)
    grid = list(xp.indices(index.shape, sparse=True))
    grid[axis] = index
    xp.add.at(out, tuple(grid), g)
    return (out.reshape(x.shape) if ctx.dim is None else out, None, None)


def _take_along_dim_rule(x, indices, dim=None):
    if dim is None:  # (over the flattened tensor: one value per index)
        return TensorType(x.dtype, (numel(indices.shape),), x.device)
    if x.shape is None or indices.shape is None:
        return TensorType(x.dtype, None, x.device)
    axis = normalize_dim(dim, len(x.shape), "take_along_dim")
    shape = list(broadcast_shapes(tuple(1 if i == axis else d for i, d in enumerate(x.shape)), indices.shape))
    shape[axis] = indices.shape[axis]
    return TensorType(x.dtype, tuple(shape), x.device)


register("take_along_dim(self: Tensor, indices: Tensor, dim: int? = None) -> Tensor", OPAQUE, _take_along_dim_kernel,
         shape=_take_along_dim_rule, grad=_take_along_dim_grad, save=("self", "indices"),
         doc="self's values at indices along dim (broadcast elsewhere); over the flattened tensor when dim is None.")

"""Ops that write one tensor's values into positions of a copy of another: select_scatter, slice_scatter,
diagonal_scatter (the out-of-place inverses of select, slice and diagonal), put and index_reduce."""

from __future__ import annotations

from types import SimpleNamespace

from scriptc.types import from_numpy_dtype

from . import register
from .diagonal import diagonal_view
from .indexing import _scatter_reduce_grad, _scatter_reduce_parts
from .rules import normalize_dim, scalar_type_name
from .schema import OPAQUE


# --- select_scatter, slice_scatter, diagonal_scatter: src written where a view of self looks ----------------------

def _embedded(place):
    """(kernel, grad) of an op writing src into `place(xp, array, *where)`, a view of a copy of self."""
    def kernel(xp, x, src, *where):
        out = x.copy()
        view = place(xp, out, *where)
        if tuple(src.shape) != tuple(view.shape):
            raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                               f"slice size = {list(view.shape)}")
        view[...] = src
        return out

    def grad(ctx, g):
        xp, where = ctx.xp, ctx.args[2:]
        d_self = g.copy()
        place(xp, d_self, *where)[...] = 0
        return (d_self, place(xp, g, *where).copy()) + (None,) * len(where)
    return kernel, grad


def _selected(xp, x, dim, index):
    axis = normalize_dim(dim, x.ndim, "select_scatter")
    size = x.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {dim}")
    return x[(slice(None),) * axis + (index, Ellipsis)]


def _sliced(xp, x, dim=0, start=None, end=None, step=1):
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return x[(slice(None),) * normalize_dim(dim, x.ndim, "slice_scatter") + (slice(start, end, step),)]


def _register_embedding(schema, place, doc):
    kernel, grad = _embedded(place)
    register(schema, OPAQUE, kernel, shape=lambda x, *rest: x, grad=grad, doc=doc)


_register_embedding("select_scatter(self: Tensor, src: Tensor, dim: int, index: int) -> Tensor", _selected,
                    "A copy of self with src written at position index of dim (src has self's shape without dim).")
_register_embedding("slice_scatter(self: Tensor, src: Tensor, dim: int = 0, start: int? = None, end: int? = None, "
                    "step: int = 1) -> Tensor", _sliced,
                    "A copy of self with src written into self[start:end:step] along dim.")
_register_embedding("diagonal_scatter(self: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) "
                    "-> Tensor", diagonal_view,
                    "A copy of self with src written along its offset diagonal of dims (dim1, dim2).")


# --- put -------------------------------------------------------------------------------------------------------------

def _flat_positions(x, index, source):
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_torch_dtype_name(index.dtype)}")
    if index.size != source.size:
        raise IndexError("put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.size}, index.numel() = {index.size}")
    flat = index.reshape(-1)
    if flat.size and (flat.max() >= x.size or flat.min() < -x.size):
        bad = int(flat.max()) if flat.max() >= x.size else int(flat.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {x.size} elements.")
    return flat % max(x.size, 1)


def _torch_dtype_name(array_dtype) -> str:
    return scalar_type_name(from_numpy_dtype(array_dtype))


def _put_kernel(xp, x, index, source, accumulate=False):
    positions = _flat_positions(x, index, source)
    out = x.copy().reshape(-1)
    values = source.reshape(-1).astype(x.dtype, copy=False)
    if accumulate:
        xp.add.at(out, positions, values)
    else:
        out[positions] = values
    return out.reshape(x.shape)


def _put_grad(ctx, g):
    positions = _flat_positions(ctx.self, ctx.index, ctx.source)
    d_self = g.copy().reshape(-1)
    if not ctx.accumulate:
        d_self[positions] = 0
    d_source = g.reshape(-1)[positions].reshape(ctx.source.shape)
    return (d_self.reshape(g.shape), None, d_source, None)


register("put(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor", OPAQUE, _put_kernel,
         shape=lambda x, *rest: x, grad=_put_grad, save=("self", "index", "source"), inplace=True,
         doc="self (read as 1-D) with source's elements written at the flat indices; added when accumulate.")


# --- index_reduce: scatter_reduce with one index per slice of dim ------------------------------------------------

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _slice_index(xp, x, dim, index, source, reduce):
    """index_reduce's arguments as scatter_reduce's: the index expanded to source's shape along dim."""
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_torch_dtype_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    axis = normalize_dim(dim, x.ndim, "index_reduce") if x.ndim else 0
    flat = index.reshape(-1)
    if source.ndim and flat.size != source.shape[axis]:
        raise RuntimeError(f"index_reduce_(): Number of indices ({flat.size}) should be equal to source.size(dim): "
                           f"({source.shape[axis]}), for dim: {dim}")
    if flat.size and (flat.max() >= x.shape[axis] or flat.min() < 0):
        raise IndexError("index out of range in self")
    shape = [1] * source.ndim
    shape[axis] = flat.size
    return xp.broadcast_to(flat.reshape(shape), source.shape)


def _index_reduce_kernel(xp, x, dim, index, source, reduce, include_self=True):
    spread = _slice_index(xp, x, dim, index, source, reduce)
    return _scatter_reduce_parts(xp, x, dim, spread, source, reduce, include_self)[0]


def _index_reduce_grad(ctx, g):
    xp = ctx.xp
    spread = _slice_index(xp, ctx.self, ctx.dim, ctx.index, ctx.source, ctx.reduce)
    scatter_ctx = SimpleNamespace(xp=xp, self=ctx.self, dim=ctx.dim, index=spread, src=ctx.source, reduce=ctx.reduce,
                                  include_self=ctx.include_self)
    d_self, _, _, d_source, _, _ = _scatter_reduce_grad(scatter_ctx, g)
    return (d_self, None, None, d_source, None, None)


register("index_reduce(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *, "
         "include_self: bool = True) -> Tensor", OPAQUE, _index_reduce_kernel, shape=lambda x, *rest: x,
         grad=_index_reduce_grad, save=("self", "index", "source"), inplace=True,
         doc="source's slices along dim reduced into self's slices at index: prod, mean, amax or amin (with self's "
             "own value unless include_self=False).")

"""Ordering ops: sort, argsort, topk, kthvalue, unique, unique_consecutive, searchsorted, bucketize."""

from __future__ import annotations

from scriptc.types import TensorType, bool_, int32, int64

from . import register
from .rules import is_known, normalize_dim, reduced_shape
from .schema import OPAQUE


def _axis(x, dim, name):
    return normalize_dim(dim, x.ndim, name) if x.ndim else None


def stable_order(xp, x, axis, descending=False):
    """Indices that sort x along axis, ties in their original order; NaN counts as the largest value."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    # Reversed, sorted ascending, reversed again: descending, with ties back in their first order.
    n = x.shape[axis]
    reversed_order = xp.argsort(xp.flip(x, axis), axis=axis, kind="stable")
    return n - 1 - xp.flip(reversed_order, axis)


def _scatter_back(ctx, g, indices, axis, keepdim=True):
    """The gradient of values picked from self at `indices` along `axis`."""
    xp, x = ctx.xp, ctx.self
    if axis is None:
        return g
    if not keepdim:
        g, indices = xp.expand_dims(g, axis), xp.expand_dims(indices, axis)
    out = xp.zeros(x.shape, dtype=g.dtype)
    xp.put_along_axis(out, indices, g, axis=axis)
    return out


def _sort_kernel(xp, x, dim=-1, descending=False, stable=False):
    axis = _axis(x, dim, "sort")
    if axis is None:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    order = stable_order(xp, x, axis, descending)
    return xp.take_along_axis(x, order, axis=axis), order.astype(xp.int64)


def _values_indices_like(x, *rest):
    return TensorType(x.dtype, x.shape, x.device), TensorType(int64, x.shape, x.device)


register("sort(self: Tensor, dim: int = -1, descending: bool = False, *, stable: bool? = False) -> (Tensor, Tensor)",
         OPAQUE, _sort_kernel, shape=_values_indices_like, result_names=("values", "indices"),
         grad=lambda ctx, g: (_scatter_back(ctx, g[0], ctx.out[1], _axis(ctx.self, ctx.dim, "sort")), None, None,
                              None),
         nondifferentiable_outputs=(1,),
         doc="(values, indices) sorted along dim; equal values keep their order; NaN sorts as the largest.")
register("argsort(self: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor", OPAQUE,
         lambda xp, x, dim=-1, descending=False, stable=False: _sort_kernel(xp, x, dim, descending)[1],
         shape=lambda x, *rest: TensorType(int64, x.shape, x.device), doc="The indices that sort self along dim.")
register("msort(self: Tensor) -> Tensor", OPAQUE, lambda xp, x: _sort_kernel(xp, x, 0)[0], shape=lambda x: x,
         grad=lambda ctx, g: (_scatter_back(ctx, g, stable_order(ctx.xp, ctx.self, 0), 0) if ctx.self.ndim else g,),
         save=("self",), doc="self sorted along dim 0.")


def _topk_kernel(xp, x, k, dim=-1, largest=True, sorted=True):
    axis = _axis(x, dim, "topk")
    size = x.shape[axis] if axis is not None else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if axis is None:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    order = xp.take(stable_order(xp, x, axis, descending=largest), range(k), axis=axis)
    return xp.take_along_axis(x, order, axis=axis), order.astype(xp.int64)


def _topk_rule(x, k, dim=-1, *rest):
    if x.shape is None or not x.shape:
        return x, TensorType(int64, x.shape, x.device)
    shape = list(x.shape)
    shape[normalize_dim(dim, len(shape), "topk")] = k if is_known(k) else None
    return TensorType(x.dtype, tuple(shape), x.device), TensorType(int64, tuple(shape), x.device)


register("topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> (Tensor, Tensor)",
         OPAQUE, _topk_kernel, shape=_topk_rule, result_names=("values", "indices"),
         grad=lambda ctx, g: (_scatter_back(ctx, g[0], ctx.out[1], _axis(ctx.self, ctx.dim, "topk")),) + (None,) * 4,
         nondifferentiable_outputs=(1,), doc="(values, indices) of the k largest (or smallest) along dim, in order.")


def _kthvalue_kernel(xp, x, k, dim=-1, keepdim=False):
    axis = _axis(x, dim, "kthvalue")
    size = x.shape[axis] if axis is not None else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis or 0}")
    if axis is None:
        return x.copy(), xp.zeros((), dtype=xp.int64)
    index = xp.take(stable_order(xp, x, axis), [k - 1], axis=axis)
    values = xp.take_along_axis(x, index, axis=axis)
    if not keepdim:
        values, index = xp.squeeze(values, axis), xp.squeeze(index, axis)
    return values, index.astype(xp.int64)


def _kthvalue_rule(x, k, dim=-1, keepdim=False):
    shape = reduced_shape(x.shape, dim, bool(keepdim), "kthvalue")
    return TensorType(x.dtype, shape, x.device), TensorType(int64, shape, x.device)


register("kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> (Tensor, Tensor)", OPAQUE,
         _kthvalue_kernel, shape=_kthvalue_rule, result_names=("values", "indices"),
         grad=lambda ctx, g: (_scatter_back(ctx, g[0], ctx.out[1], _axis(ctx.self, ctx.dim, "kthvalue"),
                                            ctx.keepdim), None, None, None),
         nondifferentiable_outputs=(1,), doc="(values, indices) of the k-th smallest element along dim (k from 1).")


# --- unique --------------------------------------------------------------------------------------------------

def _asked(return_inverse: bool, return_counts: bool, outs):
    """What a unique call returns: the values, with inverse and counts in a tuple when asked for."""
    if not (return_inverse or return_counts):
        return outs[0]
    return (outs[0],) + ((outs[1],) if return_inverse else ()) + ((outs[2],) if return_counts else ())


def _runs(xp, rows, sort: bool):
    """(row order, first-of-run mask in that order) of a 2-d array's rows, comparing whole rows."""
    n = rows.shape[0]
    if sort and n:
        # lexsort sorts by its last key first: the first column decides, then the next, ...
        order = xp.lexsort(rows.T[::-1]) if rows.shape[1] else xp.arange(n)
    else:
        order = xp.arange(n)
    ordered = rows[order]
    fresh = xp.ones(n, dtype=bool)
    if n > 1:
        fresh[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    return order, fresh


def _unique_rows(xp, x, dim, sort):
    """(unique values, inverse, counts) over slices along `dim` (elements when dim is None)."""
    if dim is None:
        rows, shape_back = x.reshape(-1, 1), None
    else:
        axis = normalize_dim(dim, x.ndim, "unique")
        moved = xp.moveaxis(x, axis, 0)
        rows, shape_back = moved.reshape(moved.shape[0], -1), (axis, moved.shape[1:])
    order, fresh = _runs(xp, rows, sort)
    run = xp.cumsum(fresh) - 1
    values = rows[order][fresh]
    inverse = xp.zeros(len(order), dtype=xp.int64)
    inverse[order] = run
    counts = xp.bincount(run, minlength=int(fresh.sum())).astype(xp.int64) if len(order) else xp.zeros(0, xp.int64)
    if shape_back is None:
        return values.reshape(-1), inverse.reshape(x.shape), counts
    axis, rest = shape_back
    return xp.moveaxis(values.reshape((-1,) + rest), 0, axis), inverse, counts


def _unique_kernel(xp, x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return _unique_rows(xp, x, dim, True)


def _unique_rule(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    values_shape = (None,) if dim is None else None
    inverse_shape = x.shape if dim is None else (None,)
    return (TensorType(x.dtype, values_shape, x.device), TensorType(int64, inverse_shape, x.device),
            TensorType(int64, (None,), x.device))


register("unique(self: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, "
         "dim: int? = None) -> (Tensor, Tensor, Tensor)", OPAQUE, _unique_kernel, shape=_unique_rule,
         python_result=lambda args, outs: _asked(args[2], args[3], outs),
         doc="The distinct elements (or slices along dim), sorted; with return_inverse where each element went, "
             "with return_counts how often each occurs.")


def _unique_consecutive_kernel(xp, x, return_inverse=False, return_counts=False, dim=None):
    return _unique_rows(xp, x, dim, False)


register("unique_consecutive(self: Tensor, return_inverse: bool = False, return_counts: bool = False, "
         "dim: int? = None) -> (Tensor, Tensor, Tensor)", OPAQUE, _unique_consecutive_kernel,
         shape=lambda x, inverse=False, counts=False, dim=None: _unique_rule(x, True, inverse, counts, dim),
         python_result=lambda args, outs: _asked(args[1], args[2], outs),
         doc="self with each run of equal consecutive elements (or slices) made one.")


# --- searchsorted and bucketize ----------------------------------------------------------------------------------

def _search(xp, sequence, values, right):
    """For each value, the insertion index in its row of `sequence` (rows: all dims but the last, matching
    values' leading dims, or one shared 1-d sequence): a binary search of whole-tensor steps."""
    n = sequence.shape[-1]
    if sequence.ndim == 1:
        return xp.searchsorted(sequence, values, side="right" if right else "left")
    low = xp.zeros(values.shape, dtype=xp.int64)
    high = xp.full(values.shape, n, dtype=xp.int64)
    for _ in range(max(n, 1).bit_length()):
        middle = (low + high) // 2
        probe = xp.take_along_axis(sequence, xp.minimum(middle, n - 1), axis=-1)
        go_right = (probe <= values) if right else (probe < values)
        active = low < high
        low = xp.where(active & go_right, middle + 1, low)
        high = xp.where(active & ~go_right, middle, high)
    return low


def _searchsorted_kernel(xp, sequence, values, out_int32=False, right=False, side=None, sorter=None):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    scalar = not hasattr(values, "shape")
    values = xp.asarray(values, dtype=sequence.dtype) if scalar else values
    if sequence.ndim > 1 and (scalar or sequence.shape[:-1] != values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions "
                           "of boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(sequence.shape)} and input value tensor {list(values.shape)}")
    if sorter is not None:
        if sorter.shape != sequence.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(sequence.shape)}and got sorter tensor {list(sorter.shape)}")
        sequence = xp.take_along_axis(sequence, sorter, axis=-1)
    out = _search(xp, sequence, values, right)
    return xp.asarray(out).astype(xp.int32 if out_int32 else xp.int64)


def _index_rule(sequence, values, out_int32=False, *rest):
    shape = values.shape if isinstance(values, TensorType) else ()
    return TensorType(int32 if out_int32 else int64, shape, sequence.device)


register("searchsorted(sorted_sequence: Tensor, self: Tensor|Scalar, *, out_int32: bool = False, right: bool = False, "
         "side: str? = None, sorter: Tensor? = None) -> Tensor", OPAQUE, _searchsorted_kernel, shape=_index_rule,
         method=False, doc="Where each value of self would be inserted in the sorted last dim of sorted_sequence "
                           "(after equal elements with right=True or side='right'); sorter sorts it first.")


def _bucketize_kernel(xp, values, boundaries, out_int32=False, right=False):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return _searchsorted_kernel(xp, boundaries, values, out_int32, right)


register("bucketize(self: Tensor|Scalar, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) "
         "-> Tensor", OPAQUE, _bucketize_kernel,
         shape=lambda values, boundaries, out_int32=False, *rest: _index_rule(boundaries, values, out_int32),
         method=False, doc="The bucket of each value among the sorted 1-d boundaries (searchsorted with the "
                           "arguments swapped).")


def _isin_kernel(xp, elements, test_elements, assume_unique=False, invert=False):
    return xp.asarray(xp.isin(elements, test_elements, assume_unique=assume_unique, invert=invert))


register("isin(elements: Tensor|Scalar, test_elements: Tensor|Scalar, *, assume_unique: bool = False, "
         "invert: bool = False) -> Tensor", OPAQUE, _isin_kernel,
         shape=lambda e, t, *rest: TensorType(bool_, e.shape if isinstance(e, TensorType) else (),
                                              e.device if isinstance(e, TensorType) else t.device),
         method=False, doc="Whether each element is among test_elements (not among them with invert=True).")

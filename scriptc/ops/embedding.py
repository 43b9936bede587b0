"""Lookup-table ops: embedding, its in-place max_norm renormalisation, and embedding_bag (sum/mean/max bags)."""

from __future__ import annotations

from scriptc.types import TensorType, from_numpy_dtype

from . import register
from .rules import legacy_type_name
from .schema import OPAQUE


def _check_indices(indices, name: str = "embedding"):
    if indices.dtype.kind != "i" or indices.dtype.itemsize < 4:  # torch takes int32 and int64 only
        got = legacy_type_name(from_numpy_dtype(indices.dtype))
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {got} instead (while checking arguments for {name})")


def _embedding_kernel(xp, indices, weight, padding_idx=None, scale_grad_by_freq=False):
    _check_indices(indices)
    if indices.size and (indices.max() >= weight.shape[0] or indices.min() < 0):
        raise IndexError("index out of range in self")
    return weight[indices]


def _frequency_scale(xp, flat_indices, rows):
    """1 / (how often each index occurs in the batch), per looked-up row (scale_grad_by_freq)."""
    counts = xp.bincount(flat_indices, minlength=rows)
    return 1.0 / counts[flat_indices]


def _embedding_grad(ctx, g):
    xp, w = ctx.xp, ctx.weight
    flat = ctx.input.reshape(-1)
    rows = g.reshape(-1, w.shape[1])
    if ctx.scale_grad_by_freq:
        rows = rows * _frequency_scale(xp, flat, w.shape[0]).astype(rows.dtype)[:, None]
    gw = xp.zeros(w.shape, dtype=g.dtype)
    xp.add.at(gw, flat, rows)
    if ctx.padding_idx is not None:
        gw[ctx.padding_idx] = 0
    return None, gw, None, None


register("embedding(input: Tensor, weight: Tensor, padding_idx: int? = None, scale_grad_by_freq: bool = False) "
         "-> Tensor", OPAQUE, _embedding_kernel, shape=lambda i, w, *rest: TensorType(
             w.dtype, None if i.shape is None or w.shape is None else tuple(i.shape) + tuple(w.shape[1:]), w.device),
         grad=_embedding_grad, save=("input",), method=False, functional=True,
         doc="Rows of weight picked by integer indices; padding_idx's row gets no gradient.")


def _embedding_renorm_kernel(xp, weight, indices, max_norm, norm_type):
    """Rescale, in place, each looked-up row whose norm exceeds max_norm to norm max_norm (torch's 1e-7 slack)."""
    _check_indices(indices, "embedding_renorm_")
    rows = xp.unique(indices.reshape(-1))
    picked = weight[rows]
    if norm_type == float("inf"):
        norms = xp.abs(picked).max(axis=1)
    else:
        norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(weight.dtype)
    weight[rows] = picked * scale[:, None]
    return weight


register("embedding_renorm_(self: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor", OPAQUE,
         _embedding_renorm_kernel, shape=lambda w, *rest: w, mutates=("self",), method=False,
         doc="Renormalizes (in place) the rows of self that indices look up to norm at most max_norm.")


def _bags(xp, indices, offsets, include_last_offset):
    """(bag of each index, number of bags) for 1-D indices and offsets."""
    n = indices.shape[0]
    starts = offsets[:-1] if include_last_offset else offsets
    bags = starts.shape[0]
    if bags and offsets[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(offsets[0])}")
    if bags and (xp.any(starts[1:] < starts[:-1]) or starts[-1] > n):
        raise RuntimeError("offsets has to be a 1D Tensor of non-decreasing positions within input, but got "
                           f"{starts.tolist()} for an input of {n} indices")
    bag_of = xp.searchsorted(starts, xp.arange(n), side="right") - 1
    return bag_of, bags


def _bag_parts(xp, weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx):
    _check_indices(indices, "embedding_bag")
    if indices.size and (indices.max() >= weight.shape[0] or indices.min() < 0):
        bad = int(xp.nonzero((indices >= weight.shape[0]) | (indices < 0))[0][0])
        raise RuntimeError(f"Index {bad} of input takes value {int(indices[bad])} which is not in the valid range "
                           f"[0, {weight.shape[0]})")
    bag_of, bags = _bags(xp, indices, offsets, include_last_offset)
    keep = xp.ones(indices.shape, dtype=bool) if padding_idx is None else indices != padding_idx
    return bag_of, bags, keep


def _rows_as_bags(xp, indices, offsets, per_sample_weights):
    """Without offsets, each row of 2-D indices is a bag: the indices (and weights) flattened, with the
    offsets of the rows' starts."""
    if offsets is not None:
        return indices, offsets, per_sample_weights
    if indices.ndim != 2:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    starts = xp.arange(0, indices.size, max(indices.shape[1], 1), dtype=indices.dtype)[:indices.shape[0]]
    flat_weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    return indices.reshape(-1), starts, flat_weights


def _embedding_bag_kernel(xp, weight, indices, offsets, mode="mean", per_sample_weights=None, include_last_offset=False,
                          padding_idx=None):
    indices, offsets, per_sample_weights = _rows_as_bags(xp, indices, offsets, per_sample_weights)
    bag_of, bags, keep = _bag_parts(xp, weight, indices, offsets, mode, per_sample_weights, include_last_offset,
                                    padding_idx)
    rows = weight[indices[keep]]
    bag_kept = bag_of[keep]
    out = xp.zeros((bags, weight.shape[1]), dtype=weight.dtype)
    if mode == "max":
        out[...] = -xp.inf
        xp.maximum.at(out, bag_kept, rows)
        out[xp.isneginf(out)] = 0
        return out
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[keep][:, None]
    xp.add.at(out, bag_kept, rows)
    if mode == "mean":
        counts = xp.bincount(bag_kept, minlength=bags)
        out /= xp.maximum(counts, 1)[:, None].astype(out.dtype)
    return out


def _embedding_bag_grad(ctx, g):
    xp, weight = ctx.xp, ctx.weight
    indices, offsets, per_sample_weights = _rows_as_bags(xp, ctx.indices, ctx.offsets, ctx.per_sample_weights)
    bag_of, bags, keep = _bag_parts(xp, weight, indices, offsets, ctx.mode, per_sample_weights,
                                    ctx.include_last_offset, ctx.padding_idx)
    kept = indices[keep]
    bag_kept = bag_of[keep]
    rows_grad = g[bag_kept]
    g_psw = None
    if ctx.mode == "max":
        # the gradient goes to the first row that holds each bag's maximum, per column
        position = xp.arange(kept.shape[0])[:, None]
        is_max = weight[kept] == ctx.out[bag_kept]
        first = xp.full((bags, weight.shape[1]), kept.shape[0])
        xp.minimum.at(first, bag_kept, xp.where(is_max, position, kept.shape[0]))
        rows_grad = xp.where(position == first[bag_kept], rows_grad, 0)
    elif ctx.mode == "mean":
        counts = xp.bincount(bag_kept, minlength=bags)
        rows_grad = rows_grad / counts[bag_kept][:, None].astype(g.dtype)
    elif per_sample_weights is not None:
        g_psw = xp.zeros(indices.shape, dtype=g.dtype)
        g_psw[keep] = (rows_grad * weight[kept]).sum(axis=1)
        g_psw = g_psw.reshape(ctx.per_sample_weights.shape)
        rows_grad = rows_grad * per_sample_weights[keep][:, None]
    gw = xp.zeros(weight.shape, dtype=g.dtype)
    xp.add.at(gw, kept, rows_grad)
    return gw, None, None, None, g_psw, None, None


def _embedding_bag_rule(weight, indices, offsets, *rest):
    bags = None
    if offsets is None:
        bags = indices.shape[0] if indices.shape is not None and len(indices.shape) == 2 else None
    elif offsets.shape is not None and isinstance(offsets.shape[0], int):
        include_last = rest[2] if len(rest) > 2 else False
        bags = offsets.shape[0] - (1 if include_last else 0)
    dims = None if weight.shape is None else (bags, weight.shape[1])
    return TensorType(weight.dtype, dims, weight.device)


register("embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor?, mode: str = 'mean', "
         "per_sample_weights: Tensor? = None, include_last_offset: bool = False, padding_idx: int? = None) -> Tensor",
         OPAQUE, _embedding_bag_kernel, shape=_embedding_bag_rule, grad=_embedding_bag_grad,
         save=("weight", "indices", "offsets", "per_sample_weights", "out"), method=False,
         doc="Sums, means or maxima (mode) of the embedding rows of each bag of 1-D indices; bag b starts at "
             "offsets[b]. Without offsets each row of 2-D indices is a bag.")

"""Shape ops: views and rearrangements (reshape, permute, expand, narrow, select, slicing, indexing, repeat)."""

from __future__ import annotations

import math

from scriptc.errors import ShapeError
from scriptc.types import TensorType, from_numpy_dtype

from . import register
from .rules import (
    broadcast_shapes,
    check_narrow_start,
    infer_reshape,
    is_known,
    normalize_dim,
    numel,
    scalar_type_name,
)
from .schema import SHAPE


def _t(x: TensorType, shape) -> TensorType:
    return TensorType(x.dtype, None if shape is None else tuple(shape), x.device)


def _unview(ctx, g):
    return (g.reshape(ctx.self.shape),) + (None,) * (len(ctx.args) - 1)


def _storage_root(array):
    while isinstance(array.base, type(array)):
        array = array.base
    return array


def _same_storage(a, b) -> bool:
    """Whether a and b are views of one buffer (a reshape that had to copy is not)."""
    return _storage_root(a) is _storage_root(b)


def _reshape_kernel(op_name):
    def kernel(xp, x, shape):
        new_shape = tuple(shape)
        if -1 in new_shape or math.prod(new_shape) != x.size:
            new_shape = infer_reshape(x.shape, [int(s) for s in shape], op_name)
        out = x.reshape(new_shape)
        if op_name == "view" and x.size and not x.flags.c_contiguous and not _same_storage(out, x):
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at least "
                               "one dimension spans across two contiguous subspaces). Use .reshape(...) "
                               "instead.")
        return out
    return kernel


def _reshape_rule(x, shape):
    if not is_known(shape):
        return _t(x, None)
    return _t(x, infer_reshape(x.shape, shape))


# torch's reshape is a view when the strides allow it (ViewBackward0), else a copy (UnsafeViewBackward0).
_reshaped_node_name = lambda ctx: "ViewBackward0" if ctx.xp.may_share_memory(ctx.out, ctx.self) else "UnsafeViewBackward0"  # noqa: E731,E501
register("reshape(self: Tensor, shape: int[]) -> Tensor", SHAPE, _reshape_kernel("reshape"),
         shape=_reshape_rule, grad=_unview, view=True, grad_fn_name=_reshaped_node_name,
         doc="Same data in a new shape (a view when possible).")
register("view(self: Tensor, size: int[]) -> Tensor", SHAPE, _reshape_kernel("view"), shape=_reshape_rule,
         grad=_unview, view=True, function=False, doc="A view with a new shape; errors if strides forbid it.")


def _flatten_shape(shape, start_dim, end_dim):
    rank = len(shape)
    if rank == 0:
        return (1,)
    s, e = normalize_dim(start_dim, rank, "flatten"), normalize_dim(end_dim, rank, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    middle = numel(shape[s:e + 1])
    if middle is None:
        dims = shape[s:e + 1]
        middle = dims[0] if len(dims) == 1 else None
    return tuple(shape[:s]) + (middle,) + tuple(shape[e + 1:])


register("flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor", SHAPE,
         lambda xp, x, start_dim=0, end_dim=-1: xp.reshape(x, _flatten_shape(x.shape, start_dim, end_dim)),
         shape=lambda x, s=0, e=-1: _t(x, None if x.shape is None else _flatten_shape(x.shape, s, e)),
         grad=_unview, view=True, grad_fn_name=_reshaped_node_name)


def _squeeze_shape(shape, dim):
    if dim is None:
        return tuple(d for d in shape if d != 1)
    dims = [dim] if isinstance(dim, int) else list(dim)
    axes = {normalize_dim(d, len(shape), "squeeze") for d in dims} if shape else set()
    return tuple(d for i, d in enumerate(shape) if not (i in axes and d == 1))


def _squeeze_rule(x: TensorType, dim=None) -> TensorType:
    """squeeze's result, of unknown shape where a dim it may drop is not a number (a traced model's
    batch B: it is dropped at batch 1, so not even the rank is known)."""
    if x.shape is None:
        return _t(x, None)
    dims = range(len(x.shape)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    axes = {normalize_dim(d, len(x.shape), "squeeze") for d in dims} if x.shape else set()
    return _t(x, None if any(not isinstance(x.shape[a], int) for a in axes) else _squeeze_shape(x.shape, dim))


register("squeeze(self: Tensor, dim: int[]? = None) -> Tensor", SHAPE,
         lambda xp, x, dim=None: xp.reshape(x, _squeeze_shape(x.shape, dim)),
         shape=_squeeze_rule,
         grad=_unview, view=True, doc="Removes size-1 dims (only `dim` when given).")


def _unsqueeze_shape(shape, dim):
    d = normalize_dim(dim, len(shape) + 1, "unsqueeze")
    return tuple(shape[:d]) + (1,) + tuple(shape[d:])


register("unsqueeze(self: Tensor, dim: int) -> Tensor", SHAPE,
         lambda xp, x, dim: xp.reshape(x, _unsqueeze_shape(x.shape, dim)),
         shape=lambda x, dim: _t(x, None if x.shape is None else _unsqueeze_shape(x.shape, dim)),
         grad=_unview, view=True)


def _check_perm(dims, rank):
    if len(dims) != rank:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = {rank} "
                           f"is not equal to len(dims) = {len(dims)}")
    axes = [normalize_dim(d, rank, "permute") for d in dims]
    if len(set(axes)) != rank:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return axes


def _permute_grad(ctx, g):
    axes = _check_perm(ctx.dims, g.ndim)
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (g.transpose(inverse), None)


register("permute(self: Tensor, dims: int[]) -> Tensor", SHAPE,
         lambda xp, x, dims: xp.transpose(x, _check_perm(dims, x.ndim)),
         shape=lambda x, dims: _t(x, None if x.shape is None or not is_known(dims)
                                  else [x.shape[a] for a in _check_perm(dims, len(x.shape))]),
         grad=_permute_grad, view=True)


def _transpose_kernel(xp, x, dim0, dim1, name="transpose"):
    """x with two dims swapped, a view (transpose, and swapaxes under its own name)."""
    if x.ndim == 0:
        normalize_dim(dim0, 0), normalize_dim(dim1, 0)
        return x
    return xp.swapaxes(x, normalize_dim(dim0, x.ndim, name), normalize_dim(dim1, x.ndim, name))


def _transpose_rule(x, dim0, dim1):
    if x.shape is None:
        return x
    shape = list(x.shape)
    if shape:
        a, b = normalize_dim(dim0, len(shape)), normalize_dim(dim1, len(shape))
        shape[a], shape[b] = shape[b], shape[a]
    return _t(x, shape)


register("transpose(self: Tensor, dim0: int, dim1: int) -> Tensor", SHAPE, _transpose_kernel,
         shape=_transpose_rule, grad=lambda ctx, g: (_transpose_kernel(ctx.xp, g, ctx.dim0, ctx.dim1), None, None),
         view=True)


def _t_kernel(xp, x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return x.T


register("t(self: Tensor) -> Tensor", SHAPE, _t_kernel,
         shape=lambda x: _t(x, None if x.shape is None else tuple(reversed(x.shape))),
         grad=lambda ctx, g: (g.T,), view=True)


def expand_shape(shape, sizes, dtype=None):
    """The shape expand (and broadcast_to) gives shape: -1 keeps a dim, size-1 dims stretch; torch's
    errors otherwise (dtype names the tensor's legacy type in them)."""
    sizes = list(sizes)
    if len(sizes) < len(shape):
        kind = scalar_type_name(dtype) if dtype is not None else "Float"
        raise RuntimeError(f"expand(torch.{kind}Tensor{{{list(shape)}}}, size={sizes}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s == -1:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, non-existing "
                                   f"dimension {i}")
            out.append(s)
            continue
        have = shape[i - lead]
        if s == -1 or s == have:
            out.append(have)
        elif have == 1 or not isinstance(have, int) or not isinstance(s, int):
            out.append(s)
        else:
            raise ShapeError(f"The expanded size of the tensor ({s}) must match the existing size ({have}) at "
                             f"non-singleton dimension {i}.  Target sizes: {sizes}.  Tensor sizes: {list(shape)}")
    return tuple(out)


register("expand(self: Tensor, size: int[]) -> Tensor", SHAPE,
         lambda xp, x, size: xp.broadcast_to(x, expand_shape(x.shape, [int(s) for s in size],
                                                             from_numpy_dtype(x.dtype))),
         shape=lambda x, size: _t(x, None if x.shape is None or not is_known(size)
                                  else expand_shape(x.shape, size, x.dtype)),
         grad=lambda ctx, g: (g, None), view=True, function=False,
         doc="A broadcast view (no copy); -1 keeps a dim.")
# (numpy's ascontiguousarray makes a 0-d array 1-d; a 0-d one is contiguous already)
register("contiguous(self: Tensor) -> Tensor", SHAPE, lambda xp, x: xp.ascontiguousarray(x) if x.ndim else x,
         shape=lambda x: x, grad=lambda ctx, g: (g,), view=True, function=False)


def _narrow_kernel(xp, x, dim, start, length):
    axis = normalize_dim(dim, x.ndim, "narrow")
    size = x.shape[axis]
    check_narrow_start(start, size)
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not (0 <= start <= size) or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, start + length)
    return x[tuple(index)]


def _scatter_back(xp, shape, dtype, index, g):
    out = xp.zeros(shape, dtype=dtype)
    out[index] = g
    return out


def _narrow_grad(ctx, g):
    x = ctx.self
    axis = normalize_dim(ctx.dim, x.ndim)
    start = ctx.start + x.shape[axis] if ctx.start < 0 else ctx.start
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, start + ctx.length)
    return (_scatter_back(ctx.xp, x.shape, g.dtype, tuple(index), g), None, None, None)


def _replace_dim(x, dim, size):
    if x.shape is None:
        return _t(x, None)
    shape = list(x.shape)
    shape[normalize_dim(dim, len(shape))] = size
    return _t(x, shape)


register("narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor", SHAPE, _narrow_kernel,
         shape=lambda x, dim, start, length: _replace_dim(x, dim, length if is_known(length) else None),
         grad=_narrow_grad, view=True, grad_fn_name="SliceBackward0")


def _select_kernel(xp, x, dim, index):
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    axis = normalize_dim(dim, x.ndim, "select")
    size = x.shape[axis]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {axis} with size {size}")
    # The trailing Ellipsis keeps a 0-d result a view (x[i] alone would copy out a numpy scalar).
    return x[(slice(None),) * axis + (index, Ellipsis)]


def _select_grad(ctx, g):
    x = ctx.self
    key = [slice(None)] * x.ndim
    key[normalize_dim(ctx.dim, x.ndim)] = ctx.index
    return (_scatter_back(ctx.xp, x.shape, g.dtype, tuple(key), g), None, None)


def _select_rule(x, dim, index):
    if x.shape is None:
        return _t(x, None)
    axis = normalize_dim(dim, len(x.shape), "select")
    return _t(x, x.shape[:axis] + x.shape[axis + 1:])


register("select(self: Tensor, dim: int, index: int) -> Tensor", SHAPE, _select_kernel, shape=_select_rule,
         grad=_select_grad, view=True, doc="x[..., index, ...] at dim: removes that dim.")


def _slice_key(x, dim, start, end, step):
    if step is None:
        step = 1
    if step <= 0:
        raise ValueError("step must be greater than zero")
    key = [slice(None)] * x.ndim
    key[normalize_dim(dim, x.ndim, "slice")] = slice(start, end, step)
    return tuple(key)


def _slice_rule(x, dim=0, start=None, end=None, step=1):
    if x.shape is None:
        return _t(x, None)
    axis = normalize_dim(dim, len(x.shape), "slice")
    size = x.shape[axis]
    if isinstance(size, int) and all(v is None or isinstance(v, int) for v in (start, end, step)):
        return _replace_dim(x, dim, len(range(*slice(start, end, step or 1).indices(size))))
    if start in (None, 0) and end is None and step in (None, 1):
        return x
    return _replace_dim(x, dim, None)


register("slice(self: Tensor, dim: int = 0, start: int? = None, end: int? = None, step: int = 1) -> Tensor", SHAPE,
         lambda xp, x, dim=0, start=None, end=None, step=1: x[_slice_key(x, dim, start, end, step)],
         shape=_slice_rule,
         grad=lambda ctx, g: (_scatter_back(ctx.xp, ctx.self.shape, g.dtype,
                                            _slice_key(ctx.self, ctx.dim, ctx.start, ctx.end, ctx.step), g),
                              None, None, None, None),
         view=True, method=False, function=False, doc="x[start:end:step] along dim, a view.")


def _index_key(xp, x, indices):
    if len(indices) > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {len(indices)})")
    key = []
    for i, idx in enumerate(indices):
        if idx is None:
            key.append(slice(None))
            continue
        if idx.dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if idx.dtype == bool:
            for j, (a, b) in enumerate(zip(idx.shape, x.shape[len(key):])):
                if a != b:
                    raise IndexError(f"The shape of the mask [{', '.join(map(str, idx.shape))}] at index {j} does "
                                     f"not match the shape of the indexed tensor [{', '.join(map(str, x.shape))}] "
                                     f"at index {i + j}")
        else:
            size = x.shape[len(key)]
            if idx.size and (idx.max() >= size or idx.min() < -size):
                flat = idx.reshape(-1)
                bad = int(flat[(flat >= size) | (flat < -size)][0])  # torch names the first in order
                raise IndexError(f"index {bad} is out of bounds for dimension {len(key)} with size {size}")
        key.append(idx)
    return tuple(key)


def _index_grad(ctx, g):
    # reads only self's shape, as torch's IndexBackward0 keeps its sizes rather than the tensor: a write
    # to self after the read (`results[idx] += v`) leaves this gradient as it was
    xp = ctx.xp
    out = xp.zeros(ctx.self.shape, dtype=g.dtype)
    xp.add.at(out, _index_key(xp, ctx.self, ctx.indices), g)
    return (out, None)


def _index_rule(x, indices):
    """Integer index tensors broadcast together, and their shape takes the place of the dims they index
    (the front of the result when other dims lie between those), as in numpy and torch; the count a
    bool mask selects depends on its values."""
    unknown = TensorType(x.dtype, None, x.device)
    if x.shape is None or not isinstance(indices, (list, tuple)) or len(indices) > len(x.shape):
        return unknown
    indexed = [i for i, t in enumerate(indices) if t is not None]
    if not indexed or not all(isinstance(indices[i], TensorType) and indices[i].dtype is not None
                              and indices[i].dtype.np.kind in "iu" for i in indexed):
        return unknown
    picked = broadcast_shapes(*(indices[i].shape for i in indexed))
    if picked is None:
        return unknown
    kept = list(x.shape)
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    at = indexed[0] if adjacent else 0
    for i in reversed(indexed):
        del kept[i]
    return TensorType(x.dtype, tuple(kept[:at]) + tuple(picked) + tuple(kept[at:]), x.device)


register("index(self: Tensor, indices: Tensor?[]) -> Tensor", SHAPE,
         lambda xp, x, indices: x[_index_key(xp, x, indices)], shape=_index_rule, grad=_index_grad,
         save=("indices",), method=False, function=False, doc="Advanced indexing by integer or bool tensors.")


def _index_put_kernel(xp, x, indices, values, accumulate=False):
    key = _index_key(xp, x, indices)
    out = x.copy()
    if accumulate:
        xp.add.at(out, key, values)
    else:
        out[key] = values
    return out


def _index_put_grad(ctx, g):
    xp = ctx.xp
    key = _index_key(xp, ctx.self, ctx.indices)
    g_self = g.copy()
    if not ctx.accumulate:
        g_self[key] = 0
    g_values = g[key]
    return (g_self, None, g_values, None)


register("index_put(self: Tensor, indices: Tensor?[], values: Tensor, accumulate: bool = False) -> Tensor", SHAPE,
         _index_put_kernel, shape=lambda x, indices, values, accumulate=False: x, grad=_index_put_grad,
         inplace=True, doc="self with self[indices] = values (or += with accumulate).")


def _repeat_kernel(xp, x, repeats):
    repeats = tuple(int(r) for r in repeats)
    if len(repeats) < x.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    return xp.tile(x.reshape((1,) * (len(repeats) - x.ndim) + x.shape), repeats)


def _repeat_grad(ctx, g):
    repeats = tuple(ctx.repeats)
    shape = (1,) * (len(repeats) - ctx.self.ndim) + ctx.self.shape
    split = []
    for r, s in zip(repeats, shape):
        split.extend((r, s))
    summed = g.reshape(split).sum(axis=tuple(range(0, 2 * len(repeats), 2)))
    return (summed.reshape(ctx.self.shape), None)


def _repeat_rule(x, repeats):
    if x.shape is None or not is_known(repeats):
        return _t(x, None)
    shape = (1,) * (len(repeats) - len(x.shape)) + tuple(x.shape)
    return _t(x, [s * r if isinstance(s, int) and isinstance(r, int) else None for s, r in zip(shape, repeats)])


register("repeat(self: Tensor, repeats: int[]) -> Tensor", SHAPE, _repeat_kernel, shape=_repeat_rule,
         grad=_repeat_grad, function=False, doc="Tiles the tensor repeats[i] times along dim i.")
register("flip(self: Tensor, dims: int[]) -> Tensor", SHAPE,
         lambda xp, x, dims: xp.flip(x, tuple(normalize_dim(d, x.ndim, "flip") for d in dims)).copy(),
         shape=lambda x, dims: x,
         grad=lambda ctx, g: (ctx.xp.flip(g, tuple(normalize_dim(d, g.ndim) for d in ctx.dims)), None))


def _copy_kernel(xp, dst, src):
    return xp.broadcast_to(xp.asarray(src, dtype=dst.dtype), dst.shape).copy()


register("copy(self: Tensor, src: Tensor|Scalar) -> Tensor", SHAPE, _copy_kernel,
         shape=lambda dst, src: dst, grad=lambda ctx, g: (ctx.xp.zeros_like(g), g), inplace=True, function=False,
         doc="src broadcast into self's shape and dtype; copy_ writes it into self.")


def _fill_kernel(xp, x, value):
    if getattr(value, "ndim", 0) != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    return _copy_kernel(xp, x, value)


register("fill(self: Tensor, value: Tensor|Scalar) -> Tensor", SHAPE, _fill_kernel,
         shape=lambda x, value: x, grad=lambda ctx, g: (ctx.xp.zeros_like(g), g), inplace=True, method=False,
         doc="A tensor of self's shape and dtype holding value (a number or 0-d tensor); fill_ writes it into self.")
register("zero(self: Tensor) -> Tensor", SHAPE, lambda xp, x: xp.zeros_like(x), shape=lambda x: x,
         grad=lambda ctx, g: (ctx.xp.zeros_like(g),), inplace=True, function=False, method=False,
         doc="Zeros of self's shape and dtype; zero_ (a Tensor method and torch.zero_) writes them into self.")

"""Ops that move or mask elements by position: tril/triu, flips and rolls, repeats and tiles, stacking."""

from __future__ import annotations

from scriptc.types import TensorType

from . import alias, register
from .rules import check_narrow_start, is_known, normalize_dim, numel, promote_types
from .schema import OPAQUE


def _triangle(name: str, lower: bool):
    def kernel(xp, x, diagonal=0):
        if x.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return (xp.tril if lower else xp.triu)(x, diagonal)

    def grad(ctx, g):
        return ((ctx.xp.tril if lower else ctx.xp.triu)(g, ctx.diagonal), None)

    register(f"{name}(self: Tensor, diagonal: int = 0) -> Tensor", OPAQUE, kernel, shape=lambda x, diagonal=0: x,
             grad=grad, inplace=True,
             doc=f"The {'lower' if lower else 'upper'} triangle of the last two dims (from `diagonal`), "
                 "the rest zero.")


_triangle("tril", lower=True)
_triangle("triu", lower=False)


# --- flips, rolls, rotations ---------------------------------------------------------------------------------------

def _flip_side(name, axis, minimum_rank):
    def kernel(xp, x):
        if x.ndim < minimum_rank:
            raise RuntimeError(f"Input must be >= {minimum_rank}-d.")
        return xp.flip(x, axis).copy()

    register(f"{name}(self: Tensor) -> Tensor", OPAQUE, kernel, shape=lambda x: x,
             grad=lambda ctx, g: (ctx.xp.flip(g, axis),), doc=f"self flipped along dim {axis}.")


_flip_side("fliplr", 1, 2)
_flip_side("flipud", 0, 1)


def _roll_args(x, shifts, dims):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return shifts[0], None
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    return tuple(shifts), tuple(normalize_dim(d, x.ndim, "roll") for d in dims)


def _roll_kernel(xp, x, shifts, dims=()):
    shift, axes = _roll_args(x, shifts, dims)
    return xp.roll(x, shift, axes)


def _roll_grad(ctx, g):
    shift, axes = _roll_args(g, ctx.shifts, ctx.dims)
    back = -shift if axes is None else tuple(-s for s in shift)
    return (ctx.xp.roll(g, back, axes), None, None)


register("roll(self: Tensor, shifts: int|int[], dims: int|int[] = []) -> Tensor", OPAQUE, _roll_kernel,
         shape=lambda x, *rest: x, grad=_roll_grad,
         doc="self shifted cyclically by shifts along dims (the flattened tensor when dims is empty).")


def _rot90_dims(x, dims):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = (normalize_dim(d, x.ndim, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and dim1 = {b}")
    return a, b


def _rot90_rule(x, k=1, dims=(0, 1)):
    if x.shape is None or k % 2 == 0:
        return x
    shape = list(x.shape)
    a, b = (normalize_dim(d, len(shape), "rot90") for d in dims)
    shape[a], shape[b] = shape[b], shape[a]
    return TensorType(x.dtype, tuple(shape), x.device)


register("rot90(self: Tensor, k: int = 1, dims: int[] = [0, 1]) -> Tensor", OPAQUE,
         lambda xp, x, k=1, dims=(0, 1): xp.rot90(x, k, _rot90_dims(x, dims)).copy(), shape=_rot90_rule,
         grad=lambda ctx, g: (ctx.xp.rot90(g, -ctx.k, _rot90_dims(g, ctx.dims)), None, None),
         doc="self rotated by k quarter turns in the plane of dims, from the first toward the second.")


# --- repeats --------------------------------------------------------------------------------------------------------

def _repeat_counts(xp, repeats, length):
    if getattr(repeats, "ndim", 0) > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    counts = xp.asarray(repeats).reshape(-1).astype(xp.int64)
    if counts.size and (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    if counts.size == 1:
        counts = xp.broadcast_to(counts, (length,))
    elif counts.size != length:
        raise RuntimeError("repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{counts.size} and input.size({0}) = {length}")
    return counts


def _repeat_interleave_kernel(xp, x, repeats, dim=None, output_size=None):
    values = x.reshape(-1) if dim is None else x
    axis = 0 if dim is None else normalize_dim(dim, x.ndim, "repeat_interleave")
    counts = _repeat_counts(xp, repeats, values.shape[axis])
    if output_size is not None and int(counts.sum()) != output_size:
        raise RuntimeError("allocated size does not match required size")
    return xp.repeat(values, counts, axis=axis)


def _repeat_interleave_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axis = 0 if ctx.dim is None else normalize_dim(ctx.dim, x.ndim)
    length = x.size if ctx.dim is None else x.shape[axis]
    counts = _repeat_counts(xp, ctx.repeats, length)
    owner = xp.repeat(xp.arange(length), counts)
    moved = xp.moveaxis(g, axis, 0)
    out = xp.zeros((length,) + moved.shape[1:], dtype=g.dtype)
    xp.add.at(out, owner, moved)
    out = xp.moveaxis(out, 0, axis)
    return (out.reshape(x.shape), None, None, None)


def _repeat_interleave_rule(x, repeats, dim=None, output_size=None):
    if x.shape is None or (dim is not None and not isinstance(dim, int)):
        return TensorType(x.dtype, None, x.device)
    if dim is None:
        return TensorType(x.dtype, (output_size if isinstance(output_size, int) else None,), x.device)
    shape = list(x.shape)
    axis = normalize_dim(dim, len(shape), "repeat_interleave")
    if isinstance(repeats, int) and isinstance(shape[axis], int):
        shape[axis] = shape[axis] * repeats
    else:
        shape[axis] = output_size if isinstance(output_size, int) else None
    return TensorType(x.dtype, tuple(shape), x.device)


register("repeat_interleave(self: Tensor, repeats: Tensor|int, dim: int? = None, *, output_size: int? = None) "
         "-> Tensor", OPAQUE, _repeat_interleave_kernel, shape=_repeat_interleave_rule, grad=_repeat_interleave_grad,
         save=("self", "repeats"), doc="Each element (or slice along dim) repeated repeats times (a count per "
                                       "element when repeats is a tensor); the flattened tensor when dim is None.")
register("repeat_interleave.repeats(repeats: Tensor, *, output_size: int? = None) -> Tensor", OPAQUE,
         lambda xp, repeats, output_size=None: _repeat_interleave_kernel(
             xp, xp.arange(repeats.size, dtype=xp.int64), repeats, 0, output_size),
         shape=lambda repeats, output_size=None: TensorType(repeats.dtype, (None,), repeats.device), method=False,
         doc="repeat_interleave(repeats): each index i repeated repeats[i] times.")


def _tile_dims(x, dims):
    dims = tuple(int(d) for d in dims)
    return (1,) * (x.ndim - len(dims)) + dims


def _tile_grad(ctx, g):
    x = ctx.self
    dims = _tile_dims(x, ctx.dims)
    shape = (1,) * (len(dims) - x.ndim) + x.shape
    split = []
    for r, s in zip(dims, shape):
        split.extend((r, s))
    summed = g.reshape(split).sum(axis=tuple(range(0, 2 * len(dims), 2)))
    return (summed.reshape(x.shape), None)


def _tile_rule(x, dims):
    if x.shape is None or not is_known(dims):
        return TensorType(x.dtype, None, x.device)
    dims = (1,) * (len(x.shape) - len(dims)) + tuple(dims)
    shape = (1,) * (len(dims) - len(x.shape)) + tuple(x.shape)
    return TensorType(x.dtype, tuple(s * r if isinstance(s, int) else None for s, r in zip(shape, dims)), x.device)


register("tile(self: Tensor, dims: int[]) -> Tensor", OPAQUE, lambda xp, x, dims: xp.tile(x, _tile_dims(x, dims)),
         shape=_tile_rule, grad=_tile_grad, doc="self repeated dims[i] times along dim i (dims padded with leading 1s).")


def _narrow_copy_kernel(xp, x, dim, start, length):
    axis = normalize_dim(dim, x.ndim, "narrow_copy")
    size = x.shape[axis]
    check_narrow_start(start, size)
    begin = start + size if start < 0 else start
    if not 0 <= begin <= size or length < 0 or begin + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return xp.take(x, range(begin, begin + length), axis=axis)


def _narrow_copy_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axis = normalize_dim(ctx.dim, x.ndim)
    begin = ctx.start + x.shape[axis] if ctx.start < 0 else ctx.start
    out = xp.zeros(x.shape, dtype=g.dtype)
    out[(slice(None),) * axis + (slice(begin, begin + ctx.length),)] = g
    return (out, None, None, None)


def _narrow_copy_rule(x, dim, start, length):
    if x.shape is None:
        return x
    shape = list(x.shape)
    shape[normalize_dim(dim, len(shape), "narrow_copy")] = length if is_known(length) else None
    return TensorType(x.dtype, tuple(shape), x.device)


register("narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor", OPAQUE, _narrow_copy_kernel,
         shape=_narrow_copy_rule, grad=_narrow_copy_grad, save=("self",), doc="A copy of narrow(dim, start, length).")


# --- stacking ----------------------------------------------------------------------------------------------------------

def _stack_layout(kind, shape):
    """(the shape a `kind`-stack sees for an input, the dim it joins along)."""
    rank = len(shape)
    if kind == "hstack":
        return (tuple(shape) if rank else (1,)), (0 if rank <= 1 else 1)
    if kind == "vstack":
        return (tuple(shape) if rank >= 2 else (1,) + tuple(shape or (1,))), 0
    if kind == "dstack":
        full = tuple(shape) + (1,) if rank == 2 else ((1,) + tuple(shape) + (1,) if rank == 1 else (
            (1, 1, 1) if rank == 0 else tuple(shape)))
        return full, 2
    full = tuple(shape) if rank >= 2 else (tuple(shape or (1,)) + (1,))  # column_stack
    return full, 1


def _stacker(kind, doc):
    def kernel(xp, tensors):
        if not tensors:
            raise RuntimeError(f"{kind} expects a non-empty TensorList")
        parts = [t.reshape(_stack_layout(kind, t.shape)[0]) for t in tensors]
        axis = _stack_layout(kind, tensors[0].shape)[1]
        return xp.concatenate(parts, axis=axis, dtype=xp.result_type(*tensors))

    def grad(ctx, g):
        xp = ctx.xp
        axis = _stack_layout(kind, ctx.tensors[0].shape)[1]
        grads, start = [], 0
        for t in ctx.tensors:
            width = _stack_layout(kind, t.shape)[0][axis]
            grads.append(xp.take(g, range(start, start + width), axis=axis).reshape(t.shape))
            start += width
        return (grads,)

    def rule(tensors):
        if not is_known(tensors) or not tensors or any(t.shape is None for t in tensors):
            return TensorType(tensors[0].dtype if is_known(tensors) and tensors else None)
        from .joining import _cat_rule
        laid = [TensorType(t.dtype, _stack_layout(kind, t.shape)[0], t.device) for t in tensors]
        return _cat_rule(laid, _stack_layout(kind, tensors[0].shape)[1])

    register(f"{kind}(tensors: Tensor[]) -> Tensor", OPAQUE, kernel, shape=rule, grad=grad, method=False, doc=doc)


_stacker("hstack", "Tensors joined along dim 1 (dim 0 for 1-d ones).")
_stacker("vstack", "Tensors joined along dim 0, 1-d ones as rows.")
_stacker("dstack", "Tensors joined along dim 2, made at least 3-d.")
_stacker("column_stack", "Tensors joined along dim 1, 0-d and 1-d ones as columns.")


def _block_diag_kernel(xp, tensors):
    blocks = [t.reshape((1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1 else t.shape) for t in tensors]
    for t in blocks:
        if t.ndim != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input has "
                               f"{t.ndim} dimensions")
    rows, cols = sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)
    out = xp.zeros((rows, cols), dtype=xp.result_type(*tensors) if tensors else xp.float32)
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _block_diag_grad(ctx, g):
    grads, r, c = [], 0, 0
    for t in ctx.tensors:
        h, w = (1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1 else t.shape
        grads.append(g[r:r + h, c:c + w].reshape(t.shape))
        r, c = r + h, c + w
    return (grads,)


def _block_diag_rule(tensors):
    """Each block's rows and columns (a 0-d tensor one of each, a 1-d one a row) add up; the dtype is
    the blocks' promoted one."""
    if not is_known(tensors) or not tensors:
        return TensorType(None, (None, None))
    blocks = [t.shape if t.shape is None or len(t.shape) == 2 else (1, 1) if not t.shape else (1, t.shape[0])
              for t in tensors]
    if any(b is None or len(b) != 2 for b in blocks):
        return TensorType(promote_types(tensors), (None, None))
    rows, cols = [b[0] for b in blocks], [b[1] for b in blocks]
    return TensorType(promote_types(tensors), tuple(None if any(type(d) is not int for d in dims) else sum(dims)
                                                    for dims in (rows, cols)))


register("block_diag(tensors: Tensor[]) -> Tensor", OPAQUE, _block_diag_kernel,
         shape=_block_diag_rule,
         grad=_block_diag_grad, method=False, doc="A block-diagonal matrix of the tensors (0-d and 1-d as one row).")


def _cartesian_prod_kernel(xp, tensors):
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0].copy()
    grids = xp.meshgrid(*tensors, indexing="ij")
    return xp.stack([grid.reshape(-1) for grid in grids], axis=1)


def _cartesian_prod_grad(ctx, g):
    tensors = ctx.tensors
    if len(tensors) == 1:
        return ([g],)
    sizes = [t.shape[0] for t in tensors]
    grads = []
    for i in range(len(tensors)):
        column = g[:, i].reshape(sizes)
        grads.append(column.sum(axis=tuple(a for a in range(len(sizes)) if a != i)))
    return (grads,)


def _cartesian_prod_rule(tensors):
    """One row per combination of the 1-d tensors' elements, one column per tensor (one tensor: itself)."""
    if not is_known(tensors) or not tensors:
        return TensorType(None)
    sizes = [t.shape[0] if t.shape is not None and len(t.shape) == 1 else None for t in tensors]
    rows = numel(sizes)
    return TensorType(tensors[0].dtype, (rows,) if len(tensors) == 1 else (rows, len(tensors)))


register("cartesian_prod(tensors: Tensor[]) -> Tensor", OPAQUE, _cartesian_prod_kernel,
         shape=_cartesian_prod_rule,
         grad=_cartesian_prod_grad, method=False,
         doc="Every combination of the 1-d tensors' elements, one row each (itertools.product order).")
alias("row_stack", "vstack")
alias("concat", "cat")
alias("concatenate", "cat")

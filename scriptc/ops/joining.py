"""Joining and splitting ops: cat, stack, split, chunk."""

from __future__ import annotations

from scriptc.errors import ShapeError
from scriptc.types import TensorType

from . import register
from .rules import UNKNOWN, broadcast_shapes, is_known, normalize_dim
from .schema import SHAPE
from .shape import _t


def _cat_kernel(xp, tensors, dim=0):
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    # Legacy rule kept by PyTorch: 1-d empty tensors are skipped.
    parts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors[:1])
    rank = parts[0].ndim
    if rank == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    axis = normalize_dim(dim, rank, "cat")
    for i, p in ((i, t) for i, t in enumerate(tensors) if not (t.ndim == 1 and t.shape[0] == 0)):
        if p.ndim != rank:
            raise ShapeError(f"Tensors must have same number of dimensions: got {rank} and {p.ndim}")
        for j, (a, b) in enumerate(zip(p.shape, parts[0].shape)):
            if j != axis and a != b:
                raise ShapeError(f"Sizes of tensors must match except in dimension {axis}. Expected size {b} but "
                                 f"got size {a} for tensor number {i} in the list.")
    dtype = xp.result_type(*parts)
    return xp.concatenate(parts, axis=axis, dtype=dtype)


def _cat_grad(ctx, g):
    tensors = ctx.tensors
    parts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors[:1])
    axis = normalize_dim(ctx.dim, parts[0].ndim)
    grads, start = [], 0
    for t in tensors:
        if t.ndim == 1 and t.shape[0] == 0 and t is not parts[0]:
            grads.append(g[:0] if g.ndim == 1 else ctx.xp.zeros((0,), g.dtype))
            continue
        n = t.shape[axis]
        grads.append(ctx.xp.take(g, range(start, start + n), axis=axis))
        start += n
    return (grads, None)


def _cat_rule(tensors, dim=0):
    if not is_known(tensors) or not tensors:
        return TensorType()
    from scriptc.types import promote_pair
    first = tensors[0]
    dtype = first.dtype
    for t in tensors[1:]:
        dtype = None if dtype is None or t.dtype is None else promote_pair(dtype, t.dtype)
    if any(t.shape is None for t in tensors):
        return TensorType(dtype, None, first.device)
    rank = len(first.shape)
    axis = normalize_dim(dim, rank, "cat")
    total = 0
    for t in tensors:
        d = t.shape[axis]
        total = None if total is None or not isinstance(d, int) else total + d
    shape = list(first.shape)
    shape[axis] = total
    for i in range(rank):
        if i != axis:
            for t in tensors[1:]:
                shape[i] = broadcast_shapes((shape[i],), (t.shape[i],))[0] if shape[i] != t.shape[i] else shape[i]
    return TensorType(dtype, tuple(shape), first.device)


register("cat(tensors: Tensor[], dim: int = 0) -> Tensor", SHAPE, _cat_kernel, shape=_cat_rule, grad=_cat_grad,
         method=False, doc="Concatenates along an existing dim.")


def _stack_kernel(xp, tensors, dim=0):
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if t.shape != tensors[0].shape:
            raise ShapeError(f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} at "
                             f"entry 0 and {list(t.shape)} at entry {i}")
    axis = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    return xp.stack(tensors, axis=axis, dtype=xp.result_type(*tensors))


def _stack_rule(tensors, dim=0):
    if not is_known(tensors) or not tensors or tensors[0].shape is None:
        return TensorType(tensors[0].dtype if is_known(tensors) and tensors else None)
    shape = list(tensors[0].shape)
    shape.insert(normalize_dim(dim, len(shape) + 1), len(tensors))
    return TensorType(tensors[0].dtype, tuple(shape), tensors[0].device)


def _stack_grad(ctx, g):
    axis = normalize_dim(ctx.dim, g.ndim)
    return ([ctx.xp.take(g, i, axis=axis) for i in range(g.shape[axis])], None)


register("stack(tensors: Tensor[], dim: int = 0) -> Tensor", SHAPE, _stack_kernel, shape=_stack_rule,
         grad=_stack_grad, method=False, doc="Stacks equal-shaped tensors along a new dim.")


def _split_sizes(length, split_size, op_name="split"):
    if isinstance(split_size, int):
        if split_size <= 0 and length > 0:
            raise RuntimeError(f"{op_name} expects split_size be non-negative, but got split_size={split_size}")
        if split_size == 0:
            return [0]
        return [min(split_size, length - i) for i in range(0, max(length, 1), split_size)] or [0]
    sizes = list(split_size)
    if sum(sizes) != length:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {length} "
                           f"(input tensor's size at dimension), but got split_sizes={sizes}")
    return sizes


def _split_kernel(xp, x, split_size, dim=0):
    axis = normalize_dim(dim, x.ndim, "split")
    sizes = _split_sizes(x.shape[axis], split_size)
    out, start = [], 0
    for s in sizes:
        index = [slice(None)] * x.ndim
        index[axis] = slice(start, start + s)
        out.append(x[tuple(index)])
        start += s
    return tuple(out)


def _pieces_grad(ctx, g):
    xp = ctx.xp
    axis = normalize_dim(ctx.dim, ctx.self.ndim)
    if not isinstance(g, tuple):  # a split into one piece is a one-output node: its gradient comes bare
        g = (g,)
    parts = [gi if gi is not None else xp.zeros(o.shape, dtype=o.dtype) for gi, o in zip(g, ctx.out)]
    return (xp.concatenate(parts, axis=axis),) + (None,) * (len(ctx.args) - 1)


def _split_rule(x, split_size, dim=0):
    if x.shape is None or not is_known(split_size):
        return _t(x, None)
    axis = normalize_dim(dim, len(x.shape), "split")
    length = x.shape[axis]
    if not isinstance(length, int):
        return _t(x, None)
    shapes = []
    for s in _split_sizes(length, split_size):
        shape = list(x.shape)
        shape[axis] = s
        shapes.append(_t(x, shape))
    return tuple(shapes)


register("split(self: Tensor, split_size: int|int[], dim: int = 0) -> Tensor[]", SHAPE, _split_kernel,
         shape=_split_rule, grad=_pieces_grad, view=True, python_result=lambda args, outs: tuple(outs),
         doc="Pieces of split_size along dim (the last may be smaller), or of the listed sizes.")


def _chunk_size(length, chunks):
    """The split size of chunk(); a list of `chunks` zeros for an empty dim (torch gives that many empty chunks)."""
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    return max(-(-length // chunks), 1) if length else [0] * chunks


register("chunk(self: Tensor, chunks: int, dim: int = 0) -> Tensor[]", SHAPE,
         lambda xp, x, chunks, dim=0: _split_kernel(
             xp, x, _chunk_size(x.shape[normalize_dim(dim, x.ndim, "chunk")], chunks), dim),
         shape=lambda x, chunks, dim=0: _split_rule(
             x, _chunk_size(x.shape[normalize_dim(dim, len(x.shape))], chunks)
             if x.shape is not None and is_known(chunks) and isinstance(x.shape[normalize_dim(dim, len(x.shape))], int)
             else UNKNOWN, dim),
         grad=_pieces_grad, view=True, python_result=lambda args, outs: tuple(outs), grad_fn_name="SplitBackward0")

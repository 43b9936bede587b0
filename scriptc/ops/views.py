"""More views of one tensor's data (movedim, swapaxes, unflatten, broadcast_to, ravel, atleast_Nd), the
pieces of one (unbind, tensor_split) and views of several at once (broadcast_tensors, meshgrid)."""

from __future__ import annotations

import math
import warnings

from scriptc.types import TensorType, from_numpy_dtype

from . import alias, register
from .rules import broadcast_shapes, is_known, normalize_dim
from .schema import SHAPE
from .shape import _t, _transpose_kernel, _transpose_rule, expand_shape


def _unview(ctx, g):
    return (g.reshape(ctx.self.shape),) + (None,) * (len(ctx.args) - 1)


def _as_tuple(args, outs):
    """A list op's eager result as torch gives it: a tuple."""
    return tuple(outs)


# --- movedim, swapaxes -------------------------------------------------------------------------------------------

def _dims(value, rank, name):
    dims = [value] if isinstance(value, int) else list(value)
    return [normalize_dim(d, rank, name) for d in dims]


def _movedim_axes(rank, source, destination):
    src, dst = _dims(source, rank, "movedim"), _dims(destination, rank, "movedim")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({source} dims) should contain the "
                           f"same number of dims as destination ({destination} dims)")
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({source})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({destination})")
    return src, dst


def _movedim_kernel(xp, x, source, destination):
    src, dst = _movedim_axes(x.ndim, source, destination)
    return xp.moveaxis(x, src, dst)


def _movedim_rule(x, source, destination):
    if x.shape is None or not (is_known(source) and is_known(destination)):
        return _t(x, None)
    src, dst = _movedim_axes(len(x.shape), source, destination)
    order = [d for d in range(len(x.shape)) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _t(x, [x.shape[d] for d in order])


register("movedim(self: Tensor, source: int|int[], destination: int|int[]) -> Tensor", SHAPE, _movedim_kernel,
         shape=_movedim_rule, view=True,
         grad=lambda ctx, g: (ctx.xp.moveaxis(g, *_movedim_axes(g.ndim, ctx.source, ctx.destination)[::-1]), None, None),
         doc="A view with the dims at source moved to destination, the others in order.")
alias("moveaxis", "movedim")


def _swap_kernel(xp, x, axis0, axis1):
    return _transpose_kernel(xp, x, axis0, axis1, "swapaxes")


register("swapaxes(self: Tensor, axis0: int, axis1: int) -> Tensor", SHAPE, _swap_kernel, shape=_transpose_rule,
         view=True,         grad=lambda ctx, g: (_swap_kernel(ctx.xp, g, ctx.axis0, ctx.axis1), None, None),
         doc="transpose(axis0, axis1).")
alias("swapdims", "swapaxes")


# --- reshaping views ------------------------------------------------------------------------------------------------

def _unflatten_shape(shape, dim, sizes):
    axis = normalize_dim(dim, len(shape), "unflatten")
    sizes = [int(s) for s in sizes]
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    size = shape[axis]
    if -1 in sizes:
        if known == 0 or (isinstance(size, int) and size % known):
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
                               f"({size}) in the input tensor")
        sizes[sizes.index(-1)] = size // known if isinstance(size, int) else None
    elif isinstance(size, int) and known != size:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({size}) in "
                           "the input tensor")
    return tuple(shape[:axis]) + tuple(sizes) + tuple(shape[axis + 1:])


register("unflatten(self: Tensor, dim: int, sizes: int[]) -> Tensor", SHAPE,
         lambda xp, x, dim, sizes: x.reshape(_unflatten_shape(x.shape, dim, sizes)),
         shape=lambda x, dim, sizes: _t(x, None if x.shape is None or not is_known(sizes)
                                        else _unflatten_shape(x.shape, dim, sizes)),
         grad=_unview, view=True, doc="A view with dim split into sizes (one may be -1).")
register("ravel(self: Tensor) -> Tensor", SHAPE, lambda xp, x: x.reshape(-1),
         shape=lambda x: _t(x, None if x.shape is None else (math.prod(x.shape) if None not in x.shape
                                                             and all(isinstance(d, int) for d in x.shape) else None,)),
         grad=_unview, view=True, doc="self flattened to 1-d (a view when possible).")


register("broadcast_to(self: Tensor, size: int[]) -> Tensor", SHAPE,
         lambda xp, x, size: xp.broadcast_to(x, expand_shape(x.shape, [int(s) for s in size],
                                                             from_numpy_dtype(x.dtype))),
         shape=lambda x, size: _t(x, None if x.shape is None or not is_known(size)
                                  else expand_shape(x.shape, size, x.dtype)),
         grad=lambda ctx, g: (g, None), view=True, doc="A broadcast view of self with the given size (expand).")


def _atleast(rank):
    def shape_of(shape):
        if len(shape) >= rank:
            return tuple(shape)
        if rank == 3 and len(shape) == 2:
            return tuple(shape) + (1,)
        if rank == 3 and len(shape) == 1:
            return (1,) + tuple(shape) + (1,)
        return (1,) * (rank - len(shape)) + tuple(shape)

    register(f"atleast_{rank}d(self: Tensor) -> Tensor", SHAPE, lambda xp, x: x.reshape(shape_of(x.shape)),
             shape=lambda x: _t(x, None if x.shape is None else shape_of(x.shape)), grad=_unview, view=True,
             method=False, doc=f"self viewed with at least {rank} dims.")


for _rank in (1, 2, 3):
    _atleast(_rank)


# --- pieces -----------------------------------------------------------------------------------------------------------

def _unbind_kernel(xp, x, dim=0):
    if x.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    axis = normalize_dim(dim, x.ndim, "unbind")
    return tuple(x[(slice(None),) * axis + (i, Ellipsis)] for i in range(x.shape[axis]))


def _unbind_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    axis = normalize_dim(ctx.dim, x.ndim)
    parts = [gi if gi is not None else xp.zeros(o.shape, dtype=o.dtype) for gi, o in zip(g, ctx.out)]
    return (xp.stack(parts, axis=axis) if parts else xp.zeros(x.shape, dtype=x.dtype), None)


def _unbind_rule(x, dim=0):
    if x.shape is None or not is_known(dim):
        return _t(x, None)
    axis = normalize_dim(dim, len(x.shape), "unbind")
    if not isinstance(x.shape[axis], int):
        return _t(x, None)
    return tuple(_t(x, x.shape[:axis] + x.shape[axis + 1:]) for _ in range(x.shape[axis]))


register("unbind(self: Tensor, dim: int = 0) -> Tensor[]", SHAPE, _unbind_kernel, shape=_unbind_rule, grad=_unbind_grad,
         view=True, python_result=_as_tuple, doc="The slices along dim, each a view without that dim.")


def _split_points(length, sections_or_indices, name):
    if isinstance(sections_or_indices, int):
        sections = sections_or_indices
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        base, extra = divmod(length, sections)
        sizes = [base + 1] * extra + [base] * (sections - extra)
        points, at = [], 0
        for s in sizes[:-1]:
            at += s
            points.append(at)
        return points
    return [int(i) for i in sections_or_indices]


def _tensor_split_kernel(xp, x, indices_or_sections, dim=0):
    if x.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    axis = normalize_dim(dim, x.ndim, "tensor_split")
    length = x.shape[axis]
    bounds = [0] + [min(max(p + length if p < 0 else p, 0), length) for p in
                    _split_points(length, indices_or_sections, "tensor_split")] + [length]
    return tuple(x[(slice(None),) * axis + (slice(start, max(start, stop)),)] for start, stop in zip(bounds, bounds[1:]))


def _joined_pieces(xp, x, pieces, g, indices_or_sections, dim):
    """The gradient of self from the gradients of its tensor_split pieces."""
    axis = normalize_dim(dim, x.ndim)
    parts = [gi if gi is not None else xp.zeros(o.shape, dtype=o.dtype) for gi, o in zip(g, pieces)]
    joined = xp.concatenate(parts, axis=axis)
    if joined.shape != x.shape:  # overlapping or backwards indices: add each piece back in place
        joined = xp.zeros(x.shape, dtype=parts[0].dtype if parts else x.dtype)
        for piece, out in zip(parts, _tensor_split_kernel(xp, joined, indices_or_sections, dim)):
            out += piece
    return joined


def _tensor_split_grad(ctx, g):
    return (_joined_pieces(ctx.xp, ctx.self, ctx.out, g, ctx.indices_or_sections, ctx.dim), None, None)


def _tensor_split_rule(x, indices_or_sections, dim=0):
    if x.shape is None or not is_known(indices_or_sections) or not is_known(dim):
        return _t(x, None)
    axis = normalize_dim(dim, len(x.shape), "tensor_split")
    length = x.shape[axis]
    if not isinstance(length, int):
        return _t(x, None)
    bounds = [0] + [min(max(p + length if p < 0 else p, 0), length) for p in
                    _split_points(length, indices_or_sections, "tensor_split")] + [length]
    shapes = []
    for start, stop in zip(bounds, bounds[1:]):
        shape = list(x.shape)
        shape[axis] = max(stop - start, 0)
        shapes.append(_t(x, shape))
    return tuple(shapes)


register("tensor_split(self: Tensor, indices_or_sections: int|int[], dim: int = 0) -> Tensor[]", SHAPE,
         _tensor_split_kernel, shape=_tensor_split_rule, grad=_tensor_split_grad, view=True, python_result=_as_tuple,
         doc="Views splitting dim into n near-equal sections (the first ones one larger) or at the given indices.")


def _directional_split(name, axis, minimum_rank):
    def kernel(xp, x, indices_or_sections):
        if x.ndim < minimum_rank:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {minimum_rank} dimension, but got a "
                               f"tensor with {x.ndim} dimensions!")
        along = axis if not (name == "hsplit" and x.ndim == 1) else 0
        if isinstance(indices_or_sections, int) and x.shape[along] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {along}, but the size of the "
                               f"dimension {x.shape[along]} is not divisible by the split_size "
                               f"{indices_or_sections}!")
        return _tensor_split_kernel(xp, x, indices_or_sections, along)

    def grad(ctx, g):
        along = axis if not (name == "hsplit" and ctx.self.ndim == 1) else 0
        return (_joined_pieces(ctx.xp, ctx.self, ctx.out, g, ctx.indices_or_sections, along), None)

    register(f"{name}(self: Tensor, indices_or_sections: int|int[]) -> Tensor[]", SHAPE, kernel,
             shape=lambda x, sections: _tensor_split_rule(
                 x, sections, axis if not (name == "hsplit" and x.shape is not None and len(x.shape) == 1) else 0),
             grad=grad, view=True, python_result=_as_tuple,
             doc=f"tensor_split along dim {axis} (sections must divide it evenly).")


for _name, _axis, _rank in (("hsplit", 1, 1), ("vsplit", 0, 2), ("dsplit", 2, 3)):
    _directional_split(_name, _axis, _rank)


# --- several tensors at once -------------------------------------------------------------------------------------

def _broadcast_tensors_kernel(xp, tensors):
    shape = xp.broadcast_shapes(*(t.shape for t in tensors))
    return tuple(xp.broadcast_to(t, shape) for t in tensors)


def _broadcast_tensors_rule(tensors):
    if not is_known(tensors):
        return TensorType()
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(_t(t, shape) for t in tensors)


register("broadcast_tensors(tensors: Tensor[]) -> Tensor[]", SHAPE, _broadcast_tensors_kernel,
         shape=_broadcast_tensors_rule, grad=lambda ctx, g: (list(g),), method=False, python_result=_as_tuple,
         doc="The tensors broadcast to one shape, as views.")


def _meshgrid_kernel(xp, tensors, indexing=None):
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=4)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("torch.meshgrid: expects all tensors to have the same dtype")
    return tuple(xp.meshgrid(*(t.reshape(-1) for t in tensors), indexing=indexing))


def _meshgrid_grad(ctx, g):
    tensors = ctx.tensors
    swap = ctx.indexing == "xy" and len(tensors) > 1
    grads = []
    for i, (t, gi) in enumerate(zip(tensors, g)):
        if gi is None:
            grads.append(None)
            continue
        axis = {0: 1, 1: 0}.get(i, i) if swap else i
        summed = gi.sum(axis=tuple(a for a in range(gi.ndim) if a != axis))
        grads.append(summed.reshape(t.shape))
    return (grads, None)


def _meshgrid_rule(tensors, indexing=None):
    if not is_known(tensors):
        return TensorType()
    sizes = [(t.shape[0] if t.shape else 1) if t.shape is not None else None for t in tensors]
    if indexing == "xy" and len(sizes) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    return tuple(_t(t, sizes) for t in tensors)


register("meshgrid(tensors: Tensor[], *, indexing: str? = None) -> Tensor[]", SHAPE, _meshgrid_kernel,
         shape=_meshgrid_rule, grad=_meshgrid_grad, method=False, python_result=_as_tuple,
         doc="Coordinate grids from 1-d tensors; indexing='ij' (matrix) or 'xy' (Cartesian: the first two dims "
             "swapped).")


# --- unfold (sliding windows), positive ------------------------------------------------------------------------

def _window_count(x_shape, dimension, size, step):
    axis = normalize_dim(dimension, len(x_shape), "unfold") if len(x_shape) else 0
    length = x_shape[axis] if len(x_shape) else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return axis, (length - size) // step + 1


def _unfold_kernel(xp, x, dimension, size, step):
    axis, count = _window_count(x.shape, dimension, size, step)
    if x.ndim == 0:
        return x.reshape(1)
    shape = x.shape[:axis] + (count,) + x.shape[axis + 1:] + (size,)
    strides = x.strides[:axis] + (x.strides[axis] * step,) + x.strides[axis + 1:] + (x.strides[axis],)
    # A view of x's memory (eager dispatch finds x's storage through the view's base chain).
    return xp.lib.stride_tricks.as_strided(x, shape=shape, strides=strides)


def _unfold_grad(ctx, g):
    xp, x = ctx.xp, ctx.self
    if x.ndim == 0:
        return (g.reshape(()), None, None, None)
    axis, count = _window_count(x.shape, ctx.dimension, ctx.size, ctx.step)
    out = xp.zeros(x.shape, dtype=g.dtype)
    moved_out, moved_g = xp.moveaxis(out, axis, 0), xp.moveaxis(g, (axis, g.ndim - 1), (0, 1))
    positions = ctx.step * xp.arange(count)[:, None] + xp.arange(ctx.size)[None, :]
    xp.add.at(moved_out, positions, moved_g)
    return (out, None, None, None)


def _unfold_rule(x, dimension, size, step):
    if x.shape is None or not all(isinstance(d, int) for d in x.shape) or not all(map(is_known, (size, step))):
        return _t(x, None)
    if not x.shape:
        return _t(x, (1,))
    axis, count = _window_count(x.shape, dimension, size, step)
    return _t(x, x.shape[:axis] + (count,) + x.shape[axis + 1:] + (size,))


register("unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor", SHAPE, _unfold_kernel,
         shape=_unfold_rule, grad=_unfold_grad, view=True, function=False,
         doc="Every size-long window along dimension, step apart, as a new last dim (a view).")
def _positive_kernel(xp, x):
    if x.dtype == bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x[...]


register("positive(self: Tensor) -> Tensor", SHAPE, _positive_kernel, shape=lambda x: x,
         grad=lambda ctx, g: (g,), view=True, doc="self, as a view (an error for bool tensors).")

# Tensor.detach() in scripted code (eager Tensors have their own): no grad rule, so no gradient flows back
register("detach(self: Tensor) -> Tensor", SHAPE, lambda xp, x: x.view(), shape=lambda x: x, view=True, method=False,
         function=False, doc="The same data, cut from autograd: no gradient flows back through it.")

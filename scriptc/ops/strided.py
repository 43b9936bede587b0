"""as_strided: a view of a tensor's storage with any sizes, strides and offset (counted in elements from
the storage's start, as torch counts them)."""

from __future__ import annotations

from scriptc.types import TensorType

from . import register
from .schema import SHAPE


def _address(x) -> int:
    return x.__array_interface__["data"][0] if hasattr(x, "__array_interface__") else x.data.ptr


def storage_root(x):
    """The array that stands for x's storage: the last one on x's base chain with x's element size.
    The chain can pass through a holder that is not an array (numpy's as_strided puts one between its
    result and the source); it stops before a byte buffer holding elements of another size, such as
    the compiled runtime's arenas, where each value is a storage of its own."""
    root = x
    while getattr(x, "base", None) is not None:
        x = x.base
        if getattr(x, "strides", None) is not None:
            if x.itemsize != root.itemsize:
                break
            root = x
    return root


def storage_offset(x) -> int:
    """How many elements into its storage x's first element lies (Tensor.storage_offset)."""
    return (_address(x) - _address(storage_root(x))) // x.itemsize


def _storage(xp, x):
    """The whole storage x's memory lies in, as a flat array, and x's offset into it in elements."""
    root = storage_root(x)
    extent = sum((n - 1) * s for n, s in zip(root.shape, root.strides)) + root.itemsize if root.size else 0
    flat = xp.lib.stride_tricks.as_strided(root, shape=(extent // x.itemsize,), strides=(x.itemsize,))
    return flat, storage_offset(x)


def _geometry(xp, x, size, stride, storage_offset):
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: {len(stride)} != {len(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    flat, own_offset = _storage(xp, x)
    offset = own_offset if storage_offset is None else storage_offset
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > flat.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {x.itemsize} requiring a storage size of {needed * x.itemsize} are out of "
                           f"bounds for storage of size {flat.size * x.itemsize}")
    return flat, offset


def _as_strided_kernel(xp, x, size, stride, storage_offset=None):
    flat, offset = _geometry(xp, x, size, stride, storage_offset)
    return xp.lib.stride_tricks.as_strided(flat[offset:], shape=tuple(size),
                                           strides=tuple(s * x.itemsize for s in stride))


def _positions(xp, shape, strides, offset):
    """Each element's index in the storage, for a view of this geometry (strides in elements)."""
    index = xp.full(tuple(shape), offset, dtype=xp.int64)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        index += (xp.arange(n) * s).reshape((n,) + (1,) * (len(shape) - axis - 1))
    return index


def _as_strided_grad(ctx, g):
    """Every output element's gradient lands on the storage element it reads (summed where views
    overlap); the input takes the storage gradient at its own elements. Only self's geometry is read,
    so self is not saved: an in-place write into the view before backward is allowed, as in torch."""
    xp, x = ctx.xp, ctx.self
    flat, own_offset = _storage(xp, x)
    offset = own_offset if ctx.storage_offset is None else ctx.storage_offset
    storage_grad = xp.zeros(flat.size, dtype=g.dtype)
    xp.add.at(storage_grad, _positions(xp, ctx.size, ctx.stride, offset), g)
    x_strides = tuple(s // x.itemsize for s in x.strides)
    return (storage_grad[_positions(xp, x.shape, x_strides, own_offset)], None, None, None)


def _as_strided_rule(x, size, stride, storage_offset=None):
    if size is None or not all(isinstance(d, int) for d in size):
        return TensorType(x.dtype, None, x.device)
    return TensorType(x.dtype, tuple(size), x.device)


register("as_strided(self: Tensor, size: int[], stride: int[], storage_offset: int? = None) -> Tensor", SHAPE,
         _as_strided_kernel, shape=_as_strided_rule, grad=_as_strided_grad, view=True,
         doc="A view of self's storage with these sizes and strides, starting storage_offset elements in "
             "(self's own offset by default).")



"""The meta device's arrays: a numpy array of a shape and a dtype over one element (every stride 0),
so a meta tensor costs no memory whatever its size and everything that reads only metadata works on
it unchanged (scriptc.tensors.meta computes ops on them from the op table's shape rules)."""

from __future__ import annotations

import numpy as np


class MetaArray(np.ndarray):
    """The array of a meta tensor: shape and dtype, every element one shared (never read) zero."""

    def copy(self, order="C") -> "MetaArray":
        return meta_array(self.shape, self.dtype)

    def astype(self, dtype, *args, **kwargs) -> "MetaArray":
        return meta_array(self.shape, np.dtype(dtype))


def meta_array(shape, dtype: np.dtype) -> MetaArray:
    """A MetaArray of this shape and numpy dtype (no memory for its elements)."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(MetaArray)


def contiguous_strides(shape) -> tuple:
    """The strides (in elements) of a row-major tensor of this shape, which a meta tensor reports."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))

"""Tensor methods that change which storage a tensor views or how (resize_, resize_as_, set_, as_strided_),
layout queries (dim_order, is_neg), and the in-place forms written as a copy of the pure op (cumsum_,
sgn_), so autograd records them as torch does."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scriptc.tensors.core import Tensor


class StorageMethods:
    """These methods of scriptc.Tensor (a mixin: Tensor is the only class built on it)."""

    __slots__ = ()

    def resize_(self, *sizes, memory_format=None) -> "Tensor":
        """Reshape in place to sizes, keeping the storage's leading elements; a larger size grows the
        storage (the new elements are uninitialised)."""
        from scriptc.ops.strided import storage_offset, storage_root
        from scriptc.tensors.creation import _size_arg

        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        shape = tuple(_size_arg(sizes))
        count = math.prod(shape)
        data = self._data
        offset = storage_offset(data)
        root = storage_root(data)
        if root.flags.c_contiguous and offset + count <= root.size:
            self._data = root.reshape(-1)[offset:offset + count].reshape(shape)
        else:
            grown = np.empty(count, dtype=data.dtype)
            kept = min(count, data.size)
            grown[:kept] = np.ascontiguousarray(data).reshape(-1)[:kept]
            self._data = grown.reshape(shape)
        if memory_format is not None:
            self._data = self.contiguous(memory_format=memory_format)._data
        self._vc[0] += 1
        return self

    def resize_as_(self, the_template: "Tensor", memory_format=None) -> "Tensor":
        return self.resize_(tuple(the_template.shape), memory_format=memory_format)

    def set_(self, source=None, storage_offset: int = 0, size=None, stride=None) -> "Tensor":
        """View source's storage (all of source, or size/stride from storage_offset); set_() empties."""
        from scriptc.tensors.core import Tensor

        if source is None:
            self._data = np.empty((0,), dtype=self._data.dtype)
        elif not isinstance(source, Tensor):
            raise TypeError(f"set_(): expected a Tensor source, got {type(source).__name__}")
        elif size is None:
            self._data, self._vc = source._data, source._vc
        else:
            strides = stride if stride is not None else _row_major(size)
            self._data = source.as_strided(size, strides, storage_offset)._data
            self._vc = source._vc
        return self

    def as_strided_(self, size, stride, storage_offset: int | None = None) -> "Tensor":
        from scriptc.tensors.inspection import _become

        return _become(self, self.as_strided(size, stride, storage_offset))

    def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                          pin_memory: bool = False) -> "Tensor":
        from scriptc.tensor_functions import empty_strided

        return empty_strided(size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)

    def dim_order(self) -> tuple:
        """The dims from outermost to innermost in memory (largest stride first)."""
        strides = self.stride()
        return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))

    def is_neg(self) -> bool:
        """False: scriptc never makes lazily negated views."""
        return False

    def cumsum_(self, dim: int, *, dtype=None) -> "Tensor":
        return self.copy_(self.cumsum(dim, dtype=dtype))

    def sgn_(self) -> "Tensor":
        return self.copy_(self.sgn())

    def nonzero_static(self, *, size: int, fill_value: int = -1) -> "Tensor":
        from scriptc.tensor_functions import nonzero_static

        return nonzero_static(self, size=size, fill_value=fill_value)

    def to_sparse_coo(self) -> "Tensor":
        return self.to_sparse()


def _row_major(size) -> tuple:
    strides, step = [], 1
    for n in reversed(tuple(size)):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))

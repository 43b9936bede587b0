"""Flatten and Unflatten: reshape a range of dimensions into one, and one dimension into several."""

from __future__ import annotations

from typing import List

from scriptc.tensors import Tensor

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one (by default all but the batch dim)."""
    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim `dim` into `unflattened_size` (one entry may be -1)."""
    __constants__ = ["dim", "unflattened_size"]

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}")
        for pos, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(size).__name__} at pos {pos}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        dim = self.dim + input.dim() if self.dim < 0 else self.dim
        sizes: List[int] = list(self.unflattened_size)
        length = input.size(dim)
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        if (-1 not in sizes and known != length) or (-1 in sizes and (known == 0 or length % known != 0)):
            raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {self.dim} "
                               f"({length}) in the input tensor")
        shape = list(input.shape[:dim]) + sizes + list(input.shape[dim + 1:])
        return input.reshape(shape)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

"""Transforms that rearrange or combine others (torch.distributions.transforms): IndependentTransform,
ReshapeTransform, CatTransform, StackTransform."""

from __future__ import annotations

import scriptc

from . import constraints
from .transforms import Transform
from .utils import lazy_property, sum_rightmost

__all__ = ["IndependentTransform", "ReshapeTransform", "CatTransform", "StackTransform"]


class IndependentTransform(Transform):
    """`base_transform` with its `reinterpreted_batch_ndims` rightmost batch dims treated as event
    dims: the log-det-Jacobian sums over them."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


def _reshaped(shape, old_event, new_event):
    """`shape` with its rightmost `old_event` dims replaced by `new_event`, or torch's error."""
    if len(shape) < len(old_event):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old_event)
    if tuple(shape[cut:]) != tuple(old_event):
        # a slice of a Size is a Size in torch
        expected = scriptc.Size(shape[cut:]) if isinstance(shape, scriptc.Size) else shape[cut:]
        raise ValueError(f"Shape mismatch: expected {expected} but got {old_event}")
    return scriptc.Size(tuple(shape[:cut]) + tuple(new_event))


class ReshapeTransform(Transform):
    """Reshape the rightmost `in_shape` dims to `out_shape` (same number of elements); log-det 0."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape = scriptc.Size(tuple(in_shape))
        self.out_shape = scriptc.Size(tuple(out_shape))
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else ReshapeTransform(self.in_shape, self.out_shape, cache_size)

    def _call(self, x):
        return x.reshape(tuple(x.shape[:x.dim() - len(self.in_shape)]) + tuple(self.out_shape))

    def _inverse(self, y):
        return y.reshape(tuple(y.shape[:y.dim() - len(self.out_shape)]) + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        return _reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _reshaped(shape, self.out_shape, self.in_shape)


def _check_along(z, dim: int, size: int, what: str, name: str, expected: str) -> None:
    if not -z.dim() <= dim < z.dim():
        raise AssertionError(f"dim {dim} out of range for {what} with {z.dim()} dimensions")
    if z.size(dim) != size:
        raise AssertionError(f"{name}.size({dim}) = {z.size(dim)} must equal {expected} {size}")


class CatTransform(Transform):
    """Applies each transform of `tseq` to consecutive slices of dim `dim` (`lengths` long each, 1
    by default) and concatenates the results, as torch.cat does."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else CatTransform(self.transforms, self.dim, self.lengths,
                                                                        cache_size)

    def _slices(self, z):
        start = 0
        for transform, length in zip(self.transforms, self.lengths):
            yield transform, z.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        _check_along(x, self.dim, self.length, "tensor", "x", "length")
        return scriptc.cat([t(part) for t, part in self._slices(x)], self.dim)

    def _inverse(self, y):
        _check_along(y, self.dim, self.length, "tensor", "y", "length")
        return scriptc.cat([t.inv(part) for t, part in self._slices(y)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_along(x, self.dim, self.length, "x", "x", "length")
        _check_along(y, self.dim, self.length, "y", "y", "length")
        terms = []
        for (transform, x_part), (_, y_part) in zip(self._slices(x), self._slices(y)):
            term = transform.log_abs_det_jacobian(x_part, y_part)
            terms.append(sum_rightmost(term, self.event_dim - transform.event_dim))
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        # a dim inside the event was summed away: the slices' terms add up
        return scriptc.cat(terms, dim) if dim < 0 else sum(terms)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies the i-th transform of `tseq` to index i of dim `dim` and stacks the results."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        _check_along(x, self.dim, len(self.transforms), "tensor", "x", "len(transforms)")
        return scriptc.stack([t(part) for part, t in zip(self._slice(x), self.transforms)], self.dim)

    def _inverse(self, y):
        _check_along(y, self.dim, len(self.transforms), "tensor", "y", "len(transforms)")
        return scriptc.stack([t.inv(part) for part, t in zip(self._slice(y), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_along(x, self.dim, len(self.transforms), "x", "x", "len(transforms)")
        _check_along(y, self.dim, len(self.transforms), "y", "y", "len(transforms)")
        return scriptc.stack([t.log_abs_det_jacobian(a, b)
                              for a, b, t in zip(self._slice(x), self._slice(y), self.transforms)], self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

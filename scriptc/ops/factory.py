"""Factory ops: tensors made from sizes and values (zeros, full, arange, eye, ...); random ones are in random.py."""

from __future__ import annotations

import math

import numpy as np

from scriptc import settings
from scriptc.types import TensorType, default_float, int64

from . import bfloat16, register
from .rules import is_known
from .schema import FACTORY

def _size(size) -> tuple[int, ...]:
    dims = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) else tuple(size)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"size must be a sequence of ints, but got {type(d).__name__}")
        if d < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {list(dims)}")
    return tuple(int(d) for d in dims)


def _np_dtype(dtype, default=None):
    return (dtype or default or default_float()).np


def _sized_rule(default=None):
    def rule(size, dtype=None, *rest):
        shape = tuple(size) if is_known(size) else None
        return TensorType(dtype or default or default_float(), shape)
    return rule


def _like_rule(x, dtype=None, *rest):
    return TensorType(dtype if dtype is not None else x.dtype, x.shape, x.device)


_SIZED = "(size: int[], *, dtype: ScalarType? = None, device: Device? = None) -> Tensor"
_LIKE = "(self: Tensor, *, dtype: ScalarType? = None, device: Device? = None, memory_format: int? = None) -> Tensor"

# scriptc.memory_format's values (an int in graphs, as in TorchScript).
CONTIGUOUS_FORMAT, PRESERVE_FORMAT, CHANNELS_LAST, CHANNELS_LAST_3D = range(4)


def with_layout(xp, x, memory_format=None, values=None):
    """A copy of x (or `values`, shaped like x) laid out in memory as memory_format asks: row-major,
    channels-last (NHWC / NDHWC), or x's own layout (preserve_format, the default)."""
    values = x if values is None else values
    if memory_format in (CHANNELS_LAST, CHANNELS_LAST_3D):
        rank = 4 if memory_format == CHANNELS_LAST else 5
        if x.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {'channels_last' if rank == 4 else 'channels_last_3d'}"
                               " format")
        order = (0,) + tuple(range(2, rank)) + (1,)
        back = (0, rank - 1) + tuple(range(1, rank - 1))
        return xp.ascontiguousarray(values.transpose(order)).transpose(back)
    if memory_format == CONTIGUOUS_FORMAT:
        return xp.array(values, copy=True, order="C")
    return xp.array(values, copy=True, order="K") if values is x else _like_layout(xp, x, values)


def _like_layout(xp, x, values):
    """values copied into x's memory layout (its strides' order)."""
    out = xp.empty_like(x, dtype=values.dtype)
    out[...] = values
    return out
register("zeros" + _SIZED, FACTORY, lambda xp, size, dtype=None, device=None: xp.zeros(_size(size), _np_dtype(dtype)),
         shape=_sized_rule(), method=False)
register("ones" + _SIZED, FACTORY, lambda xp, size, dtype=None, device=None: xp.ones(_size(size), _np_dtype(dtype)),
         shape=_sized_rule(), method=False)
def _uninitialized(xp, shape, np_dtype):
    """xp.empty, or under torch.use_deterministic_algorithms the values torch fills uninitialized
    memory with there: NaN, an integer dtype's largest value, True."""
    if not settings.are_deterministic_algorithms_enabled():
        return xp.empty(shape, np_dtype)
    np_dtype = xp.dtype(np_dtype)
    if bfloat16.holds(xp.empty(0, np_dtype)):
        return bfloat16.from_values(xp, xp.full(shape, xp.nan, xp.float32))
    if np_dtype.kind in "fc":
        return xp.full(shape, xp.nan, np_dtype)
    return xp.full(shape, True if np_dtype.kind == "b" else xp.iinfo(np_dtype).max, np_dtype)


def _empty_kernel(xp, size, dtype=None, device=None, memory_format=None):
    values = _uninitialized(xp, _size(size), _np_dtype(dtype))
    return with_layout(xp, values, memory_format) if memory_format in (CHANNELS_LAST, CHANNELS_LAST_3D) else values


register("empty(size: int[], *, dtype: ScalarType? = None, device: Device? = None, memory_format: int? = None) -> Tensor",
         FACTORY, _empty_kernel, shape=_sized_rule(), method=False,
         doc="An uninitialized tensor; memory_format=scriptc.channels_last (channels_last_3d) lays a 4-d (5-d) one "
             "out NHWC (NDHWC).")


def _full_dtype(fill, dtype):
    if dtype is not None:
        return dtype
    from scriptc.types import scalar_dtype
    return scalar_dtype(fill)


register("full(size: int[], fill_value: Scalar, *, dtype: ScalarType? = None, device: Device? = None) -> Tensor",
         FACTORY, lambda xp, size, fill, dtype=None, device=None: xp.full(_size(size), fill, _full_dtype(fill, dtype).np),
         shape=lambda size, fill, dtype=None, device=None: TensorType(
             _full_dtype(fill, dtype) if is_known(fill) or dtype else None, tuple(size) if is_known(size) else None),
         method=False)
register("zeros_like" + _LIKE, FACTORY,
         lambda xp, x, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, xp.zeros(x.shape, dtype.np if dtype else x.dtype)),
         shape=_like_rule, method=False)
register("ones_like" + _LIKE, FACTORY,
         lambda xp, x, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, xp.ones(x.shape, dtype.np if dtype else x.dtype)),
         shape=_like_rule, method=False)
register("empty_like" + _LIKE, FACTORY,
         lambda xp, x, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, _uninitialized(xp, x.shape, dtype.np if dtype else x.dtype)),
         shape=_like_rule, method=False)
register("full_like(self: Tensor, fill_value: Scalar, *, dtype: ScalarType? = None, device: Device? = None, "
         "memory_format: int? = None) -> Tensor", FACTORY, lambda xp, x, fill, dtype=None, device=None, memory_format=None:
         with_layout(xp, x, memory_format, xp.full(x.shape, fill, dtype.np if dtype else x.dtype)),
         shape=lambda x, fill, dtype=None, device=None, memory_format=None: _like_rule(x, dtype), method=False)


def _arange_dtype(values, dtype):
    if dtype is not None:
        return dtype
    return default_float() if any(isinstance(v, float) for v in values) else int64


def _arange_kernel(xp, start, end=None, step=1, dtype=None, device=None):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    d = _arange_dtype((start, end, step), dtype)
    n = max(math.ceil((end - start) / step), 0)
    return (start + xp.arange(n, dtype=np.float64) * step).astype(d.np)


def _arange_rule(start, end=None, step=1, dtype=None, device=None):
    values = (start, end, step)
    if not all(is_known(v) or v is None for v in values):
        return TensorType(dtype or (int64 if all(isinstance(v, int) for v in values if is_known(v)) else None), (None,))
    if end is None:
        start, end = 0, start
    return TensorType(_arange_dtype((start, end, step), dtype), (max(math.ceil((end - start) / step), 0),))


register("arange(start: Scalar, end: Scalar? = None, step: Scalar = 1, *, dtype: ScalarType? = None, "
         "device: Device? = None) -> Tensor", FACTORY, _arange_kernel, shape=_arange_rule, method=False,
         doc="Values from start (default 0) up to end, exclusive; int64 unless an argument is a float (then the default dtype).")


register("scalar_tensor(s: Scalar, *, dtype: ScalarType? = None, device: Device? = None) -> Tensor", FACTORY,
         lambda xp, s, dtype=None, device=None: xp.asarray(s, dtype=_np_dtype(dtype)),
         shape=lambda s, dtype=None, device=None: TensorType(dtype or default_float(), ()), method=False,
         function=False, doc="A 0-d tensor holding s, of the default dtype unless dtype says otherwise (also for an "
         "int): torch.scalar_tensor in scripted code.")


def _linspace_kernel(xp, start, end, steps, dtype=None, device=None):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return xp.linspace(start, end, steps, dtype=np.float64).astype(_np_dtype(dtype))


register("linspace(start: Scalar, end: Scalar, steps: int, *, dtype: ScalarType? = None, device: Device? = None) "
         "-> Tensor", FACTORY, _linspace_kernel,
         shape=lambda a, b, steps, dtype=None, device=None: TensorType(dtype or default_float(),
                                                                       (steps if is_known(steps) else None,)),
         method=False)


def _eye_kernel(xp, n, m=None, dtype=None, device=None):
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    return xp.eye(n, n if m is None else m, dtype=_np_dtype(dtype))


register("eye(n: int, m: int? = None, *, dtype: ScalarType? = None, device: Device? = None) -> Tensor", FACTORY,
         _eye_kernel, shape=lambda n, m=None, dtype=None, device=None: TensorType(
             dtype or default_float(), (n, n if m is None else m) if is_known(n) and (m is None or is_known(m)) else None),
         method=False)


_NEW = "*, dtype: ScalarType? = None, device: Device? = None) -> Tensor"


def _new_rule(x, size, *rest):
    dtype = rest[-2] if len(rest) >= 2 else None
    return TensorType(dtype or x.dtype, tuple(size) if is_known(size) else None, x.device)


def _new_dtype(x, dtype):
    return dtype.np if dtype else x.dtype


# x.new_zeros(size) and its kin in scripted code (eager Tensors have their own methods): self's dtype
# and device unless given
register("new_zeros(self: Tensor, size: int[], " + _NEW, FACTORY,
         lambda xp, x, size, dtype=None, device=None: xp.zeros(_size(size), _new_dtype(x, dtype)), shape=_new_rule,
         method=False, function=False, doc="Zeros of the given size with self's dtype and device.")
register("new_ones(self: Tensor, size: int[], " + _NEW, FACTORY,
         lambda xp, x, size, dtype=None, device=None: xp.ones(_size(size), _new_dtype(x, dtype)), shape=_new_rule,
         method=False, function=False)
register("new_full(self: Tensor, size: int[], fill_value: Scalar, " + _NEW, FACTORY,
         lambda xp, x, size, fill, dtype=None, device=None: xp.full(_size(size), fill, _new_dtype(x, dtype)),
         shape=lambda x, size, fill, *rest: _new_rule(x, size, *rest), method=False, function=False)
register("new_empty(self: Tensor, size: int[], " + _NEW, FACTORY,
         lambda xp, x, size, dtype=None, device=None: _uninitialized(xp, _size(size), _new_dtype(x, dtype)),
         shape=_new_rule, method=False, function=False)


def _triangle_indices(lower: bool):
    def kernel(xp, row, col, offset=0, dtype=None, device=None):
        if row < 0 or col < 0:
            raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else f"col must be non-negative, got{col}")
        rows, cols = (xp.tril_indices if lower else xp.triu_indices)(row, offset, col)
        return xp.stack([rows, cols]).astype((dtype or int64).np)
    return kernel


def _triangle_count(row, col, offset, lower):
    if not all(is_known(v) for v in (row, col, offset)):
        return None
    return int(np.tril(np.ones((row, col), bool), offset).sum() if lower else np.triu(np.ones((row, col), bool),
                                                                                      offset).sum())


for _name, _lower in (("tril_indices", True), ("triu_indices", False)):
    register(f"{_name}(row: int, col: int, offset: int = 0, *, dtype: ScalarType? = None, device: Device? = None) "
             "-> Tensor", FACTORY, _triangle_indices(_lower),
             shape=(lambda lower: lambda row, col, offset=0, dtype=None, device=None: TensorType(
                 dtype or int64, (2, _triangle_count(row, col, offset, lower))))(_lower), method=False,
             doc=f"The (row, col) indices of the {'lower' if _lower else 'upper'} triangle of a row x col matrix "
                 "(from the offset diagonal), as a 2 x N tensor.")

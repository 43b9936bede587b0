"""torch functions that are not ops of the table: the function forms of Tensor methods (torch.detach,
torch.is_nonzero ...), legacy and conversion constructors (asarray, range, scalar_tensor), typename, and
unravel_index (built from floor division and remainder, so it traces)."""

from __future__ import annotations

import warnings

import numpy as np

from scriptc.ops.rules import scalar_type_name
from scriptc.tensors import Tensor, as_tensor, tensor
from scriptc.tensors.conversion import check_device_arg
from scriptc.types import dtype as _dtype
from scriptc.types import float32

__all__ = ["detach", "is_nonzero", "is_same_size", "is_signed", "is_inference", "is_conj", "resolve_conj",
           "resolve_neg", "asarray", "range", "scalar_tensor", "typename", "unravel_index"]


def detach(input: Tensor) -> Tensor:
    return input.detach()


def is_nonzero(input: Tensor) -> bool:
    return input.is_nonzero()


def is_same_size(input: Tensor, other: Tensor) -> bool:
    return input.is_same_size(other)


def is_signed(input: Tensor) -> bool:
    return input.is_signed()


def is_inference(input: Tensor) -> bool:
    return input.is_inference()


def is_conj(input: Tensor) -> bool:
    return input.is_conj()


def resolve_conj(input: Tensor) -> Tensor:
    return input.resolve_conj()


def resolve_neg(input: Tensor) -> Tensor:
    return input.resolve_neg()


def asarray(obj, *, dtype: _dtype | None = None, device=None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """A tensor from obj that shares its memory where it can: a tensor (or numpy array) of the wanted
    dtype is aliased, not copied, unless copy=True; copy=False refuses to copy."""
    check_device_arg(device)
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and dtype != obj.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{scalar_type_name(obj.dtype)}' into dtype "
                                 f"'{scalar_type_name(dtype)}'.")
            out = obj.to(dtype)
        elif copy:
            out = obj.clone()
    elif isinstance(obj, np.ndarray) and not copy:
        out = as_tensor(obj, dtype=dtype)
    else:
        out = tensor(obj, dtype=dtype)
    if requires_grad:
        out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
    return out


def range(start=0, end=None, step=1, *, dtype: _dtype | None = None, device=None,
          requires_grad: bool = False) -> Tensor:
    """Deprecated torch.range: the values start, start + step, ... up to and including end."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    check_device_arg(device)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    count = int(np.floor((end - start) / step)) + 1
    if count < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    values = start + step * np.arange(count, dtype=np.float64)
    out = tensor(values, dtype=dtype or float32)
    return out.requires_grad_(True) if requires_grad else out


def scalar_tensor(s, *, dtype: _dtype | None = None, device=None, requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding s, float32 unless dtype says otherwise (also for an int)."""
    check_device_arg(device)
    out = tensor(s, dtype=dtype or float32)
    return out.requires_grad_(True) if requires_grad else out


def typename(obj) -> str:
    """A tensor's legacy type name (torch.FloatTensor), else the dotted name of obj or its class."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates, one tensor per dim of shape, of flat row-major indices (wrapping modulo the
    number of elements, negative ones from the end)."""
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype.name == "bool":
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    sizes = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in sizes):
        raise ValueError(f"'shape' cannot have negative values, but got {sizes}")
    coordinates = []
    rest = indices
    for size in reversed(sizes):
        coordinates.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    return tuple(reversed(coordinates))


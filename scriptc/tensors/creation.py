"""Making tensors from Python data: tensor(), as_tensor(), from_numpy(), and the dtype PyTorch
infers from nested lists of numbers."""

from __future__ import annotations

import numpy as np

from scriptc import grad_mode
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.tensors.conversion import _check_device, check_device_arg
from scriptc.tensors.core import Tensor, _fresh, _mode, _tracer, wrap
from scriptc.ops.meta import meta_array
from scriptc.tensors.meta import no_data_error, on_meta
from scriptc.types import (
    bfloat16,
    bool_,
    default_complex,
    default_float,
    device as device_type,
    dtype,
    from_numpy_dtype,
    int64,
    scalar_dtype,
)


def _size_arg(size) -> list:
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        return list(size[0])
    return list(size)


def _infer_dtype(data) -> dtype:
    if isinstance(data, Tensor):
        return data.dtype
    if isinstance(data, np.ndarray):
        return from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return from_numpy_dtype(data.dtype)
    if isinstance(data, (list, tuple)):
        kinds = set()
        _scan_kinds(data, kinds)
        if complex in kinds:
            return default_complex()
        if float in kinds:
            return default_float()
        if int in kinds:
            return int64
        if bool in kinds:
            return bool_
        return default_float()
    return scalar_dtype(data)


def _scan_kinds(data, kinds: set) -> None:
    for item in data:
        if isinstance(item, (list, tuple)):
            _scan_kinds(item, kinds)
        elif isinstance(item, Tensor):
            kinds.add({"f": float, "c": complex, "b": bool}.get(item._data.dtype.kind, int))
        elif isinstance(item, bool) or (isinstance(item, np.generic) and item.dtype.kind == "b"):
            kinds.add(bool)
        elif isinstance(item, (int, np.integer)):
            kinds.add(int)
        elif isinstance(item, (float, np.floating)):
            kinds.add(float)
        elif isinstance(item, (complex, np.complexfloating)):
            kinds.add(complex)
        else:
            raise TypeError(f"Could not infer dtype of {type(item).__name__}")


def tensor(data, dtype: dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor copied from data (nested lists, numbers, numpy arrays or tensors).

    dtype follows PyTorch: ints give int64, floats the default dtype (float32 unless
    set_default_dtype changed it), bools bool, numpy arrays keep theirs. On the meta device (device=
    or the default device) it has data's shape and dtype and none of its values.
    """
    if device is not None:
        _check_device(device_type(device))
    meta = on_meta(device) if device is not None or not isinstance(data, Tensor) else data.is_meta
    if isinstance(data, Tensor) and data.is_meta:
        if not meta:
            raise no_data_error()
        return _fresh(wrap(meta_array(data.shape, (dtype or data.dtype).np)), requires_grad)
    if _tracer[0] is not None and (size := _tracer[0].size_tensor(data)) is not None:
        # a size of a traced tensor (`torch.tensor(img.shape[-1])`) stays read from it, as torch's tracer
        # has sizes as 0-d tensors (a list of sizes it bakes in, with a warning, as torch does)
        return _fresh(size if dtype is None else size.to(dtype), requires_grad)
    if _tracer[0] is not None and isinstance(data, (list, tuple)) and any(map(_tracer[0].holds_size, data)):
        _tracer[0].constant_result("torch.tensor")
    if isinstance(data, Tensor):
        array = data._data
    elif isinstance(data, (list, tuple)):
        array = np.array([_plain(x) for x in data] if any(isinstance(x, Tensor) for x in data) else data)
    else:
        array = np.asarray(data)
    target = dtype or _infer_dtype(data)
    if array.dtype == object:
        raise TypeError("tensor(): could not convert data with ragged or non-numeric elements")
    if target is bfloat16:
        out = wrap(_bfloat16.from_values(np, array))
    elif isinstance(data, Tensor) and data.is_quantized and target is data.dtype:  # (its parameters with it)
        out = wrap(array.copy())
    elif meta:
        out = wrap(meta_array(array.shape, target.np))
    else:
        out = wrap(np.array(array, dtype=target.np, copy=True))
    if _mode.inference:
        grad_mode.mark_inference((out,))
    if _tracer[0] is not None:
        _tracer[0].constant(out)
    return _fresh(out, requires_grad)


def _plain(x):
    return x._data if isinstance(x, Tensor) else x


def as_tensor(data, dtype: dtype | None = None, device=None) -> Tensor:
    """Like tensor(), but shares memory with a numpy array or Tensor of the same dtype."""
    check_device_arg(device)
    if device is not None and on_meta(device) != (isinstance(data, Tensor) and data.is_meta):
        return tensor(data, dtype=dtype, device=device)
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == dtype.np):
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with `array` (writes show through both ways)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    from_numpy_dtype(array.dtype)
    if _bfloat16.holds(array):
        _bfloat16.SEEN[0] = True
    return wrap(array)

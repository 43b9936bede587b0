"""Tensor indexing: `x[index]` and `x[index] = value` lowered through ops/subscript.py to the
select/slice/unsqueeze/index ops (reads) and copy_/index_put_ (writes)."""

from __future__ import annotations

import warnings

import numpy as np

from scriptc import ops as _ops
from scriptc.ops import subscript as indexing
from scriptc.tensors.core import Tensor, _view_of
from scriptc.tensors.creation import tensor
from scriptc.tensors.dispatch import call, call_inplace

_INDEX_OPS = {name: _ops.OPS[name] for name in ("select", "slice", "unsqueeze", "index")}
_SLICE = _ops.OPS["slice"]
_INDEX = _ops.OPS["index"]
_INDEX_PUT = _ops.OPS["index_put"]
_COPY = _ops.OPS["copy"]


def _index_items(index) -> list:
    """An eager index (an int, slice, None, ..., bool, tensor, list, range or array, or a tuple of them)
    as the items ops/subscript.py lowers."""
    if isinstance(index, list) and _sequence_as_tuple(index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted "
                      "as tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
                      "result", UserWarning, stacklevel=4)
        index = tuple(index)
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    for item in index:
        if item is None:
            items.append(indexing.Item(indexing.NEWAXIS))
        elif item is Ellipsis:
            items.append(indexing.Item(indexing.ELLIPSIS))
        elif isinstance(item, bool):
            items.append(indexing.Item(indexing.BOOL, item))
        elif isinstance(item, (int, np.integer)):
            items.append(indexing.Item(indexing.INT, _as_int(item)))
        elif isinstance(item, slice):
            step = None if item.step is None else _as_int(item.step)
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            items.append(indexing.Item(indexing.SLICE, start=_opt_int(item.start), stop=_opt_int(item.stop),
                                       step=None if step == 1 else step))
        elif isinstance(item, (Tensor, list, tuple, range, np.ndarray)):
            t = item if isinstance(item, Tensor) else _sequence_index(item)
            if t._data.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            items.append(indexing.Item(indexing.TENSOR, t, dims=t._data.ndim if t._data.dtype == np.bool_ else 1))
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(item).__name__})")
    return items


def _sequence_as_tuple(index: list) -> bool:
    """Whether torch 2.13 reads a list index as a tuple of indices (NumPy's legacy rule, deprecated
    there): a short list holding a sequence, tensor, slice, None or Ellipsis (`x[[[0, 1], [1, 0]]]` is
    `x[[0, 1], [1, 0]]`)."""
    return len(index) < 32 and any(
        item is None or item is Ellipsis or isinstance(item, (Tensor, list, tuple, range, np.ndarray, slice, str))
        for item in index)


def _sequence_index(item) -> Tensor:
    """A list, range, array or a tuple inside the index tuple, as the index tensor torch makes of it:
    a mask when its items are bools (or uint8), otherwise int64, floats truncated as torch's
    conversion truncates them (an empty one indexes nothing, as int64)."""
    if isinstance(item, range):
        item = list(item)
    if not isinstance(item, np.ndarray) and len(item) == 0:
        return tensor(np.zeros(0, dtype=np.int64))
    t = tensor(item)
    if t._data.dtype in (np.bool_, np.uint8, np.int64):
        return t
    if t._data.dtype.kind == "c":
        raise TypeError("'complex' object cannot be interpreted as an integer")
    return tensor(t._data.astype(np.int64))


def _run_index_op(name: str, args: tuple):
    if name == "index_put_":
        return call_inplace(_INDEX_PUT.inplace, args)
    if name == "copy_":
        return call_inplace(_COPY.inplace, args)
    return call(_INDEX_OPS[name], args)


def _as_int(v):
    """An index bound as an int: a size read from a traced tensor (an int subclass) is kept as it
    is, so that the trace records the arithmetic it came from rather than its value."""
    if isinstance(v, Tensor):
        return int(v.item())
    return v if isinstance(v, int) else int(v)


def _opt_int(v):
    return None if v is None else _as_int(v)


def _getitem(x: Tensor, index) -> Tensor:
    out, indices = indexing.lower(_run_index_op, x, _index_items(index), x.dim())
    if indices:
        return call(_INDEX, (out, indices))
    if out is x:
        return call(_SLICE, (x, 0, None, None, 1)) if x.dim() else _view_of(x, x._data)
    return out


def _setitem(x: Tensor, index, value) -> None:
    view, indices = indexing.lower(_run_index_op, x, _index_items(index), x.dim())
    if indices:
        if view is not x and not np.may_share_memory(view._data, x._data):
            raise RuntimeError("unsupported index for assignment")
        values = value if isinstance(value, Tensor) else tensor(value, dtype=x.dtype)
        call_inplace(_INDEX_PUT.inplace, (view, indices, values, False))
        return
    if view is x:
        view = _view_of(x, x._data)
    call_inplace(_COPY.inplace, (view, value))


# --- printing (PyTorch's format) -----------------------------------------------------------

"""default_collate and default_convert: samples into batches, as torch's.

In a DataLoader worker the stacked tensors are written straight into shared memory (the
worker's batch blocks), so the batch reaches the main process without another copy.
"""

from __future__ import annotations

import collections.abc
import copy
import re
import numpy as np

from scriptc.errors import ShapeError
from scriptc.grad_mode import is_grad_enabled
from scriptc.tensors import Tensor, wrap
from scriptc.utils.data._utils import worker

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map", "collate_tensor_fn",
           "gather_rows"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                                  "lists; found {}")


def _worker_buffer(shape: tuple, dtype: np.dtype) -> np.ndarray | None:
    """A shared-memory array for a batch when running in a DataLoader worker, else None."""
    blocks = worker.batch_memory()
    return None if blocks is None else blocks.array(shape, dtype)


def gather_rows(tensor, positions: np.ndarray):
    """tensor[positions] for int64 positions known to lie in [-len, len) (a batch of rows, in
    shared memory in a worker)."""
    if tensor.requires_grad and is_grad_enabled():
        return tensor[wrap(positions)]  # the index op records the gradient
    source = tensor._data
    out = _worker_buffer((len(positions),) + source.shape[1:], source.dtype)
    if out is None:
        return wrap(np.take(source, positions, axis=0, mode="wrap"))
    # in range already; "wrap" maps negatives as Python does, and skips the copy "raise" makes with out=
    source.take(positions, axis=0, out=out, mode="wrap")
    return wrap(out)


def collate_tensor_fn(batch, *, collate_fn_map: dict | None = None):
    """Tensors stacked along a new first dimension."""
    import scriptc

    elem = batch[0]
    out = _worker_buffer((len(batch),) + tuple(elem.shape), elem._data.dtype)
    if out is None:
        return scriptc.stack(batch, 0)
    for i, t in enumerate(batch):
        if t.shape != elem.shape:
            raise ShapeError(f"stack expects each tensor to be equal size, but got {list(elem.shape)} at entry 0 and "
                             f"{list(t.shape)} at entry {i}")
    np.stack([t._data for t in batch], out=out)
    return wrap(out)


def collate_numpy_array_fn(batch, *, collate_fn_map: dict | None = None):
    from scriptc import as_tensor

    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: dict | None = None):
    from scriptc import as_tensor
    return as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map: dict | None = None):
    from scriptc import float64, tensor
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map: dict | None = None):
    from scriptc import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: dict | None = None):
    return batch


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate a batch, looking up the function for each element type in collate_fn_map (exact
    type first, then isinstance in insertion order) and recursing through mappings, namedtuples
    and sequences."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
        return _same_mapping_type(elem, collated)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        elem_size = len(elem)
        if not all(len(e) == elem_size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return collated  # a list, as torch returns for tuples
        return _same_sequence_type(elem, collated)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _same_mapping_type(elem, values: dict):
    """A mapping of elem's type holding values (a plain dict when that type cannot be built)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _same_sequence_type(elem, values: list):
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(elem)(values)
    except TypeError:
        return values


default_collate_fn_map: dict = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """Stack a list of samples into a batch: tensors and numpy arrays stack into a tensor with a
    new first dimension, Python floats become a float64 tensor, ints an int64 tensor, strings
    and bytes stay a list; dicts, namedtuples, tuples (as lists) and lists are collated field by
    field."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Numpy arrays (and those inside mappings, namedtuples and sequences) to tensors; used when
    automatic batching is off."""
    from scriptc import as_tensor

    if isinstance(data, Tensor):
        return data
    elem_type = type(data)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping_type(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_sequence_type(data, [default_convert(d) for d in data])
    return data


"""Pickling scriptc objects the way torch.save pickles torch's, so torch loads them as its own.

Tensors become `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)` calls,
Parameters `_rebuild_parameter`, meta tensors `_rebuild_meta_tensor_no_storage` (no storage), Size
`torch.Size`, dtypes `torch.float32`; the storages
themselves are persistent ids, written as separate records by the caller. Tensors on one
storage stay views of one storage record.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict

import numpy as np

from scriptc import types
from scriptc.serialization.torch_names import STORAGE_TYPES, StorageType, TorchGlobal

__all__ = ["StorageWriter", "TorchPickler"]

_REBUILD_TENSOR_V2 = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
_REBUILD_META = TorchGlobal("torch._utils", "_rebuild_meta_tensor_no_storage")
_REBUILD_QTENSOR = TorchGlobal("torch._utils", "_rebuild_qtensor")
_SIZE = TorchGlobal("torch", "Size")
_DEVICE = TorchGlobal("torch", "device")
_DTYPES = {name: TorchGlobal("torch", name) for name in types.DTYPES_BY_NAME}


class _StorageRecord:
    """One storage to write: its key, torch storage class, element count and bytes."""

    __slots__ = ("key", "storage_type", "numel", "data")

    def __init__(self, key: str, storage_type, numel: int, data: np.ndarray):
        self.key, self.storage_type, self.numel, self.data = key, storage_type, numel, data


class StorageWriter:
    """Assigns each distinct storage the tensors live on a record key ('0', '1', ...) in order."""

    def __init__(self):
        self.records: list[_StorageRecord] = []
        self._by_owner: dict[int, tuple[_StorageRecord, int, object]] = {}

    def locate(self, array: np.ndarray) -> tuple[_StorageRecord, int, tuple]:
        """(record, element offset, element strides) of an array's data in its storage."""
        itemsize = array.itemsize
        if any(s < 0 or s % itemsize for s in array.strides):
            array = np.ascontiguousarray(array)  # torch has no negative strides: save a copy
        owner, data = _memory_of(array)
        entry = self._by_owner.get(id(owner))
        if entry is None:
            storage_type = STORAGE_TYPES[types.from_numpy_dtype(array.dtype).name]
            numel = data.nbytes // itemsize
            record = _StorageRecord(str(len(self.records)), storage_type, numel, data[:numel * itemsize])
            self.records.append(record)
            entry = self._by_owner[id(owner)] = (record, data.ctypes.data, owner)  # owner kept alive for id()
        record, start, _ = entry
        if record.storage_type.dtype.np != array.dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different types")
        offset, misaligned = divmod(array.ctypes.data - start, itemsize)
        if misaligned:
            raise RuntimeError("a tensor's data is not aligned to its element size inside its storage")
        return record, offset, tuple(s // itemsize for s in array.strides)


def _memory_of(array: np.ndarray) -> tuple[object, np.ndarray]:
    """(the object that owns an array's memory, all of that memory as a flat uint8 array)."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    owner = root.base.obj if isinstance(root.base, memoryview) else root.base
    if owner is None or hasattr(owner, "__array_interface__"):
        # numpy-owned memory, or an array over an interface (a shared mapping): contiguous
        return root if owner is None else owner, root.ravel(order="K").view(np.uint8)
    return owner, np.frombuffer(owner, np.uint8)


class TorchPickler(pickle._Pickler):
    """A pickler that writes scriptc tensors, Parameters, Size, dtype and device as torch's.

    persistent_ids maps a storage record to its persistent id (the zip and the legacy formats
    name storages differently)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int, storages: StorageWriter, persistent_ids):
        super().__init__(file, protocol)
        self.storages = storages
        self.persistent_ids = persistent_ids

    def save(self, obj, save_persistent_id=True):
        if type(obj) is types.dtype:
            obj = _DTYPES[obj.name]
        elif type(obj) is types.qscheme:
            obj = TorchGlobal("torch", obj.name)
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        if type(obj) is _StorageRecord:
            return self.persistent_ids(obj)
        return None

    def reducer_override(self, obj):
        from scriptc.nn import Parameter
        from scriptc.tensors import Size, Tensor

        if isinstance(obj, Parameter):
            from scriptc.tensors import wrap
            return _REBUILD_PARAMETER, (wrap(obj._data), obj.requires_grad, OrderedDict())
        if isinstance(obj, Tensor) and obj.is_meta:  # (no storage: its dtype, size and stride, as torch's)
            return _REBUILD_META, (obj.dtype, tuple(obj.shape), obj.stride(), obj.requires_grad)
        if isinstance(obj, Tensor) and obj.is_quantized:
            return _REBUILD_QTENSOR, self._quantized_tensor_arguments(obj)
        if isinstance(obj, Tensor):
            record, offset, strides = self.storages.locate(obj._data)
            return _REBUILD_TENSOR_V2, (record, offset, tuple(obj._data.shape), strides, obj.requires_grad,
                                        OrderedDict())
        if type(obj) is Size:
            return _SIZE, (tuple(obj),)
        if type(obj) is types.device:
            return _DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index)
        return NotImplemented

    def _quantized_tensor_arguments(self, t) -> tuple:
        from scriptc.tensors import wrap

        array = t._data
        record, offset, strides = self.storages.locate(array)
        if array.scales is None:
            quantizer = (array.qscheme, array.scale, array.zero_point)
        else:
            quantizer = (array.qscheme, wrap(array.scales), wrap(array.zero_points), array.axis)
        return record, offset, tuple(array.shape), strides, quantizer, False, OrderedDict()

    def save_torch_global(self, obj: TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    dispatch[TorchGlobal] = save_torch_global
    dispatch[StorageType] = save_torch_global

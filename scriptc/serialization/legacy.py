"""PyTorch's legacy checkpoint format (`_use_new_zipfile_serialization=False`).

One stream of pickles: a magic number, the protocol version, a dict of system information,
the object (storages as persistent ids), the list of storage keys; then each storage's raw
data, preceded by its element count as an int64.
"""

from __future__ import annotations

import pickle
import struct
import sys

import numpy as np

from scriptc.serialization.pickler import StorageWriter, TorchPickler
from scriptc.serialization.unpickler import WeightsUnpickler

__all__ = ["MAGIC_NUMBER", "PROTOCOL_VERSION", "write_legacy", "read_legacy"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
             "type_sizes": {"short": 2, "int": 4, "long": 4}}


def write_legacy(obj, file, pickle_protocol: int) -> None:
    """Write obj to the binary file object `file` in the legacy format."""
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(header, file, protocol=pickle_protocol)
    storages = StorageWriter()
    TorchPickler(file, pickle_protocol, storages,
                 lambda record: ("storage", record.storage_type, record.key, "cpu", record.numel, None)).dump(obj)
    records = sorted(storages.records, key=lambda record: record.key)
    pickle.dump([record.key for record in records], file, protocol=pickle_protocol)
    for record in records:
        file.write(struct.pack("<q", record.numel))
        file.write(memoryview(record.data))


def read_legacy(file, allowed: dict, make_storage, encoding: str):
    """The object in a legacy checkpoint. make_storage(array, location) -> Storage applies map_location."""

    def unpickle(persistent_load=_no_persistent_ids):
        return WeightsUnpickler(file, allowed, persistent_load, encoding).load()

    if unpickle() != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = unpickle()
    if protocol != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    sys_info = unpickle()
    little_endian = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    storages: dict = {}

    def persistent_load(pid):
        if len(pid) != 6:
            raise pickle.UnpicklingError(f"legacy storage id has {len(pid)} fields, expected 6")
        _, storage_type, root_key, location, numel, view = pid
        dtype = _storage_dtype(storage_type)
        if root_key not in storages:
            if type(numel) is not int or numel < 0:
                raise pickle.UnpicklingError(f"invalid storage size {numel!r}")
            storages[root_key] = make_storage(np.empty(numel, dtype), location)
        root = storages[root_key]
        if view is None:
            return root
        view_key, offset, size = view
        if view_key not in storages:
            if not (0 <= offset and 0 <= size and offset + size <= root.array.size):
                raise pickle.UnpicklingError(f"storage view {view!r} lies outside its storage")
            storages[view_key] = make_storage(root.array[offset:offset + size], location)
        return storages[view_key]

    result = unpickle(persistent_load)
    for key in unpickle():
        if key not in storages:
            raise RuntimeError(f"storage key {key!r} listed after the pickle was never referenced: corrupt file?")
        _read_storage(file, storages[key].array, key)
        if (sys.byteorder == "little") != bool(little_endian):
            storages[key].array.byteswap(inplace=True)
    return result


def _storage_dtype(storage_type) -> np.dtype:
    from scriptc.serialization.torch_names import StorageType

    if not isinstance(storage_type, StorageType):
        raise pickle.UnpicklingError(f"expected a storage type in a storage id, got {storage_type!r}")
    return storage_type.dtype.np


def _read_storage(file, array: np.ndarray, key) -> None:
    header = file.read(8)
    if len(header) != 8:
        raise RuntimeError(f"legacy checkpoint is truncated: storage {key} is missing")
    (numel,) = struct.unpack("<q", header)
    if numel != array.size:
        raise RuntimeError(f"storage {key} holds {numel} elements but the pickle describes {array.size}: corrupt file?")
    view = memoryview(array).cast("B")
    if file.readinto(view) != view.nbytes:
        raise RuntimeError(f"legacy checkpoint is truncated: storage {key} ends early")


def _no_persistent_ids(pid):
    raise pickle.UnpicklingError("unexpected persistent id in a checkpoint header")

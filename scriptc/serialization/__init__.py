"""torch.save / torch.load in PyTorch's own checkpoint format, with a loader that never runs code.

`save` writes the zip format torch writes (or the legacy one), so `torch.load(f,
weights_only=True)` reads what scriptc saved; `load` reads both formats as torch 2.13 writes
them. Loading goes through an allow-list unpickler (unpickler.py): only the globals torch's
weights_only mode allows, mapped to scriptc objects; anything else raises
pickle.UnpicklingError naming the global.

weights_only=False (torch's unrestricted mode) is accepted but stays safe: it adds numpy
arrays, scalars and dtypes, argparse.Namespace, slice, range and frozenset to the list and
still never imports or calls anything else. A pickled whole nn.Module (`torch.save(model)`)
is therefore refused: save and load its state_dict. `add_safe_globals` allows more.
"""

from __future__ import annotations

import io
import os
import pickle
from typing import Any, Callable

from scriptc import types
from scriptc.serialization.legacy import read_legacy, write_legacy
from scriptc.serialization.torch_names import (
    Storage,
    StorageType,
    add_safe_globals,
    allowed_globals,
    clear_safe_globals,
    get_safe_globals,
    safe_globals,
)
from scriptc.serialization.unpickler import WeightsUnpickler
from scriptc.serialization.zip_format import ZipCheckpoint, archive_name_for, is_zip, write_checkpoint

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2


def save(obj: Any, f, pickle_module=pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Save obj (tensors, state_dicts, nested containers of numbers and strings) to a path or
    binary file object, in PyTorch's checkpoint format."""
    if pickle_module is not pickle:
        raise ValueError("scriptc.save pickles with its own pickler; pickle_module must be the standard pickle module")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _save_to(obj, fh, archive_name_for(f), pickle_protocol, _use_new_zipfile_serialization)
    else:
        if not hasattr(f, "write"):
            raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a 'write' attribute, "
                                 f"got {type(f).__name__}")
        _save_to(obj, f, "archive", pickle_protocol, _use_new_zipfile_serialization)


def _save_to(obj, fh, archive_name: str, protocol: int, zip_format: bool) -> None:
    if zip_format:
        write_checkpoint(obj, fh, archive_name, protocol)
    else:
        write_legacy(obj, fh, protocol)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args) -> Any:
    """Load an object saved by torch.save or scriptc.save from a path or binary file object.

    map_location (a device string, device, dict of location -> location, or a callable
    (storage, location) -> storage) says where storages go; every tensor here lives on the CPU,
    so its use is to accept checkpoints saved from CUDA. mmap=True maps storages straight from
    the file (a path) instead of reading them. Never executes code from the file.
    """
    if weights_only is None:
        weights_only = True
    if pickle_module is not None and pickle_module is not pickle:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"load() got an unexpected keyword argument '{next(iter(pickle_load_args))}'")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_from(fh, os.fspath(f), map_location, weights_only, bool(mmap), encoding)
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    for method in ("read", "seek", "tell"):
        if not hasattr(f, method):
            raise AttributeError(f"expected 'f' to be string, path, or a file-like object with a '{method}' attribute, "
                                 f"got {type(f).__name__}")
    return _load_from(f, None, map_location, weights_only, False, encoding)


def _load_from(fh, path: str | None, map_location, weights_only: bool, use_mmap: bool, encoding: str):
    allowed = allowed_globals(weights_only)
    restore = _restore_location(map_location)
    start = fh.tell()
    if not fh.read(1):
        raise EOFError("Ran out of input: the checkpoint file is empty")
    fh.seek(start)
    try:
        if is_zip(fh):
            return _load_zip(ZipCheckpoint(fh, path, use_mmap), allowed, restore, encoding)
        if use_mmap:
            raise RuntimeError("mmap can only be used with files saved with `torch.save(_use_new_zipfile_serialization"
                               "=True)`, please torch.save your checkpoint with this option in order to use mmap.")
        return read_legacy(fh, allowed, lambda array, location: restore(Storage(array, location)), encoding)
    except pickle.UnpicklingError as error:
        raise pickle.UnpicklingError(_refusal(error, weights_only)) from None


def _refusal(error: pickle.UnpicklingError, weights_only: bool) -> str:
    if weights_only:
        return (f"Weights only load failed. scriptc.load never runs code from a checkpoint, and this one needs "
                f"something outside the allowed list (load it only if you trust its source, after allowing what it "
                f"names with scriptc.serialization.add_safe_globals).\nWeightsUnpickler error: {error}")
    return f"scriptc.load never runs code from a checkpoint: {error}"


def _load_zip(checkpoint: ZipCheckpoint, allowed: dict, restore: Callable, encoding: str):
    loaded: dict = {}

    def persistent_load(pid):
        if len(pid) != 5:
            raise pickle.UnpicklingError(f"storage id has {len(pid)} fields, expected 5")
        _, storage_type, key, location, numel = pid
        if key not in loaded:
            if not isinstance(storage_type, StorageType) or type(key) is not str or type(numel) is not int:
                raise pickle.UnpicklingError(f"malformed storage id {pid!r:.120}")
            array = checkpoint.storage(key, storage_type.dtype.np, numel)
            loaded[key] = restore(Storage(array, str(location)))
        return loaded[key]

    pickled = io.BytesIO(checkpoint.record("data.pkl"))
    return WeightsUnpickler(pickled, allowed, persistent_load, encoding).load()


def _restore_location(map_location) -> Callable[[Storage], Storage]:
    """map_location as a function of a storage (torch's rules); the result must be usable here."""
    if map_location is None:
        mapped = _same_location
    elif isinstance(map_location, (str, types.device)):
        target = str(types.device(map_location))

        def mapped(storage):
            return target
    elif isinstance(map_location, dict):
        table = {str(k): str(v) for k, v in map_location.items()}

        def mapped(storage):
            return table.get(storage.location, storage.location)
    elif callable(map_location):
        def restore_with_callable(storage):
            result = map_location(storage, storage.location)
            if result is None:
                return _placed(storage, storage.location)
            if not isinstance(result, Storage):
                raise TypeError(f"map_location returned {type(result).__name__}; it must return the storage it was "
                                "given (or None)")
            return result
        return restore_with_callable
    else:
        raise ValueError(f"map_location should be a str, device, dict or callable, got {type(map_location).__name__}")
    return lambda storage: _placed(storage, mapped(storage))


def _same_location(storage: Storage) -> str:
    return storage.location


def _placed(storage: Storage, location: str) -> Storage:
    target = types.device(location)
    if target.type == "cuda":
        from scriptc import cuda
        if not cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")
    return storage if storage.location == location else Storage(storage.array, location)

"""Tensor storage in shared memory: anonymous memory files (memfd) mapped MAP_SHARED.

A shared storage is a SharedMapping; the arrays of the tensors on it are numpy views whose
base chain ends at the mapping. The memory has no name in /dev/shm, so nothing can leak
there: it is freed when the last process that maps it (or holds its file descriptor) lets go.
A mapping that may be sent to another process keeps its file descriptor open (the receiver
gets a duplicate and maps the same memory), and holds no other: the mapping is made with
mmap(2) itself, because Python's mmap module keeps a second, private duplicate of every file
it maps - two descriptors per shared tensor would run into the open-file limit twice as soon.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
import sys
import tempfile
import weakref

import numpy as np

__all__ = ["SharedMapping", "allocate", "map_descriptor", "shared_storage", "move_to_shared_memory",
           "byte_offset"]

class SharedMapping:
    """A read-write MAP_SHARED mapping of a memory file, seen by numpy as a flat uint8 array
    (`array()`, whose base it is, so the mapping lives as long as any array on it).

    fd: the open descriptor, or None when the mapping was made not to be sent on.
    key: (st_dev, st_ino) of the memory file: the same memory in every process that maps it.
    address, nbytes: where the mapping starts in this process, and its length.
    version_counter: shared by every tensor made on this mapping here (autograd's in-place check).
    """

    __slots__ = ("address", "nbytes", "fd", "key", "version_counter", "__weakref__")

    def __init__(self, address: int, nbytes: int, fd: int | None, key: tuple):
        self.address, self.nbytes, self.fd, self.key = address, nbytes, fd, key
        self.version_counter = [0]

    @property
    def __array_interface__(self) -> dict:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.address, False), "version": 3}

    def __len__(self) -> int:
        return self.nbytes

    def array(self) -> np.ndarray:
        """A new flat uint8 array over the whole mapping."""
        return np.asarray(self)


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value

# Mappings by key, so a storage received twice (or sent away and back) is mapped once.
_mappings: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _memory_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("scriptc-storage", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as fh:
        return os.dup(fh.fileno())  # already unlinked: the memory has no name


def _unmap(address: int, nbytes: int, fd: int | None) -> None:
    _libc.munmap(address, nbytes)
    if fd is not None:
        os.close(fd)


def map_descriptor(fd: int, nbytes: int, keep_fd: bool = True) -> SharedMapping:
    """Map the memory file `fd` (of at least `nbytes` bytes); the mapping owns fd from now on
    (closes it with itself, or at once when keep_fd is False)."""
    stat = os.fstat(fd)
    key = (stat.st_dev, stat.st_ino)
    known = _mappings.get(key)
    if known is not None and len(known) >= nbytes:
        os.close(fd)
        return known
    length = max(nbytes, 1)
    address = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE,
                         mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0), fd, 0)
    if address in (None, _MAP_FAILED):
        code = ctypes.get_errno()
        os.close(fd)
        raise OSError(code, f"mmap of shared memory failed: {os.strerror(code)}")
    if not keep_fd:
        os.close(fd)
        fd = None
    mapping = SharedMapping(address, length, fd, key)
    # Unmapped when the last array on it dies; never at interpreter exit, when arrays that
    # outlive the collection of this object could still be read.
    weakref.finalize(mapping, _unmap, address, length, fd).atexit = False
    _mappings[key] = mapping
    return mapping


def allocate(nbytes: int, keep_fd: bool = True) -> SharedMapping:
    """A new zero-filled shared mapping of nbytes (at least one byte: mmap cannot map nothing)."""
    fd = _memory_file()
    try:
        os.ftruncate(fd, max(nbytes, 1))
    except BaseException:
        os.close(fd)
        raise
    return map_descriptor(fd, nbytes, keep_fd)


def shared_storage(array: np.ndarray) -> SharedMapping | None:
    """The SharedMapping an array's memory lives in, or None when it is private memory."""
    base = array
    while isinstance(base, (np.ndarray, memoryview)):  # (a DataLoader batch's arrays are views of a memoryview)
        base = base.obj if isinstance(base, memoryview) else base.base
    return base if isinstance(base, SharedMapping) else None


def byte_offset(array: np.ndarray, mapping: SharedMapping) -> int:
    """Where `array`'s first element lies in `mapping`, in bytes."""
    return array.__array_interface__["data"][0] - mapping.address  # (array.ctypes is slower)


def _byte_span(array: np.ndarray) -> tuple[int, int]:
    """[lo, hi): the addresses of the bytes an array's elements occupy."""
    lo = hi = array.ctypes.data
    if array.size == 0:
        return lo, hi
    for n, stride in zip(array.shape, array.strides):
        if stride < 0:
            lo += (n - 1) * stride
        else:
            hi += (n - 1) * stride
    return lo, hi + array.itemsize


def _root_array(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def move_to_shared_memory(tensors, need_fd: bool = False) -> None:
    """Move each tensor's storage into a shared mapping, in place: the tensor, and every other
    tensor on the same storage (its views), then read and write the shared copy.

    A storage already in shared memory stays, unless need_fd and its mapping has no descriptor
    left to send (a DataLoader batch): then it is copied into a new mapping.
    """
    storages: dict[int, list] = {}
    for t in tensors:
        mapping = shared_storage(t._data)
        if mapping is not None and (mapping.fd is not None or not need_fd):
            continue
        storages.setdefault(id(t._vc), [t._vc, []])[1].append(t)
    if not storages:
        return
    sharers = _tensors_sharing(storages)
    for key, (_, seeds) in storages.items():
        _move_storage(seeds[0], sharers[key])


def _tensors_sharing(storages: dict) -> dict:
    """For each version counter (one per storage), every live Tensor that holds it.

    The tensors named, and their `_base`s, are usually all there is; a walk of the heap finds
    the rest only when the counter's reference count says other holders exist.
    """
    from scriptc.tensors import Tensor

    found = {}
    complete = True
    for key, (vc, seeds) in storages.items():
        known = {id(t): t for t in seeds}
        for t in seeds:
            if t._base is not None and t._base._vc is vc:
                known[id(t._base)] = t._base
        found[key] = known
        # references to vc: the known tensors, the `storages` entry, `vc` here, getrefcount's argument
        if sys.getrefcount(vc) > len(known) + 3:
            complete = False
    if not complete:
        for holder in gc.get_referrers(*(vc for vc, _ in storages.values())):
            if isinstance(holder, Tensor) and id(holder._vc) in found:
                found[id(holder._vc)][id(holder)] = holder
    return {key: list(tensors.values()) for key, tensors in found.items()}


def _move_storage(seed, tensors: list) -> None:
    root = _root_array(seed._data)
    lo, hi = _byte_span(root)
    mapping = allocate(hi - lo)
    mapping.version_counter = seed._vc
    np.copyto(_rebase(root, lo, mapping), root)
    for t in tensors:
        t_lo, t_hi = _byte_span(t._data)
        if lo <= t_lo and t_hi <= hi:  # a view of this storage (anything else keeps its memory)
            t._data = _rebase(t._data, lo, mapping)


def _rebase(array: np.ndarray, lo: int, mapping: SharedMapping) -> np.ndarray:
    """The array with the same layout at the same place relative to `lo`, in `mapping`."""
    moved = np.ndarray(array.shape, array.dtype, buffer=mapping.array(), offset=array.ctypes.data - lo,
                       strides=array.strides)
    if not array.flags.writeable:
        moved.flags.writeable = False
    return moved

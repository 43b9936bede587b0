"""A tensor's memory as torch shows it: untyped_storage() / storage() (the whole buffer a tensor and
its views share), torch.frombuffer (a tensor over a Python buffer), and the per-element Python
callbacks Tensor.apply_ / map_."""

from __future__ import annotations

import warnings

import numpy as np

from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.rules import scalar_type_name
from scriptc.types import CPU, dtype as dtype_type

__all__ = ["UntypedStorage", "TypedStorage", "frombuffer"]


def _storage_text(values: list, info: str) -> str:
    """torch's storage printout: one element a line, then the storage's kind and size."""
    return " " + "\n ".join(str(v) for v in values) + "\n" + info


def _buffer_of(array: np.ndarray) -> np.ndarray:
    """The array that owns the memory `array` views (itself when it owns it)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _bytes_of(array: np.ndarray) -> np.ndarray:
    """A flat uint8 view of a whole buffer (an owning array is contiguous in C or Fortran order)."""
    return array.ravel(order="K").view(np.uint8)


class UntypedStorage:
    """The bytes under a tensor and every view of it (torch.UntypedStorage): data_ptr(), nbytes(),
    size() and len() in bytes, indexing gives byte values."""

    def __init__(self, buffer: np.ndarray):
        self._bytes = _bytes_of(buffer)

    device = CPU

    def data_ptr(self) -> int:
        return self._bytes.ctypes.data

    def nbytes(self) -> int:
        return self._bytes.nbytes

    def size(self) -> int:
        return self._bytes.size

    def __len__(self) -> int:
        return self._bytes.size

    def element_size(self) -> int:
        return 1

    def __getitem__(self, index):
        return self._bytes[index].tolist()

    def tolist(self) -> list:
        return self._bytes.tolist()

    def __repr__(self) -> str:
        return _storage_text(self.tolist(), f"[torch.storage.UntypedStorage(device=cpu) of size {self._bytes.size}]")


_warned_typed = [False]


class TypedStorage:
    """The deprecated typed view of a tensor's storage (torch.TypedStorage): its elements in the
    tensor's dtype, sized in elements."""

    def __init__(self, buffer: np.ndarray, dtype: dtype_type):
        self.dtype = dtype
        self._untyped = UntypedStorage(buffer)
        self._values = self._untyped._bytes.view(dtype.np)

    device = CPU

    def untyped(self) -> UntypedStorage:
        return self._untyped

    def data_ptr(self) -> int:
        return self._untyped.data_ptr()

    def nbytes(self) -> int:
        return self._untyped.nbytes()

    def size(self) -> int:
        return self._values.size

    def __len__(self) -> int:
        return self._values.size

    def element_size(self) -> int:
        return self._values.itemsize

    def __getitem__(self, index):
        values = self._values[index]
        if _bfloat16.holds(values):
            values = _bfloat16.to_float32(np, values)
        return values.tolist()

    def tolist(self) -> list:
        return self[:]

    def __repr__(self) -> str:
        return _storage_text(self.tolist(),
                             f"[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size {len(self)}]")


def untyped_storage(t) -> UntypedStorage:
    """Tensor.untyped_storage(): the bytes of the whole buffer the tensor views."""
    return UntypedStorage(_buffer_of(t._data))


def typed_storage(t) -> TypedStorage:
    """Tensor.storage(): the buffer as elements of the tensor's dtype (deprecated in torch; warns once)."""
    if not _warned_typed[0]:
        _warned_typed[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                      "storage class. This should only matter to you if you are using storages directly.  To access "
                      "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                      stacklevel=3)
    return TypedStorage(_buffer_of(t._data), t.dtype)


_warned_readonly = [False]


def frombuffer(buffer, *, dtype: dtype_type, count: int = -1, offset: int = 0, requires_grad: bool = False):
    """A 1-D tensor sharing memory with a Python buffer (bytearray, array.array, memoryview, mmap ...),
    as torch.frombuffer: `count` elements (-1: all) of `dtype` starting `offset` bytes in. Writes to
    either show in the other. A read-only buffer (bytes) gives a tensor that cannot be written."""
    from scriptc.tensors import wrap

    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    length = view.nbytes
    itemsize = dtype.np.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} "
                         "bytes) minus 1")
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({itemsize})")
        count = (length - offset) // itemsize
    elif length - offset < count * itemsize:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    array = np.frombuffer(view, dtype=np.uint8, count=count * itemsize, offset=offset).view(dtype.np)
    if view.readonly and not _warned_readonly[0]:
        _warned_readonly[0] = True
        warnings.warn("The given buffer is not writable: the tensor shares its memory and cannot be written to. "
                      "Copy the buffer (or make it writable) to get a writable tensor.", UserWarning, stacklevel=2)
    if _bfloat16.holds(array):
        _bfloat16.SEEN[0] = True
    out = wrap(array)
    return out.requires_grad_(requires_grad) if requires_grad else out


def apply_(t, fn):
    """Tensor.apply_(fn): replace each element x by fn(x) (a Python callable; slow, CPU only)."""
    if t.requires_grad:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead.")
    values = [fn(v) for v in t.reshape(-1).tolist()]
    return _write(t, values)


def map_(t, other, fn):
    """Tensor.map_(other, fn): replace each element x by fn(x, y), y the element of `other` broadcast
    to this tensor's shape (of this tensor's dtype: torch converts neither)."""
    if t.requires_grad:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use var.detach().map_() instead.")
    if other.dtype != t.dtype:
        raise TypeError(f"map_: expected {_legacy_type_name(t.dtype)} for 'other' "
                        f"(got {_legacy_type_name(other.dtype)})")
    paired = other.expand_as(t) if tuple(other.shape) != tuple(t.shape) else other
    values = [fn(a, b) for a, b in zip(t.reshape(-1).tolist(), paired.reshape(-1).tolist())]
    return _write(t, values)


_LEGACY_TENSOR_TYPES = ("Float", "Double", "Half", "Long", "Int", "Short", "Char", "Byte")


def _legacy_type_name(d: dtype_type) -> str:
    """How torch's type checks name a dtype: torch.FloatTensor, or CPUBoolType for a dtype without a
    legacy tensor class (bool, bfloat16, complex)."""
    name = scalar_type_name(d)
    return f"torch.{name}Tensor" if name in _LEGACY_TENSOR_TYPES else f"CPU{name}Type"


def _write(t, values: list):
    from scriptc.tensors import from_numpy
    if values:
        t.copy_(from_numpy(np.array(values)).reshape(t.shape))
    return t

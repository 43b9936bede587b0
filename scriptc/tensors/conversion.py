"""Tensor's conversions: to Python numbers and numpy arrays, to another dtype or device, and the
strided layout (a sparse COO tensor is a scriptc.sparse.SparseTensor)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scriptc import ops as _ops
from scriptc.ops import bfloat16 as _bfloat16
from scriptc.ops.quantized import QuantizedArray, dequantized
from scriptc.ops.rules import legacy_type_name
from scriptc.tensors import core
from scriptc.ops.meta import MetaArray, meta_array
from scriptc.tensors.meta import item_error, no_data_error, numpy_error
from scriptc.types import (
    qint8,
    qint32,
    quint8,
    bfloat16,
    bool_,
    complex64,
    complex128,
    device,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    preserve_format,
    uint8,
)

if TYPE_CHECKING:
    from scriptc.tensors.core import Tensor

_TO_DTYPE = _ops.OPS["to.dtype"]


def _warn_if_traced(t, what: str) -> None:
    """Under jit.trace, a TracerWarning when a value the trace records leaves it as Python or numpy data
    (the graph keeps what it was then as a constant, as torch's tracer warns)."""
    tracer = core._tracer[0]
    if tracer is not None and id(t) in tracer.values:
        tracer.data_dependent(what)


class Conversions:
    """The conversion methods of scriptc.Tensor (a mixin: Tensor is the only class built on it)."""

    __slots__ = ()

    # --- conversion to Python / numpy --------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a numpy array sharing memory (no copy)."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if type(self._data) is MetaArray:
            raise numpy_error()
        _numpy_has_dtype(self._data)
        _warn_if_traced(self, "a tensor to a NumPy array")
        return self._data

    def __array__(self, dtype=None, copy=None):
        data = self._data
        if type(data) is MetaArray:
            raise numpy_error()
        _numpy_has_dtype(data)
        if dtype is not None and np.dtype(dtype) != data.dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    def __dlpack__(self, **kwargs):
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if type(self._data) is MetaArray:
            raise item_error()
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        if core._tracer[0] is not None:
            core._tracer[0].data_dependent("item()")
        if isinstance(self._data, QuantizedArray):  # (the value it stands for, as torch's; tolist refuses)
            return dequantized(self._data).reshape(()).item()
        return _values(self._data).reshape(()).item()

    def tolist(self):
        _warn_if_traced(self, "a tensor to a Python list")
        return _values(self._data).tolist()

    def __bool__(self) -> bool:
        if type(self._data) is MetaArray:
            raise item_error()
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        if core._tracer[0] is not None:
            core._tracer[0].data_dependent("a tensor used as a Python bool")
        return bool(self._data.reshape(()))

    def __int__(self) -> int:
        return int(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    # --- dtype and device conversion -----------------------------------------------
    def to(self, *args, **kwargs) -> "Tensor":
        """`to(dtype)`, `to(device)`, `to(device, dtype)` or `to(other)`, and memory_format=; returns self when
        nothing changes."""
        target_dtype, target_device = kwargs.pop("dtype", None), kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        copy = kwargs.pop("copy", False)
        memory_format = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, dtype):
                target_dtype = a
            elif isinstance(a, (str, device)):
                target_device = device(a)
            elif isinstance(a, core.Tensor):
                target_dtype, target_device = a.dtype, a.device
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
        if target_device is not None:
            _check_device(device(target_device))
        if target_dtype is None or target_dtype.np == self._data.dtype:
            out = self.clone() if copy else self
        else:
            out = core.call(_TO_DTYPE, (self, target_dtype))
        if target_device is not None:
            out = _onto_device(out, device(target_device))
        if memory_format is None or memory_format == preserve_format:
            return out
        return out.contiguous(memory_format=memory_format)

    def type(self, dtype_: dtype | None = None):
        """The legacy type name ('torch.FloatTensor', as torch names it), or a copy converted to a dtype, a legacy type
        (scriptc.LongTensor) or a legacy type's name."""
        from scriptc.legacy import BY_NAME

        if isinstance(dtype_, str):
            dtype_ = BY_NAME.get(dtype_.rpartition(".")[2], dtype_)
        if isinstance(dtype_, type) and isinstance(getattr(dtype_, "dtype", None), dtype):
            dtype_ = dtype_.dtype
        if dtype_ is None:
            return legacy_type_name(self.dtype)
        return self.to(dtype_)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other.dtype)

    def float(self) -> "Tensor":
        return self.to(float32)

    def double(self) -> "Tensor":
        return self.to(float64)

    def half(self) -> "Tensor":
        return self.to(float16)

    def bfloat16(self) -> "Tensor":
        return self.to(bfloat16)

    def cfloat(self) -> "Tensor":
        return self.to(complex64)

    def cdouble(self) -> "Tensor":
        return self.to(complex128)

    def long(self) -> "Tensor":
        return self.to(int64)

    def int(self) -> "Tensor":
        return self.to(int32)

    def short(self) -> "Tensor":
        return self.to(int16)

    def char(self) -> "Tensor":
        return self.to(int8)

    def byte(self) -> "Tensor":
        return self.to(uint8)

    def bool(self) -> "Tensor":
        return self.to(bool_)

    def cpu(self) -> "Tensor":
        if type(self._data) is MetaArray:
            raise no_data_error()
        return self

    def cuda(self, device_=None, non_blocking: bool = False) -> "Tensor":
        _check_device(device("cuda"))
        return self

    def share_memory_(self) -> "Tensor":
        """Move this tensor's storage into shared memory, in place (views follow); a no-op when it is
        there already. A shared tensor sent to another process arrives as a view of the same memory."""
        from scriptc.multiprocessing.shared_memory import move_to_shared_memory
        move_to_shared_memory([self])
        return self

    def is_shared(self) -> bool:
        """Whether this tensor's storage is in shared memory."""
        from scriptc.multiprocessing.shared_memory import shared_storage
        return shared_storage(self._data) is not None

    def pin_memory(self) -> "Tensor":
        _check_device(device("cuda"))
        return self

    # --- layout (a sparse COO tensor is a scriptc.sparse.SparseTensor) -------------------
    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def layout(self):
        from scriptc.sparse import strided
        return strided

    def to_dense(self, dtype: dtype | None = None, *, masked_grad=None) -> "Tensor":
        return self if dtype is None else self.to(dtype)

    def to_sparse(self, sparse_dim: int | None = None) -> "Tensor":
        """The nonzero elements as a sparse COO tensor (see scriptc.sparse)."""
        from scriptc.sparse import to_sparse
        return to_sparse(self, sparse_dim)

    def indices(self) -> "Tensor":
        raise RuntimeError("indices expected sparse coordinate tensor layout but got Strided")

    def values(self) -> "Tensor":
        raise RuntimeError("values expected sparse tensor layout but got Strided")

    def coalesce(self) -> "Tensor":
        raise RuntimeError("coalesce expected sparse coordinate tensor layout but got Strided")


def _onto_device(t: "Tensor", target: device) -> "Tensor":
    """t on the target device: itself where it is there; to the meta device, a meta tensor of its shape
    and dtype (gradient flows back as the meta device's: none); from it, torch's error."""
    meta = type(t._data) is MetaArray
    if meta == (target.type == "meta"):
        return t
    if meta:
        raise no_data_error()
    out = core.wrap(meta_array(t._data.shape, t._data.dtype))
    out.requires_grad = t.requires_grad
    return out


def _values(data: np.ndarray) -> np.ndarray:
    """The array itself, or a bfloat16 array's float32 values."""
    if type(data) is MetaArray:
        raise no_data_error()
    if isinstance(data, QuantizedArray):
        raise RuntimeError("load_scalar: invalid type")  # torch's words for tolist of a quantized tensor
    return _bfloat16.to_float32(np, data) if _bfloat16.holds(data) else data


_QUANTIZED_SCALAR_TYPES = {qint8: "QInt8", quint8: "QUInt8", qint32: "QInt32"}


def _numpy_has_dtype(data: np.ndarray) -> None:
    """TypeError in torch's words for the dtypes numpy lacks (bfloat16, the quantized ones)."""
    if _bfloat16.holds(data):
        raise TypeError("Got unsupported ScalarType BFloat16")
    if isinstance(data, QuantizedArray):
        raise TypeError(f"Got unsupported ScalarType {_QUANTIZED_SCALAR_TYPES[data.qdtype]}")



def _check_device(dev: device) -> None:
    if dev.type == "cuda":
        from scriptc import cuda
        cuda.require()


def check_device_arg(value, pin_memory: bool = False) -> None:
    """A factory's `device=` / `pin_memory=` must be usable here: CUDA without cupy or a GPU raises
    the RuntimeError that says why (as `.to("cuda")` does) instead of handing back a CPU tensor.
    An int means that CUDA device, as in PyTorch."""
    if value is not None:
        _check_device(device("cuda", value) if isinstance(value, int) and not isinstance(value, bool) else device(value))
    if pin_memory:
        _check_device(device("cuda"))  # pinned host memory only serves copies to a GPU

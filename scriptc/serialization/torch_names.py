"""What the names in a PyTorch checkpoint's pickle mean here, and which of them a load may use.

A checkpoint refers to `torch._utils._rebuild_tensor_v2`, `torch.FloatStorage`, `torch.Size`,
`collections.OrderedDict`, ... by module and name. `allowed_globals` maps exactly those that
torch's weights_only mode allows to the scriptc objects that stand for them; nothing outside
the map is ever imported or called. `add_safe_globals` extends the map with objects the user
trusts.
"""

from __future__ import annotations

import argparse
import codecs
from collections import Counter, OrderedDict

import numpy as np

from scriptc import types

__all__ = ["StorageType", "Storage", "TorchGlobal", "STORAGE_TYPES", "allowed_globals", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals", "safe_globals", "rebuild_tensor"]

# torch's legacy storage classes by the dtype they hold (the pickle names a storage by its class).
_STORAGE_CLASS_NAMES = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
    "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage",
    "uint8": "ByteStorage", "bool": "BoolStorage", "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage", "qint8": "QInt8Storage", "quint8": "QUInt8Storage",
    "qint32": "QInt32Storage",
}


class TorchGlobal:
    """A `module.name` global of torch's that a checkpoint this side writes refers to."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args):
        # pickle's save_reduce insists on a callable; what gets called is torch's function, on load
        raise TypeError(f"{self!r} stands for torch's global in a checkpoint; it is not callable here")


class StorageType(TorchGlobal):
    """A torch storage class (`torch.FloatStorage`): names the dtype of a storage record."""

    __slots__ = ("dtype",)

    def __init__(self, class_name: str, dtype: types.dtype):
        super().__init__("torch", class_name)
        self.dtype = dtype


STORAGE_TYPES = {name: StorageType(cls, types.DTYPES_BY_NAME[name])
                 for name, cls in _STORAGE_CLASS_NAMES.items() if name in types.DTYPES_BY_NAME}
# An untyped storage is bytes.
UNTYPED_STORAGE = StorageType("UntypedStorage", types.uint8)


class Storage:
    """A storage read from a checkpoint: a flat array every tensor on it is a view of.

    `location` is the device tag torch wrote ('cpu', 'cuda:0'); `cpu()` and `cuda()` are here for
    map_location callables, which receive the storage and return it (or another)."""

    def __init__(self, array: np.ndarray, location: str):
        self.array = array
        self.location = location
        self.version_counter = [0]

    @property
    def dtype(self) -> types.dtype:
        return types.from_numpy_dtype(self.array.dtype)

    @property
    def device(self) -> types.device:
        return types.device(self.location)

    def size(self) -> int:
        return self.array.size

    def nbytes(self) -> int:
        return self.array.nbytes

    def cpu(self) -> "Storage":
        return self if self.location == "cpu" else Storage(self.array, "cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> "Storage":
        from scriptc.tensors import check_device_arg
        check_device_arg("cuda" if device is None else device)
        return self


# --- the functions a checkpoint calls to rebuild tensors (torch._utils) ------------------------

def rebuild_tensor(storage: Storage, storage_offset: int, size, stride):
    """A tensor viewing `storage` (torch._utils._rebuild_tensor), checked to lie inside it."""
    from scriptc.tensors import from_numpy

    if not isinstance(storage, Storage):
        raise RuntimeError(f"expected a storage to rebuild a tensor from, got {type(storage).__name__}")
    size, stride = tuple(size), tuple(stride)
    if not all(_is_count(v) for v in size + stride + (storage_offset,)) or len(size) != len(stride):
        raise RuntimeError(f"invalid tensor layout in checkpoint: offset {storage_offset}, size {list(size)}, "
                           f"stride {list(stride)}")
    array = storage.array
    if any(n == 0 for n in size):
        extent = storage_offset
    else:
        extent = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    if extent > array.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{storage_offset}, and itemsize {array.itemsize} requiring a storage size of "
                           f"{extent * array.itemsize} are out of bounds for storage of size {array.nbytes}")
    data = np.ndarray(size, array.dtype, buffer=array, offset=storage_offset * array.itemsize,
                      strides=tuple(s * array.itemsize for s in stride))
    if not array.flags.writeable:
        data.flags.writeable = False
    t = from_numpy(data)  # (not wrap: from_numpy also tells dispatch when bfloat16 data appears)
    t._vc = storage.version_counter
    return t


def _is_count(value) -> bool:
    return type(value) is int and value >= 0


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    return _with_requires_grad(rebuild_tensor(storage, storage_offset, size, stride), requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if not isinstance(dtype, types.dtype):
        raise RuntimeError(f"expected a dtype to rebuild a tensor with, got {type(dtype).__name__}")
    retyped = Storage(storage.array.view(dtype.np), storage.location)
    retyped.version_counter = storage.version_counter
    return _with_requires_grad(rebuild_tensor(retyped, storage_offset, size, stride), requires_grad)


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """A meta tensor (torch saves one as its dtype, size and stride: it has no storage)."""
    from scriptc.ops.meta import meta_array
    from scriptc.tensors import wrap

    if not isinstance(dtype, types.dtype) or not all(_is_count(n) for n in size):
        raise RuntimeError(f"invalid meta tensor in checkpoint: dtype {dtype!r}, size {size!r}")
    return _with_requires_grad(wrap(meta_array(tuple(size), dtype.np)), requires_grad)


def _with_requires_grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from scriptc.nn import Parameter
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    from scriptc.nn import Parameter
    from scriptc.tensors import Tensor

    if func not in _REBUILD_FUNCTIONS:
        raise RuntimeError(f"_rebuild_from_type_v2 given {func!r}, which does not rebuild a tensor")
    result = func(*args)
    if new_type is Parameter and type(result) is Tensor:
        result = Parameter(result, result.requires_grad)
    elif new_type is not type(result):
        raise RuntimeError(f"cannot rebuild a tensor of type {getattr(new_type, '__name__', new_type)}")
    return _set_obj_state(result, state)


def _set_obj_state(obj, state):
    """Apply a pickled attribute state to a rebuilt tensor: the user's own attributes only."""
    from scriptc.tensors import Tensor

    dict_state, slots_state = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
    for part in (dict_state, slots_state):
        for key, value in (part or {}).items():
            if not isinstance(key, str) or hasattr(Tensor, key):
                raise RuntimeError(f"checkpoint sets attribute {key!r}, which scriptc tensors do not take from "
                                   "a checkpoint")
            setattr(obj, key, value)
    return obj


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks):
    """A quantized tensor viewing `storage` (torch._utils._rebuild_qtensor): quantizer_params are
    (per_tensor_affine, scale, zero_point) or (per_channel_affine, scales, zero_points, axis)."""
    from scriptc.ops.quantized import with_quantization
    from scriptc.tensors import Tensor

    if not isinstance(storage, Storage) or storage.dtype.category != types.QUANTIZED:
        raise RuntimeError("expected a quantized storage (torch.QInt8Storage ...) to rebuild a quantized tensor from")
    t = rebuild_tensor(storage, storage_offset, size, stride)
    params = tuple(quantizer_params) if isinstance(quantizer_params, (tuple, list)) else ()
    if len(params) == 3 and params[0] is types.per_tensor_affine and isinstance(params[1], (int, float)) \
            and type(params[2]) is int:
        t._data = with_quantization(t._data, float(params[1]), params[2])
    elif len(params) == 4 and params[0] is types.per_channel_affine and isinstance(params[1], Tensor) \
            and isinstance(params[2], Tensor) and type(params[3]) is int \
            and params[1].numel() == params[2].numel() == (size[params[3]] if 0 <= params[3] < len(size) else -1):
        t._data = with_quantization(t._data, scales=params[1]._data.astype(np.float64),
                                    zero_points=params[2]._data.astype(np.int64), axis=params[3])
    else:
        raise RuntimeError(f"invalid quantizer parameters in checkpoint: {quantizer_params!r}")
    return t


_REBUILD_FUNCTIONS = (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter, _rebuild_parameter_with_state)


def _size(sizes):
    from scriptc.tensors import Size
    return Size(int(n) for n in sizes)


# --- the allow-lists ------------------------------------------------------------------------

def _weights_only_globals() -> dict:
    from scriptc.nn import Parameter
    from scriptc.tensors import Tensor

    table = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "torch._utils._rebuild_tensor": rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_qtensor": _rebuild_qtensor,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch.Size": _size,
        "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.device": types.device,
        "_codecs.encode": codecs.encode,  # how protocol 2 spells bytes
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch.UntypedStorage": UNTYPED_STORAGE,
        "torch.storage.UntypedStorage": UNTYPED_STORAGE,
    }
    for name, dtype in types.DTYPES_BY_NAME.items():
        table[f"torch.{name}"] = dtype
    for name, scheme in types.QSCHEMES.items():
        table[f"torch.{name}"] = scheme
    for storage_type in STORAGE_TYPES.values():
        table[f"torch.{storage_type.name}"] = storage_type
    return table


def _numpy_and_plain_globals() -> dict:
    """What weights_only=False adds: numpy arrays, scalars and dtypes, argparse.Namespace and a few
    builtins. Each only builds data; still nothing that runs code."""
    reconstruct = np.zeros(1).__reduce__()[0]
    scalar = np.float64(0).__reduce__()[0]
    table = {"argparse.Namespace": argparse.Namespace, "builtins.slice": slice, "builtins.range": range,
             "builtins.frozenset": frozenset}
    for package in ("numpy.core", "numpy._core"):
        table[f"{package}.multiarray._reconstruct"] = reconstruct
        table[f"{package}.multiarray.scalar"] = scalar
    table["numpy.ndarray"] = np.ndarray
    table["numpy.dtype"] = np.dtype
    for dtype_class in {type(np.dtype(code)) for code in "?bBhHiIlLqQefdgFDGO"}:
        table[f"numpy.dtypes.{dtype_class.__name__}"] = dtype_class
    return table


_tables: dict = {}


def allowed_globals(weights_only: bool) -> dict:
    """'module.name' -> object, for every global a checkpoint may name (user additions included)."""
    if weights_only not in _tables:
        table = _weights_only_globals()
        if not weights_only:
            table.update(_numpy_and_plain_globals())
        _tables[weights_only] = table
    return {**_tables[weights_only], **_user_globals}


_user_globals: dict = {}


def _qualified_name(entry) -> tuple[str, object]:
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                             f"length: {len(entry)}")
        obj, name = entry
        if type(name) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: {type(name)}")
        return name, obj
    return f"{entry.__module__}.{entry.__qualname__}", entry


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes or functions (or (object, "module.name") pairs) in checkpoints loaded here.

    Only for code you trust: a checkpoint may call an allowed function with any arguments."""
    for entry in safe_globals:
        name, obj = _qualified_name(entry)
        _user_globals[name] = obj


def get_safe_globals() -> list:
    """The globals add_safe_globals allowed."""
    return list(_user_globals.values())


def clear_safe_globals() -> None:
    """Forget every global add_safe_globals allowed."""
    _user_globals.clear()


class safe_globals:
    """`with safe_globals([...]):` allows those globals for the loads inside the block only."""

    def __init__(self, safe_globals: list):
        self.entries = [_qualified_name(entry) for entry in safe_globals]

    def __enter__(self):
        self.saved = {name: _user_globals[name] for name, _ in self.entries if name in _user_globals}
        _user_globals.update(self.entries)

    def __exit__(self, *exc) -> bool:
        for name, _ in self.entries:
            _user_globals.pop(name, None)
        _user_globals.update(self.saved)
        return False

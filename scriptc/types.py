"""dtypes, devices and the value types shared by the op table, the IR and tensors.

This is the leaf of the package: it imports nothing from scriptc, so the op
table, the IR and the eager layer can all describe values the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Union

import numpy as np


class dtype:
    """A tensor element type, named and ordered as in PyTorch (`scriptc.float32`, printed `torch.float32` as torch prints it)."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "category")

    def __init__(self, name: str, np_dtype: np.dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == FLOAT
        self.is_signed = category != BOOL
        self.category = category

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (dtype_from_name, (self.name,))

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_real(self) -> "dtype":
        """The dtype of a complex dtype's parts (float32 for complex64); other dtypes unchanged."""
        return _COMPLEX_TO_REAL.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex dtype with this floating dtype's precision (complex128 for float64)."""
        return complex128 if self is float64 or self is complex128 else complex64


BOOL, INT, FLOAT, COMPLEX, QUANTIZED = 0, 1, 2, 3, 4

bool_ = dtype("bool", np.bool_, BOOL)
int32 = dtype("int32", np.int32, INT)
int64 = dtype("int64", np.int64, INT)
float16 = dtype("float16", np.float16, FLOAT)
float32 = dtype("float32", np.float32, FLOAT)
float64 = dtype("float64", np.float64, FLOAT)
uint8 = dtype("uint8", np.uint8, INT)
int8 = dtype("int8", np.int8, INT)
int16 = dtype("int16", np.int16, INT)
# numpy has no bfloat16: its tensors hold the 16-bit patterns in a 2-byte structured dtype (so no
# numpy arithmetic applies to them by mistake); scriptc.ops.bfloat16 converts them for computing.
# np.frombuffer(raw, bfloat16.np) and array.tobytes() move the raw bytes of a bfloat16 storage.
bfloat16 = dtype("bfloat16", np.dtype([("bfloat16", "<u2")]), FLOAT)
complex64 = dtype("complex64", np.complex64, COMPLEX)
complex128 = dtype("complex128", np.complex128, COMPLEX)
# Quantized tensors (scriptc.ops.quantized) hold their integers in a one-field structured dtype, as
# bfloat16 does, so that no numpy arithmetic applies to them by mistake; int_repr views the integers.
qint8 = dtype("qint8", np.dtype([("qint8", "i1")]), QUANTIZED)
quint8 = dtype("quint8", np.dtype([("quint8", "u1")]), QUANTIZED)
qint32 = dtype("qint32", np.dtype([("qint32", "<i4")]), QUANTIZED)
quint8.is_signed = False
QUANTIZED_DTYPES = (qint8, quint8, qint32)
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")
_COMPLEX_TO_REAL = {complex64: float32, complex128: float64}

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
DTYPES_BY_NAME = {d.name: d for d in ALL_DTYPES + QUANTIZED_DTYPES}
# torch's ScalarType numbers (c10's enum): what a dtype is as an int, as TorchScript hands one to Python
SCALAR_TYPE_NUMBERS = {uint8: 0, int8: 1, int16: 2, int32: 3, int64: 4, float16: 5, float32: 6, float64: 7,
                       complex64: 9, complex128: 10, bool_: 11, qint8: 12, quint8: 13, qint32: 14,
                       bfloat16: 15}
DTYPES_BY_NUMBER = {number: d for d, number in SCALAR_TYPE_NUMBERS.items()}
_BY_NUMPY = {d.np: d for d in ALL_DTYPES + QUANTIZED_DTYPES}
# Promotion order inside one category (PyTorch's lattice restricted to our types).
_RANK = {d: i for i, d in enumerate(ALL_DTYPES + QUANTIZED_DTYPES)}

# torch.set_default_dtype's setting: the dtype Python floats and float factories take.
_default_float = [float32]


def default_float() -> dtype:
    """The default floating dtype (float32 unless torch.set_default_dtype changed it)."""
    return _default_float[0]


def default_complex() -> dtype:
    """The complex dtype that goes with the default floating dtype (complex128 for float64)."""
    if _default_float[0] is bfloat16:
        raise RuntimeError("invalid default scalar type for complex")
    return complex128 if _default_float[0] is float64 else complex64


def set_default_float(d: dtype) -> None:
    """Make `d` the default floating dtype (callers check it is floating)."""
    _default_float[0] = d


def dtype_from_name(name: str) -> dtype:
    """The dtype named `name` ('float32', 'int64', ...); KeyError if unknown."""
    return DTYPES_BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The scriptc dtype for a numpy dtype; TypeError for one scriptc lacks."""
    try:
        return _BY_NUMPY[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}; "
                        f"the supported types are: {', '.join(d.name for d in ALL_DTYPES)}") from None


def promote_pair(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both `a` and `b` convert to without losing their category."""
    if a is b:
        return a
    if a.category != b.category:
        high, low = (a, b) if a.category > b.category else (b, a)
        if high.category == COMPLEX and low is float64:
            return complex128  # a complex dtype wide enough for the float64 (PyTorch's table)
        return high
    if a.category == INT and {a, b} == {uint8, int8}:
        return int16
    if {a, b} == {float16, bfloat16}:
        return float32  # neither holds the other (PyTorch's table)
    return a if _RANK[a] > _RANK[b] else b


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it becomes a tensor (`tensor(1.0)` is float32 by default)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int64
    if isinstance(value, complex):
        return default_complex()
    return default_float()


def result_type(participants) -> dtype:
    """PyTorch's type promotion over (dtype, priority) pairs.

    priority 2 is a tensor with dims, 1 a 0-d tensor, 0 a Python scalar. Each
    priority is promoted on its own; a lower one only adds a higher category
    (so `int_tensor + 2.5` is float32, `float32_tensor + float64_0d_tensor`
    stays float32 and `float64_tensor + 1j` is complex128), as ATen's
    ResultTypeState and combine_categories do.
    """
    by_priority: dict[int, dtype] = {}
    for d, priority in participants:
        if priority == 0 and d.category >= FLOAT:
            d = default_float() if d.category == FLOAT else default_complex()
        have = by_priority.get(priority)
        by_priority[priority] = d if have is None else promote_pair(have, d)
    return _combine(by_priority.get(2), _combine(by_priority.get(1), by_priority.get(0)))


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    """The dtype of a higher-priority operand group after meeting a lower-priority one."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher.category == BOOL or lower.category == FLOAT:
        return promote_pair(higher, lower)
    return higher


class memory_format(int):
    """A tensor memory layout (`scriptc.channels_last`, printed as torch prints it); an int in graphs, as
    TorchScript stores it."""

    _NAMES = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")

    def __repr__(self) -> str:
        return f"torch.{self._NAMES[self]}"

    __str__ = __repr__


contiguous_format, preserve_format, channels_last, channels_last_3d = (memory_format(i) for i in range(4))


class qscheme:
    """How a quantized tensor maps its integers to reals (`scriptc.per_tensor_affine`, printed as torch
    prints it)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_qscheme_from_name, (self.name,))


QSCHEMES = {name: qscheme(name) for name in ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                                             "per_channel_symmetric", "per_channel_affine_float_qparams")}
per_tensor_affine, per_channel_affine = QSCHEMES["per_tensor_affine"], QSCHEMES["per_channel_affine"]
per_tensor_symmetric, per_channel_symmetric = QSCHEMES["per_tensor_symmetric"], QSCHEMES["per_channel_symmetric"]
per_channel_affine_float_qparams = QSCHEMES["per_channel_affine_float_qparams"]


def _qscheme_from_name(name: str) -> qscheme:
    return QSCHEMES[name]


# Every device type torch parses (in its error's order); scriptc's tensors live on cpu, cuda and meta.
DEVICE_TYPE_NAMES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                     "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


class device:
    """Where a tensor lives: `device("cpu")`, `device("cuda")`, `device("cuda", 1)`, or `device("meta")`
    (tensors with a shape and a dtype but no data)."""

    __slots__ = ("type", "index")

    def __init__(self, type: Union[str, "device"], index: int | None = None):
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expects a string like 'cpu' or 'cuda:0', got {type!r}")
        if ":" in type:
            type, _, idx = type.partition(":")
            if index is not None or not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if type not in DEVICE_TYPE_NAMES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPE_NAMES)} device type at start of device "
                               f"string: {type}")
        if type not in ("cpu", "cuda", "meta"):
            raise RuntimeError(f"scriptc has no {type} device: tensors live on cpu, cuda or meta")
        self.type = type
        self.index = index

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __enter__(self) -> "device":
        """`with torch.device(d):` makes `d` the default device until the block ends."""
        from scriptc import settings
        settings.push_default_device(self)
        return self

    def __exit__(self, *exc_info) -> None:
        from scriptc import settings
        settings.pop_default_device()


CPU = device("cpu")
META = device("meta")


class EnumValue:
    """A member of an Enum: equal to another member of the same Enum with the same name."""

    __slots__ = ("enum", "name", "value")

    def __init__(self, enum: str, name: str, value):
        self.enum, self.name, self.value = enum, name, value

    def __eq__(self, other) -> bool:
        return isinstance(other, EnumValue) and other.enum == self.enum and other.name == self.name

    def __hash__(self) -> int:
        return hash((self.enum, self.name))

    def __repr__(self) -> str:
        return f"{self.enum}.{self.name}"

# ----------------------------------------------------------------------------
# Value types of the IR and of op schemas.
#
# A tensor dim is an int (concrete), a str (a named symbol such as "B") or None
# (unknown). Types are immutable and compare structurally.

Dim = Union[int, str, None]


class Type:
    """Base of all value types; `str(t)` is the IR text form."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True, eq=True)
class TensorType(Type):
    """`Tensor(float32, [B, 16])`: dtype and shape may each be unknown (None)."""

    dtype: dtype | None = None
    shape: tuple[Dim, ...] | None = None
    device: str = "cpu"

    def __post_init__(self):
        if self.shape is not None and (type(self.shape) is not tuple or any(
                d is not None and type(d) is not int and type(d) is not str for d in self.shape)):
            raise TypeError(f"TensorType: a shape is a tuple of ints, symbols (str) or None, got {self.shape!r}")

    def __str__(self) -> str:
        if self.dtype is None and self.shape is None and self.device == "cpu":
            return "Tensor"
        parts = [self.dtype.name if self.dtype is not None else "?"]
        if self.shape is not None:
            parts.append("[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]")
        if self.device != "cpu":
            parts.append(self.device)
        return f"Tensor({', '.join(parts)})"

    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)


@dataclass(frozen=True)
class ScalarType(Type):
    """`int`, `float`, `bool`, `str`, `None`, `Device`, `ScalarType` (a dtype value)."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ListType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"List[{self.elem}]"


@dataclass(frozen=True)
class TupleType(Type):
    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return f"Tuple[{', '.join(str(e) for e in self.elems)}]"


@dataclass(frozen=True)
class OptionalType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"Optional[{self.elem}]"


@dataclass(frozen=True)
class DictType(Type):
    key: Type
    value: Type

    def __str__(self) -> str:
        return f"Dict[{self.key}, {self.value}]"


def _name_text(name: str) -> str:
    """A class's name in a type's text: quoted where it is no dotted identifier (a class defined in a
    function is `f.<locals>.C`), so that the IR parser reads it back."""
    return name if _PLAIN_PATH.fullmatch(name) else json.dumps(name)


@dataclass(frozen=True)
class ModuleType(Type):
    """The type of `self` (and of submodules) in a module's graph: `Module(fc1)`."""

    path: str = ""

    def __str__(self) -> str:
        if not self.path:
            return "Module"
        # submodule names may be any string without a dot ("block1-0", "-1"): quote what is no identifier
        return f"Module({self.path})" if _PLAIN_PATH.fullmatch(self.path) else f"Module({json.dumps(self.path)})"


@dataclass(frozen=True)
class UnionType(Type):
    """A value of any of several types: `Union[int, str]` in scripts, `Tensor|Scalar` in op schemas."""

    options: tuple[Type, ...]

    def __str__(self) -> str:
        return "|".join(str(o) for o in self.options)


@dataclass(frozen=True)
class NamedTupleType(TupleType):
    """A NamedTuple class's instances: a tuple whose items also have names."""

    name: str = ""
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        items = ", ".join(f"{f}: {t}" for f, t in zip(self.fields, self.elems))
        name = _name_text(self.name)
        return f"NamedTuple({name}, {items})" if items else f"NamedTuple({name})"


@dataclass(frozen=True)
class ObjectType(Type):
    """An instance of a @jit.script class (a runtime object with typed attributes)."""

    name: str

    def __str__(self) -> str:
        return f"Object({_name_text(self.name)})"


@dataclass(frozen=True)
class InterfaceType(ObjectType):
    """A value of any script class with the methods of a @torch.jit.interface class `name`."""

    def __str__(self) -> str:
        return f"Interface({_name_text(self.name)})"


@dataclass(frozen=True)
class EnumType(Type):
    """A member of an Enum class whose values have type `value`."""

    name: str
    value: Type

    def __str__(self) -> str:
        return f"Enum({_name_text(self.name)}, {self.value})"


@dataclass(frozen=True)
class FutureType(Type):
    """What torch.jit.fork returns: the result of a call running concurrently."""

    elem: Type

    def __str__(self) -> str:
        return f"Future[{self.elem}]"


Int = ScalarType("int")
Float = ScalarType("float")
Complex = ScalarType("complex")
Bool = ScalarType("bool")
Str = ScalarType("str")
NoneType = ScalarType("None")
DeviceT = ScalarType("Device")
DType = ScalarType("ScalarType")
# A torch.Generator argument of a random op (only ever None inside a graph).
GeneratorT = ScalarType("Generator")
# "Scalar" = int | float | complex | bool in schemas, like TorchScript's Scalar.
Scalar = ScalarType("Scalar")
# "Any" only in op schemas: the generic list ops take elements of every type.
Any_ = ScalarType("Any")
AnyTensor = TensorType()

SCALAR_TYPES = {t.name: t for t in (Int, Float, Complex, Bool, Str, NoneType, DeviceT, DType, GeneratorT, Scalar, Any_)}


def is_subtype(actual: Type, expected: Type) -> bool:
    """Whether a value of type `actual` may be passed where `expected` is declared."""
    if expected == actual:
        return True
    if isinstance(expected, UnionType):
        return any(is_subtype(actual, o) for o in expected.options)
    if isinstance(expected, TensorType):
        if not isinstance(actual, TensorType):
            return False
        return ((expected.dtype is None or expected.dtype is actual.dtype)
                and (expected.shape is None or expected.shape == actual.shape))
    if expected is Scalar:
        return actual in (Int, Float, Complex, Bool, Scalar)
    if expected is Float:
        return actual in (Int, Bool)
    if expected is Int:
        return actual is Bool
    if isinstance(expected, OptionalType):
        return actual is NoneType or is_subtype(actual, expected.elem) or (
            isinstance(actual, OptionalType) and is_subtype(actual.elem, expected.elem))
    if isinstance(expected, ListType) and isinstance(actual, ListType):
        return is_subtype(actual.elem, expected.elem)
    if isinstance(expected, TupleType) and isinstance(actual, TupleType):
        return len(expected.elems) == len(actual.elems) and all(
            is_subtype(a, e) for a, e in zip(actual.elems, expected.elems))
    if isinstance(expected, ListType) and isinstance(actual, TupleType):
        return all(is_subtype(a, expected.elem) for a in actual.elems)
    return False


def type_of_constant(value) -> Type:
    """The IR type of a Python constant (a `prim::Constant` value)."""
    if value is None:
        return NoneType
    if isinstance(value, bool):
        return Bool
    if isinstance(value, int):
        return Int
    if isinstance(value, float):
        return Float
    if isinstance(value, complex):
        return Complex
    if isinstance(value, str):
        return Str
    if isinstance(value, dtype):
        return DType
    if isinstance(value, device):
        return DeviceT
    if isinstance(value, (list, tuple)):
        elems = tuple(type_of_constant(v) for v in value)
        if isinstance(value, tuple):
            return TupleType(elems)
        if not elems:
            return ListType(Int)
        first = elems[0]
        if all(e == first for e in elems):
            return ListType(first)
        if all(e in (Int, Float) for e in elems):
            return ListType(Float)
        return ListType(Scalar)
    raise TypeError(f"no IR type for constant {value!r}")

"""Arguments of a call from Python into scripted code, checked and converted to the parameters'
types as TorchScript does: a one-element tensor for a number, a tuple or a range for a List,
ints for a float; anything else of the wrong type is a RuntimeError naming the argument, as torch's."""

from __future__ import annotations

import enum
import re

from scriptc.tensors import Tensor, _tracer
from scriptc.types import (
    EnumValue,
    Any_,
    Bool,
    Complex,
    DeviceT,
    DictType,
    DType,
    EnumType,
    Float,
    Int,
    InterfaceType,
    ListType,
    ModuleType,
    NamedTupleType,
    NoneType,
    OptionalType,
    Scalar,
    Str,
    TensorType,
    TupleType,
    Type,
    SCALAR_TYPE_NUMBERS,
    DTYPES_BY_NUMBER,
    UnionType,
    device,
    dtype,
)

from .script_containers import ScriptDict, ScriptList, shares_items

_NUMBERS = {Int: int, Float: float, Bool: bool, Complex: complex}


def convert_arguments(params: list, values: list, broadcast_lengths: dict[str, int] | None = None,
                      function: str | None = None, first_position: int = 0) -> list:
    """`values` for the graph inputs `params` (IR Values with names and types). `broadcast_lengths`:
    the BroadcastingListN[T] parameters (name -> N), where a single T stands for N of it. A value
    that does not fit is torch's RuntimeError naming `function` and the argument's position
    (`first_position`: 1 for a method, whose `self` torch counts)."""
    lengths = broadcast_lengths or {}
    converted = []
    for i, (p, v) in enumerate(zip(params, values)):
        try:
            converted.append(convert(_broadcast(v, p.type, lengths.get(p.name)), p.type, p.name or f"argument {i}"))
        except RuntimeError as error:
            if function is None:
                raise
            raise RuntimeError(f"{function}() {error}\nPosition: {i + first_position}\nValue: {v!r}") from None
    return converted


def _broadcast(value, t: Type, length: int | None):
    """N copies of a number passed for a BroadcastingListN[T] parameter. Only a number of T's own
    Python kind broadcasts, as torch's binding checks it (an int for a List[float] is refused)."""
    if isinstance(t, OptionalType):
        t = t.elem
    if length is None or not isinstance(t, ListType) or t.elem not in _NUMBERS or isinstance(value, Tensor):
        return value
    kind = _NUMBERS[t.elem]
    return [kind(value)] * length if isinstance(value, kind) else value  # (a bool is an int of 0 or 1)


def convert(value, t: Type, name: str):
    if t == Any_ and isinstance(value, enum.Enum):  # an Enum member as the runtime holds one
        ENUM_CLASSES.setdefault(type(value).__qualname__, type(value))
        return EnumValue(type(value).__qualname__, value.name, value.value)
    if t == Any_ or t == Scalar and isinstance(value, (int, float, bool)):
        return value
    if isinstance(t, OptionalType):
        return None if value is None else convert(value, t.elem, name)
    if isinstance(t, UnionType):
        for option in t.options:
            try:
                return convert(value, option, name)
            except RuntimeError:
                continue
        raise RuntimeError(f"Expected a member of {union_name(t)} but instead found type {value_type_name(value)}")
    if t == NoneType:
        if value is not None:
            raise _mismatch(value, t, name)
        return value
    if isinstance(t, TensorType):
        if not isinstance(value, Tensor):
            raise _mismatch(value, t, name)
        return value
    if t in _NUMBERS:
        return _number(value, t, name)
    if t == Str:
        if not isinstance(value, (str, bytes)):
            raise _mismatch(value, t, name)
        return value
    if isinstance(value, (ScriptList, ScriptDict)) and shares_items(t) and value._type == t:
        return value._items  # (reference semantics: scripted code mutates this very container)
    if isinstance(value, (ScriptList, ScriptDict)):
        value = list(value._items) if isinstance(value, ScriptList) else dict(value._items)
    if isinstance(t, ListType):
        if not isinstance(value, (list, tuple, range)):
            raise _mismatch(value, t, name)
        return [convert(v, t.elem, name) for v in value]
    if isinstance(t, TupleType):
        if not isinstance(value, (list, tuple)) or t.elems and len(value) != len(t.elems):
            raise _mismatch(value, t, name)
        try:
            return tuple(convert(v, e, name) for v, e in zip(value, t.elems)) if t.elems else tuple(value)
        except RuntimeError:
            if not isinstance(t, NamedTupleType):
                raise
            # torch names the whole NamedTuple, not the field that does not fit
            raise RuntimeError(f"Expected a value of type '{t}' (aka NamedTuple({', '.join(t.fields)})) for argument "
                               f"'{name}' but instead found type '{type(value).__name__}'.") from None
    if isinstance(t, DictType):
        if not isinstance(value, dict):
            raise _mismatch(value, t, name)
        return {convert(k, t.key, name): convert(v, t.value, name) for k, v in value.items()}
    if t == DeviceT:
        return device(value) if isinstance(value, (str, device)) else _raise(_mismatch(value, t, name))
    if t == DType:
        if isinstance(value, int) and not isinstance(value, bool) and value in DTYPES_BY_NUMBER:
            return DTYPES_BY_NUMBER[value]  # a dtype as TorchScript hands it out (6 for float32)
        return value if isinstance(value, dtype) else _raise(_mismatch(value, t, name))
    if isinstance(t, InterfaceType) and t.name in MODULE_INTERFACES:
        return _module_interface_value(value, MODULE_INTERFACES[t.name], name)
    if isinstance(t, ModuleType):
        from scriptc.nn import Module

        return value if isinstance(value, Module) else _raise(_mismatch(value, t, name))
    if isinstance(t, EnumType):
        if isinstance(value, enum.Enum) and type(value).__qualname__ == t.name:
            ENUM_CLASSES[t.name] = type(value)
            return EnumValue(t.name, value.name, value.value)
        raise _mismatch(value, t, name)
    return value


# module interfaces (@jit.interface classes deriving from nn.Module) scripted code used, by name
MODULE_INTERFACES: dict[str, type] = {}


def _module_interface_value(value, interface: type, name: str):
    """A module passed for a module interface's parameter: one whose class has each of the
    interface's methods (torch's refusal in its words otherwise). It stays a Python module, whose
    methods the scripted code calls (compiled ones where it is a ScriptModule)."""
    from scriptc.nn import Module

    from .frontend.compile.interfaces import missing_methods
    from .module import ScriptModule, made_by_jit

    module = value._module if made_by_jit(value) else value
    lacking = missing_methods(interface, type(module))
    if not isinstance(module, Module) or lacking:
        shown = "RecursiveScriptModule" if isinstance(value, ScriptModule) else type(value).__name__
        theirs, ours = f"__torch__.{type(module).__name__}", f"__torch__.{interface.__qualname__}"
        if not isinstance(module, Module):
            detail = (f"\nClass '{theirs}' is not a subtype of the module interface '{ours}' , only ScriptModule "
                      "class can be subtype of module interface.")
        else:
            detail = (f"\nCast error details: Object of type {theirs} is not compatible with interface {ours}\n"
                      f"Class '{theirs}' does not have method '{lacking[0]}' but '{ours}' does.")
        raise RuntimeError(f"Expected a value of type '__torch__.{interface.__qualname__}' for argument '{name}' but "
                           f"instead found type '{shown}'.{detail}")
    return value


# Enum classes scripted code used, by name: results come back as their members (python_value)
ENUM_CLASSES: dict[str, type] = {}
SCRIPT_CLASSES: dict[str, type] = {}  # a compiled class's name -> the Python class it was compiled from


# NamedTuple classes scripted code used, by name: results come back as their instances (typed_result)
NAMEDTUPLE_CLASSES: dict[str, type] = {}


def typed_result(value, t: Type):
    """A result as Python sees it by its declared type: a NamedTuple's tuple as an instance of its
    class; a dtype as its ScalarType number (6 for float32), as torch's scripted calls return it."""
    if isinstance(value, dtype):
        return SCALAR_TYPE_NUMBERS[value]
    if isinstance(value, dict) and isinstance(t, DictType):
        return {typed_result(k, t.key): typed_result(v, t.value) for k, v in value.items()}
    if isinstance(value, tuple) and isinstance(t, TupleType) and len(t.elems) == len(value):
        items = tuple(typed_result(v, e) for v, e in zip(value, t.elems))
        cls = NAMEDTUPLE_CLASSES.get(t.name) if isinstance(t, NamedTupleType) else None
        return cls(*items) if cls is not None else items
    if isinstance(value, list) and isinstance(t, ListType):
        return [typed_result(v, t.elem) for v in value]
    if value is not None and isinstance(t, OptionalType):
        return typed_result(value, t.elem)
    return value


def python_value(value):
    """A runtime value as Python sees it where they differ: an Enum member for an EnumValue."""
    if isinstance(value, EnumValue):
        cls = ENUM_CLASSES.get(value.enum)
        return cls[value.name] if cls is not None and value.name in cls.__members__ else value
    return value


def _number(value, t: Type, name: str):
    kind = _NUMBERS[t]
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"Expected a value of type '{t}' for argument '{name}' but got a tensor with "
                               f"{value.numel()} elements")
        return kind(value.item())
    if t == Bool and isinstance(value, (int, float)):
        return bool(value)  # any number is a bool argument by its truth, as torch's binding casts it
    if t == Bool and not isinstance(value, bool) or t == Int and not isinstance(value, int):
        raise _mismatch(value, t, name)  # (a bool is an int argument of 0 or 1, as torch's binding casts it)
    if not isinstance(value, (int, float, complex)) or isinstance(value, complex) and t != Complex:
        raise _mismatch(value, t, name)
    if t == Int and _tracer[0] is not None and not isinstance(value, bool):
        return value  # (a size read during a trace stays one, so the trace records where it came from)
    return kind(value)


def _mismatch(value, t: Type, name: str) -> RuntimeError:
    # (torch names a tensor type without the dtype and dims a trace gave it)
    expected = re.sub(r"Tensor\([^()]*\)", "Tensor", str(t))
    return RuntimeError(f"Expected a value of type '{expected}' for argument '{name}' but instead found type "
                        f"'{type(value).__name__}'.")


# torch prints a Union's members in the order of their type kinds (c10's TypeKind), not as written
_KIND_ORDER = {EnumType: 1, TensorType: 3, TupleType: 5, ListType: 6, DictType: 7}
_SCALAR_ORDER = {Float: 9, Complex: 10, Int: 14, NoneType: 15, Str: 16, Bool: 19, DeviceT: 22}


def union_name(t: UnionType | OptionalType) -> str:
    """A Union (an Optional of one included: its None last) as torch's messages write it."""
    options = t.options if isinstance(t, UnionType) else (
        (*t.elem.options, NoneType) if isinstance(t.elem, UnionType) else (t.elem, NoneType))

    def order(option):
        return _SCALAR_ORDER.get(option, _KIND_ORDER.get(type(option), 25))
    return f"Union[{', '.join(_member_name(o) for o in sorted(options, key=order))}]"


def _member_name(option: Type) -> str:
    """A Union member as torch's messages write it (an Enum by its class's qualified name)."""
    from .module_types import torch_qualified_name

    if option == NoneType:
        return "NoneType"
    if isinstance(option, EnumType) and option.name in ENUM_CLASSES:
        return torch_qualified_name(ENUM_CLASSES[option.name])
    return str(option)


def value_type_name(value) -> str:
    """The TorchScript type torch infers for a Python argument, as its errors name it."""
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, enum.Enum):
        return type(value).__qualname__
    if isinstance(value, list):
        return f"List[{value_type_name(value[0]) if value else 'Tensor'}]"
    if isinstance(value, tuple):
        return f"Tuple[{', '.join(value_type_name(v) for v in value)}]"
    if isinstance(value, dict):
        key, item = next(iter(value.items()), ("", None))
        return f"Dict[{value_type_name(key)}, {value_type_name(item)}]" if value else "Dict[str, Tensor]"
    return {type(None): "NoneType"}.get(type(value), type(value).__name__)


def _raise(error: Exception):
    raise error

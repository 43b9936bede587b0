"""Run-time type tests: whether a runtime value (numpy array, Python number, list, ...) is of an IR
type, for isinstance() on Union, Optional and Any values in scripted code."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from scriptc.ir.parser import parse_type
from scriptc.types import (
    EnumType,
    EnumValue,
    Any_,
    Bool,
    Complex,
    DeviceT,
    DictType,
    DType,
    Float,
    Int,
    ListType,
    NoneType,
    ObjectType,
    OptionalType,
    Str,
    TensorType,
    TupleType,
    Type,
    UnionType,
    device,
    dtype,
)

from .objects import ScriptObject


def value_has_type(value, type_text: str) -> bool:
    """isinstance(value, type) for a type in its IR text form (checked when the graph was verified).
    Containers are judged by their items (an empty list is a list of anything)."""
    return _has_type(value, _parsed(type_text))


_parsed = lru_cache(maxsize=256)(parse_type)


def _has_type(value, t: Type) -> bool:
    if t == Any_:
        return True
    if isinstance(t, UnionType):
        return any(_has_type(value, o) for o in t.options)
    if isinstance(t, OptionalType):
        return value is None or _has_type(value, t.elem)
    if t == NoneType:
        return value is None
    if isinstance(t, TensorType):
        return isinstance(value, np.ndarray) or hasattr(value, "_data") and hasattr(value, "grad_fn")
    if t == Bool:
        return isinstance(value, (bool, np.bool_))
    if t == Int:
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if t == Float:
        return isinstance(value, (float, np.floating))
    if t == Complex:
        return isinstance(value, complex)
    if t == Str:
        return isinstance(value, str)
    if t == DeviceT:
        return isinstance(value, device)
    if t == DType:
        return isinstance(value, dtype)
    if isinstance(t, ListType):
        return isinstance(value, list) and all(_has_type(v, t.elem) for v in value)
    if isinstance(t, TupleType):
        return isinstance(value, tuple) and (not t.elems or len(value) == len(t.elems) and all(
            _has_type(v, e) for v, e in zip(value, t.elems)))
    if isinstance(t, DictType):
        return isinstance(value, dict) and all(_has_type(v, t.value) for v in value.values())
    if isinstance(t, ObjectType):
        return isinstance(value, ScriptObject) and value.class_name == t.name
    if isinstance(t, EnumType):
        return isinstance(value, EnumValue) and value.enum == t.name
    return False

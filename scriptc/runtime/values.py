"""Run-time type tests: whether a runtime value (numpy array, Python number, list, ...) is of an IR
type, for isinstance() on Union, Optional and Any values in scripted code."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from scriptc.ops.schema import SchemaError, parse_type
from scriptc.types import (
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


@lru_cache(maxsize=256)
def _parsed(text: str) -> Type | str:
    try:
        return parse_type(text)
    except SchemaError:
        return text  # an Object(...) or Enum(...) type, matched by name


def value_has_type(value, type_text: str) -> bool:
    """isinstance(value, type) for a type in its IR text form. Containers are judged by their items
    (an empty list is a list of anything)."""
    t = _parsed(type_text)
    if isinstance(t, str):
        if isinstance(value, ScriptObject):
            return t == f"Object({value.class_name})"
        return isinstance(value, EnumValue) and t.startswith(f"Enum({value.enum},")
    return _has_type(value, t)


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
    return False

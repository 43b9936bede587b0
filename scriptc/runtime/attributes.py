"""A module's plain attributes (numbers, strings, tensors, and lists, tuples and dicts of them) in an
archive's manifest: JSON with the attribute's IR type beside it, so a Dict[int, float] keeps its key
type. Tensors are stored with the weights; the manifest refers to each by its key
({"tensor": key}), resolved when the archive is loaded."""

from __future__ import annotations

from typing import Any

from scriptc.errors import ArchiveError
from scriptc.ir.parser import parse_type
from scriptc.runtime.objects import ScriptObject
from scriptc.types import (
    Bool,
    DictType,
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
)

from .values import value_has_type

_SCALARS = {Int: int, Float: float, Bool: bool, Str: str}


class TensorRef:
    """A tensor of an attribute, by its key among the archive's weights (until resolve())."""

    __slots__ = ("key",)

    def __init__(self, key: str):
        self.key = key


def encode(value, t: Type, tensors: dict | None = None, key: str = "") -> dict:
    """{"type": ..., "value": ...} for the manifest; the arrays of tensors in it go into `tensors`
    under keys made from `key`. An object of a script class is {"object": class, "fields": {...}}
    (each field encoded so). ValueError for what cannot be stored."""
    if _is_object(value):
        return {"type": "Any", "value": _encode_object(value, tensors, [key, 0])}
    return {"type": str(t), "value": _encode(value, t, tensors, [key, 0])}


def _is_object(value) -> bool:
    return isinstance(value, ScriptObject) or hasattr(type(value), "_scriptc_class_name")


def _encode_object(obj, tensors, where: list) -> dict:
    if isinstance(obj, ScriptObject):
        name, fields, types = obj.class_name, obj.attributes, obj.types
    else:
        name, fields, types = type(obj)._scriptc_class_name, vars(obj), type(obj)._scriptc_field_types
    out = {}
    for field, value in fields.items():
        if _is_object(value):
            out[field] = {"type": "Any", "value": _encode_object(value, tensors, where)}
            continue
        t = types.get(field) or _type_of(value)
        out[field] = {"type": str(t), "value": _encode(value, t, tensors, where)}
    return {"object": name, "fields": out}


def _type_of(value) -> Type:
    if value is None:
        return NoneType
    for t, kind in _SCALARS.items():
        if type(value) is kind:
            return t
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return TensorType()
    raise ValueError(f"cannot tell the type of a {type(value).__name__} attribute field")


def _encode(value, t: Type, tensors, where: list) -> Any:
    if isinstance(t, UnionType):
        # the member the value has goes with it: JSON alone cannot tell a list of ints from a tuple
        for option in t.options:
            if value_has_type(value, str(option)):
                return {"member": str(option), "value": _encode(value, option, tensors, where)}
        raise ValueError(f"a {type(value).__name__} is no member of {t}")
    if isinstance(t, OptionalType):
        return None if value is None else _encode(value, t.elem, tensors, where)
    if isinstance(t, ListType):
        return [_encode(v, t.elem, tensors, where) for v in value]
    if isinstance(t, TupleType):
        return [_encode(v, e, tensors, where) for v, e in zip(value, t.elems)]
    if isinstance(t, DictType):
        return [[_encode(k, t.key, tensors, where), _encode(v, t.value, tensors, where)] for k, v in value.items()]
    if isinstance(t, TensorType) and tensors is not None and hasattr(value, "dtype"):
        key = f"{where[0]}#{where[1]}"
        where[1] += 1
        tensors[key] = getattr(value, "_data", value)
        return {"tensor": key}
    if t in _SCALARS and isinstance(value, (bool, int, float, str)):
        return value
    if t == NoneType and value is None:
        return None
    raise ValueError(f"an attribute of type {t} cannot be stored in an archive")


def decode(name: str, entry) -> Any:
    """The attribute's value from its manifest entry (a bare number, bool, string or null, or an
    encoded {"type", "value"}); ArchiveError when the entry does not match its type."""
    if entry is None or isinstance(entry, (bool, int, float, str)):
        return entry
    if not isinstance(entry, dict) or set(entry) != {"type", "value"} or not isinstance(entry["type"], str):
        raise ArchiveError(f"manifest.json: attribute {name!r} must be a number, bool, string, null or "
                           "{\"type\", \"value\"}")
    try:
        return _decode(entry["value"], parse_type(entry["type"]))
    except (TypeError, ValueError) as exc:  # (the type's ParseError is a ValueError)
        raise ArchiveError(f"manifest.json: attribute {name!r} does not match its type {entry['type']!r}: "
                           f"{exc}") from None


def resolve(value, weights: dict) -> Any:
    """An attribute's value with its TensorRefs replaced by the loaded arrays."""
    if isinstance(value, ScriptObject):
        value.attributes = {k: resolve(v, weights) for k, v in value.attributes.items()}
        return value
    if isinstance(value, TensorRef):
        if value.key not in weights:
            raise ArchiveError(f"manifest.json: attribute tensor {value.key!r} is not among the weights")
        return weights[value.key]
    if isinstance(value, list):
        return [resolve(v, weights) for v in value]
    if isinstance(value, tuple):
        return tuple(resolve(v, weights) for v in value)
    if isinstance(value, dict):
        return {k: resolve(v, weights) for k, v in value.items()}
    return value


def _decode(data, t: Type) -> Any:
    if isinstance(data, dict) and set(data) == {"object", "fields"} and isinstance(data["fields"], dict):
        return ScriptObject(str(data["object"]), {k: decode(k, v) for k, v in data["fields"].items()})
    if isinstance(t, TensorType) and isinstance(data, dict) and set(data) == {"tensor"} and \
            isinstance(data["tensor"], str):
        return TensorRef(data["tensor"])
    if isinstance(t, OptionalType):
        return None if data is None else _decode(data, t.elem)
    if isinstance(t, UnionType) and isinstance(data, dict) and set(data) == {"member", "value"}:
        member = parse_type(str(data["member"]))
        if member not in t.options:
            raise TypeError(f"{member} is no member of {t}")
        return _decode(data["value"], member)
    if isinstance(t, ListType) and isinstance(data, list):
        return [_decode(v, t.elem) for v in data]
    if isinstance(t, TupleType) and isinstance(data, list) and len(data) == len(t.elems):
        return tuple(_decode(v, e) for v, e in zip(data, t.elems))
    if isinstance(t, DictType) and isinstance(t.key, TensorType):
        raise TypeError("a dict attribute's keys cannot be tensors")
    if isinstance(t, DictType) and isinstance(data, list) and all(isinstance(p, list) and len(p) == 2 for p in data):
        return {_decode(k, t.key): _decode(v, t.value) for k, v in data}
    if t in _SCALARS and isinstance(data, (bool, int, float, str)):
        return _SCALARS[t](data)
    if t == NoneType and data is None:
        return None
    raise TypeError(f"{data!r} is not a {t}")

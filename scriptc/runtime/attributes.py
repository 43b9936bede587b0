"""A module's plain attributes (numbers, strings, and lists, tuples and dicts of them) in an archive's
manifest: JSON with the attribute's IR type beside it, so a Dict[int, float] keeps its key type."""

from __future__ import annotations

from typing import Any

from scriptc.errors import ArchiveError
from scriptc.ops.schema import SchemaError, parse_type
from scriptc.types import Bool, DictType, Float, Int, ListType, NoneType, OptionalType, Str, TupleType, Type

_SCALARS = {Int: int, Float: float, Bool: bool, Str: str}


def encode(value, t: Type) -> dict:
    """{"type": ..., "value": ...} for the manifest; ValueError for what JSON cannot hold (tensors)."""
    return {"type": str(t), "value": _encode(value, t)}


def _encode(value, t: Type) -> Any:
    if isinstance(t, OptionalType):
        return None if value is None else _encode(value, t.elem)
    if isinstance(t, ListType):
        return [_encode(v, t.elem) for v in value]
    if isinstance(t, TupleType):
        return [_encode(v, e) for v, e in zip(value, t.elems)]
    if isinstance(t, DictType):
        return [[_encode(k, t.key), _encode(v, t.value)] for k, v in value.items()]
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
    except (SchemaError, TypeError, ValueError) as exc:
        raise ArchiveError(f"manifest.json: attribute {name!r} does not match its type {entry['type']!r}: "
                           f"{exc}") from None


def _decode(data, t: Type) -> Any:
    if isinstance(t, OptionalType):
        return None if data is None else _decode(data, t.elem)
    if isinstance(t, ListType) and isinstance(data, list):
        return [_decode(v, t.elem) for v in data]
    if isinstance(t, TupleType) and isinstance(data, list) and len(data) == len(t.elems):
        return tuple(_decode(v, e) for v, e in zip(data, t.elems))
    if isinstance(t, DictType) and isinstance(data, list) and all(isinstance(p, list) and len(p) == 2 for p in data):
        return {_decode(k, t.key): _decode(v, t.value) for k, v in data}
    if t in _SCALARS and isinstance(data, (bool, int, float, str)):
        return _SCALARS[t](data)
    if t == NoneType and data is None:
        return None
    raise TypeError(f"{data!r} is not a {t}")

"""Dicts in scripted code: d[k], `in`, del, len, iteration and every dict method TorchScript has.
Keys are str, int, float, bool, complex or Tensor (tensors are keys by identity)."""

from __future__ import annotations

from scriptc.types import Bool, DictType, Int, ListType, NoneType, OptionalType, TupleType

from .pyvalues import fixed, python_op


class TensorKey:
    """A tensor as a dict key: hashed and compared by identity, as TorchScript keys tensors."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    def __hash__(self) -> int:
        return id(self.tensor)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorKey) and other.tensor is self.tensor


def key_of(value):
    """A value as the dict key that stands for it."""
    return TensorKey(value) if hasattr(value, "shape") and hasattr(value, "dtype") and \
        not isinstance(value, (int, float, complex, bool)) else value


def value_of_key(key):
    return key.tensor if isinstance(key, TensorKey) else key


def _dict(t) -> DictType:
    if not isinstance(t, DictType):
        raise TypeError(f"not a dict: {t}")
    return t


def _getitem(d, key):
    try:
        return d[key_of(key)]
    except KeyError:
        raise KeyError(f"KeyError: {key}") from None


def _setitem(d, key, value):
    d[key_of(key)] = value


def _delitem(d, key):
    try:
        del d[key_of(key)]
    except KeyError:
        raise KeyError(f"KeyError: {key}") from None


def _pop(d, key, *default):
    return d.pop(key_of(key), *default) if default else _popped(d, key)


def _popped(d, key):
    value = _getitem(d, key)
    del d[key_of(key)]
    return value


def _popitem(d):
    """TorchScript's dict.popitem(): the first item inserted (Python's takes the last)."""
    if not d:
        raise KeyError("popitem(): dictionary is empty")
    key = next(iter(d))
    return value_of_key(key), d.pop(key)


def _setdefault(d, key, default):
    return d.setdefault(key_of(key), default)


def _from_pairs(pairs):
    return {key_of(k): v for k, v in pairs}


def _value_or(d, default):
    t = _dict(d)
    return t.value if default != NoneType else OptionalType(t.value)


python_op("len.dict(self: Dict[Any, Any]) -> int", len, fixed(Int))
python_op("getitem.dict(self: Dict[Any, Any], key: Any) -> Any", _getitem, lambda d, k: _dict(d).value)
python_op("setitem.dict(self: Dict[Any, Any], key: Any, value: Any) -> None", _setitem, fixed(NoneType),
          mutates=("self",))
python_op("delitem.dict(self: Dict[Any, Any], key: Any) -> None", _delitem, fixed(NoneType), mutates=("self",))
python_op("contains.dict(self: Dict[Any, Any], key: Any) -> bool", lambda d, k: key_of(k) in d, fixed(Bool))
python_op("keys.dict(self: Dict[Any, Any]) -> Any", lambda d: [value_of_key(k) for k in d],
          lambda d: ListType(_dict(d).key))
python_op("values.dict(self: Dict[Any, Any]) -> Any", lambda d: list(d.values()), lambda d: ListType(_dict(d).value))
python_op("items.dict(self: Dict[Any, Any]) -> Any", lambda d: [(value_of_key(k), v) for k, v in d.items()],
          lambda d: ListType(TupleType((_dict(d).key, _dict(d).value))))
python_op("get.dict(self: Dict[Any, Any], key: Any, default: Any = None) -> Any",
          lambda d, k, default: d.get(key_of(k), default), lambda d, k, default: _value_or(d, default))
python_op("setdefault.dict(self: Dict[Any, Any], key: Any, default: Any = None) -> Any", _setdefault,
          lambda d, k, default: _value_or(d, default), mutates=("self",))
python_op("pop.dict(self: Dict[Any, Any], key: Any) -> Any", _pop, lambda d, k: _dict(d).value, mutates=("self",))
python_op("pop.dict_default(self: Dict[Any, Any], key: Any, default: Any) -> Any", _pop,
          lambda d, k, default: _value_or(d, default), mutates=("self",))
python_op("popitem.dict(self: Dict[Any, Any]) -> Any", _popitem,
          lambda d: TupleType((_dict(d).key, _dict(d).value)), mutates=("self",))
python_op("update.dict(self: Dict[Any, Any], other: Dict[Any, Any]) -> None", dict.update, fixed(NoneType),
          mutates=("self",))
python_op("clear.dict(self: Dict[Any, Any]) -> None", dict.clear, fixed(NoneType), mutates=("self",))
python_op("copy.dict(self: Dict[Any, Any]) -> Any", dict.copy, lambda d: _dict(d))
python_op("dict.list(pairs: List[Any]) -> Any", _from_pairs, lambda pairs: DictType(*pairs.elem.elems),
          "dict() of a list of (key, value) tuples.")

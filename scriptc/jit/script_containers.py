"""torch.jit.script of a list or a dict: a ScriptList / ScriptDict, a typed container with reference
semantics across the Python/TorchScript boundary - passed to a scripted function that mutates it,
the caller sees the change. Items are checked against the container's type (a TypeError, as
torch's binding raises, for one that does not fit)."""

from __future__ import annotations

from typing import Any

from scriptc.types import Bool, DictType, Float, Int, ListType, Str, TensorType, Type

# item types the runtime holds as Python holds them: a container of them is handed over as it is
_PLAIN = (Int, Float, Bool, Str)


class SharedList(list):
    """A ScriptList's items: handed to scripted code as this very list."""


class SharedDict(dict):
    """A ScriptDict's items: handed to scripted code as this very dict."""


def shares_items(t: Type) -> bool:
    """Whether a container of type `t` reaches scripted code as its own items (no conversion)."""
    if isinstance(t, ListType):
        return t.elem in _PLAIN
    return isinstance(t, DictType) and t.key in _PLAIN and t.value in _PLAIN


def _checked(value, t: Type, what: str):
    from .arguments import convert

    try:
        return convert(value, t, what)
    except RuntimeError as exc:
        raise TypeError(str(exc)) from None


def _render(value) -> str:
    from scriptc.ops.strings import render

    return render(value)


class _ScriptContainer:
    """What ScriptList and ScriptDict share: their items in `_items`, iterated over a snapshot of them."""

    _items: list | dict

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self):
        return iter(list(self._items))


class ScriptList(_ScriptContainer):
    """What torch.jit.script returns for a list (torch._C.ScriptList)."""

    def __init__(self, items: list, t: ListType):
        self._type = t
        self._items = SharedList(_checked(v, t.elem, "value") for v in items)

    def _item(self, value):
        return _checked(value, self._type.elem, "value")

    def __getitem__(self, index):
        return ScriptList(self._items[index], self._type) if isinstance(index, slice) else self._items[index]

    def __setitem__(self, index, value) -> None:
        if isinstance(index, slice):
            values = [self._item(v) for v in value]
            if len(range(*index.indices(len(self._items)))) != len(values):
                raise RuntimeError("Left and right hand size of slice assignment have different sizes")
            self._items[index] = values
        else:
            self._items[index] = self._item(value)

    def __delitem__(self, index) -> None:
        del self._items[index]

    def __contains__(self, value) -> bool:
        return self._item(value) in self._items

    def __repr__(self) -> str:
        return _render(list(self._items))

    def append(self, value) -> None:
        self._items.append(self._item(value))

    def extend(self, values) -> None:
        self._items.extend([self._item(v) for v in values])

    def insert(self, index: int, value) -> None:
        self._items.insert(index, self._item(value))

    def pop(self, index: int = -1):
        return self._items.pop(index)

    def remove(self, value) -> None:
        self._items.remove(self._item(value))

    def count(self, value) -> int:
        return self._items.count(self._item(value))

    def clear(self) -> None:
        self._items.clear()


class ScriptDict(_ScriptContainer):
    """What torch.jit.script returns for a dict (torch._C.ScriptDict)."""

    def __init__(self, items: dict, t: DictType):
        self._type = t
        self._items = SharedDict((_checked(k, t.key, "key"), _checked(v, t.value, "value")) for k, v in items.items())

    def _key(self, key, error=TypeError):
        try:
            return _checked(key, self._type.key, "key")
        except TypeError as exc:
            raise error(str(exc)) from None

    def __getitem__(self, key):
        return self._items[self._key(key, KeyError)]

    def __setitem__(self, key, value) -> None:
        self._items[self._key(key)] = _checked(value, self._type.value, "value")

    def __delitem__(self, key) -> None:
        del self._items[self._key(key)]

    def __contains__(self, key) -> bool:
        return self._key(key, KeyError) in self._items

    def __repr__(self) -> str:
        return _render(dict(self._items))

    def keys(self):
        return list(self._items.keys())

    def items(self):
        return list(self._items.items())


def script_container(value: list | dict, type_hint: Any = None) -> ScriptList | ScriptDict:
    """torch.jit.script(a list or dict): its type from `type_hint` or from its items (an empty list
    holds Tensors, an empty dict maps str to Tensor, as torch infers them)."""
    from .frontend.compile.modules import container_type_of
    from .frontend.compile.types import python_type

    if type_hint is not None:
        t = python_type(type_hint)
    elif isinstance(value, list):
        t = container_type_of(value, None) if value else ListType(TensorType())
    else:
        t = container_type_of(value, None) if value else DictType(Str, TensorType())
    if isinstance(value, list) and isinstance(t, ListType) and t.elem is not None:
        return ScriptList(value, t)
    if isinstance(value, dict) and isinstance(t, DictType) and t.key is not None and t.value is not None:
        return ScriptDict(value, t)
    raise TypeError(f"Unable to infer type of {type(value).__name__} {_render(value)} for torch.jit.script")

"""The containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict, as torch.nn's."""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections import abc as container_abcs
from itertools import chain
from typing import Any, Iterable, Iterator

from scriptc.tensors import Tensor

from .module import Module, Parameter

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _checked_index(index, length: int) -> int:
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length


def _renumber(modules: OrderedDict) -> OrderedDict:
    return OrderedDict((str(i), m) for i, m in enumerate(modules.values()))


def _check_pairs(items, owner: str) -> None:
    for j, item in enumerate(items):
        if not isinstance(item, container_abcs.Iterable):
            raise TypeError(f"{owner} update sequence element #{j} should be Iterable; is{type(item).__name__}")
        if len(item) != 2:
            raise ValueError(f"{owner} update sequence element #{j} has length {len(item)}; 2 is required")


class Sequential(Module):
    """Modules applied in order: `Sequential(Linear(4, 8), ReLU())`; keys are "0", "1", ... (or an OrderedDict's)."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.__class__(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_checked_index(index, len(self))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, list(self._modules)[_checked_index(index, len(self))], module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice) else [keys[_checked_index(index, len(keys))]]):
            delattr(self, key)
        self._modules = _renumber(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def __add__(self, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {str(type(other))} is "
                             "given.")
        combined = Sequential()
        for layer in chain(self, other):
            combined.append(layer)
        return combined

    def __iadd__(self, other) -> "Sequential":
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {str(type(other))} is "
                             "given.")
        return self.extend(list(other))

    def __mul__(self, other: int) -> "Sequential":
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        combined = Sequential()
        for _ in range(other):
            for module in self:
                combined.append(module)
        return combined

    __rmul__ = __mul__

    def __imul__(self, other: int) -> "Sequential":
        repeated = self * other
        self._modules = repeated._modules
        return self

    def append(self, module: Module) -> "Sequential":
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        items = list(self._modules.values())
        items.insert(index + n if index < 0 else index, module)
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(items))
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        for layer in sequential:
            self.append(layer)
        return self

    def pop(self, key) -> Module:
        value = self[key]
        del self[key]
        return value

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules that registers each one (`self.layers = ModuleList([...])`)."""

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self.__class__(list(self._modules.values())[index])
        return self._modules[str(_checked_index(index, len(self._modules)))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_checked_index(index, len(self._modules))), module)

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            for k in range(len(self._modules))[index]:
                delattr(self, str(k))
        else:
            delattr(self, str(_checked_index(index, len(self._modules))))
        self._modules = _renumber(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        combined = ModuleList()
        for i, module in enumerate(chain(self, other)):
            combined.add_module(str(i), module)
        return combined

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def __repr__(self) -> str:
        """Runs of identical children print once, as `(0-5): 6 x Layer(...)`."""
        reprs = [repr(item) for item in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list] = []
        for i, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = []
        for start, end, text in runs:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append((head + text).replace("\n", "\n  "))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index: int, module: Module) -> None:
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> "ModuleList":
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def pop(self, key) -> Module:
        value = self[key]
        del self[key]
        return value


class ModuleDict(Module):
    """Modules by name, registered in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        if not isinstance(modules, container_abcs.Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got " +
                            type(modules).__name__)
        if isinstance(modules, (OrderedDict, ModuleDict, container_abcs.Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        modules = list(modules)
        _check_pairs(modules, "ModuleDict")
        for key, module in modules:
            self[key] = module


def _describe(value: Any, type_name) -> str:
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        return f"{kind} containing: [{type_name(value)} of size {'x'.join(str(s) for s in value.size())}]"
    return "Object of type: " + type(value).__name__


class ParameterList(Module):
    """A list of parameters that registers each one; plain tensors become Parameters."""

    def __init__(self, values: Iterable[Any] | None = None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def __getitem__(self, index):
        if isinstance(index, slice):
            out = self.__class__()
            for i in range(*index.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, str(_checked_index(index, len(self))))

    def __setitem__(self, index: int, param: Any) -> None:
        name = str(_checked_index(index, len(self)))
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, name, param)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters: Iterable[Any]) -> "ParameterList":
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value: Any) -> "ParameterList":
        index = len(self)
        self._size += 1
        self[index] = value
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        if not isinstance(values, container_abcs.Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p, lambda t: t.dtype)}" for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """Parameters by name, in insertion order; plain tensors become Parameters."""

    def __init__(self, parameters: Any = None):
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key: str) -> str:
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, self._key_to_attr(key), value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> "ParameterDict":
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple:
        key = next(reversed(self._keys))
        value = self[key]
        del self[key]
        return key, value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> "ParameterDict":
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters: Any) -> None:
        if not isinstance(parameters, container_abcs.Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got " +
                            type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, container_abcs.Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = list(parameters)
            _check_pairs(pairs, "ParameterDict")
        for key, value in pairs:
            self[key] = value

    def __or__(self, other: "ParameterDict") -> "ParameterDict":
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: "ParameterDict") -> "ParameterDict":
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: "ParameterDict") -> "ParameterDict":
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p, lambda t: t.type())}" for k, p in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")

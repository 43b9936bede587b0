"""The values a scripted module's graphs run on: Python values (Tensors, script-class instances, containers)
as the runtime's (arrays, ScriptObjects) and back, and a module's attributes as the runtime value whose
attribute writes reach the Python module."""

from __future__ import annotations

from typing import Any

import numpy as np

from scriptc.jit.script_containers import SharedDict, SharedList
from scriptc.ops.dicts import key_of, value_of_key
from scriptc.runtime import parallel
from scriptc.runtime.interpreter import ModuleValue
from scriptc.runtime.objects import ScriptObject
from scriptc.tensors import Tensor, wrap
from scriptc.types import ModuleType

from .arguments import SCRIPT_CLASSES, python_value


def to_runtime(value) -> Any:
    """Tensors (also inside tuples, lists and dicts) as numpy arrays for the runtime; instances of
    script classes as runtime ScriptObjects."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (SharedList, SharedDict)):  # a ScriptList's/ScriptDict's items, shared as they are
        return value
    if hasattr(type(value), "_scriptc_class_name"):
        return script_object(value, to_runtime)
    if isinstance(value, tuple):
        return tuple(to_runtime(v) for v in value)
    if isinstance(value, list):
        return [to_runtime(v) for v in value]
    if isinstance(value, dict):  # tensor keys by identity, as the runtime's dict ops key them
        return {key_of(to_runtime(k)): to_runtime(v) for k, v in value.items()}
    return value


def script_object(value, convert) -> ScriptObject:
    """A script class's Python instance as the runtime's ScriptObject (attributes through `convert`)."""
    cls = type(value)
    return ScriptObject(cls._scriptc_class_name, {k: convert(v) for k, v in vars(value).items()},
                        getattr(cls, "_scriptc_field_types", None))


def eager_value(value) -> Any:
    """A value for an autograd run: tensors as they are, script-class instances as ScriptObjects."""
    if hasattr(type(value), "_scriptc_class_name"):
        return script_object(value, eager_value)
    if isinstance(value, list):
        return [eager_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(eager_value(v) for v in value)
    if isinstance(value, dict):
        return {k: eager_value(v) for k, v in value.items()}
    return value


def from_runtime(value, arguments: dict | None = None) -> Any:
    """Arrays coming back from the runtime as Tensors (recursively). An array that is an argument's own
    array comes back as that argument Tensor (`arguments`: by_array of the call's arguments), as torch
    returns the very tensor a scripted function was given (`x += 1; return x`)."""
    if isinstance(value, np.ndarray):
        given = arguments.get(id(value)) if arguments else None
        return given if given is not None and given._data is value else wrap(value)
    if isinstance(value, LiveModuleValue):  # a submodule scripted code returned (self.layers[::2])
        return value.module
    if isinstance(value, tuple):
        return tuple(from_runtime(v, arguments) for v in value)
    if isinstance(value, list):
        return [from_runtime(v, arguments) for v in value]
    if isinstance(value, dict):
        return {from_runtime(value_of_key(k), arguments): from_runtime(v, arguments) for k, v in value.items()}
    if isinstance(value, parallel.Task):  # a Future (or Await) a scripted function returns: its result
        from scriptc.futures import _completed
        return _completed(from_runtime(value.wait()[0], arguments))
    return python_value(value)


# ops whose effects last past the node: a call running them is a scripted_call
def _holds_tensors(value) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensors(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensors(k) or _holds_tensors(v) for k, v in value.items())
    return False


def _kept(original, value):
    """`original` where the runtime's `value` is still its data (or a container of such), else `value` as
    a Python value."""
    if isinstance(original, Tensor) and value is original._data:
        return original
    if isinstance(original, list) and isinstance(value, list) and len(original) == len(value) or \
            isinstance(original, tuple) and isinstance(value, tuple) and len(original) == len(value):
        kept = [_kept(o, v) for o, v in zip(original, value)]
        return original if all(k is o for k, o in zip(kept, original)) else type(original)(kept)
    return from_runtime(value)


class _LiveObject:
    """A script-class attribute's runtime object: one for autograd and plain calls (its state carries
    across both and is what a save writes), its tensors as Tensors or arrays for the kind of call
    running - converted only when that kind changes."""

    __slots__ = ("source", "obj", "eager")

    def __init__(self, source, eager: bool):
        self.source, self.eager = source, eager
        self.obj = script_object(source, eager_value if eager else to_runtime)

    def in_form(self, eager: bool) -> ScriptObject:
        if eager != self.eager:
            _convert_object(self.obj, eager)
            self.eager = eager
        return self.obj


def _convert_object(obj: ScriptObject, eager: bool) -> ScriptObject:
    obj.attributes = {k: _in_form(v, eager) for k, v in obj.attributes.items()}
    return obj


def _in_form(value, eager: bool):
    if isinstance(value, ScriptObject):
        return _convert_object(value, eager)
    if isinstance(value, Tensor) and not eager:
        return value._data
    if isinstance(value, np.ndarray) and eager:
        return wrap(value)
    if isinstance(value, list):
        return [_in_form(v, eager) for v in value]
    if isinstance(value, tuple):
        items = [_in_form(v, eager) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _in_form(v, eager) for k, v in value.items()}
    return value


class LiveModuleValue(ModuleValue):
    """A module's runtime value whose attribute writes (prim::SetAttr) reach the Python module too."""

    __slots__ = ("module", "copies", "objects", "eager")

    def __init__(self, attributes, path: str, module):
        super().__init__(attributes, path)
        self.module = module
        self.copies: list[tuple[Any, Any]] = []  # (the module's list/dict, the runtime's copy of it)
        self.objects: dict = {}
        self.eager = False

    @classmethod
    def of(cls, module, path: str, attributes, eager: bool, objects: dict | None = None) -> "LiveModuleValue":
        """`objects`: the runtime objects made for script-class attributes, kept across calls (their
        state lives on in them, as in a TorchScript module) while the Python attribute is unchanged."""
        objects = {} if objects is None else objects
        values: dict[str, Any] = {}
        for store in (module._parameters, module._buffers):
            for name, t in store.items():
                if t is not None:
                    values[name] = t if eager else t._data
        values["training"] = module.training
        copies = []
        for owner, name in attributes:
            if owner == path:
                value = getattr(module, name)
                if isinstance(attributes[(owner, name)], ModuleType):  # a jit.load'ed module held as an attribute
                    values[name] = value._module_value(eager)
                elif hasattr(type(value), "_scriptc_class_name"):
                    key = (path, name)
                    if key not in objects or objects[key].source is not value:
                        objects[key] = _LiveObject(value, eager)
                    values[name] = objects[key].in_form(eager)
                elif eager or not _holds_tensors(value):
                    values[name] = value  # shared: the graph's in-place writes are the module's
                else:
                    values[name] = to_runtime(value)
                    if isinstance(value, (list, dict)):
                        copies.append((value, values[name]))
        for name, child in module._modules.items():
            if child is not None and name not in values:  # (a jit.load'ed child is there already)
                values[name] = cls.of(child, f"{path}.{name}" if path else name, attributes, eager, objects)
        made = cls(values, path, module)
        made.copies, made.objects, made.eager = copies, objects, eager
        return made

    def write_back(self) -> None:
        """Copies the runtime's containers that held arrays back into the module's lists and dicts
        (an element the graph did not replace stays the module's own object: a parameter in a list
        stays that parameter)."""
        for original, copy in self.copies:
            if isinstance(original, list):
                original[:] = [_kept(original[i] if i < len(original) else None, v) for i, v in enumerate(copy)]
            else:
                merged = {k: _kept(original.get(k), v) for k, v in copy.items()}
                original.clear()
                original.update(merged)
        for value in self.attributes.values():
            if isinstance(value, LiveModuleValue):
                value.write_back()

    def set(self, name: str, value) -> None:
        super().set(name, value)
        cls = SCRIPT_CLASSES.get(value.class_name) if isinstance(value, ScriptObject) else None
        if cls is None:
            setattr(self.module, name, from_runtime(value))
            return
        # an object scripted code made (torchvision's MultiScaleRoIAlign sets self.map_levels = LevelMapper(...)):
        # the Python module gets an instance of its class, so eager calls keep working, and later scripted
        # calls keep the runtime object itself, with whatever state it gathers
        instance = cls.__new__(cls)
        vars(instance).update({k: from_runtime(v) for k, v in value.attributes.items()})
        live = _LiveObject.__new__(_LiveObject)
        live.source, live.obj, live.eager = instance, value, self.eager
        self.objects[(self.path, name)] = live
        setattr(self.module, name, instance)


def same_value(old, new) -> bool:
    """Whether an attribute keeps its value (a value that cannot say so counts as changed)."""
    if old is new:
        return True
    try:
        return type(old) is type(new) and bool(old == new)
    except Exception:  # noqa: BLE001 - an == that raises or gives no single bool (arrays)
        return False


# the nn.Module fields that hold its structure and hooks (shared as they are), not attribute values
_STRUCTURE = frozenset({"_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks",
                        "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called",
                        "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
                        "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_non_persistent_buffers_set"})


def module_state_copy(module, copy_values: bool = True):
    """`module`'s tree with state of its own, as torch.jit.script copies a module's state into the
    scripted one: its own submodules, training flags and attribute values (attribute_copy), sharing
    the parameter and buffer (and any other) tensors. A submodule held by two owners is copied for
    each (torch scripts one module per attribute: `s.a is s.b` is False, their parameters shared).
    Compiled children (scripted, traced, jit.load'ed) stay shared. Without `copy_values`, the
    attributes hold the values they held (as jit.freeze's clone: its attributes are its own, their
    lists the scripted module's)."""
    return _copy_tree(module, {}, attribute_copy if copy_values else lambda value: value)


def _copy_tree(module, ancestors: dict, copy_value):
    from .loaded_module import LoadedModule
    from .module import ScriptModule

    if id(module) in ancestors or isinstance(module, (ScriptModule, LoadedModule)):
        return ancestors.get(id(module), module)  # (a module that holds itself holds its copy)
    clone = object.__new__(type(module))
    ancestors[id(module)] = clone
    state = {}
    for key, value in vars(module).items():
        if key == "_modules":
            value = type(value)((name, None if child is None else _copy_tree(child, ancestors, copy_value))
                                for name, child in value.items())
        elif key in ("_parameters", "_buffers"):
            value = type(value)(value)
        elif key not in _STRUCTURE:
            value = copy_value(value)
        state[key] = value
    vars(clone).update(state)
    del ancestors[id(module)]
    return clone


def attribute_copy(value, memo: dict | None = None):
    """An attribute value with its containers and script-class objects copied, as torch converts a
    Python value to a scripted module's attribute and back (each attribute on its own: two attributes
    holding one list hold two copies); anything else (tensors, numbers, functions) shared."""
    memo = {} if memo is None else memo
    kind = type(value)
    if kind not in (list, dict, tuple, set) and not (isinstance(value, tuple) and hasattr(value, "_fields")) and \
            not hasattr(kind, "_scriptc_class_name"):
        return value
    if id(value) in memo:
        return memo[id(value)]
    if kind is list:
        copied = memo[id(value)] = []
        copied.extend(attribute_copy(v, memo) for v in value)
    elif kind is dict:
        copied = memo[id(value)] = {}
        copied.update((k, attribute_copy(v, memo)) for k, v in value.items())
    elif kind is set:
        copied = memo[id(value)] = set(value)
    elif isinstance(value, tuple):
        items = [attribute_copy(v, memo) for v in value]
        copied = memo[id(value)] = kind(*items) if hasattr(value, "_fields") else tuple(items)
    else:
        copied = memo[id(value)] = object.__new__(kind)
        vars(copied).update({k: attribute_copy(v, memo) for k, v in vars(value).items()})
    return copied

"""The types of scripted modules (torch's `ScriptModule._c._type()`) and torch's type sharing.

jit.script gives two modules one type when torch would share it between them: the same Python class,
the same parameter, buffer and plain attribute names with the same kinds and types (values may
differ), the same `__constants__`/`Final` values, submodules of the same types under the same names,
the same function attributes and hooks, the same `__jit_ignored_attributes__`. A traced module, a
module scripted with type sharing off and a ScriptModule subclass that defines methods per instance
get a type of their own.
"""

from __future__ import annotations

import inspect
import typing
import weakref

# Python attributes every Module has that are no part of its type (as torch's ignored_attributes)
_MODULE_INTERNALS = frozenset({
    "_version", "_parameters", "_buffers", "_non_persistent_buffers_set", "_backward_hooks",
    "_backward_pre_hooks", "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs", "_forward_hooks_always_called", "_state_dict_hooks",
    "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_modules",
    "_initializing", "dump_patches", "_is_full_backward_hook",
})


# scriptc.nn's module classes whose torch.nn.modules file is not named as the scriptc.nn file defining them
_TORCH_FILES = {"MultiheadAttention": "activation", "ChannelShuffle": "channelshuffle"}


def _torch_module_name(cls: type) -> str:
    """The module torch names a class's type after: scriptc.nn's modules are torch.nn.modules' (nn.ReLU's
    type is __torch__.torch.nn.modules.activation.ReLU, as in torch); any other class keeps its own."""
    package, _, file = cls.__module__.rpartition(".")
    if package != "scriptc.nn":
        return cls.__module__
    return f"torch.nn.modules.{_TORCH_FILES.get(cls.__qualname__, file)}"


def torch_qualified_name(cls: type) -> str:
    """A class's TorchScript type name as torch writes it: `__torch__.`, the defining module (none
    for __main__) and the class's qualified name."""
    where = "" if cls.__module__ == "__main__" else f"{_torch_module_name(cls)}."
    return f"__torch__.{where}{cls.__qualname__}".replace(".<locals>", "")


class ModuleClassType:
    """A scripted module's type. Modules that share a type get this very object, so `==` (identity)
    says whether two scripted modules share their type."""

    def __init__(self, cls: type):
        self._qualified_name = torch_qualified_name(cls)

    def name(self) -> str:
        """The class name, as torch's ClassType.name()."""
        return self._qualified_name.rsplit(".", 1)[-1]

    def qualified_name(self) -> str:
        """`__torch__.` and the Python class's module and qualified name."""
        return self._qualified_name

    def __repr__(self) -> str:
        return self._qualified_name


# one type per distinct key, kept while a scripted module holds it
_SHARED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def module_type(module, share_types: bool = True) -> ModuleClassType:
    """The type jit.script gives `module`: shared with every module scripted before it that agrees
    with it in what scripted code can see (see the module docstring), or a new one when
    `share_types` is False (and then also for its submodules)."""
    from .module import made_by_jit

    if made_by_jit(module):
        return module._module_type
    if not share_types:
        _type_key(module, share_types=False)  # (new types for the submodules too)
        return ModuleClassType(type(module))
    key = _type_key(module, share_types=True)
    found = _SHARED.get(key)
    if found is None:
        found = ModuleClassType(type(module))
        _SHARED[key] = found
    return found


def _type_key(module, share_types: bool) -> tuple:
    """What two modules must agree in to share a type."""
    cls = type(module)
    ignored = tuple(getattr(module, "__jit_ignored_attributes__", ()))
    parts: list = [cls, ignored]
    for kind, store in (("parameter", module._parameters), ("buffer", module._buffers)):
        parts += [(kind, name, value is None) for name, value in store.items() if name not in ignored]
    for name, child in module._modules.items():
        if name not in ignored:
            parts.append(("module", name, None if child is None else module_type(child, share_types)))
    # (a name listed as a constant that is a parameter, buffer or submodule stays that: torch warns)
    constants = [name for name in _constant_names(cls) if name not in module._parameters and
                 name not in module._buffers and name not in module._modules]
    for name in constants:
        if name not in ignored and hasattr(module, name):
            parts.append(("constant", name, _hashable(getattr(module, name))))
    for name, value in module.__dict__.items():
        if name in _MODULE_INTERNALS or name.startswith("__") or name in ignored or name in constants:
            continue
        parts.append(("attribute", name, _attribute_kind(value)))
    for hooks in (module._forward_hooks, module._forward_pre_hooks):
        parts.append(tuple(hooks.values()))
    return tuple(parts)


_CONSTANT_KINDS = "bool, float, int, str, NoneType, torch.device, torch.layout, torch.dtype, torch.qscheme"


def check_constants(module) -> None:
    """torch's TypeError for a `__constants__` / Final attribute whose value is no TorchScript constant
    (one of _CONSTANT_KINDS, or a list or tuple of them, nested)."""
    from scriptc.tensor_functions import typename
    from scriptc.types import device, dtype

    def valid(value) -> bool:
        if isinstance(value, (list, tuple)):
            return all(valid(v) for v in value)
        return value is None or isinstance(value, (bool, int, float, str, device, dtype))

    def invalid_part(value):
        if isinstance(value, (list, tuple)):
            return next(invalid_part(v) for v in value if not valid(v))
        return value

    cls = type(module)
    for name in _constant_names(cls):
        if name in module._parameters or name in module._buffers or name in module._modules or \
                not hasattr(module, name):
            continue
        value = getattr(module, name)
        if not valid(value):
            raise TypeError(f"\n'{typename(type(invalid_part(value)))}' object in attribute '{cls.__name__}.{name}' is "
                            f"not a valid constant.\nValid constants are:\n1. a nn.ModuleList\n2. a value of type "
                            f"{{{_CONSTANT_KINDS}}}\n3. a list or tuple of (2)\n")


def _constant_names(cls) -> tuple:
    """`__constants__` and the class attributes annotated Final."""
    finals = [name for name, annotation in inspect.get_annotations(cls).items()
              if annotation is typing.Final or typing.get_origin(annotation) is typing.Final]
    return tuple(dict.fromkeys([*getattr(cls, "__constants__", ()), *finals]))


def _attribute_kind(value):
    """A plain attribute's part of the type: its TorchScript type, or for a function (Python,
    scripted or builtin) the function itself."""
    from .frontend.compile.modules import container_type_of

    if callable(value) and not isinstance(value, type) and _hashable(value) is value:
        return value
    found = container_type_of(value, None)
    return str(found) if found is not None else ("unconvertible", type(value))


def _hashable(value):
    """`value` as a dict key: lists as tuples, other unhashable values by their repr."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


class ModuleHandle:
    """`scripted._c`: the handle torch's code reaches a ScriptModule's compiled side through."""

    __slots__ = ("_module",)

    def __init__(self, scripted):
        self._module = scripted

    def _type(self) -> ModuleClassType:
        """The module's type (equal for two modules exactly when they share it)."""
        return self._module._module_type

    @property
    def qualified_name(self) -> str:
        """The module type's name as torch qualifies it (`__torch__.Foo`)."""
        return self._type().qualified_name()

    def _has_method(self, name: str) -> bool:
        return name in self._module._called_methods

    def _method_names(self) -> list:
        """The compiled methods: forward, the exported ones, and those they call."""
        return list(self._module._called_methods)

    def hasattr(self, name: str) -> bool:
        return hasattr(self._module, name)

    def getattr(self, name: str):
        return getattr(self._module, name)


def check_swap(scripted, name: str, new) -> None:
    """torch's checks on `scripted.<name> = new` for a submodule: `new` must be scripted, and have
    every method of the interface the submodule is annotated with (compiled, with types the
    interface's calls fit), or else be of the submodule's own type."""
    from .frontend.compile.types import annotations_of
    from .module import made_by_jit

    if not made_by_jit(new):
        raise RuntimeError(f"Cannot re-assign modules in a ScriptModule with non-scripted module, tried to replace "
                           f"existing module '{name}': {new!r}")
    if scripted._module._modules[name] is None:
        raise RuntimeError(f"Could not cast attribute '{name}' to type NoneType: Cannot cast "
                           f"RecursiveScriptModule(original_name={type(new._module).__name__}) to None")
    interface = annotations_of(type(scripted._module)).get(name)
    if getattr(interface, "_scriptc_interface", False):
        problem = _interface_mismatch(interface, new)
        if problem is not None:
            raise RuntimeError(f"Switching submodule '{name}' to {new._module_type}: it is not compatible with "
                               f"interface __torch__.{interface.__module__}.{interface.__qualname__}: {problem}")
        return
    expected = module_type(scripted._module._modules[name])
    if new._module_type is not expected:
        raise RuntimeError(f"Expected a value of type '{expected} (a module type)' for field '{name}', but found "
                           f"'{new._module_type} (a module type)'")


def _interface_mismatch(interface, new) -> str | None:
    """Why the scripted module `new` does not implement the module interface (None: it does)."""
    from .frontend.compile import ScriptContext
    from .frontend.compile.types import assignable

    context = ScriptContext()
    for name, declared in vars(interface).items():
        if not inspect.isfunction(declared):
            continue
        if name not in new._called_methods:
            return (f"it has no compiled method '{name}' (call it from forward or mark it @torch.jit.export)")
        wanted, wanted_return = context.method_types(declared)
        given, given_return = context.method_types(getattr(type(new._module), name))
        if len(wanted) != len(given) or not all(assignable(w, g) for w, g in zip(wanted, given)):
            return f"its method '{name}' takes ({', '.join(map(str, given))}), the interface's ({', '.join(map(str, wanted))})"
        if wanted_return is not None and given_return is not None and not assignable(given_return, wanted_return):
            return f"its method '{name}' returns {given_return}, the interface's {wanted_return}"
    return None

"""User classes derived from torch.jit.ScriptModule (the legacy API): `class M(torch.jit.ScriptModule)`
with `@torch.jit.script_method` methods.

Torch builds such a module eagerly and compiles its script methods once `__init__` returns. Here the
class's body is replayed as an nn.Module class (its stand-in); `M(...)` builds a stand-in and returns
it scripted, so the instance is a ScriptModule whose compiled methods are the script methods (unlike
torch's, it is not an instance of M itself)."""

from __future__ import annotations

import sys
import types

from scriptc.nn.module import Module

from .compilation_unit import define_functions

_SKIPPED = ("__dict__", "__weakref__", "__new__", "__init_subclass__")


def script_method(fn):
    """@torch.jit.script_method: in a torch.jit.ScriptModule subclass, a method compiled with the
    module (forward, or a method callable on the scripted module like an exported one)."""
    fn._scriptc_export = True
    return fn


def construct(cls, *args, **kwargs):
    """`cls(*args, **kwargs)` for a user subclass of ScriptModule: its stand-in built, then scripted."""
    from .api import script

    return script(_stand_in(cls)(*args, **kwargs))


class _ScriptModuleStandIn(Module):
    """The base of stand-ins in place of ScriptModule: what torch.jit.ScriptModule gives a subclass's
    __init__ of its own API."""

    def define(self, src: str) -> None:
        """Compile the methods (`def name(self, ...)`) of TorchScript source `src` as this module's
        script methods; names they use resolve in the caller's scope. The module gets a class of its
        own, so its type is shared with no other module's (as in torch)."""
        frame = sys._getframe(1)
        methods = define_functions(src, {**frame.f_globals, **frame.f_locals}, f"{type(self).__name__}.define")
        cls = type(self)
        if "_scriptc_defined_methods" not in cls.__dict__:
            cls = type(cls.__name__, (cls,), {"_scriptc_defined_methods": True, "__module__": cls.__module__,
                                              "__qualname__": cls.__qualname__})
            self.__class__ = cls
        for name, fn in methods.items():
            setattr(cls, name, script_method(fn))


def _stand_in(cls) -> type:
    """An nn.Module class with the body of `cls`, derived from its bases' stand-ins (made once per class)."""
    from .module import ScriptModule

    made = cls.__dict__.get("_scriptc_stand_in")
    if made is not None:
        return made
    bases = tuple(_ScriptModuleStandIn if base is ScriptModule else _stand_in(base) if issubclass(base, ScriptModule) else base
                  for base in cls.__bases__)
    namespace = {name: value for name, value in vars(cls).items() if name not in _SKIPPED}
    stand_in = type(cls.__name__, bases, namespace)
    user_classes = {k: _stand_in(k) if k is not cls else stand_in for k in cls.__mro__
                    if issubclass(k, ScriptModule) and k is not ScriptModule}
    for name, value in namespace.items():
        rebound = _rebind(value, user_classes)
        if rebound is not value:
            setattr(stand_in, name, rebound)
    type.__setattr__(cls, "_scriptc_stand_in", stand_in)
    return stand_in


def _rebind(value, user_classes: dict):
    """`value` (a function, or a static/class method or property of one) with every reference to a user
    class - zero-argument super()'s __class__ cell, a closure over the class's name, a module global
    naming it (super(M, self)) - made to its stand-in (`user_classes` maps each to its stand-in)."""
    if isinstance(value, (staticmethod, classmethod)):
        inner = _rebind(value.__func__, user_classes)
        return value if inner is value.__func__ else type(value)(inner)
    if isinstance(value, property):
        parts = [_rebind(f, user_classes) if f is not None else None for f in (value.fget, value.fset, value.fdel)]
        return property(*parts, value.__doc__)
    if not isinstance(value, types.FunctionType):
        return value
    closure = value.__closure__
    if closure is not None:
        closure = tuple(types.CellType(user_classes[_contents(cell)]) if _contents(cell) in user_classes else cell
                        for cell in closure)
    scope = value.__globals__
    named = {name: user_classes[scope[name]] for name in value.__code__.co_names
             if isinstance(scope.get(name), type) and scope[name] in user_classes}
    if named:
        scope = {**scope, **named}
    if closure == value.__closure__ and scope is value.__globals__:
        return value
    copy = types.FunctionType(value.__code__, scope, value.__name__, value.__defaults__, closure)
    copy.__kwdefaults__ = value.__kwdefaults__
    copy.__qualname__ = value.__qualname__
    copy.__module__ = value.__module__
    copy.__annotations__ = value.__annotations__
    copy.__doc__ = value.__doc__
    copy.__dict__.update(value.__dict__)
    return copy


def _contents(cell):
    try:
        contents = cell.cell_contents
    except ValueError:  # an empty cell (a name not bound yet)
        return None
    return contents if isinstance(contents, type) else None

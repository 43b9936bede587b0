"""torch.jit's decorators and helpers, as they behave in eager Python (jit.script gives them their
scripted meaning): ignore, unused, export, _overload, _overload_method, interface, annotate,
isinstance, Attribute, Future, fork, wait, is_scripting, is_tracing,
_unwrap_optional."""

from __future__ import annotations

import contextlib
import inspect
import typing
from typing import Any, Callable, NamedTuple

from scriptc.futures import Future, _completed

_FUNCTION_OVERLOADS: dict[tuple[str, str], list] = {}
_METHOD_OVERLOADS: dict[tuple[str, str], list] = {}

def ignore(fn: Callable | None = None, drop: bool = False):
    """@torch.jit.ignore: leave this function in Python. Scripted code calls it through the
    interpreter; a module that calls it runs but cannot be saved. `ignore(drop=True)` is `unused`."""
    if fn is None:
        return unused if drop else ignore
    fn._scriptc_ignore = True
    return fn


def unused(fn: Callable):
    """@torch.jit.unused: do not compile this function or method; calling it from scripted code
    raises. Eager calls run it as usual."""
    if isinstance(fn, property):
        if fn.fget is not None:
            fn.fget._scriptc_unused = True
        return fn
    fn._scriptc_unused = True
    return fn


def _drop(fn: Callable):
    """@torch.jit._drop: leave this method out of the compiled class or module entirely, its
    signature included (it may name types TorchScript cannot read); a call of it in scripted code
    compiles and raises when it runs, as a @jit.unused method's does."""
    return unused(fn)


def export(fn: Callable):
    """@torch.jit.export: compile this method too (callable on the ScriptModule, saved with it)."""
    fn._scriptc_export = True
    return fn


def _key(fn) -> tuple[str, str]:
    return getattr(fn, "__module__", ""), getattr(fn, "__qualname__", fn.__name__)


def _overload(fn: Callable):
    """@torch.jit._overload: a typed declaration of the function defined next under the same name
    (whose body is ignored); scripted calls pick the first declaration their arguments fit."""
    _FUNCTION_OVERLOADS.setdefault(_key(fn), []).append(fn)
    return fn


def _overload_method(fn: Callable):
    """@torch.jit._overload_method: _overload for a method of a module."""
    _METHOD_OVERLOADS.setdefault(_key(fn), []).append(fn)
    return fn


def function_overloads(fn) -> list:
    """The @_overload declarations of the function `fn` (the implementation is not one of them)."""
    return [d for d in _FUNCTION_OVERLOADS.get(_key(fn), []) if d is not fn]


def method_overloads(cls, name: str) -> list:
    """The @_overload_method declarations of method `name` of class `cls`."""
    implementation = vars(cls).get(name)
    key = (cls.__module__, f"{cls.__qualname__}.{name}")
    return [d for d in _METHOD_OVERLOADS.get(key, []) if d is not implementation]


def interface(cls):
    """@torch.jit.interface: a class (usually an nn.Module) that only declares method types; a
    module attribute annotated with it may hold any module with those methods. It derives directly
    from nn.Module or from object (torch's RuntimeError otherwise)."""
    from scriptc.nn import Module

    if not inspect.isclass(cls):
        raise RuntimeError("interface must be applied to a class")
    if cls.__bases__ not in ((Module,), (object,)):
        raise RuntimeError("TorchScript interface does not support inheritance yet. Please directly inherit from "
                           "'object' or 'nn.Module'.")
    cls._scriptc_interface = True
    return cls


def annotate(the_type, the_value):
    """torch.jit.annotate(T, value): value, typed T when scripted (an empty list, None, ...)."""
    return the_value


class Attribute(NamedTuple):
    """torch.jit.Attribute(value, type): a module attribute with its type spelled out."""

    value: Any
    type: Any


class _IgnoreContextManager(contextlib.AbstractContextManager):
    """torch.jit._IgnoreContextManager(name="inp:<type>" | "out:<type>", ...): eagerly a context manager
    that does nothing; in scripted code its block runs in Python, taking the "inp" variables and
    giving back the "out" ones with their declared types."""

    def __init__(self, **kwargs):
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        return None


def fork(fn: Callable, *args, **kwargs) -> Future:
    """torch.jit.fork(fn, *args): run fn(*args) (concurrently in scripted code); wait() on the
    result gives its value."""
    return _completed(fn(*args, **kwargs))


def wait(future: Future):
    """torch.jit.wait(future): the forked call's result."""
    return future.wait()


def _awaitable(fn: Callable, *args, **kwargs):
    """torch.jit._awaitable(fn, *args): an Await whose wait runs fn(*args) (in scripted code an
    Await[T]: the call runs on an inter-op thread, as jit.fork's)."""
    from scriptc._awaits import _Await

    return _Await(fn, args, kwargs)


def _awaitable_nowait(value):
    """torch.jit._awaitable_nowait(x): an Await that already holds x."""
    from scriptc._awaits import _Await

    return _Await(None, (value,), {}, value)


def _awaitable_wait(aw):
    """torch.jit._awaitable_wait(aw): the Await's result (also of one a scripted function returned)."""
    return aw.wait()


def is_scripting() -> bool:
    """True in scripted code, False when running eagerly."""
    return False


def _check(cond, message=None) -> None:
    """torch._check: a RuntimeError (with `message`) unless `cond` holds; in scripted code too."""
    if not cond:
        raise RuntimeError(message if message is not None else "Expected cond to be True, but got False")


def is_tracing() -> bool:
    """True while jit.trace records the calling code."""
    from scriptc import tensors

    return tensors._tracer[0] is not None


def _unwrap_optional(x):
    if x is None:
        raise AssertionError("Unwrapping null optional")
    return x


def isinstance(obj, target) -> bool:  # noqa: A001 - torch.jit.isinstance shadows the builtin on purpose
    """torch.jit.isinstance(obj, List[int]): isinstance that also checks container element types.
    A bare List, Tuple, Dict or Optional is refused, as torch refuses it."""
    refusal = bare_container_refusal(target)
    if refusal is not None:
        raise RuntimeError(refusal)
    return _matches(obj, target)


def bare_container_refusal(target) -> str | None:
    """torch's message for a container type without its element types (typing.List ...), else None."""
    for bare, name in ((typing.List, "List"), (typing.Tuple, "Tuple"), (typing.Optional, "Optional")):
        if target is bare:
            return (f"Attempted to use {name} without a contained type. Please add a contained type, "
                    f"e.g. {name}[int]")
    if target is typing.Dict:
        return "Attempted to use Dict without contained types. Please add contained type, e.g. Dict[int, int]"
    return None


def _matches(obj, target) -> bool:
    import builtins

    from scriptc.tensors import Tensor

    if target is Any:
        return True
    origin = typing.get_origin(target)
    args = typing.get_args(target)
    if origin is typing.Union:
        return any(_matches(obj, a) for a in args)
    if origin in (list, typing.List):
        return builtins.isinstance(obj, list) and all(_matches(v, args[0]) for v in obj)
    if origin in (dict, typing.Dict):
        return builtins.isinstance(obj, dict) and all(_matches(k, args[0]) and _matches(v, args[1])
                                                      for k, v in obj.items())
    if origin in (tuple, typing.Tuple):
        return builtins.isinstance(obj, tuple) and len(obj) == len(args) and all(
            _matches(v, a) for v, a in zip(obj, args))
    if target is type(None) or target is None:
        return obj is None
    if builtins.isinstance(target, tuple):
        return any(_matches(obj, t) for t in target)
    if target is float:
        return builtins.isinstance(obj, float)
    if target is int:
        return builtins.isinstance(obj, int) and not builtins.isinstance(obj, bool)
    if target is Tensor:
        return builtins.isinstance(obj, Tensor)
    return builtins.isinstance(obj, target)

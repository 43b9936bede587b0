"""The public names FX gives to torch functions: `torch.relu`, `torch.nn.functional.relu`, `operator.add`.

A graph records the function object itself; printed graphs and generated code name it by the path a
PyTorch user writes (`torch.nn.functional.relu`), which resolves in generated code because the name
`torch` is bound to scriptc there.
"""

from __future__ import annotations

import builtins
import importlib
import sys
import types
from typing import Callable

# (public path, scriptc module): the namespaces whose functions record as call_function nodes.
PUBLIC_NAMESPACES = (
    ("torch", "scriptc"),
    ("torch.nn.functional", "scriptc.nn.functional"),
    ("torch.special", "scriptc.special"),
    ("torch.linalg", "scriptc.linalg"),
    ("torch.fft", "scriptc.fft"),
)
_PUBLIC_NAMES: dict[int, str] = {}
# What the index was built from: each namespace's size and which lazily loaded modules were there.
_INDEXED: list = [None]


def _is_function(value) -> bool:
    return callable(value) and not isinstance(value, (type, types.ModuleType))


def public_functions(module_name: str) -> dict[str, Callable]:
    """The functions a user reaches as attributes of one namespace (loaded lazily ones included when loaded)."""
    module = importlib.import_module(module_name)
    found = {name: value for name, value in vars(module).items()
             if not name.startswith("__") and _is_function(value)}
    if module_name == "scriptc":
        from scriptc import bindings
        found.update({name: fn for name, fn in bindings.FUNCTIONS.items() if name not in found})
        for source, names in module._LAZY_NAMES.items():
            if source in sys.modules:
                found.update({name: getattr(sys.modules[source], name) for name in names
                              if name not in found and _is_function(getattr(sys.modules[source], name, None))})
    return found


def remember_public_names() -> None:
    """Index every function of the public namespaces by identity, the first namespace winning (again
    only when a namespace grew since)."""
    import scriptc
    seen = (tuple(len(vars(importlib.import_module(m))) for _, m in PUBLIC_NAMESPACES),
            tuple(m in sys.modules for m in scriptc._LAZY_NAMES))
    if _INDEXED[0] == seen:
        return
    _INDEXED[0] = seen
    for public, module_name in PUBLIC_NAMESPACES:
        for name, fn in public_functions(module_name).items():
            _PUBLIC_NAMES.setdefault(id(fn), f"{public}.{name}")


def qualified_name(fn: Callable) -> str:
    """torch's `_get_qualified_name`: `getattr`, `operator.add`, `torch.sum`, `torch.nn.functional.relu`."""
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if getattr(builtins, name, None) is fn:
        return name
    if not _PUBLIC_NAMES:
        remember_public_names()
    public = _PUBLIC_NAMES.get(id(fn))
    if public is not None:
        return public
    module = getattr(fn, "__module__", None) or "builtins"
    if module == "_operator":
        module = "operator"
    elif module == "scriptc" or module.startswith("scriptc."):
        module = "torch" + module[len("scriptc"):]
    return f"{module}.{name}"


def is_from_torch(fn) -> bool:
    """Whether generated code can reach `fn` by its dotted `torch.` path (so it needs no global of its own)."""
    path = qualified_name(fn)
    if not path.startswith("torch."):
        return False
    import scriptc
    value = scriptc
    for attribute in path.split(".")[1:]:
        value = getattr(value, attribute, None)
    return value is fn


def pretty_target(target) -> str:
    """How a printed graph names a node's target: strings as they are, `builtins.getattr`, `operator.add`."""
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None)
    if name is not None and module == "builtins":
        return f"builtins.{name}"
    if name is not None and module == "_operator":
        return f"operator.{name}"
    return qualified_name(target)


def type_name(t) -> str:
    """How torch.fx names a type annotation: `int`, `torch.Tensor`, `torch.nn.Module`, `module.Class`."""
    if not isinstance(t, type):
        text = repr(t)
        for argument in getattr(t, "__args__", ()):
            if isinstance(argument, type) or hasattr(argument, "__args__"):
                raw = f"{argument.__module__}.{argument.__qualname__}" if isinstance(argument, type) else repr(argument)
                text = text.replace(raw, type_name(argument))
        return text
    if t.__module__ == "builtins":
        return t.__qualname__
    import scriptc
    for public, module_name in (("torch", "scriptc"), ("torch.nn", "scriptc.nn")):
        if getattr(sys.modules.get(module_name, scriptc), t.__name__, None) is t:
            return f"{public}.{t.__name__}"
    module = t.__module__
    if module == "scriptc" or module.startswith("scriptc."):
        module = "torch" + module[len("scriptc"):]
    return f"{module}.{t.__qualname__}"

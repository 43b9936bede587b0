"""torch.compile itself: argument checks as torch makes them, the decorator form, and the module
wrapper (OptimizedModule) a compiled nn.Module becomes."""

from __future__ import annotations

import functools
from typing import Callable

from scriptc.nn import Module

from . import capture
from .capture import CompiledCode

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


class InvalidBackend(RuntimeError):
    """torch._dynamo.exc.InvalidBackend: torch.compile was given a backend name it does not know."""


class OptimizedModule(Module):
    """What torch.compile returns for an nn.Module: calls run the compiled module; parameters,
    buffers and state_dict are the original's (keys prefixed "_orig_mod.", as torch's), and any
    other attribute reads through to the original module, `_orig_mod`."""

    def __init__(self, mod: Module, compiled: CompiledCode):
        super().__init__()
        self._orig_mod = mod
        self._compiled = compiled

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "_orig_mod":
                raise
            return getattr(self._orig_mod, name)


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable | None = "inductor", mode: str | None = None, options: dict | None = None,
            name: str | None = None, disable: bool = False, recompile_limit: int | None = None):
    """Compile a function or nn.Module with scriptc's JIT, as torch.compile (also as a decorator:
    `@torch.compile` or `@torch.compile(fullgraph=True)`).

    Each call that needs no autograd runs a program compiled for its input signature (tensor
    dtypes and shapes, other arguments' values): traced on the first such call, optimized
    (frozen, fused, native code) for backend="inductor", replayed op by op for "eager" /
    "aot_eager"; a callable backend gets the traced graph and the example tensors and returns what
    to call. Results equal eager's. Code that cannot be captured as one graph runs eagerly, or
    raises torch.compiler.Unsupported with fullgraph=True; calls needing gradients, and modules
    in training mode, run eagerly. `dynamic` is accepted as torch takes it; each shape gets its
    own program either way. `mode` (default, reduce-overhead, max-autotune...) and inductor
    `options` select nothing further here. disable=True returns `model` itself.
    """
    if model is None:
        def decorate(fn: Callable):
            if fn is None:
                raise RuntimeError("Model can't be None")
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           name=name, disable=disable, recompile_limit=recompile_limit)
        return decorate
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise AssertionError(f"Expected enable to be a bool, got {type(dynamic)}")
    backend = "inductor" if backend is None else backend
    if isinstance(backend, str):
        from scriptc.compiler import BACKENDS
        if backend not in BACKENDS:
            raise InvalidBackend(f"Invalid backend: '{backend}', see `torch._dynamo.list_backends()` for available "
                                 "backends.")
    if disable:
        return model
    compiled = CompiledCode(model, backend, fullgraph, capture.RECOMPILE_LIMIT if recompile_limit is None else recompile_limit)
    if isinstance(model, Module):
        return OptimizedModule(model, compiled)

    @functools.wraps(model)
    def compiled_function(*args, **kwargs):
        return compiled(*args, **kwargs)
    compiled_function._torchdynamo_orig_callable = model
    compiled_function._scriptc_compiled = compiled
    return compiled_function

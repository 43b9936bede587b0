"""torch.compile on scriptc's JIT: capture a call by tracing it, compile the trace, reuse it while its
guards hold, and run eagerly whatever cannot be captured.

A compiled callable keeps one program per input signature (each tensor's dtype, shape and
contiguity; every other argument's value; the default dtype). A program also guards the state the
trace baked in as constants - the parameters and buffers of the module (or of modules and tensors
the function reads from its globals and closure) - by identity and version, so an optimizer step or
load_state_dict makes the next call capture again instead of computing with stale weights.

A call runs eagerly, uncompiled, when it needs autograd (grad mode on and an input or parameter
requires grad) or a module involved is in training mode (batch-norm statistics, dropout), since a
compiled program has neither, or has forward hooks (a replay would not call them). Capturing
fails - the call then runs eagerly, or raises Unsupported under fullgraph=True - when the code's
Python control flow reads tensor values (.item(), `if x.sum() > 0`), draws random numbers, writes
in place to a tensor it was given or reads from outside, calls a torch.compiler.disable'd
function, or uses something the tracer cannot record. The capture runs the code once, eagerly:
that run is the call's result, so a failed capture never runs the code twice.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any, Callable

from scriptc.autograd import is_grad_enabled
from scriptc.errors import TracerWarning
from scriptc.settings import get_default_dtype
from scriptc.tensors import Tensor
from scriptc.types import device, dtype

RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit: new signatures past it run eagerly
_capture_depth = [0]
_every_compiled: weakref.WeakSet = weakref.WeakSet()


class Unsupported(RuntimeError):
    """torch._dynamo.exc.Unsupported: the code cannot be captured as one graph (raised under
    fullgraph=True; otherwise such code runs eagerly)."""


def capturing() -> bool:
    """Whether a torch.compile capture is running (torch.compiler.is_compiling)."""
    return _capture_depth[0] > 0


def reset_all() -> None:
    for compiled in list(_every_compiled):
        compiled.reset()


_PLAIN = (bool, int, float, complex, str, bytes, type(None))


def _template(value, tensors: list):
    """value with each tensor replaced by ("tensor", its index in `tensors`, where it is collected) and
    every other value by (its type, itself): hashable (TypeError for a value a guard cannot compare),
    and no argument's own encoding looks like a tensor's."""
    if isinstance(value, Tensor):
        tensors.append(value)
        return ("tensor", len(tensors) - 1)
    if isinstance(value, tuple):
        return tuple(_template(v, tensors) for v in value)
    if isinstance(value, list):
        return ("list", tuple(_template(v, tensors) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _template(v, tensors)) for k, v in value.items()))
    if isinstance(value, (*_PLAIN, dtype, device)):
        return (type(value), value)
    raise TypeError(f"an argument of type {type(value).__name__}")


def _rebuild(template, tensors):
    tag = template[0] if len(template) == 2 else None
    if tag == "tensor":
        return tensors[template[1]]
    if tag == "list":
        return [_rebuild(v, tensors) for v in template[1]]
    if tag == "dict":
        return {k: _rebuild(v, tensors) for k, v in template[1]}
    if isinstance(tag, type):
        return template[1]
    return tuple(_rebuild(v, tensors) for v in template)


class _State:
    """What a trace of fn bakes in and a program must guard: the modules involved (a module's own, a
    bound method's, and those fn reads from its globals and closure) with their parameters, buffers
    and submodules, and the tensors fn reads from its globals and closure."""

    def __init__(self, fn):
        from scriptc.nn import Module

        # (a dict, a key, the object found there): the dict must still hold that object
        self.bindings: list = []
        roots = []
        owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
        if isinstance(owner, Module):
            roots.append(owner)
        code = getattr(fn, "__code__", None)
        if code is not None:
            scope = getattr(fn, "__globals__", {})
            for name in code.co_names:
                if isinstance(scope.get(name), (Module, Tensor)):
                    self.bindings.append((scope, name, scope[name]))
                    roots.append(scope[name])
            for cell in getattr(fn, "__closure__", None) or ():
                try:
                    roots.append(cell.cell_contents)
                except ValueError:  # a cell not yet filled
                    continue
        self.modules = [m for root in roots if isinstance(root, Module) for m in root.modules()]
        self.tensors = [root for root in roots if isinstance(root, Tensor)]
        for m in self.modules:
            for table in (m._parameters, m._buffers, m._modules):
                self.bindings += [(table, name, value) for name, value in table.items() if value is not None]
                if table is not m._modules:
                    self.tensors += [value for value in table.values() if value is not None]
        self.versions = [(t, t._data, t._vc[0]) for t in self.tensors]

    def runs_eagerly(self, tensors: list) -> bool:
        """Whether a call with these tensors needs autograd, a module in training mode or hooks."""
        if any(m.training or m._forward_hooks or m._forward_pre_hooks for m in self.modules):
            return True
        return is_grad_enabled() and any(t.requires_grad for t in (*tensors, *self.tensors))

    def holds(self) -> bool:
        """Whether every baked-in module and tensor is still in place, with the same array and version."""
        return all(table.get(name) is value for table, name, value in self.bindings) and all(
            t._data is array and t._vc[0] == version for t, array, version in self.versions)


class _Program:
    """One compiled specialization and the state it baked in."""

    __slots__ = ("run", "state")

    def __init__(self, run: Callable, state: _State):
        self.run, self.state = run, state


class CompiledCode:
    """What torch.compile makes of a function or module: call it like the original."""

    def __init__(self, fn: Callable, backend, fullgraph: bool, recompile_limit: int):
        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.recompile_limit = recompile_limit
        self._programs: dict = {}
        self._eager: set = set()
        self._warned_limit = False
        _every_compiled.add(self)

    def reset(self) -> None:
        self._programs.clear()
        self._eager.clear()
        self._warned_limit = False

    def __call__(self, *args, **kwargs):
        if capturing():  # a compiled function called while capturing another one is part of that capture
            return self.fn(*args, **kwargs)
        key, tensors = _signature(args, kwargs)
        if key is None or key in self._eager:
            return self.fn(*args, **kwargs)
        program = self._programs.get(key)
        if program is not None:
            if program.state.runs_eagerly(tensors):
                return self.fn(*args, **kwargs)
            if program.state.holds():
                return program.run(*tensors)
        state = _State(self.fn)
        if state.runs_eagerly(tensors):
            return self.fn(*args, **kwargs)
        if program is None and len(self._programs) >= self.recompile_limit:
            if not self._warned_limit:
                warnings.warn(f"torch.compile hit its recompile limit ({self.recompile_limit}) for "
                              f"{_name(self.fn)!r}: calls with further input signatures run eagerly", UserWarning,
                              stacklevel=2)
                self._warned_limit = True
            self._eager.add(key)
            return self.fn(*args, **kwargs)
        program, ran, failure = self._capture(key[0], tensors, state)
        if failure is not None:
            if self.fullgraph:
                raise failure
            self._eager.add(key)
            # the capture ran the code eagerly to its end: its result stands (running it again would
            # repeat its in-place writes, random draws and other side effects)
            return ran[0] if ran else self.fn(*args, **kwargs)
        self._programs[key] = program
        return ran[0]

    def _capture(self, template, tensors: list, state: _State) -> tuple[_Program | None, list, Unsupported | None]:
        """Trace a call on `tensors` (which runs the code eagerly, once) and compile the trace: (the
        program or None, [the call's result] once the code returned, why capturing failed or None)."""
        from scriptc import jit
        from scriptc.autograd import no_grad
        from scriptc.jit.trace_check import nondeterministic_nodes

        ran: list = []
        watched = [*tensors, *state.tensors]
        versions = [t._vc[0] for t in watched]

        def call(*flat):
            call_args, call_kwargs = _rebuild(template, flat)
            ran.append(self.fn(*call_args, **call_kwargs))
            return ran[0]

        _capture_depth[0] += 1
        try:
            with warnings.catch_warnings(record=True) as caught, no_grad():
                warnings.simplefilter("always")
                traced = jit.trace(call, tuple(tensors), check_trace=False)
        except Unsupported as unsupported:
            return None, ran, unsupported
        except Exception as exc:  # noqa: BLE001 - whatever stops the tracer makes the code uncapturable
            failure = Unsupported(f"{_name(self.fn)!r} cannot be traced: {type(exc).__name__}: {exc}")
            failure.__cause__ = exc
            return None, ran, failure
        finally:
            _capture_depth[0] -= 1
        for warning in caught:
            if not issubclass(warning.category, TracerWarning):
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        depends = [w for w in caught if issubclass(w.category, TracerWarning)]
        if depends:
            return None, ran, Unsupported(f"{_name(self.fn)!r} depends on tensor values: {depends[0].message}")
        if any(t._vc[0] != version for t, version in zip(watched, versions)):
            # the trace records the write functionally: a replay would leave the caller's tensor as it was
            return None, ran, Unsupported(f"{_name(self.fn)!r} writes in place to a tensor it does not own")
        random_nodes = nondeterministic_nodes(traced.graph)
        if random_nodes:
            # a replay would draw other numbers than eager code does
            return None, ran, Unsupported(f"{_name(self.fn)!r} draws random numbers ({random_nodes[0].op})")
        return _Program(self._build(traced, tensors), state), ran, None

    def _build(self, traced, tensors: list) -> Callable:
        from scriptc import jit

        if callable(self.backend):
            compiled = self.backend(traced, list(tensors))
            if not callable(compiled):
                raise TypeError(f"the torch.compile backend {_name(self.backend)!r} returned "
                                f"{type(compiled).__name__}, not a callable")
            return compiled
        if self.backend == "inductor":
            return jit.optimize_for_inference(traced)
        return traced  # "eager" / "aot_eager": the captured graph, run op by op


def _signature(args, kwargs) -> tuple[Any, list]:
    """(the guard key of a call, its tensors), or (None, []) for arguments a guard cannot compare."""
    tensors: list = []
    try:
        template = _template((args, kwargs), tensors)
        metas = tuple((t.dtype, tuple(t.shape), t._data.flags.c_contiguous) for t in tensors)
        key = (template, metas, get_default_dtype())
        hash(key)
    except TypeError:
        return None, []
    return key, tensors


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__

"""ScriptModule, TracedModule and ScriptFunction: callable graphs with their module's state."""

from __future__ import annotations

import inspect
from collections import OrderedDict
from typing import Any

import numpy as np

from scriptc.ir.graph import Graph
from scriptc.ir.printer import graph_code
from scriptc.runtime.interpreter import Interpreter, ModuleValue
from scriptc.runtime.plan import Plan
from scriptc.tensors import Tensor, wrap


def to_runtime(value) -> Any:
    """Tensors (also inside tuples, lists and dicts) as numpy arrays for the runtime."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, tuple):
        return tuple(to_runtime(v) for v in value)
    if isinstance(value, list):
        return [to_runtime(v) for v in value]
    if isinstance(value, dict):
        return {k: to_runtime(v) for k, v in value.items()}
    return value


def from_runtime(value) -> Any:
    """Arrays coming back from the runtime as Tensors (recursively)."""
    if isinstance(value, np.ndarray):
        return wrap(value)
    if isinstance(value, tuple):
        return tuple(from_runtime(v) for v in value)
    if isinstance(value, list):
        return [from_runtime(v) for v in value]
    if isinstance(value, dict):
        return {k: from_runtime(v) for k, v in value.items()}
    return value


class ScriptFunction:
    """A compiled free function: call it like the original; `.graph` and `.code` show what it runs."""

    def __init__(self, graph: Graph, functions: dict | None = None, signature: inspect.Signature | None = None,
                 specialization: list | None = None):
        self.graph = graph
        self.functions = dict(functions or {})
        self.signature = signature
        self.specialization = specialization  # from jit.script's example_inputs (runtime/specialize.py)
        self._interpreter = Interpreter(graph, self.functions)

    @property
    def name(self) -> str:
        return self.graph.name

    @property
    def code(self) -> str:
        return graph_code(self.graph, self.graph.name)

    def __call__(self, *args, **kwargs):
        args = bind_arguments(self.signature, args, kwargs)
        outputs = self._interpreter.run([to_runtime(a) for a in args])
        return from_runtime(outputs[0]) if len(outputs) == 1 else tuple(from_runtime(o) for o in outputs)

    def __repr__(self) -> str:
        return f"<ScriptFunction {self.name}>"

    def save(self, path, **kwargs) -> None:
        from .api import save
        save(self, path, **kwargs)


def bind_arguments(signature: inspect.Signature | None, args, kwargs) -> list:
    """Positional values for a graph's inputs, with the Python signature's defaults filled in."""
    if signature is None:
        if kwargs:
            raise TypeError("this compiled function takes positional arguments only")
        return list(args)
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


class ScriptModule:
    """A module compiled to graphs (`forward` and exported methods) that shares the original's state.

    `.graph` is forward's graph, `.code` its readable source; parameters, buffers and state_dict are
    the original module's (updates to them show through).
    """

    def __init__(self, module, graphs: dict[str, Graph], functions: dict | None = None, ignored=(),
                 signatures: dict[str, inspect.Signature] | None = None, specializations: dict | None = None):
        object.__setattr__(self, "_ignored", list(ignored))
        object.__setattr__(self, "_specializations", dict(specializations or {}))
        object.__setattr__(self, "_signatures", dict(signatures or {}))
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_graphs", dict(graphs))
        object.__setattr__(self, "_functions", dict(functions or {}))
        object.__setattr__(self, "_interpreters", {name: Interpreter(g, self._functions) for name, g in graphs.items()})
        object.__setattr__(self, "_state", None)

    @property
    def graph(self) -> Graph:
        return self._graphs["forward"]

    @property
    def graphs(self) -> dict[str, Graph]:
        return dict(self._graphs)

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def _module_value(self) -> ModuleValue:
        flat = OrderedDict((name, t._data) for name, t in self._module.named_parameters())
        flat.update((name, t._data) for name, t in self._module.named_buffers())
        for path, m in self._module.named_modules():
            flat[f"{path}.training" if path else "training"] = m.training
        return ModuleValue.from_flat(flat)

    def run_method(self, name: str, *args, **kwargs):
        if name not in self._interpreters:
            raise AttributeError(f"{type(self._module).__name__} has no compiled method '{name}'")
        args = bind_arguments(self._signatures.get(name), args, kwargs)
        outputs = self._interpreters[name].run([self._module_value()] + [to_runtime(a) for a in args])
        return from_runtime(outputs[0]) if len(outputs) == 1 else tuple(from_runtime(o) for o in outputs)

    def __call__(self, *args, **kwargs):
        return self.run_method("forward", *args, **kwargs)

    forward = __call__

    def __getattr__(self, name: str):
        graphs = self.__dict__.get("_graphs", {})
        if name in graphs:
            return lambda *args, **kwargs: self.run_method(name, *args, **kwargs)
        return getattr(self._module, name)

    # --- state, delegated to the original module -------------------------------------------
    def parameters(self, recurse: bool = True):
        return self._module.parameters(recurse)

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        return self._module.named_parameters(prefix, recurse)

    def buffers(self, recurse: bool = True):
        return self._module.buffers(recurse)

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        return self._module.named_buffers(prefix, recurse)

    def named_modules(self, *args, **kwargs):
        return self._module.named_modules(*args, **kwargs)

    def modules(self):
        return self._module.modules()

    def children(self):
        return self._module.children()

    def state_dict(self, *args, **kwargs):
        return self._module.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True):
        return self._module.load_state_dict(state_dict, strict)

    def eval(self) -> "ScriptModule":
        self._module.eval()
        return self

    def train(self, mode: bool = True) -> "ScriptModule":
        self._module.train(mode)
        return self

    @property
    def training(self) -> bool:
        return self._module.training

    def __repr__(self) -> str:
        return f"{type(self).__name__}(original_name={type(self._module).__name__})"

    def save(self, path, **kwargs) -> None:
        from .api import save
        save(self, path, **kwargs)


class TracedModule(ScriptModule):
    """The ScriptModule jit.trace returns for an nn.Module."""


class OptimizedModule:
    """What jit.freeze / jit.optimize_for_inference return: a callable over the optimized graph.

    `.graph` shows the result (FusionGroups included), `.pass_records` what each pass did. If the
    graph still reads module attributes (state written at run time), `self` comes from `source`.
    A module scripted with example_inputs has two: `.graph`, specialized for inputs like the
    examples, and `.generic_graph`, which runs every other call.
    """

    def __init__(self, plan: Plan, functions: dict, signature, source: ScriptModule | None, records: list):
        self.generic_graph = plan.generic_graph
        self.graph = plan.graph
        self.specs = plan.specs
        self.functions = dict(functions)
        self.signature = signature
        self.source = source
        self.pass_records = records
        self.needs_self = plan.needs_self
        self._runner = plan.runner

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def __call__(self, *args, **kwargs):
        args = [to_runtime(a) for a in bind_arguments(self.signature, args, kwargs)]
        if self.needs_self:
            args = [self.source._module_value()] + args
        outputs = self._runner.run(args)
        return from_runtime(outputs[0]) if len(outputs) == 1 else tuple(from_runtime(o) for o in outputs)

    def __repr__(self) -> str:
        return f"OptimizedModule({len(self.graph)} nodes)"

    def save(self, path, **kwargs) -> None:
        """Save the optimized plan as a `.sc` archive (jit.save); runtime.load and jit.load run it."""
        from .api import save
        save(self, path, **kwargs)


class LoadedModule:
    """What jit.load returns: a compiled archive, called with tensors. `.graph` and `.code` are the
    stored (unoptimized) forward graph; `.state_dict()` the stored weights as tensors."""

    def __init__(self, model):
        self._model = model

    @property
    def graph(self) -> Graph:
        return self._model.archive.graphs["forward"]

    @property
    def optimized_graph(self) -> Graph:
        return self._model.graphs["forward"]

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def state_dict(self) -> OrderedDict:
        return OrderedDict((k, wrap(np.array(v))) for k, v in sorted(self._model.archive.weights.items()))

    def parameters(self):
        return iter(self.state_dict().values())

    def __call__(self, *args):
        return from_runtime(self._model(*[to_runtime(a) for a in args]))

    def __getattr__(self, name: str):
        if name in self.__dict__.get("_model").runners:
            return lambda *args: from_runtime(self._model.run_method(name, *[to_runtime(a) for a in args]))
        raise AttributeError(name)

    def save(self, path) -> None:
        from .api import save
        save(self, path)

    def _archive_source(self):
        return self

    def __repr__(self) -> str:
        return f"LoadedModule(methods={sorted(self._model.runners)})"

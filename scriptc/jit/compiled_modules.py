"""What jit.freeze / optimize_for_inference and jit.load return: OptimizedModule over an optimized
plan, LoadedModule over a compiled archive (with StoredSubmodule for reading its stored state)."""

from __future__ import annotations

import contextlib
from collections import OrderedDict

import numpy as np

from scriptc.errors import SignatureError
from scriptc.ir.graph import Graph
from scriptc.ir.printer import graph_code
from scriptc.runtime.input_dims import check_baked_dims, check_shared_dims, shared_dims
from scriptc.runtime.interpreter import ModuleValue
from scriptc.runtime.plan import Plan, takes_self
from scriptc.runtime.signature import Signature
from scriptc.tensors import Tensor, wrap
from scriptc.types import TensorType
from scriptc.tensors.dispatch import wants_grad

from .arguments import convert, typed_result
from .eager import EagerInterpreter
from .module import (
    ScriptModule,
    _eager_value,
    _positional_count,
    bind_arguments,
    by_array,
    from_runtime,
    needs_call_scope,
    results,
    scripted_call,
    to_runtime,
)


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
        self._scoped = needs_call_scope(plan.graph, plan.generic_graph)
        self._positional = _positional_count(signature)
        self.preserved: tuple = ()  # jit.freeze's preserved_attrs: read from `source`
        self.baked_dims: tuple = ()  # the input dims jit.trace baked in (set by jit.freeze / optimize_for_inference)
        inputs = plan.generic_graph.inputs[1 if takes_self(plan.generic_graph) else 0:]
        self._input_names = [v.name or f"input{i}" for i, v in enumerate(inputs)]
        self._shared_dims = shared_dims([v.type for v in inputs])
        self._result_types = [v.type for v in plan.generic_graph.outputs]
        self._input_types = [v.type for v in inputs]  # what a call's values other than tensors are checked as
        self._tensor_inputs_only = all(isinstance(t, TensorType) for t in self._input_types)

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def forward(self, *args, **kwargs):
        """The optimized forward, as `frozen.forward(x)` calls it on torch's frozen module."""
        return self(*args, **kwargs)

    def __getattr__(self, name: str):
        preserved = self.__dict__.get("preserved", ())
        source = self.__dict__.get("source")
        if source is not None and (name in preserved or any(p.startswith(name + ".") for p in preserved) or
                                   name in _attributes_read(self.__dict__.get("graph"))):
            return getattr(source, name)  # (state the graph still reads, as torch's frozen module keeps it)
        raise AttributeError(f"'OptimizedModule' object has no attribute '{name}'")

    def __call__(self, *args, **kwargs):
        # (A call with every parameter given positionally binds to itself: no Signature.bind, whose
        # time counts on every call of a small model.)
        if kwargs or len(args) != self._positional:
            args = bind_arguments(self.signature, args, kwargs)
        if self._tensor_inputs_only:
            args = [a._data if type(a) is Tensor else to_runtime(a) for a in args]
        else:
            args = [a._data if type(a) is Tensor else to_runtime(convert(a, t, n))
                    for a, t, n in zip(args, self._input_types, self._input_names)]
        if self.baked_dims or self._shared_dims:
            check_baked_dims(self.baked_dims, self._input_names, args, "forward")
            check_shared_dims(self._shared_dims, self._input_names, args, "forward")
        inputs = args
        if self.needs_self:
            args = [self.source._module_value()] + args
        try:
            if self._scoped:
                with scripted_call():
                    outputs = self._runner.run(args)
            else:
                outputs = self._runner.run(args)
        except Exception as failure:
            self._name_the_misfit_input(inputs, failure)
            raise
        if len(outputs) != 1:
            return tuple(typed_result(from_runtime(o), t) for o, t in zip(outputs, self._result_types))
        output = outputs[0]
        return wrap(output) if type(output) is np.ndarray else typed_result(from_runtime(output), self._result_types[0])

    def _name_the_misfit_input(self, inputs: list, failure: Exception) -> None:
        """A call that failed inside the graph with an input its types do not take (a dim a trace
        fixed, read as a constant by the optimized graph) raises the SignatureError runtime.load's
        models raise for it, from the failure; checked only once a call has failed, so calls that
        run pay nothing for it."""
        graph = self.generic_graph
        signature = Signature.of_graph("forward", graph, len(graph.inputs) - len(inputs))
        try:
            signature.bind(tuple(inputs))
        except SignatureError as misfit:
            raise misfit from failure

    def __repr__(self) -> str:
        if self.source is None:
            return f"OptimizedModule({len(self.graph)} nodes)"
        return f"RecursiveScriptModule(original_name={self.source.original_name})"  # torch's print of a frozen module

    def save(self, path, **kwargs) -> None:
        """Save the optimized plan as a `.sc` archive (jit.save); runtime.load and jit.load run it."""
        from .api import save
        save(self, path, **kwargs)


def _attributes_read(graph: Graph | None) -> set:
    """The names of the module attributes `graph` reads from its `self` input."""
    if graph is None or not takes_self(graph):
        return set()
    return {use.user.attrs["name"] for use in graph.inputs[0].uses if getattr(use.user, "op", None) == "prim::GetAttr"}


class LoadedModule:
    """What jit.load returns: a compiled archive, called with tensors. `.graph` and `.code` are the
    stored (unoptimized) forward graph; `.state_dict()` the stored weights as tensors; the stored
    parameters, buffers and attributes read as attributes (`m.fc.weight`, `m.training`)."""

    def __init__(self, model):
        self._model = model
        self._scoped = needs_call_scope(*model.graphs.values())

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
        with scripted_call() if self._scoped else contextlib.nullcontext():
            if wants_grad(args):
                return self._run_with_autograd("forward", args)
            return from_runtime(self._model(*[to_runtime(a) for a in args]), by_array(args))

    def _run_with_autograd(self, name: str, args: tuple):
        """A call with an input that requires grad runs the stored graph on Tensors, so that backward
        reaches the inputs, as through torch's loaded modules (the stored weights enter as tensors
        that do not require grad; buffers the graph writes are the model's own arrays, so both paths
        update the same running statistics)."""
        from scriptc.runtime.plan import takes_self

        archive = self._model.archive
        graph = archive.graphs[name]
        inputs = [_eager_value(a) for a in args]
        if takes_self(graph):
            inputs.insert(0, self._module_value(eager=True))
        return results(EagerInterpreter(graph, archive.functions).run(inputs), args, graph)

    def _module_value(self, eager: bool = False) -> ModuleValue:
        """The stored module as its graphs see it (weights as Tensors when `eager`, else arrays): what
        scripted code that holds this loaded module as a submodule passes its forward."""
        from scriptc.runtime import attributes

        archive = self._model.archive
        flat = {k: wrap(v) if eager else v for k, v in archive.weights.items()}
        flat.update({k: attributes.resolve(v, archive.weights) for k, v in archive.attributes.items()})
        return ModuleValue.from_flat(flat)

    def _stored_state(self) -> tuple[dict, dict]:
        """(weights, {attribute: (value, type)}) of the archive, attribute tensors as arrays: what saving
        a module that holds this one as a submodule writes under its name."""
        from scriptc.ir.parser import parse_type
        from scriptc.runtime import attributes
        from scriptc.types import type_of_constant

        archive = self._model.archive
        typed = {}
        for key, value in archive.attributes.items():
            stored = archive.attribute_types.get(key)
            typed[key] = (attributes.resolve(value, archive.weights),
                          parse_type(stored) if stored is not None else type_of_constant(value))
        return dict(archive.weights), typed

    def __getattr__(self, name: str):
        model = self.__dict__.get("_model")
        if model is None:
            raise AttributeError(name)
        if name in model.runners:
            return lambda *args: from_runtime(self._model.run_method(name, *[to_runtime(a) for a in args]))
        return _stored_attribute(model.archive, "", name)

    def save(self, path) -> None:
        from .api import save
        save(self, path)

    def _archive_source(self):
        return self

    def __repr__(self) -> str:
        return f"LoadedModule(methods={sorted(self._model.runners)})"


class StoredSubmodule:
    """A submodule of a loaded archive, for reading its stored parameters, buffers and attributes."""

    def __init__(self, archive, path: str):
        self._archive = archive
        self._path = path

    def __getattr__(self, name: str):
        archive = self.__dict__.get("_archive")
        if archive is None:
            raise AttributeError(name)
        return _stored_attribute(archive, self._path, name)

    def __repr__(self) -> str:
        return f"StoredSubmodule({self._path!r})"


def _stored_attribute(archive, prefix: str, name: str):
    """The parameter, buffer, attribute or submodule `name` of the archive's submodule at `prefix`."""
    from scriptc.runtime import attributes

    path = f"{prefix}.{name}" if prefix else name
    if path in archive.weights:
        return wrap(np.array(archive.weights[path]))
    if path in archive.attributes:
        return from_runtime(attributes.resolve(archive.attributes[path], archive.weights))
    inner = path + "."
    if any(key.startswith(inner) for key in (*archive.weights, *archive.attributes)):
        return StoredSubmodule(archive, path)
    raise AttributeError(f"the loaded module{' ' + repr(prefix) if prefix else ''} has no attribute '{name}'")

"""What jit.freeze / optimize_for_inference return: OptimizedModule over an optimized plan (jit.load's
LoadedModule: loaded_module.py)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from scriptc.errors import SignatureError
from scriptc.ir.graph import Graph
from scriptc.ir.printer import graph_code
from scriptc.runtime.input_dims import check_baked_dims, check_shared_dims, shared_dims
from scriptc.runtime.plan import Plan, takes_self
from scriptc.runtime.signature import Signature
from scriptc.nn.module import _IncompatibleKeys
from scriptc.nn.module_conversion import _parse_to
from scriptc.tensors import Tensor, wrap
from scriptc.types import device

from .arguments import convert, typed_result
from .module import (
    ScriptModule,
    _positional_count,
    bind_arguments,
    from_runtime,
    needs_call_scope,
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

    @property
    def code(self) -> str:
        return graph_code(self.graph, "forward")

    def forward(self, *args, **kwargs):
        """The optimized forward, as `frozen.forward(x)` calls it on torch's frozen module."""
        return self(*args, **kwargs)

    # Freezing folds every weight into the graph as a constant: like torch's frozen module, this one
    # holds no parameters or buffers.
    def parameters(self, recurse: bool = True):
        return iter(())

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return iter(())

    buffers = parameters
    named_buffers = named_parameters

    def state_dict(self, *args, **kwargs) -> OrderedDict:
        return OrderedDict()

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Nothing to load into (torch's frozen module holds no state): with strict, any key is
        torch's 'Unexpected key(s)' RuntimeError."""
        unexpected = list(state_dict)
        if strict and unexpected:
            raise RuntimeError("Error(s) in loading state_dict for RecursiveScriptModule:\n\tUnexpected key(s) in "
                               "state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        return _IncompatibleKeys([], unexpected)

    # The mode and device calls a model goes through before inference: the frozen graph runs as it was
    # frozen (its weights are constants of the graph), as torch's frozen module does.
    training = False

    def train(self, mode: bool = True) -> "OptimizedModule":
        self.training = mode
        return self

    def eval(self) -> "OptimizedModule":
        return self.train(False)

    def to(self, *args, **kwargs) -> "OptimizedModule":
        """Checks its arguments as Module.to does (an unknown device is torch's RuntimeError) and
        changes nothing: the frozen graph's constants stay as they were frozen, as in torch."""
        device_given, _, _ = _parse_to(args, dict(kwargs))
        if isinstance(device_given, str):
            device(device_given)
        return self

    def cpu(self) -> "OptimizedModule":
        return self

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
        given = args
        args = [a._data if type(a) is Tensor else self._converted(a, given) for a in given]
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

    def _converted(self, value, given) -> object:
        """A call's value that is no Tensor, checked against its input's type (found by position only
        here: looking types up for every value costs a small model's call ~0.2 us)."""
        index = next(i for i, v in enumerate(given) if v is value)
        return to_runtime(convert(value, self._input_types[index], self._input_names[index]))

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

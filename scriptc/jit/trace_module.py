"""torch.jit.trace_module: trace several methods of one module into a single TracedModule."""

from __future__ import annotations

import inspect

from .module import TracedModule
from .trace import trace_graph
from .trace_examples import example_tuple, refuse_dict_output
from .trace_check import check_trace_replay


def trace_module(mod, inputs: dict, optimize=None, check_trace: bool = True, check_inputs: list | None = None,
                 check_tolerance: float = 1e-5, strict: bool = True, example_inputs_is_kwarg: bool = False):
    """Trace the methods named in `inputs` ({"forward": example, "method2": (a, b)}) into one
    TracedModule (torch.jit.trace_module): each becomes a compiled method of the result, called by
    name; state stays the module's. With example_inputs_is_kwarg each example is a dict of keyword
    arguments. check_trace re-runs each method on its example (and on each dict of check_inputs)
    and raises TracingCheckError if it differs from eager. A method returning a dict needs strict=False,
    as in torch."""
    from scriptc.nn import Module

    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    graphs, examples, attributes, baked = {}, {}, {}, {}
    for name, example in inputs.items():
        method = getattr(mod, name)
        examples[name] = _positional(method, example) if example_inputs_is_kwarg else example_tuple(example)
        graph, eager_out, read, baked[name] = trace_graph(mod, method, name, examples[name])
        if strict:
            refuse_dict_output(eager_out)
        graphs[name] = graph, eager_out
        attributes.update(read)
    traced = TracedModule(mod, {name: graph for name, (graph, _) in graphs.items()}, attributes=attributes)
    traced.baked_dims = baked
    if check_trace:
        for name, (graph, eager_out) in graphs.items():
            check_trace_replay(getattr(traced, name), graph, examples[name], eager_out, check_tolerance)
        for extra in check_inputs or ():
            for name, example in extra.items():
                args = _positional(getattr(mod, name), example) if example_inputs_is_kwarg else example_tuple(example)
                check_trace_replay(getattr(traced, name), graphs[name][0], args, getattr(mod, name)(*args), check_tolerance)
    return traced


def _positional(method, kwargs: dict) -> tuple:
    """A method's keyword example as a positional tuple, in the method's parameter order."""
    bound = inspect.signature(method).bind(**kwargs)
    bound.apply_defaults()
    return example_tuple(tuple(bound.arguments.values()))

"""jit.trace's example inputs: which values can be traced (Tensors, and tuples, lists and dicts of
them, as torch's tracer takes them), copies for the trace check, the sizes they give the graph's
symbolic dims, the outputs strict tracing refuses, and the signature a traced call takes."""

from __future__ import annotations

import inspect

from scriptc.ir.graph import Graph
from scriptc.tensors import Tensor
from scriptc.types import TensorType

from .arguments import value_type_name


def tensors_in(example) -> list:
    """The tensors of an example, in order (a dict's in the order of its keys)."""
    if isinstance(example, Tensor):
        return [example]
    if isinstance(example, dict):
        example = list(example.values())
    return [t for x in example for t in tensors_in(x)]


def example_tuple(example_inputs) -> tuple:
    """The positional examples a call is traced with: a Tensor or a dict is the one argument, any
    other iterable the arguments (as torch.jit.trace reads them); a value that cannot be traced is
    torch's RuntimeError naming the examples' type."""
    if isinstance(example_inputs, (Tensor, dict)):
        example_inputs = (example_inputs,)
    examples = tuple(example_inputs)
    for x in examples:
        _check_dicts(x, examples)
    if not all(_traceable(x) for x in examples):
        raise RuntimeError(f"Type '{value_type_name(examples)}' cannot be traced. Only Tensors and (possibly nested) "
                           "Lists, Dicts, and Tuples of Tensors can be traced")
    return examples


def _traceable(value) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, dict):
        return bool(value) and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in value) and \
            all(_traceable(v) for v in value.values())
    return isinstance(value, (list, tuple)) and bool(value) and all(_traceable(x) for x in value)


def _check_dicts(value, examples: tuple) -> None:
    """A dict example's keys and values are each of one type, as the graph's Dict input takes them."""
    if isinstance(value, (list, tuple)):
        for x in value:
            _check_dicts(x, examples)
        return
    if not isinstance(value, dict):
        return
    for kinds in (dict.fromkeys(map(value_type_name, value)), dict.fromkeys(map(value_type_name, value.values()))):
        if len(kinds) > 1:
            raise RuntimeError(f"Tracer cannot infer type of {examples!r}\n:Dictionary inputs to traced functions must "
                               f"have consistent type. Found {' and '.join(list(kinds)[:2])}")
    for v in value.values():
        _check_dicts(v, examples)


def cloned(value):
    """Tensors (in nested tuples, lists and dicts) copied."""
    if isinstance(value, Tensor):
        from scriptc.autograd import no_grad

        with no_grad():
            return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(cloned(v) for v in value)
    if isinstance(value, dict):
        return {k: cloned(v) for k, v in value.items()}
    return value


def example_sizes(graph: Graph, examples: tuple) -> dict[str, int]:
    """The size the examples have in each dim the graph's inputs name by a symbol (B, S1, ...), where
    it is not empty (an empty example dim says nothing to prime or size memory for)."""
    sizes = {}
    for value, example in zip(graph.inputs[len(graph.inputs) - len(examples):], examples):
        if not isinstance(value.type, TensorType) or not isinstance(example, Tensor) or value.type.shape is None:
            continue
        for dim, size in zip(value.type.shape, example.shape):
            if isinstance(dim, str) and size > 0:
                sizes.setdefault(dim, size)
    return sizes


_STRICT_DICT_OUTPUT = (
    "Encountering a dict at the output of the tracer might cause the trace to be incorrect, this is only valid if "
    "the container structure does not change based on the module's inputs. Consider using a constant container "
    "instead (e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If you absolutely "
    "need this and know the side effects, pass strict=False to trace() to allow this behavior.")


def refuse_dict_output(output) -> None:
    """torch's RuntimeError for a traced output that is a dict or holds one in its tuples and lists
    (what strict tracing refuses: the dict's keys would be fixed by the trace)."""
    if _holds_dict(output):
        raise RuntimeError(_STRICT_DICT_OUTPUT)


def _holds_dict(output) -> bool:
    if isinstance(output, dict):
        return True
    return isinstance(output, (tuple, list)) and any(_holds_dict(o) for o in output)


def keyword_call(fn, example_kwargs, method: bool):
    """(a function taking the keyword examples' parameters positionally, in fn's order; those
    examples as a tuple) for tracing a call by keyword (`method`: a module's forward, whose unknown
    keyword is torch's NameError)."""
    if not isinstance(example_kwargs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    declared = list(inspect.signature(fn).parameters)
    unknown = [name for name in example_kwargs if name not in declared]
    if unknown and method:
        raise NameError(f"'{unknown[0]}' is not in forward() method's arguments,\n                         valid "
                        f"arguments name are [{','.join(declared)}]")
    if unknown:
        raise TypeError(f"{getattr(fn, '__qualname__', 'forward')}() got an unexpected keyword argument "
                        f"'{unknown[0]}'")
    names = sorted(example_kwargs, key=declared.index)

    def by_keyword(*args):
        return fn(**dict(zip(names, args)))
    by_keyword.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    by_keyword.__name__ = getattr(fn, "__name__", "fn")
    return by_keyword, tuple(example_kwargs[name] for name in names)


def traced_signature(fn, count: int):
    """The signature a traced function is called with: its own first `count` parameters, so that
    they may be passed by name as torch allows (None where they are not plain parameters)."""
    try:
        params = list(inspect.signature(fn).parameters.values())[:count]
    except (TypeError, ValueError):
        return None
    if len(params) != count or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return None
    return inspect.Signature([p.replace(default=inspect.Parameter.empty, annotation=inspect.Parameter.empty)
                              for p in params])


def argument_names(fn, count: int) -> list[str]:
    """The names of fn's first `count` positional parameters (`input<i>` past them or where fn has no
    signature), as the traced graph names its inputs."""
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input{i}" for i in range(count)]

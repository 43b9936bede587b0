"""A traced submodule called from scripted code: its traced graph is inlined, as torch's script
compiler does (torch.jit.script(Searcher(traced_encoder, traced_decoder)) in the chatbot deployment
tutorial): the trace is what that submodule computes, its Python source may not even script."""

from __future__ import annotations

from scriptc.ir.graph import clone_node, walk
from scriptc.types import ListType, ModuleType, TensorType, TupleType

from .values import SugaredModule


class TracedCalls:
    """Calls of a TracedModule reached through `self` (owner.traced)."""

    def call_traced(self, owner: SugaredModule, args: list, kwargs: dict, node):
        graph = owner.traced._graphs["forward"]
        params = graph.inputs[1:]
        if kwargs or len(args) != len(params):
            raise self.error(f"traced module {type(owner.module).__name__}'s forward takes {len(params)} positional "
                             f"arguments (a traced forward takes no keywords), got {len(args)} and {len(kwargs)} "
                             "keyword", node)
        mapping = {graph.inputs[0]: owner.value}
        for param, arg in zip(params, args):
            mapping[param] = self.as_value(arg, node)
        for sub, name in owner.traced._attributes:
            path = f"{owner.path}.{sub}" if sub else owner.path
            self.ctx.module_attributes[(path, name)] = owner.traced._attributes[(sub, name)]
        for traced_node in graph.block:
            cloned = clone_node(traced_node, mapping)
            self.block.append(cloned)
            for inner in [cloned, *(n for b in cloned.blocks for n in walk(b))]:
                for v in inner.outputs:
                    v.type = _generic(v.type, owner.path)
        return mapping.get(graph.outputs[0], graph.outputs[0])


def _generic(t, owner_path: str):
    """A traced value's type in the caller's graph: tensors without the sizes the trace saw (the
    caller's inputs may have others), submodules by their path from the caller's top module."""
    if isinstance(t, TensorType):
        return TensorType(t.dtype, None, t.device)
    if isinstance(t, TupleType):
        return TupleType(tuple(_generic(e, owner_path) for e in t.elems))
    if isinstance(t, ListType):
        return ListType(_generic(t.elem, owner_path))
    if isinstance(t, ModuleType):
        return ModuleType(f"{owner_path}.{t.path}" if t.path else owner_path)
    return t
